// The kernel variants of a bound query (kernel_variants.h): their text, their validity, the
// search space `gamut tune` times, and the family a tuned table files them under.
#include "cuda/codegen/kernel_variants.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"
#include "cuda/codegen/mainloop_tensor.h"

namespace gamut::cuda {

std::string KernelVariant::str() const {
  if (simt) return "simt " + TileConfig{tile.bm, tile.bn, tile.bk, tile.tm, tile.tn}.str();
  std::string s = "wgmma " + std::to_string(tile.bm) + "x" + std::to_string(tile.bn) + " s" +
                  std::to_string(tile.stages) + " b" + std::to_string(tile.blocks);
  if (persistent >= 0) s += persistent ? " persistent" : " one-tile";
  if (epilogue >= 0) s += epilogue ? " epilogue-wg" : " no-epilogue-wg";
  if (pingpong) s += " pingpong";
  return s;
}

std::optional<KernelVariant> parse_kernel_variant(const std::string& text, std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<KernelVariant> {
    if (why) *why = "kernel variant '" + text + "': " + w;
    return std::nullopt;
  };
  std::istringstream in(text);
  std::string kind, word;
  in >> kind;
  KernelVariant v;
  if (kind == "simt") {
    if (!(in >> word)) return no("expected a tile after simt (e.g. simt 128x128x8/8x8)");
    try {
      v.tile = parse_tile(word);
    } catch (const Error& e) {
      return no(e.what());
    }
    if (in >> word) return no("unexpected '" + word + "'");
    return v;
  }
  if (kind != "wgmma") return no("expected 'simt TILE' or 'wgmma BMxBN sSTAGES bBLOCKS [...]'");
  v.simt = false;
  char x = 0, s = 0, b = 0;
  std::string tile, stages, blocks;
  if (!(in >> tile >> stages >> blocks)) return no("expected wgmma BMxBN sSTAGES bBLOCKS");
  std::istringstream t(tile), st(stages), bl(blocks);
  if (!(t >> v.tile.bm >> x >> v.tile.bn) || x != 'x' || !t.eof()) return no("expected BMxBN, got '" + tile + "'");
  if (!(st >> s >> v.tile.stages) || s != 's' || !st.eof()) return no("expected sSTAGES, got '" + stages + "'");
  if (!(bl >> b >> v.tile.blocks) || b != 'b' || !bl.eof()) return no("expected bBLOCKS, got '" + blocks + "'");
  while (in >> word) {
    if (word == "persistent" || word == "one-tile")
      v.persistent = word == "persistent";
    else if (word == "epilogue-wg" || word == "no-epilogue-wg")
      v.epilogue = word == "epilogue-wg";
    else if (word == "pingpong")
      v.pingpong = true;
    else
      return no("unexpected '" + word + "'");
  }
  return v;
}

KernelVariant variant_of(const KernelChoice& k) {
  KernelVariant v;
  v.simt = !k.options.tensor_cores();
  v.tile = k.tile;
  if (v.simt) return v;
  const TcTile t = tc_tile_of(k.tile, k.options.tensor_math, k.options.tma);
  v.tile = TileConfig{t.bm, t.bn, t.bk, 2, t.bn / 4, t.stages, std::max(1, t.blocks)};
  v.persistent = k.options.persistent;
  v.epilogue = -1;
  v.pingpong = k.options.pingpong;
  return v;
}

std::optional<KernelChoice> apply_variant(const Instance& inst, const KernelTarget& target,
                                          const KernelRequest& request, const KernelChoice& heuristic,
                                          const KernelVariant& v, std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<KernelChoice> {
    if (why) *why = "kernel variant '" + v.str() + "' does not apply: " + w;
    return std::nullopt;
  };
  const Plan& P = *inst.plan;
  KernelChoice k;
  if (v.simt) {
    if (heuristic.options.tensor_cores()) return no("the query runs on tensor cores");
    std::string w;
    if (!tile_valid(v.tile, &w)) return no(w);
    const bool big = v.tile.bm * v.tile.bn >= 128 * 256;
    if (estimate_registers(P, v.tile) > (big ? kBigTileBudget : kRegisterBudget))
      return no("its registers would spill");
    k = choose_kernel(inst, target.sm_count, target.smem_per_block, v.tile, request.masked_joins, request.f32_math,
                      target.isa, request.every_distinct_seen);
  } else {
    const CodegenOptions& h = heuristic.options;
    if (!h.tma) return no("the query does not run on the TMA-fed wgmma mainloop");
    const InnerMath m = h.tensor_math;
    if (m == InnerMath::Tf32x3 && (v.tile.bm != 128 || v.tile.bn != 128)) return no("tf32x3 takes 128 x 128 tiles");
    if (v.tile.stages < 1 || v.tile.blocks < 1 || v.tile.blocks > 2) return no("stages from 1, 1 or 2 blocks");
    if (v.persistent == 1 && v.tile.blocks > 1) return no("persistent kernels run one block per SM");
    if (v.pingpong && !pingpong_form(P, m, v.tile))
      return no(
          "ping-pong takes plain selects (only plain lists), no `when`, 64-row tiles, one block per SM, "
          "not tf32x3");
    k = heuristic;
    // (The mainloop's defaults, 4 stages and one block, stay unset: the heuristics' own kernel.)
    k.tile = TileConfig{v.tile.bm,
                        v.tile.bn,
                        128 / element_bytes(m),
                        2,
                        v.tile.bn / 4,
                        v.tile.stages == 4 ? 0 : v.tile.stages,
                        v.tile.blocks == 1 ? 0 : v.tile.blocks};
    k.options.resident_b = false;
    if (v.persistent >= 0) k.options.persistent = v.persistent;
    if (v.tile.blocks > 1) k.options.persistent = -1;  // (not the heuristics' persistent select: one block per SM)
    // Resident thresholds take 128 x 128 in a persistent block (their state beside the ring).
    k.options.resident_top =
        h.resident_top && v.tile.bm == 128 && v.tile.bn == 128 && v.tile.blocks == 1 && k.options.persistent != 0;
    k.options.epilogue_warpgroups =
        k.options.resident_top && (v.epilogue < 0 ? h.epilogue_warpgroups : v.epilogue == 1);
    if (v.epilogue == 1 && !k.options.epilogue_warpgroups) return no("epilogue warpgroups need resident thresholds");
    k.options.pingpong = v.pingpong;
    if (v.pingpong) k.options.persistent = 1;
    std::string w;
    const TcMainloopSpec s = tc_plan_spec(P, k.tile, m, true, false,
                                          k.options.epilogue_warpgroups && k.options.resident_top, k.options.pingpong);
    if (!tc_spec_valid(s, &w)) return no(w);
  }
  try {
    const KernelInfo info = kernel_info(P, k.tile, k.options);
    if (info.smem_bytes > target.smem_per_block) return no("its shared memory exceeds the device's per block");
    // Several blocks share the SM's memory (the block's share and 1 KB each the runtime keeps).
    const int blocks = std::max(1, k.tile.blocks);
    if (blocks > 1 && size_t(blocks) * (info.smem_bytes + 2048) > target.smem_per_block + 1024)
      return no(std::to_string(blocks) + " blocks' shared memory exceeds the SM's");
    if (info.threads * blocks > 2048) return no("too many threads per SM");
    // Two blocks of the TMA-fed kernel (a producer warpgroup beside the consumers) leave the
    // threads under 128 registers from 384 threads on; ptxas then refuses the wgmma (C7602).
    if (blocks > 1 && info.threads * blocks > 512) return no("two blocks of its threads leave too few registers");
  } catch (const Error& e) {
    return no(e.what());
  }
  return k;
}

namespace {

// The SIMT tiles searched: choose_tile_sized's candidates and 128 x 128 with a 16-deep k-slice.
const TileConfig kSimtTiles[] = {{128, 256, 16, 8, 16}, {128, 128, 16, 8, 8}, {128, 128, 8, 8, 8},
                                 {128, 64, 8, 8, 4},    {64, 64, 8, 4, 4},    {64, 32, 8, 4, 4}};

std::vector<KernelVariant> wgmma_candidates(const KernelChoice& h) {
  struct Base {
    int bm, bn, stages, blocks;
  };
  // Two blocks per SM only for 64-row tiles: 128-row ones have 384 threads with the producer,
  // and two of those leave ptxas too few registers (the NOTES' 128x128x3x2 predates the producer).
  static const Base kBases[] = {{128, 256, 4, 1}, {128, 256, 3, 1}, {128, 128, 4, 1},
                                {128, 128, 3, 1}, {128, 128, 6, 1}, {64, 256, 4, 1},
                                {64, 128, 4, 1},  {64, 128, 3, 2},  {64, 128, 4, 2}};
  std::vector<KernelVariant> out;
  for (const Base& b : kBases) {
    KernelVariant v;
    v.simt = false;
    v.tile = TileConfig{b.bm, b.bn, 0, 2, b.bn / 4, b.stages, b.blocks};
    out.push_back(v);
    if (b.blocks > 1) continue;
    for (int p : {0, 1}) {
      KernelVariant q = v;
      q.persistent = p;
      out.push_back(q);
    }
    if (h.options.resident_top && b.bm == 128 && b.bn == 128)
      for (int e : {0, 1}) {
        KernelVariant q = v;
        q.epilogue = e;
        out.push_back(q);
      }
  }
  return out;
}

}  // namespace

std::vector<KernelVariant> kernel_variants(const Instance& inst, const KernelTarget& target,
                                           const KernelRequest& request) {
  if (request.tile) return {};
  const KernelChoice h = choose_kernel(inst, target.sm_count, target.smem_per_block, std::nullopt, request.masked_joins,
                                       request.f32_math, target.isa, request.every_distinct_seen, request.few_kept);
  std::vector<KernelVariant> candidates;
  if (!h.options.tensor_cores()) {
    for (const TileConfig& t : kSimtTiles) {
      KernelVariant v;
      v.tile = t;
      candidates.push_back(v);
    }
  } else if (h.options.tma) {
    candidates = wgmma_candidates(h);
  } else {
    return {};
  }
  // Ping-pong consumer groups where the outputs allow them (plain selects).
  if (h.options.tma && pingpong_form(*inst.plan, h.options.tensor_math, TileConfig{64, 128, 0, 2, 32}))
    for (const auto& [bn, stages] : {std::pair{256, 4}, std::pair{256, 5}, std::pair{128, 4}, std::pair{128, 6}}) {
      KernelVariant v;
      v.simt = false;
      v.tile = TileConfig{64, bn, 0, 2, bn / 4, stages, 1};
      v.pingpong = true;
      candidates.push_back(v);
    }
  std::vector<KernelVariant> out{variant_of(h)};
  std::set<std::string> sources{generate_source(*inst.plan, h.tile, h.options)};
  for (const KernelVariant& v : candidates) {
    const std::optional<KernelChoice> k = apply_variant(inst, target, request, h, v);
    if (k && sources.insert(generate_source(*inst.plan, k->tile, k->options)).second) out.push_back(v);
  }
  return out;
}

std::string kernel_family(const Instance& inst, const KernelChoice& heuristic) {
  const Plan& P = *inst.plan;
  std::string outputs = "product";
  int rank = 0;
  auto heavier = [&](int r, const char* name) {
    if (r > rank) rank = r, outputs = name;
  };
  for (const DenseOutput& d : P.dense)
    if (!d.is_project()) heavier(1, "aggregate");
  for (const ListOutput& l : P.lists)
    heavier(l.mode == ListMode::Plain      ? 2
            : l.mode == ListMode::Distinct ? 3
                                           : 4,
            l.mode == ListMode::Plain      ? "list"
            : l.mode == ListMode::Distinct ? "distinct"
                                           : "top");
  std::string math = "simt";
  if (!P.accs.empty()) math += "-" + std::string(ctype_name(P.accs[0].type));
  if (heuristic.options.tensor_cores())
    math = heuristic.math.math_name();
  else if (heuristic.math.sum_of_products && heuristic.math.row_type == DType::F32 &&
           heuristic.math.col_type == DType::F32)
    math = "f32";
  return (P.batched ? "batched." : "") + outputs + "." + math;
}

}  // namespace gamut::cuda
