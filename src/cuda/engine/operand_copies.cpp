// Operand copies of tensor-core kernels (operand_copies.h).
#include "cuda/engine/operand_copies.h"

#include <algorithm>
#include <utility>

#include "cuda/codegen/mainloop_tensor.h"

namespace gamut::cuda {

namespace {

uint64_t ptr_word(const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); }

}  // namespace

// The first index, along the dimension contiguous in memory, that a tile operand's chunks start at.
int64_t contiguous_begin(const Instance& inst, Pattern p) {
  switch (p) {
    case Pattern::RowRed:
    case Pattern::ColRed: return inst.red.begin;
    case Pattern::RedRow: return inst.row.begin;
    case Pattern::RedCol: return inst.col.begin;
    default: return 0;
  }
}

void OperandCopies::run() const {
  for (size_t c = 0; c < sources.size(); ++c) k_major_copy(sources[c], buffers[c].get());
}

void OperandCopies::add(const KMajorSource& src, uint64_t& ptr, int64_t& ld, int64_t& batch_stride) {
  buffers.emplace_back(k_major_bytes(src));
  sources.push_back(src);
  ptr = ptr_word(buffers.back());
  ld = k_major_pitch(src);
  batch_stride = src.p_extent * ld;
}

void OperandCopies::add_repitched(uint64_t& ptr, int64_t& ld, int64_t& batch_stride, int64_t rows, int64_t cols,
                                  int64_t batch, int element_bytes) {
  KMajorSource src;
  src.ptr = ptr;
  src.element_bytes = element_bytes;
  src.p_stride = ld;
  src.k_stride = 1;
  src.batch_stride = batch_stride;
  src.p_extent = rows;
  src.k_extent = cols;
  src.batch = batch;
  add(src, ptr, ld, batch_stride);
}

// Every tensor-core kernel: device operands of the product whose start or pitches are off 16
// bytes (a torch tensor of 4097 i8 columns; K = 1023 bf16) are read from re-pitched copies, so
// that TMA can address them and the cp.async loaders move 16-byte chunks (their unaligned path
// goes element by element: i8 4097^3 5.4x the time of 4096^3, bench/unaligned_inputs.py). An
// f32 operand that tf32 wgmma reads through a k-major copy (encode_operand_maps) is left to it.
void repitch_operands(const Instance& inst, const MathChoice& m, bool tma, const ArgLayout& L, std::vector<uint64_t>& w,
                      OperandCopies& copies) {
  const Plan& P = *inst.plan;
  for (const bool row : {true, false}) {
    const int a = row ? m.row_access : m.col_access;
    if (a < 0 || !inst.on_device(size_t(P.accesses[size_t(a)].operand))) continue;
    const bool kc = P.accesses[size_t(a)].pattern == (row ? Pattern::RowRed : Pattern::ColRed);
    if (tma && wgmma_needs_tma(m.math) && !kc) continue;
    const auto& s = L.access[size_t(a)];
    const int e = int(dtype_size(row ? m.row_type : m.col_type));
    uint64_t ptr = w[size_t(s.ptr)];
    int64_t ld = int64_t(w[size_t(s.ld)]), bstride = int64_t(w[size_t(s.bstride)]);
    const int64_t batch = P.batched ? inst.batch : 1;
    if (tile_map_fits(ptr, ld, bstride, batch, e)) continue;
    const int64_t p_end = row ? inst.row.end : inst.col.end;
    copies.add_repitched(ptr, ld, bstride, kc ? p_end : inst.red.end, kc ? inst.red.end : p_end, batch, e);
    w[size_t(s.ptr)] = ptr;
    w[size_t(s.ld)] = uint64_t(ld);
    w[size_t(s.bstride)] = uint64_t(bstride);
    w[size_t(s.vec)] =
        ld % 4 == 0 && bstride % 4 == 0 && contiguous_begin(inst, P.accesses[size_t(a)].pattern) % 4 == 0;
  }
}

// The tensor maps of a TMA-fed kernel (CodegenOptions::tma) from the operands' words, after
// repitch_operands: the row operand in boxes of tile.bm rows (or 64 columns), the column operand
// in tile.bn. tf32 / tf32x3 read f32 operands that are not k-major from a k-major copy (wgmma
// reads f32 only k-major), and tf32's maps round to TF32 as boxes land.
void encode_operand_maps(const Instance& inst, const MathChoice& m, const TileConfig& tile, const ArgLayout& L,
                         std::vector<uint64_t>& w, OperandCopies& copies, int cluster) {
  const Plan& P = *inst.plan;
  const bool f32 = wgmma_needs_tma(m.math);
  for (const bool row : {true, false}) {
    const int a = row ? m.row_access : m.col_access;
    const auto& s = L.access[size_t(a)];
    const DType type = row ? m.row_type : m.col_type;
    TileMapShape t;
    t.ptr = w[size_t(s.ptr)];
    t.ld = int64_t(w[size_t(s.ld)]);
    t.batch_stride = int64_t(w[size_t(s.bstride)]);
    t.batch = P.batched ? inst.batch : 1;
    t.p_extent = row ? inst.row.end : inst.col.end;
    t.k_extent = inst.red.end;
    t.k_contiguous = P.accesses[size_t(a)].pattern == (row ? Pattern::RowRed : Pattern::ColRed);
    t.box_p = row ? tile.bm : tile.bn / cluster;
    if (f32 && !t.k_contiguous) {  // k-major
      KMajorSource src;
      src.ptr = t.ptr;
      src.p_stride = 1;
      src.k_stride = t.ld;
      src.batch_stride = t.batch_stride;
      src.p_extent = t.p_extent;
      src.k_extent = t.k_extent;
      src.batch = t.batch;
      copies.add(src, t.ptr, t.ld, t.batch_stride);
      t.k_contiguous = true;
    }
    t.tf32 = m.math == InnerMath::Tf32;
    encode_tile_map(&w[size_t(row ? L.tma_a : L.tma_b)], type, t);
  }
}

int64_t operand_copies_bytes(const Instance& inst, const MathChoice& m) {
  int64_t total = 0;
  for (const bool row : {true, false}) {
    KMajorSource s;
    s.p_extent = row ? inst.row.end : inst.col.end;
    s.k_extent = inst.red.end;
    s.batch = inst.plan->batched ? inst.batch : 1;
    s.element_bytes = int(dtype_size(row ? m.row_type : m.col_type));
    // (The larger of the two orientations' pitches: a re-pitched X[k, i] has rows of i.)
    KMajorSource t = s;
    std::swap(t.p_extent, t.k_extent);
    total += int64_t(std::max(k_major_bytes(s), k_major_bytes(t)));
  }
  return total;
}

}  // namespace gamut::cuda
