// A small host driver for the tensor-core mainloop alone: a test kernel that runs
// gm::tc::Mainloop over a (batched) block grid and writes the accumulators through the map to a
// dense output, host data in every storage type and orientation, and a reference in double /
// exact integers. The kernel is rendered with the code generator's own declarations
// (cuda/codegen/mainloop_tensor.h) and compiled and launched with the runtime's NVRTC and launch helpers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/types.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/runtime.h"

namespace gamut::testtc {

using cuda::TcMainloopSpec;

constexpr const char* kKernelName = "gamut_tc_test";

// Argument words of the test kernel.
enum Slot {
  kRowBegin, kRowEnd, kColBegin, kColEnd, kRedBegin, kRedEnd,
  kAPtr, kALd, kABatchBytes, kAVec, kBPtr, kBLd, kBBatchBytes, kBVec, kCPtr, kCLd, kCBatch, kSlots
};

// The test kernel: one block per (tile_m, tile_n, batch); C[b, i, j] = acc for i in
// [row_begin, row_end), j in [col_begin, col_end), with ldc between rows.
inline std::string kernel_source(const TcMainloopSpec& s) {
  const cuda::TcMainloopNames n;
  std::string r = "// Test kernel of the tensor-core mainloop (tests/gpu/tensor_mainloop_driver.h).\n";
  for (const auto& h : cuda::tc_headers(s)) r += "#include \"" + h + "\"\n";
  r += "namespace {\n" + cuda::tc_mainloop_decls(s);
  r += "typedef " + n.map + " Map;\n";
  // TMA: the two tensor maps first (64-byte aligned, read in place: __grid_constant__).
  const bool tma = s.tile.tma;
  r += std::string("struct Args { ") + (tma ? "alignas(64) unsigned long long tma[32]; " : "") +
       "unsigned long long s[" + std::to_string(kSlots) + "]; };\n}  // namespace\n";
  r += "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(s.tile.threads()) + ", " +
       std::to_string(cuda::tc_min_blocks(s)) + ") " + std::string(kKernelName) +
       (tma ? "(const __grid_constant__ Args a) {\n" : "(const Args a) {\n");
  r += R"(  extern __shared__ __align__(128) unsigned char smem[];
  const int row_begin = gm::arg_i32(a.s[0]), row_end = gm::arg_i32(a.s[1]);
  const int col_begin = gm::arg_i32(a.s[2]), col_end = gm::arg_i32(a.s[3]);
  const int red_begin = gm::arg_i32(a.s[4]), red_end = gm::arg_i32(a.s[5]);
  const gm::i64 b = blockIdx.z;
  const int i0 = row_begin + int(blockIdx.x) * TcShapeT::BM, j0 = col_begin + int(blockIdx.y) * TcShapeT::BN;
)";
  if (tma) {
    r += "  const gm::tc::TmaOperand op_a{&a.tma[0], i0, int(b)}, op_b{&a.tma[16], j0, int(b)};\n";
  } else {
    r += R"(  const gm::tc::TcOperand op_a{reinterpret_cast<const unsigned char*>(a.s[6]) + b * gm::i64(a.s[8]), gm::i64(a.s[7]),
                               i0, row_end, a.s[9] != 0};
  const gm::tc::TcOperand op_b{reinterpret_cast<const unsigned char*>(a.s[10]) + b * gm::i64(a.s[12]), gm::i64(a.s[11]),
                               j0, col_end, a.s[13] != 0};
)";
  }
  r += cuda::tc_mainloop_call(s, "op_a", "op_b", "red_begin", "red_end", "smem", "  ");
  r += "  " + n.acc_type + "* const out = reinterpret_cast<" + n.acc_type +
       "*>(a.s[14]) + b * gm::i64(a.s[16]);\n";
  r += R"(  const gm::i64 ldc = gm::i64(a.s[15]);
#pragma unroll
  for (int m = 0; m < Map::kRows; ++m) {
    const int i = i0 + Map::row(m);
    if (i >= row_end) continue;
#pragma unroll
    for (int n = 0; n < Map::kCols; ++n) {
      const int j = j0 + Map::col(n);
      if (j < col_end) out[i * ldc + j] = acc[Map::index(m, n)];
    }
  }
}
)";
  return r;
}

