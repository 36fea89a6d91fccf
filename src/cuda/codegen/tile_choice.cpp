// Tile validity, `--tile` parsing and the per-query tile choice (no device needed).
#include "cuda/codegen/tile_choice.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "cuda/codegen/internal.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

std::string TileConfig::str() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "/" + std::to_string(tm) + "x" +
         std::to_string(tn);
}

namespace {

bool one_of(int v, std::initializer_list<int> set) { return std::find(set.begin(), set.end(), v) != set.end(); }

// "AxBxC" -> numbers; false when malformed.
bool parse_dims(const std::string& s, std::vector<int>& out) {
  out.clear();
  size_t p = 0;
  while (p <= s.size()) {
    size_t e = s.find('x', p);
    if (e == std::string::npos) e = s.size();
    const std::string part = s.substr(p, e - p);
    if (part.empty() || part.size() > 4 ||
        !std::all_of(part.begin(), part.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; }))
      return false;
    out.push_back(std::stoi(part));
    p = e + 1;
  }
  return true;
}

int words(CType t) { return cg::ctype_bytes(t) <= 4 ? 1 : 2; }

}  // namespace

WarpShape warp_shape(const TileConfig& t) {
  if (t.tm <= 0 || t.tn <= 0 || t.bm % t.tm != 0 || t.bn % t.tn != 0) return {};
  const int threads_m = t.bm / t.tm, threads_n = t.bn / t.tn;
  // 8 threads along n read 8 consecutive 16-byte vectors: one conflict-free wavefront.
  for (int wn : {8, 16, 4, 32, 2, 1}) {
    const int wm = 32 / wn;
    if (threads_n % wn == 0 && threads_m % wm == 0) return {wm, wn};
  }
  return {};
}

bool tile_valid(const TileConfig& t, std::string* why) {
  auto fail = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (!one_of(t.bm, {16, 32, 64, 128, 256}) || !one_of(t.bn, {16, 32, 64, 128, 256}))
    return fail("BM and BN must be one of 16, 32, 64, 128, 256");
  if (!one_of(t.bk, {4, 8, 16, 32})) return fail("BK must be one of 4, 8, 16, 32");
  if (!one_of(t.tm, {1, 2, 4, 8, 16}) || !one_of(t.tn, {1, 2, 4, 8, 16}))
    return fail("TM and TN must be one of 1, 2, 4, 8, 16");
  const int threads = t.threads();
  if (threads % 32 != 0 || threads > 1024)
    return fail("(BM/TM)*(BN/TN) = " + std::to_string(threads) + " threads: need a multiple of 32, at most 1024");
  if (warp_shape(t).warp_m == 0) return fail("the thread grid cannot be tiled by warps");
  return true;
}

TileConfig parse_tile(const std::string& text) {
  const std::string usage = "--tile: expected BMxBNxBK or BMxBNxBK/TMxTN (e.g. 128x128x8/8x8), got '" + text + "'";
  const size_t slash = text.find('/');
  std::vector<int> outer, inner;
  if (!parse_dims(text.substr(0, slash), outer) || outer.size() != 3) throw_usage_error(usage);
  TileConfig t;
  t.bm = outer[0];
  t.bn = outer[1];
  t.bk = outer[2];
  if (slash != std::string::npos) {
    if (!parse_dims(text.substr(slash + 1), inner) || inner.size() != 2) throw_usage_error(usage);
    t.tm = inner[0];
    t.tn = inner[1];
  } else {
    // 8x8 per thread, adjusted toward 64..256 threads.
    t.tm = std::min(8, t.bm);
    t.tn = std::min(8, t.bn);
    while (t.tm > 0 && t.tn > 0 && t.threads() < 64 && (t.tm > 1 || t.tn > 1)) {
      if (t.tm >= t.tn)
        t.tm /= 2;
      else
        t.tn /= 2;
    }
    while (t.tm > 0 && t.tn > 0 && t.threads() > 256 && (t.tm < 16 || t.tn < 16)) {
      if (t.tm <= t.tn)
        t.tm *= 2;
      else
        t.tn *= 2;
    }
  }
  std::string why;
  if (!tile_valid(t, &why)) throw_usage_error("--tile " + text + ": " + why);
  return t;
}

