// The kernel a bound query gets on a device (kernel_spec.h): tile, code variants, math, and the
// names the kernel goes by.
#include "cuda/codegen/kernel_spec.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/codegen/kernel_variants.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/codegen/tuned_table.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

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

// Resident B (CodegenOptions::resident_b), an experiment (GAMUT_EXPERIMENT_RESIDENT_B=1; it
// shapes the source, hence the cache key): where the TMA-fed wgmma kernel's whole k range of B
// fits the stages' B halves (at most `stages` slices: bf16 / f16 K <= 256, tf32 K <= 128) and
// the blocks would run their tiles band by band: no `when` (one tile per block), no top /
// bottom per j (its tiles go columns first), and A small enough to stay in L2 while every
// block sweeps its rows (half of the H100's / H200's 50 MB). Not the default: the kernels it
// applies to are bound by their outputs and the one-block-per-SM latency, not by L2, and ran
// no faster with it (bench/NOTES.md has the measurements).
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
                           bool every_distinct_seen, bool few_kept) {
  const Plan& P = *inst.plan;
  const int64_t rows = inst.row.size(), cols = inst.col.size(), batch = inst.batch;
  KernelChoice k;
  k.tile = forced ? *forced : choose_tile_sized(P, rows, cols, batch, sm_count, smem_per_block);
  // Packed 16-bit tropical steps hold half the accumulator registers: their own tile (the best
  // of the candidates measured), unless the grid would leave SMs idle.
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
    // persistent TMA-fed wgmma kernel at any K (CodegenOptions::resident_top); wgmma_min_k is for
    // the tile selection over mma.sync's map. Not tf32x3: its ring (with B's twins) leaves no
    // room for the state.
    const int resident_list = resident_top_form(P);
    // Up to 2 KiB of k per row (bf16 K <= 1024, tf32 K <= 512): beyond that the tile
    // selection's 128 x 256 beats the 128 x 128 tile resident thresholds take.
    const int64_t k_bytes = inst.red.size() * element_bytes(math.math);
    const bool resident = isa == TensorIsa::Wgmma && math.wgmma && math.math != InnerMath::Tf32x3 && k_bytes <= 2048 &&
                          resident_list >= 0 && inst.list_limits[size_t(resident_list)] <= 32 &&
                          (wgmma_needs_tma(math.math) || tma_starts_fit(inst, math));
    const bool wgmma = isa == TensorIsa::Wgmma && (math.wgmma || (math.wgmma_if_seen && every_distinct_seen)) &&
                       inst.red.end > inst.red.begin && (inst.red.size() >= math.wgmma_min_k || resident) &&
                       (!wgmma_needs_tma(math.math) || (inst.red.begin * 4) % 16 == 0);
    // A global top / bottom list over a short reduction: 128 x 128 (its gate and selection per
    // tile are cheaper, which pays where the products are short). Resident thresholds take
    // 128 x 128 too (their state beside a ring of 4 stages).
    // A plain select (only plain lists) over up to 1 KiB of k per row (bf16 K <= 512, tf32 K <=
    // 256): persistent 128 x 128 (below), whose half-size pass 2 and next tile's loads beat the one-tile
    // 128 x 256 there (bench/NOTES.md, session 31: Q5 at 16384^2, K = 256, 6-24 % faster at
    // 0.01-10 % kept; at K = 1024 up to 12 % slower where few pairs are kept).
    const bool short_select =
        k_bytes <= 1024 && P.dense.empty() && !P.lists.empty() &&
        std::all_of(P.lists.begin(), P.lists.end(), [](const ListOutput& l) { return l.mode == ListMode::Plain; });
    const bool square = resident || short_select ||
                        (inst.red.size() <= 256 && std::any_of(P.lists.begin(), P.lists.end(), [](const ListOutput& l) {
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
    // (GAMUT_EXPERIMENT_PERSISTENT=0 still turns it off; a `when` key keeps one tile per block.)
    if (short_select && k.options.tma && !P.when.present() && persistent_experiment() != 0) {
      k.options.persistent = 1;
      // Where the query's last run kept few pairs, 16-bit maths take two consumer groups over
      // 64 x 256 tiles (CodegenOptions::pingpong: their compare pass hides under the other
      // group's products; where many pairs are kept their pass 2 is slower, and tf32 gained little).
      // GAMUT_EXPERIMENT_PINGPONG=256 / =128 / =0 (measurements, tests): always 64 x 256 / 64 x 128 /
      // never; unset or =auto: this rule.
      const int experiment = pingpong_experiment();
      const bool sixteen = math.math == InnerMath::BF16 || math.math == InnerMath::F16;
      const int bn = experiment >= 0 ? experiment : few_kept && sixteen ? 256 : 0;
      const TileConfig pp{64, bn, k.tile.bk, 2, bn / 4};
      if (pp.bn > 0 && pingpong_form(P, math.math, pp)) {
        k.tile = pp;
        k.options.pingpong = true;
      }
    }
    // Epilogue warpgroups (TcTile::epilogue) where the products are long: the outputs' code then
    // has the launch's 96 registers a thread (ptxas allocates every role the launch's share), and
    // the key pass waits on its loads one by one, which only long products hide: from 1792 bytes
    // of k per row (1024 measured slower with them, 2048 faster). GAMUT_EXPERIMENT_EPILOGUE_
    // WARPGROUPS=0 / =1 (measurements, tests): never / wherever resident thresholds run.
    const char* epi = std::getenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS");
    const bool epi_on = epi && std::string(epi) == "1", epi_off = epi && std::string(epi) == "0";
    k.options.epilogue_warpgroups = k.options.resident_top && !epi_off && (epi_on || k_bytes > 1792);
    k.options.resident_b = k.options.tma && !resident && resident_b_fits(inst, k.tile, math);
  }
  return k;
}

bool pingpong_form(const Plan& P, InnerMath m, const TileConfig& t) {
  return P.dense.empty() && !P.lists.empty() && !P.when.present() && m != InnerMath::Tf32x3 && t.bm == 64 &&
         t.blocks <= 1 &&
         std::all_of(P.lists.begin(), P.lists.end(), [](const ListOutput& l) { return l.mode == ListMode::Plain; });
}

namespace {

const char* math_name(InnerMath m) {
  switch (m) {
    case InnerMath::F16: return "f16";
    case InnerMath::BF16: return "bf16";
    case InnerMath::Int8: return "8-bit";
    case InnerMath::Tf32: return "tf32";
    case InnerMath::Tf32x3: return "tf32x3";
    case InnerMath::Simt: break;
  }
  return "simt";
}

}  // namespace

KernelTarget kernel_target(int sm_count, size_t smem_per_block, int cc_major, int cc_minor) {
  return KernelTarget{sm_count, smem_per_block, tensor_isa(cc_major, cc_minor), arch_for(cc_major, cc_minor), nullptr};
}

KernelSpec choose_kernel_spec(const Instance& inst, const KernelTarget& target, const KernelRequest& request) {
  KernelSpec k;
  const KernelChoice heuristic =
      choose_kernel(inst, target.sm_count, target.smem_per_block, request.tile, request.masked_joins, request.f32_math,
                    target.isa, request.every_distinct_seen, request.few_kept);
  static_cast<KernelChoice&>(k) = heuristic;
  k.family = kernel_family(inst, heuristic);
  if (request.variant) {
    if (request.tile) throw_usage_error("a kernel variant and a tile were both given: give one");
    std::string why;
    const std::optional<KernelChoice> v = apply_variant(inst, target, request, heuristic, *request.variant, &why);
    if (!v) throw_usage_error(why);
    static_cast<KernelChoice&>(k) = *v;
    k.choice = "forced";
  } else if (!request.tile && request.use_tuned && target.tuned) {
    // The table's winner for this family at the nearest size tuned; one that does not apply
    // here (another layout of the inputs, say) leaves the heuristics' choice.
    if (const TunedEntry* e =
            target.tuned->lookup(k.family, inst.row.size(), inst.col.size(), inst.red.size(), inst.batch))
      if (const std::optional<KernelVariant> v = parse_kernel_variant(e->variant))
        if (const std::optional<KernelChoice> c = apply_variant(inst, target, request, heuristic, *v)) {
          static_cast<KernelChoice&>(k) = *c;
          k.choice = "tuned";
        }
  }
  k.isa = target.isa;
  k.arch = target.arch;
  const CodegenOptions& o = k.options;
  k.mainloop = !o.tensor_cores()                         ? "simt"
               : o.tma                                   ? "wgmma+tma"
               : tc_tile_of(k.tile, o.tensor_math).wgmma ? "wgmma"
                                                         : "mma.sync";
  k.label = k.tile.str() + (o.packed16 ? " packed16" : "") + (o.grouped_join ? " grouped-join" : "");
  if (o.tensor_cores())
    k.label += " " + k.mainloop + " " + math_name(o.tensor_math) + (o.resident_b ? " resident-b" : "") +
               (o.resident_top ? " resident-top" : "") + (o.epilogue_warpgroups ? " epilogue-wg" : "") +
               (o.pingpong ? " pingpong" : "") +
               (o.persistent == 1   ? " persistent"
                : o.persistent == 0 ? " one-tile"
                                    : "");
  k.variant = k.label + " " + k.arch;
  return k;
}

}  // namespace gamut::cuda
