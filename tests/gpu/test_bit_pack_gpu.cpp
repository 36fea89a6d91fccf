// The GPU bit pack against the CPU loop it must match, and or-and queries rewritten into bit-packed
// stages end to end on the GPU against the query as written on the CPU. Skipped without a GPU.
#include <gtest/gtest.h>

#include "gpu_skip.h"

#if GAMUT_HAVE_CUDA  // bit_pack exists only in builds with the CUDA backend
#include <cmath>

#include "semantics/bit_pack.h"
#include "cuda/stages/bit_pack.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"

using namespace gamut;

namespace {

// Values 0/1 (1 with probability `density`) from a fixed sequence; `other` (when non-zero) is
// written instead of 1 at every 17th one: the pack must treat any non-zero value as a set bit.
NDArray bits(DType t, std::vector<int64_t> shape, double density, unsigned seed, int other = 0) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  unsigned s = seed;
  int64_t ones = 0;
  for (int64_t e = 0; e < a.size(); ++e) {
    s = s * 1103515245u + 12345u;
    int v = double((s >> 8) % 100000u) < density * 100000.0 ? 1 : 0;
    if (v && other && ++ones % 17 == 0) v = other;
    switch (t) {
      case DType::Bool: case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
      case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
      case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
      case DType::I32: a.as<int32_t>()[e] = v; break;
      case DType::I64: a.as<int64_t>()[e] = v; break;
      default: ADD_FAILURE() << "unsupported dtype in the test";
    }
  }
  return a;
}

double half_density(int64_t K) { return std::sqrt(1.0 - std::pow(0.5, 1.0 / double(K))); }

std::string range(const AxisRange& r) { return "[" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ")"; }

void check_pack(DType t, bool k_minor, AxisRange rows, AxisRange k, int64_t rows_extent, int64_t k_extent, int other = 0) {
  SCOPED_TRACE(std::string(dtype_name(t)) + (k_minor ? " X[r,k]" : " X[k,r]") + " rows " + range(rows) + " k " + range(k));
  const NDArray src = bits(t, k_minor ? std::vector<int64_t>{rows_extent, k_extent} : std::vector<int64_t>{k_extent, rows_extent},
                           0.3, unsigned(rows.end * 31 + k.end), other);
  const BitPack bp{"X", "bp_X", k_minor, rows, k};
  cuda::BitPackStats st;
  const NDArray got = cuda::bit_pack(src, bp, 0, &st);
  const NDArray want = bit_pack_cpu(src, bp);
  EXPECT_EQ(got.dtype, DType::I32);
  ASSERT_EQ(got.shape, want.shape);
  EXPECT_EQ(got.data, want.data);
  if (rows.size() > 0 && k.size() > 0) {
    EXPECT_FALSE(st.cache_hit.empty()) << "the kernel ran";
    bool nonzero = false;
    for (std::byte x : want.data) nonzero |= x != std::byte{0};
    EXPECT_TRUE(nonzero);
  }
}

Results run(const std::string& text, const Bindings& b, Backend be, bool rewrites, RunReport* r, bool* rewritten) {
  auto p = prepare(Source{"q.mmlt", text}, b, rewrites);
  *rewritten = p->program.has_value();
  RunOptions o;
  o.backend = be;
  return execute(*p, o, r);
}

// The rewritten query on the GPU against the query as written on the CPU engine, bit for bit.
void check_query(const std::string& text, const Bindings& b) {
  SCOPED_TRACE(text);
  bool rw_gpu = false, rw_cpu = true;
  RunReport rg;
  Results got = run(text, b, Backend::Gpu, true, &rg, &rw_gpu);
  Results want = run(text, b, Backend::Cpu, false, nullptr, &rw_cpu);
  EXPECT_TRUE(rw_gpu) << "the rewrite applies";
  EXPECT_FALSE(rw_cpu);
  EXPECT_EQ(rg.backend, "gpu");
  ASSERT_EQ(got.dense.size(), want.dense.size());
  for (size_t d = 0; d < want.dense.size(); ++d) {
    EXPECT_EQ(got.dense[d].dtype, want.dense[d].dtype);
    ASSERT_EQ(got.dense[d].shape, want.dense[d].shape);
    EXPECT_EQ(got.dense[d].data, want.dense[d].data);
  }
  ASSERT_EQ(got.lists.size(), want.lists.size());
  for (size_t l = 0; l < want.lists.size(); ++l) {
    ASSERT_EQ(got.lists[l].rows, want.lists[l].rows);
    for (size_t c = 0; c < want.lists[l].columns.size(); ++c) EXPECT_EQ(got.lists[l].columns[c].data, want.lists[l].columns[c].data);
  }
  bool nonzero = false, zero = false;
  const NDArray& r0 = want.dense[0];
  for (int64_t e = 0; e < r0.size(); ++e) (r0.get_i64(e) != 0 ? nonzero : zero) = true;
  EXPECT_TRUE(nonzero && zero) << "the data gives a mixed result";
}

}  // namespace