int estimate_registers(const Plan& plan, const TileConfig& t) {
  int regs = 30;  // indices, pointers, loop counters, bounds
  for (const Accumulator& a : plan.accs) regs += words(a.type) * t.tm * t.tn;
  for (const Local& l : plan.locals) regs += l.inner ? 2 * words(l.type) : 0;  // inner-op temporaries
  if (plan.when.present()) regs += (t.tm * t.tn + 31) / 32;                    // `when` bits
  for (int a : cg::inner_accesses(plan)) {
    const int w = words(cg::access_ctype(plan, a));
    const int storage = int(dtype_size(cg::access_dtype(plan, a)));
    switch (cg::inner_kind(plan.accesses[size_t(a)].pattern)) {
      case cg::InnerKind::RowTile:
      case cg::InnerKind::ColTile: {
        const bool row = cg::inner_kind(plan.accesses[size_t(a)].pattern) == cg::InnerKind::RowTile;
        const int p = row ? t.bm : t.bn;
        const int per = (p * t.bk / cg::kChunk + t.threads() - 1) / t.threads();
        // fragment, pointer and mask; register-staged operands also hold their next chunk
        regs += (row ? t.tm : t.tn) * w + 4;
        // (the compiler keeps one register per staged element)
        if (cg::tile_copy(plan, a) == cg::TileCopy::Registers) regs += per * std::max(storage, cg::kChunk) + 2;
        break;
      }
      case cg::InnerKind::RowVec: regs += t.tm * w; break;
      case cg::InnerKind::ColVec: regs += t.tn * w; break;
      case cg::InnerKind::RedVec: regs += w + 2; break;
      case cg::InnerKind::None: break;
    }
  }
  return regs;
}

TileConfig choose_tile_sized(const Plan& plan, int64_t rows, int64_t cols, int64_t batch, int sm_count,
                             size_t smem_per_block) {
  // Largest first: scale up before scaling out (bigger tiles reuse each loaded value more).
  // The first runs one 256-thread block per SM with up to 255 registers; the others two or
  // more blocks within 128 registers. Measured on the f32 product at 4096..16384 (H200):
  // 128x256x16/8x16 0.92-0.93 of cuBLAS, 128x128x16/8x8 0.85, 128x128x8/8x8 0.80.
  struct Candidate {
    TileConfig t;
    int budget;  // largest register estimate that compiles without spills (ptxas, sm_90a)
  };
  static const Candidate kCandidates[] = {
      {{128, 256, 16, 8, 16}, kBigTileBudget}, {{128, 128, 8, 8, 8}, kRegisterBudget},
      {{128, 64, 8, 8, 4}, kRegisterBudget},   {{64, 64, 8, 4, 4}, kRegisterBudget},
      {{64, 32, 8, 4, 4}, kRegisterBudget},    {{32, 32, 8, 4, 4}, kRegisterBudget}};
  const int n = int(sizeof kCandidates / sizeof kCandidates[0]);
  auto fits = [&](const TileConfig& t) { return cg::smem_plan(plan, t).total() <= smem_per_block; };
  int start = -1;
  // Top/bottom and distinct lists work per pair in unrolled passes (gm::TileSelect's counts, the
  // distinct rounds): at one block per SM nothing hides that, and Q7 ran 1.13x slower at the
  // one-block tile than at 128x128x8/8x8 (H200, 16384^2, K=256), so they start one step down.
  // Plain lists (a pass of marks, then a loop over the marked pairs) start at the top: Q5
  // 3.52 ms there against 3.89 (K=256), 11.94 against 13.80 (K=1024). bench/NOTES.md.
  bool step_down = false;
  for (const ListOutput& l : plan.lists) step_down = step_down || l.mode != ListMode::Plain;
  const int first = step_down ? 1 : 0;
  for (int c = first; c < n && start < 0; ++c)
    if (estimate_registers(plan, kCandidates[c].t) <= kCandidates[c].budget && fits(kCandidates[c].t)) start = c;
  if (start < 0) {  // nothing fits its budget: the smallest tile (with a thinner k-slice if need be)
    TileConfig t = kCandidates[n - 1].t;
    while (t.bk > 4 && !fits(t)) t.bk /= 2;
    return t;
  }
  // Scale out only while the grid would leave SMs idle.
  const int64_t b = std::max<int64_t>(1, batch);
  int c = start;
  while (c + 1 < n && rows >= 0 && cols >= 0 && sm_count > 0) {
    const TileConfig& t = kCandidates[c].t;
    const int64_t blocks = ((rows + t.bm - 1) / t.bm) * ((cols + t.bn - 1) / t.bn) * b;
    if (blocks >= sm_count) break;
    ++c;
  }
  return kCandidates[c].t;
}