// The tensor maps of a TMA variant's operands, from the words of its launch (kSlots order).
inline cuda::TileMapShape tile_map_shape(const TcMainloopSpec& s, const std::vector<unsigned long long>& w, bool a,
                                         int batch) {
  const uint64_t e = dtype_size(a ? s.a_type : s.b_type);
  cuda::TileMapShape m;
  m.ptr = w[a ? kAPtr : kBPtr];
  m.ld = int64_t(w[a ? kALd : kBLd]);
  m.batch_stride = int64_t(w[a ? kABatchBytes : kBBatchBytes] / e);
  m.batch = batch;
  m.p_extent = int64_t(w[a ? kRowEnd : kColEnd]);
  m.k_extent = int64_t(w[kRedEnd]);
  m.k_contiguous = a ? s.a_kcontig : s.b_kcontig;
  m.box_p = a ? s.tile.bm : s.tile.bn;
  m.tf32 = s.math == InnerMath::Tf32;  // (the engine's maps round tf32 as boxes land)
  return m;
}
// Whether TMA can read both operands (16-byte aligned starts and pitches, and boxes starting
// on 16 bytes of the contiguous axis: k_begin, or the range's first row / column).
inline bool tma_fits(const TcMainloopSpec& s, const std::vector<unsigned long long>& w, int batch) {
  for (bool a : {true, false}) {
    const cuda::TileMapShape m = tile_map_shape(s, w, a, batch);
    const int e = int(dtype_size(a ? s.a_type : s.b_type));
    const uint64_t first = m.k_contiguous ? w[kRedBegin] : w[a ? kRowBegin : kColBegin];
    if (!cuda::tile_map_fits(m.ptr, m.ld, m.batch_stride, m.batch, e) || (first * uint64_t(e)) % 16 != 0) return false;
  }
  return true;
}
#if GAMUT_HAVE_CUDA
// The words a launch passes: with TMA, the two tensor maps (A, B) before the kSlots words.
inline std::vector<unsigned long long> launch_words(const TcMainloopSpec& s, const std::vector<unsigned long long>& w,
                                                    int batch) {
  if (!s.tile.tma) return w;
  std::vector<unsigned long long> all(32 + w.size(), 0);
  cuda::encode_tile_map(all.data(), s.a_type, tile_map_shape(s, w, true, batch));
  cuda::encode_tile_map(all.data() + 16, s.b_type, tile_map_shape(s, w, false, batch));
  std::copy(w.begin(), w.end(), all.begin() + 32);
  return all;
}
#endif

// ---- host data -------------------------------------------------------------------------------

// The value a double becomes in storage type t, and its bytes.
inline double stored_value(DType t, double v) {
  switch (t) {
    case DType::F16: return half_to_float(float_to_half(float(v)));
    case DType::BF16: return bf16_to_float(float_to_bf16(float(v)));
    case DType::F32: return double(float(v));
    case DType::I8: return double(int8_t(v));
    case DType::U8: return double(uint8_t(v));
    default: return v;
  }
}
inline void put(DType t, double v, std::byte* p) {
  auto w = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (t) {
    case DType::F16: w(float_to_half(float(v))); break;
    case DType::BF16: w(float_to_bf16(float(v))); break;
    case DType::F32: w(float(v)); break;
    case DType::I8: w(int8_t(v)); break;
    case DType::U8: w(uint8_t(v)); break;
    default: break;
  }
}

// A problem: batch x (rows x cols) outputs over k in [red_begin, red_end); logical operands
// A[b][i][k] (i < row_end, k < red_end) and B[b][k][j], already rounded to their storage types.
struct Problem {
  int rows = 1, cols = 1, red = 1, batch = 1;      // row_end, col_end, red_end
  int row_begin = 0, col_begin = 0, red_begin = 0;
  std::vector<double> a, b;                        // [batch][rows][red], [batch][red][cols]
  double at(const std::vector<double>& x, int64_t b_, int64_t r, int64_t c, int64_t cs, int64_t n) const {
    return x[size_t((b_ * n + r) * cs + c)];
  }
};

// Values: `small` draws integers in [-4, 4] (in [0, 8] for u8), whose products and sums are
// exact in f32 (and in TF32); otherwise uniform floats in [-1, 1] (full range for 8-bit types).
inline Problem make_problem(DType ta, DType tb, int rows, int cols, int red, int batch, bool small, uint32_t seed,
                            int row_begin = 0, int col_begin = 0, int red_begin = 0) {
  Problem p;
  p.rows = rows; p.cols = cols; p.red = red; p.batch = batch;
  p.row_begin = row_begin; p.col_begin = col_begin; p.red_begin = red_begin;
  std::mt19937 rng(seed);
  auto draw = [&](DType t) {
    if (t == DType::I8) return double(std::uniform_int_distribution<int>(small ? -4 : -128, small ? 4 : 127)(rng));
    if (t == DType::U8) return double(std::uniform_int_distribution<int>(0, small ? 8 : 255)(rng));
    if (small) return double(std::uniform_int_distribution<int>(-4, 4)(rng));
    return stored_value(t, std::uniform_real_distribution<double>(-1.0, 1.0)(rng));
  };
  p.a.resize(size_t(batch) * size_t(rows) * size_t(red));
  p.b.resize(size_t(batch) * size_t(red) * size_t(cols));
  for (double& v : p.a) v = draw(ta);
  for (double& v : p.b) v = draw(tb);
  return p;
}