TEST(BitPackGpu, EveryTypeOrientationAndRangeMatchesTheCpuLoop) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64})
    for (bool k_minor : {true, false}) {
      check_pack(t, k_minor, {0, 64}, {0, 64}, 64, 64);
      check_pack(t, k_minor, {3, 1000}, {5, 1005}, 1001, 1010, t == DType::Bool ? 0 : 2);
      check_pack(t, k_minor, {0, 37}, {0, 1}, 37, 1);
      check_pack(t, k_minor, {1, 70}, {31, 64}, 71, 64);
      check_pack(t, k_minor, {0, 45}, {0, 33}, 50, 40);
    }
}

TEST(BitPackGpu, ManyRowsLoopOverTheGridAndEmptyRangesGiveZeros) {
  SKIP_WITHOUT_GPU();
  // One word per row and 100000 rows: more row tiles than blocks along y.
  for (bool k_minor : {true, false}) {
    check_pack(DType::U8, k_minor, {0, 100000}, {0, 20}, 100000, 20);
    check_pack(DType::I32, k_minor, {17, 70001}, {2, 100}, 70001, 100);
    check_pack(DType::U8, k_minor, {5, 5}, {0, 64}, 8, 64);   // no rows
    check_pack(DType::U8, k_minor, {0, 8}, {10, 10}, 8, 64);  // no k
  }
}

TEST(BitPackGpu, OrAndQueriesRunRewrittenOnTheGpu) {
  SKIP_WITHOUT_GPU();
  const std::string reach =
      "where (i, j) { r: i32 = 0; reduce (k) { r |= Adj[i, k] & Adj[k, j]; } Reach[i, j] = r; }";
  for (int64_t K : {64, 100, 1000, 4097})
    for (DType t : {DType::Bool, DType::U8}) {
      SCOPED_TRACE("K " + std::to_string(K) + " " + std::string(dtype_name(t)));
      Bindings b;
      b.arrays["Adj"] = bits(t, {K, K}, half_density(K), unsigned(K));
      check_query(reach, b);
    }
  // Every orientation, an i64 accumulator, M and N not multiples of a tile.
  for (bool x_km : {false, true})
    for (bool y_km : {false, true}) {
      const int64_t M = 333, N = 270, K = 1000;
      const std::string x = x_km ? "X[k, i]" : "X[i, k]", y = y_km ? "Y[k, j]" : "Y[j, k]";
      Bindings b;
      b.arrays["X"] = bits(DType::I32, x_km ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, half_density(K), 3);
      b.arrays["Y"] = bits(DType::I8, y_km ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K}, half_density(K), 4);
      check_query("where (i, j) { r: i64 = 0; reduce (k) { r |= " + x + " & " + y + "; } C[i, j] = r; }", b);
    }
  // Ranges, a mask, a parameter, an aggregate and a list after the reduction.
  Bindings b;
  b.arrays["X"] = bits(DType::U8, {520, 300}, half_density(500), 5);
  b.arrays["Y"] = bits(DType::U8, {260, 515}, half_density(500), 6);
  b.arrays["W"] = bits(DType::I32, {300, 260}, 0.5, 7);
  NDArray g = NDArray::zeros(DType::I32, {300});
  for (int64_t e = 0; e < 300; ++e) g.as<int32_t>()[e] = int32_t(e % 7);
  b.arrays["g"] = g;
  b.scalars["thres"] = "1";
  check_query(
      "where (i in [3, 290), j in [1, 255)) when (i != j && W[i, j] >= 0) {\n"
      "  r = 0;\n  reduce (k in [9, 509)) { r |= X[k, i] & Y[j, k]; }\n"
      "  let s = r * 2 + W[i, j];\n  if (s > thres) { C[i, j] = s; }\n  T[g[i]] += r;\n"
      "  emit L(i, j, r) top 50 by s;\n}\n",
      b);
}

#endif  // GAMUT_HAVE_CUDA