TileConfig choose_tile(const Plan& plan, int sm_count, size_t smem_per_block) {
  // Sizes are known here only when both bounds of an axis are literals.
  auto extent = [&](AxisRole r) -> int64_t {
    const Axis* a = plan.find_axis(r);
    if (!a || !a->has_range || a->begin.param >= 0 || a->end.param >= 0) return -1;
    return std::max<int64_t>(0, a->end.offset - a->begin.offset);
  };
  return choose_tile_sized(plan, extent(AxisRole::Row), extent(AxisRole::Col), 1, sm_count, smem_per_block);
}

TensorIsa tensor_isa(int cc_major, int cc_minor) {
  if (cc_major == 9 && cc_minor == 0) return TensorIsa::Wgmma;
  return cc_major >= 8 ? TensorIsa::MmaSync : TensorIsa::None;
}

namespace {

// Whether TMA can read the operands of `m`: their boxes start on 16 bytes of the contiguous axis,
// and with `in_place` also every device input's start, row and batch pitches.
bool tma_fit(const Instance& inst, const MathChoice& m, bool in_place) {
  const Plan& P = *inst.plan;
  if (m.row_access < 0 || m.col_access < 0) return false;
  const size_t lead = P.batched ? 1 : 0;
  for (int a : {m.row_access, m.col_access}) {
    const Access& acc = P.accesses[size_t(a)];
    const size_t o = size_t(acc.operand);
    const NDArray* x = o < inst.inputs.size() ? inst.inputs[o] : nullptr;
    if (!x || x->shape.size() != lead + 2) return false;
    const int e = int(dtype_size(x->dtype));
    // The boxes start on 16 bytes of the contiguous axis (the device faulted on others).
    const bool kc = acc.pattern == Pattern::RowRed || acc.pattern == Pattern::ColRed;
    const int64_t first = kc ? inst.red.begin : a == m.row_access ? inst.row.begin : inst.col.begin;
    if ((first * e) % 16 != 0) return false;
    if (!in_place || !inst.on_device(o)) continue;  // gamut's own copy: 16-byte rows (input_pitch)
    const Instance::DeviceInput& d = inst.device_inputs[o];
    if (d.strides.size() != x->shape.size()) return false;
    if (!tile_map_fits(uint64_t(reinterpret_cast<uintptr_t>(d.data)), d.strides[lead], P.batched ? d.strides[0] : 0,
                       P.batched ? inst.batch : 1, e))
      return false;
  }
  return true;
}

}  // namespace