// Reference: sum over k of a * b (double; exact for integer data), and sum of |a * b| (the
// scale of the rounding error). Outside the ranges: nothing (the kernel must not write there).
struct Reference {
  std::vector<double> sum, abs_sum;   // [batch][rows][cols]
};
inline Reference reference(const Problem& p) {
  Reference r;
  const size_t n = size_t(p.batch) * size_t(p.rows) * size_t(p.cols);
  r.sum.assign(n, 0.0);
  r.abs_sum.assign(n, 0.0);
  std::vector<double> row(size_t(p.cols)), arow(size_t(p.cols));
  for (int b = 0; b < p.batch; ++b)
    for (int i = p.row_begin; i < p.rows; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      std::fill(arow.begin(), arow.end(), 0.0);
      for (int k = p.red_begin; k < p.red; ++k) {
        const double x = p.at(p.a, b, i, k, p.red, p.rows);
        const double* brow = &p.b[(size_t(b) * size_t(p.red) + size_t(k)) * size_t(p.cols)];
        for (int j = p.col_begin; j < p.cols; ++j) {
          row[size_t(j)] += x * brow[j];
          arow[size_t(j)] += std::fabs(x * brow[j]);
        }
      }
      const size_t o = (size_t(b) * size_t(p.rows) + size_t(i)) * size_t(p.cols);
      std::copy(row.begin(), row.end(), r.sum.begin() + ptrdiff_t(o));
      std::copy(arow.begin(), arow.end(), r.abs_sum.begin() + ptrdiff_t(o));
    }
  return r;
}

// One operand laid out in memory: X[p, k] (kc) or X[k, p], `ld` elements between rows
// (padded to 16 bytes when `aligned`), batches `bstride` elements apart.
struct Layout {
  int64_t ld = 0, bstride = 0;
  std::vector<std::byte> bytes;
  bool vec = false;   // the mainloop's 16-byte chunks are aligned (TcOperand::vec)
};
// x(b, p, k) of a logical operand with extents (P, K); `begin_contig` is the first element of
// the contiguous axis the kernel reads (k_begin or p_begin).
template <class Get>
Layout lay_out(DType t, int batch, int P, int K, bool kc, bool aligned, int begin_contig, Get x) {
  Layout l;
  const int64_t es = int64_t(dtype_size(t));
  const int64_t contig = kc ? K : P, other = kc ? P : K;
  l.ld = aligned ? (contig * es + 15) / 16 * 16 / es : contig;
  l.bstride = l.ld * other + (aligned ? 0 : 1);   // unaligned layouts also shift every batch
  l.bytes.assign(size_t(l.bstride * batch * es), std::byte{0x5a});
  for (int b = 0; b < batch; ++b)
    for (int p = 0; p < P; ++p)
      for (int k = 0; k < K; ++k) {
        const int64_t e = b * l.bstride + (kc ? int64_t(p) * l.ld + k : int64_t(k) * l.ld + p);
        put(t, x(b, p, k), l.bytes.data() + size_t(e * es));
      }
  l.vec = (l.ld * es) % 16 == 0 && (l.bstride * es) % 16 == 0 && (int64_t(begin_contig) * es) % 16 == 0;
  return l;
}

// ---- comparison --------------------------------------------------------------------------------

// The output words the kernel left (batch x rows x cols, then a guard), compared with the
// reference: exact (8-bit integers with i32 wrapping, or `exact` small-integer data) or within
// tol * sum |a b|; outside the ranges and past the end nothing may be written.
struct Outcome {
  int64_t wrong = 0, unwritten = 0, stray = 0, nonzero = 0, ref_nonzero = 0;
  bool guard_intact = true;
  double worst = 0;   // largest |out - ref| / sum |a b| (inexact comparisons)
  std::string first;  // the first wrong element
};
inline Outcome compare(const Problem& p, const Reference& ref, const std::vector<uint32_t>& raw, uint32_t poison,
                       bool int_acc, bool exact, double tol) {
  Outcome o;
  const size_t n_out = size_t(p.batch) * size_t(p.rows) * size_t(p.cols);
  for (size_t e = n_out; e < raw.size(); ++e) o.guard_intact = o.guard_intact && raw[e] == poison;
  for (int b = 0; b < p.batch; ++b)
    for (int i = 0; i < p.rows; ++i)
      for (int j = 0; j < p.cols; ++j) {
        const size_t e = (size_t(b) * size_t(p.rows) + size_t(i)) * size_t(p.cols) + size_t(j);
        const bool written = raw[e] != poison;
        if (i < p.row_begin || j < p.col_begin) {
          o.stray += written;
          continue;
        }
        if (!written) {
          ++o.unwritten;
          continue;
        }
        float f;
        std::memcpy(&f, &raw[e], 4);
        const double got = int_acc ? double(int32_t(raw[e])) : double(f);
        double want = ref.sum[e];
        if (int_acc) want = double(int32_t(uint32_t(uint64_t(int64_t(want)))));   // i32 wraps
        else if (exact) want = double(float(want));
        o.nonzero += got != 0;
        o.ref_nonzero += want != 0;
        const double err = std::fabs(got - want);
        const bool ok = int_acc || exact ? got == want : err <= tol * ref.abs_sum[e] + 1e-30;
        if (!int_acc && !exact && ref.abs_sum[e] > 0) o.worst = std::max(o.worst, err / ref.abs_sum[e]);
        if (!ok && o.wrong++ == 0)
          o.first = "(" + std::to_string(b) + ", " + std::to_string(i) + ", " + std::to_string(j) + "): got " +
                    std::to_string(got) + ", want " + std::to_string(want);
      }
  return o;
}

}  // namespace gamut::testtc
