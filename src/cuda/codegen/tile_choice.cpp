// Tile validity, `--tile` parsing and the per-query tile choice (no device needed).
#include "cuda/codegen/tile_choice.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "core/error.h"
#include "cuda/codegen/internal.h"

namespace gamut::cuda {

std::string TileConfig::str() const {
  return std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + "/" + std::to_string(tm) + "x" +
         std::to_string(tn) + (stages > 0 ? "/s" + std::to_string(stages) : "") +
         (blocks > 0 ? "/b" + std::to_string(blocks) : "");
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
  // more blocks within 128 registers. On the f32 product the one-block tile comes closest to
  // cuBLAS, then 128x128x16/8x8, then 128x128x8/8x8.
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
  // distinct rounds): at one block per SM nothing hides that (a top-N query runs slower there
  // than at 128x128x8/8x8), so they start one step down. Plain lists (a pass of marks, then a
  // loop over the marked pairs) start at the top, where they run faster.
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

}  // namespace gamut::cuda