namespace {

// Resident B (CodegenOptions::resident_b), an experiment (GAMUT_EXPERIMENT_RESIDENT_B=1; it
// shapes the source, hence the cache key): where the TMA-fed wgmma kernel's whole k range of B
// fits the stages' B halves (at most `stages` slices: bf16 / f16 K <= 256, tf32 K <= 128) and
// the blocks would run their tiles band by band: no `when` (one tile per block), no top /
// bottom per j (its tiles go columns first), and A small enough to stay in L2 while every
// block sweeps its rows (half of the H100's / H200's 50 MB). Not the default: on the H100 it
// left the K = 256 kernels as they were or slower (product 0.57 / 0.57 ms, Q3 0.58 /
// 0.61, Q5 0.57 / 0.56, Q7 0.55 / 1.31 with its ranks computed again); only a kernel whose
// outputs do almost nothing gained (a select that keeps no pair: 0.49 -> 0.33). They are bound
// by their outputs and the one-block-per-SM latency, not by L2 (bench/NOTES.md, session 17).
bool resident_b_fits(const Instance& inst, const TileConfig& tile, const MathChoice& m) {
  const char* e = std::getenv("GAMUT_EXPERIMENT_RESIDENT_B");
  if (!e || std::string(e) != "1") return false;
  const Plan& P = *inst.plan;
  if (m.math == InnerMath::Tf32x3 || P.when.present()) return false;
  for (const ListOutput& l : P.lists)
    if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per == PerGroup::Col) return false;
  const TcTile t = tc_tile_of(tile, m.math, true);
  const int64_t k = inst.red.size(), es = m.math == InnerMath::Tf32 ? 4 : 2;
  if (!t.wgmma || k <= 0 || (k + t.bk - 1) / t.bk > t.stages) return false;
  return inst.row.size() * k * es <= (int64_t(24) << 20);
}

}  // namespace

bool tma_operands_fit(const Instance& inst, const MathChoice& m) { return tma_fit(inst, m, true); }
bool tma_starts_fit(const Instance& inst, const MathChoice& m) { return tma_fit(inst, m, false); }

int64_t input_pitch(int64_t cols, DType t) {
  // Whole 4-element chunks (the SIMT loaders) and whole 16-byte chunks (cp.async, TMA).
  const int64_t q = std::max<int64_t>(4, 16 / int64_t(dtype_size(t)));
  return (cols + q - 1) / q * q;
}

KernelChoice choose_kernel(const Instance& inst, int sm_count, size_t smem_per_block,
                           const std::optional<TileConfig>& forced, bool masked_joins, F32Math f32_math, TensorIsa isa,
                           bool every_distinct_seen) {
  const Plan& P = *inst.plan;
  const int64_t rows = inst.row.size(), cols = inst.col.size(), batch = inst.batch;
  KernelChoice k;
  k.tile = forced ? *forced : choose_tile_sized(P, rows, cols, batch, sm_count, smem_per_block);
  // Packed 16-bit tropical steps hold half the accumulator registers: their own tile (measured
  // best of six on the H200, bench/NOTES.md), unless the grid would leave SMs idle.
  const bool packed_form_any = packed16_form(P, kPacked16Tile) || packed16_form(P, k.tile);
  // (Inputs in device memory are not read on the host: no packed form, no key grouping.)
  const bool packed_data = packed_form_any && inst.device_inputs.empty() && packed16_data_fits(P, inst);
  if (!forced && packed_data && packed16_form(P, kPacked16Tile) &&
      ((rows + kPacked16Tile.bm - 1) / kPacked16Tile.bm) * ((cols + kPacked16Tile.bn - 1) / kPacked16Tile.bn) * batch >=
          sm_count)
    k.tile = kPacked16Tile;
  k.options.packed16 = packed_data && packed16_form(P, k.tile);
  k.options.grouped_join = join_grouping_form(P) && !masked_joins && inst.device_inputs.empty();
  // Sums of products on the tensor cores (spec section 10) with their own tile. A forced tile
  // (benchmarks of the SIMT tiles), packed steps and grouped joins keep the SIMT mainloop.
  k.math = executed_math(P, f32_math);
  const MathChoice& math = k.math;
  if (isa != TensorIsa::None && math.tensor_cores() && !forced && !k.options.packed16 && !k.options.grouped_join) {
    // (tf32 wgmma's boxes start at k_begin: TMA needs that on 16 bytes. An empty k range stays
    // on mma.sync: the TMA-fed consumers set their accumulators from their first product.)
    // A top / bottom list per i (per j) of N <= 32 keeps its thresholds in the blocks of a
    // persistent TMA-fed wgmma kernel at any K (CodegenOptions::resident_top; bench/NOTES.md
    // session 20); wgmma_min_k is for the tile selection over mma.sync's map. Not tf32x3: its
    // ring (with B's twins) leaves no room for the state.
    const int resident_list = resident_top_form(P);
    // Up to 2 KiB of k per row (bf16 K <= 1024, tf32 K <= 512): its 128 x 128 tile lost to the
    // tile selection's 128 x 256 at tf32 K = 1024 (H100, kNN kernel 4.25 against 2.73 ms).
    const int64_t k_bytes = inst.red.size() * element_bytes(math.math);
    const bool resident = isa == TensorIsa::Wgmma && math.wgmma && math.math != InnerMath::Tf32x3 && k_bytes <= 2048 &&
                          resident_list >= 0 && inst.list_limits[size_t(resident_list)] <= 32 &&
                          (wgmma_needs_tma(math.math) || tma_starts_fit(inst, math));
    const bool wgmma = isa == TensorIsa::Wgmma && (math.wgmma || (math.wgmma_if_seen && every_distinct_seen)) &&
                       inst.red.end > inst.red.begin && (inst.red.size() >= math.wgmma_min_k || resident) &&
                       (!wgmma_needs_tma(math.math) || (inst.red.begin * 4) % 16 == 0);
    // A global top / bottom list over a short reduction: 128 x 128 (its gate and selection per
    // tile are cheaper; Q7 bf16 K = 256 on the H100: kernel 0.542 -> 0.516 ms in three rounds,
    // equal at K = 512; session 17).
    // Resident thresholds take 128 x 128 too (their state beside a ring of 4 stages).
    const bool square =
        resident || (inst.red.size() <= 256 && std::any_of(P.lists.begin(), P.lists.end(), [](const ListOutput& l) {
                       return (l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per == PerGroup::None;
                     }));
    k.tile = tc_kernel_tile(math.math, wgmma, rows, cols, batch, sm_count, square);
    k.options.tensor_math = math.math;
    // TMA feeds wgmma where its boxes start on 16 bytes (else cp.async from every thread); tf32
    // wgmma always. The engine copies operands TMA cannot address as they lie (device inputs
    // with rows off 16 bytes: re-pitched; f32 that is not k-major: k-major), stages/k_major_copy.h.
    k.options.tma =
        wgmma && tc_tile_of(k.tile, math.math).wgmma && (wgmma_needs_tma(math.math) || tma_starts_fit(inst, math));
    k.options.resident_top = k.options.tma && resident;
    // Epilogue warpgroups (TcTile::epilogue) where the products are long: the outputs' code then
    // has the launch's 96 registers a thread (ptxas allocates every role the launch's share), and
    // the key pass waits on its loads one by one. H100, kNN kernel, epilogue warpgroups / without
    // (bench/NOTES.md session 21): bf16 K = 256 1.41 / 1.10 ms, K = 512 1.52 / 1.24, K = 1024
    // 1.755 / 1.873; tf32 K = 256 1.50 / 1.24, K = 512 1.76 / 1.87. From 1792 bytes of k per
    // row (between the measured 1024, lost, and 2048, won). GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS=0
    // / =1 (measurements, tests): never / wherever resident thresholds run.
    const char* epi = std::getenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS");
    const bool epi_on = epi && std::string(epi) == "1", epi_off = epi && std::string(epi) == "0";
    k.options.epilogue_warpgroups = k.options.resident_top && !epi_off && (epi_on || k_bytes > 1792);
    k.options.resident_b = k.options.tma && !resident && resident_b_fits(inst, k.tile, math);
  }
  return k;
}

}  // namespace gamut::cuda
