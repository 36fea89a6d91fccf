// The list epilogue of generated kernels without a GPU: argument slots of the global
// thresholds, the shape of the source (one block-wide reservation per list, tile selection
// for top/bottom, per-tile de-duplication for distinct), the shared memory of distinct lists,
// and NVRTC compiles of every list mode, grouping, key type and odd tiles.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen_plans.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"
#include "cuda/codegen/names.h"
#include "cuda/codegen/seen_box.h"
#include "cuda/gpu_engine.h"
#include "list_plans.h"
#include "nvrtc_check.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;
using namespace gamut::cuda;
namespace tp = gamut::testplans;
using tp::distinct_queries;
using tp::list_plans;
using tp::list_query_of;

namespace {

using testnvrtc::kH100Smem;
using testnvrtc::kH100Sms;

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1)) ++n;
  return n;
}

#if GAMUT_HAVE_CUDA
using testnvrtc::compile;

bool spills(const std::string& log) {
  return log.find(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads") == std::string::npos;
}

// Bytes of spill stores in a ptxas -v log (the largest, over the kernels listed).
long spill_bytes(const std::string& log) {
  long most = 0;
  for (size_t p = log.find(" bytes spill stores"); p != std::string::npos; p = log.find(" bytes spill stores", p + 1)) {
    size_t b = log.rfind(", ", p);
    b = b == std::string::npos ? 0 : b + 2;
    most = std::max(most, std::stol(log.substr(b, p - b)));
  }
  return most;
}
#endif

}  // namespace

// Top/bottom lists get one more word, the global thresholds; plain and distinct lists none.
TEST(ListCodegen, ThresholdSlots) {
  for (const auto& [name, p] : list_plans()) {
    SCOPED_TRACE(name);
    const KernelInfo info = kernel_info(p, parse_tile("64x64x8/4x4"));
    const ArgLayout& A = info.args;
    ASSERT_EQ(A.lists.size(), p.lists.size());
    std::set<int> used;
    auto take = [&](int s) {
      ASSERT_GE(s, 7);
      ASSERT_LT(s, A.count);
      EXPECT_TRUE(used.insert(s).second) << "slot " << s << " used twice";
    };
    for (size_t l = 0; l < p.lists.size(); ++l) {
      const ArgLayout::ListSlots& s = A.lists[l];
      const bool tb =
          (p.lists[l].mode == ListMode::Top || p.lists[l].mode == ListMode::Bottom) && p.lists[l].key != kNoExpr;
      EXPECT_EQ(s.threshold >= 0, tb);
      for (int x : {s.counter, s.capacity, s.b, s.i, s.j}) take(x);
      for (int x : s.cols) take(x);
      if (s.key >= 0) take(s.key);
      if (s.threshold >= 0) take(s.threshold);
    }
  }
}

// Every list reserves its rows once per block; top/bottom lists select per tile with the
// global thresholds; nothing appends per warp any more.
TEST(ListCodegen, SourceShape) {
  for (const auto& [name, p] : list_plans()) {
    SCOPED_TRACE(name);
    const std::string src = generate_source(p, parse_tile("64x64x8/4x4"));
    const cg::Names N(p);
    for (size_t l = 0; l < p.lists.size(); ++l) {
      const int li = int(l);
      // Distinct lists reserve their table's rows and overflow rows (gm::TileDistinct).
      const bool distinct = p.lists[l].mode == ListMode::Distinct;
      EXPECT_EQ(count(src, "gm::BlockAppend<Shape>::reserve(" + N.list(li, "marks") + ", " + N.list(li, "append") +
                               ".counter, row)"),
                distinct ? 0u : 1u)
          << src;
      EXPECT_EQ(count(src, "td.reserve(ov, " + N.list(li, "append") + ".counter, row)"), distinct ? 1u : 0u) << src;
      const bool tb = p.lists[l].mode == ListMode::Top || p.lists[l].mode == ListMode::Bottom;
      const std::string per = p.lists[l].per == PerGroup::Row ? "1" : p.lists[l].per == PerGroup::Col ? "2" : "0";
      EXPECT_EQ(count(src, "gm::TileSelect<Shape, " + per + ">::select(st.tmap, rank, " + N.list(li, "marks")),
                tb ? 1u : 0u);
      // No rank is held per pair (TM x TN registers): the selection computes them again.
      EXPECT_EQ(count(src, "unsigned " + N.list(li, "ranks")), 0u);
      EXPECT_EQ(count(src, ".reserve(" + N.list(li, "emitted")), 0u);
    }
    EXPECT_EQ(count(src, "::select("), count(src, "const auto at = [&](int"));
  }
}

TEST(ListCodegen, KernelsCompileWithNvrtc) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  for (const auto& [name, p] : list_plans()) {
    SCOPED_TRACE(name);
    const TileConfig t = choose_tile(p, kH100Sms, kH100Smem);
    const std::string log = compile(generate_source(p, t), "sm_90a");
    EXPECT_NE(log.find("Used "), std::string::npos) << log;
    // The list passes hold one mark bit per pair and compute ranks again where needed. The
    // chosen tile for lists is 128x128x8/8x8 under the two-blocks-per-SM bound of 128 registers,
    // where the second pass spills a few words: measured 1.2-1.3x faster on the H200 (Q5, Q7)
    // than the one-block tile 128x256x16/8x16. A few words, never the accumulators.
    EXPECT_LE(spill_bytes(log), 64) << t.str() << "\n" << log;
  }
#endif
}

// Key-grouped joins (rows and columns reached through jrow / jcol): plain and global top lists.
// (Per-group thresholds index by the row / column the position maps to, so per i / per j would
// work too; join_grouping_form keeps those on the masked launch for now.)
TEST(ListCodegen, GroupedJoinKernelsCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  CodegenOptions o;
  o.grouped_join = true;
  for (ListMode mode : {ListMode::Plain, ListMode::Top}) {
    tp::ListQuery q = list_query_of(mode, PerGroup::None);
    q.join_keys = true;
    q.under_if = true;
    const std::string src = generate_source(tp::list_query(q), parse_tile("64x64x8/4x4"), o);
    SCOPED_TRACE(src);
    EXPECT_NE(src.find("__ldg(jrow + st.i0 + st.tmap.row(m))"), std::string::npos);
    EXPECT_FALSE(spills(compile(src, "sm_90a")));
  }
#endif
}

// Plain and distinct lists store every NaN as the quiet NaN (gm::one_nan, docs/semantics.md): their
// float columns go through it; top/bottom lists keep the values as computed.
TEST(ListCodegen, PlainAndDistinctFloatColumnsHoldOneNan) {
  for (ListMode mode : {ListMode::Plain, ListMode::Distinct, ListMode::Top}) {
    tp::ListQuery q = list_query_of(mode, PerGroup::None);
    const std::string src = generate_source(tp::list_query(q), parse_tile("64x64x8/4x4"));
    SCOPED_TRACE(src);
    EXPECT_EQ(src.find("gm::one_nan(") != std::string::npos, mode != ListMode::Top) << int(mode);
  }
}

// Pass 2 of a plain list is one loop over the marked pairs, each pair's accumulators picked by a
// tree of selects (gm::pick_pair), for every thread tile: no copy of the row's code per pair.
TEST(ListCodegen, PassTwoIsOneLoopOverMarkedPairs) {
  tp::ListQuery q = list_query_of(ListMode::Plain, PerGroup::None);
  for (const char* tile : {"64x64x8/4x4", "128x256x16/8x16"}) {
    SCOPED_TRACE(tile);
    const std::string src = generate_source(tp::list_query(q), parse_tile(tile));
    EXPECT_NE(src.find("while (gm::next_bit(todo, e))"), std::string::npos) << src;
    EXPECT_NE(src.find("gm::pick_pair<"), std::string::npos) << src;
    // The unrolled pass 2 tested each pair's mark bit by static indices.
    EXPECT_EQ(src.find(") & 1u) == 0u) continue;"), std::string::npos) << src;
#if GAMUT_HAVE_CUDA
    compile(src, "sm_90a");
#endif
  }
}

// Tiles whose warps are laid out differently, thread tiles of 1..16, groups (BM, BN) of 16..256.
TEST(ListCodegen, OddTilesCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  const char* tiles[] = {"32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x256x8/8x16", "32x16x32/2x2"};
  for (const auto& [name, p] : list_plans()) {
    if (name != "three_lists_batched" && name != "top_per2" && name != "bottom_per1") continue;
    for (const char* tile : tiles) {
      SCOPED_TRACE(name + " " + tile);
      compile(generate_source(p, parse_tile(tile)), "sm_90a");
    }
  }
  // sm_80: the warp reductions of the selection exist there too.
  for (const auto& [name, p] : list_plans())
    if (name == "three_lists") compile(generate_source(p, parse_tile("128x128x8/8x8")), "sm_80");
#endif
}

// Distinct lists: a table of up to 1024 slots after the aggregate tables, in the dynamic shared
// memory the launch asks for; rows too wide for the budget append as a plain list does.
TEST(ListCodegen, DistinctSharedMemory) {
  const TileConfig t = parse_tile("128x128x8/8x8");
  for (const auto& [name, q] : distinct_queries()) {
    SCOPED_TRACE(name);
    const Plan p = tp::distinct_query(q);
    const cg::SmemPlan s = cg::smem_plan(p, t);
    if (p.lists.size() > 1) EXPECT_GT(s.distinct_slots[1], 0);  // the same region, in turn
    int words = 0;
    for (const ListColumn& c : p.lists[0].columns) words += c.type == CType::I64 || c.type == CType::F64 ? 2 : 1;
    EXPECT_EQ(s.distinct_words[0], words);
    // The table, its rows, and the staged candidates of every thread (several where they fit).
    auto bytes_at = [&](int slots, int cands) { return 4 * size_t(slots * (1 + words) + cands * t.threads() * words); };
    EXPECT_EQ(s.distinct_slots[0], bytes_at(1024, 1) <= cg::kDistinctBudget ? 1024 : 512);
    const int cands =
        bytes_at(s.distinct_slots[0], cg::kDistinctCandidates) <= cg::kDistinctBudget ? cg::kDistinctCandidates : 1;
    EXPECT_EQ(s.distinct_cands[0], cands);
    const size_t bytes = bytes_at(s.distinct_slots[0], cands);
    EXPECT_LE(bytes, cg::kDistinctBudget);
    EXPECT_EQ(s.distinct_off % 16, 0);
    // After the aggregate table (when there is one), inside what the kernel is launched with.
    for (long off : s.table_off)
      if (off >= 0) EXPECT_GE(s.distinct_off, off + long(s.table_slots) * 12);
    EXPECT_GE(kernel_info(p, t).smem_bytes, size_t(s.distinct_off) + bytes);
    const std::string src = generate_source(p, t);
    EXPECT_GE(
        count(src, "gm::TileDistinct<Shape, " + std::to_string(words) + ", " + std::to_string(s.distinct_slots[0]) +
                       (cands > 1 ? ", " + std::to_string(cands) : std::string()) + "> TD;"),
        1u);
    EXPECT_EQ(count(src, "static constexpr unsigned distinct = " + std::to_string(s.distinct_off) + ";"), 1u);
    EXPECT_EQ(count(src, "TD td(smem + Smem::distinct);"), p.lists.size());
  }
  // Small tiles get fewer slots: a quarter of their pairs.
  EXPECT_EQ(cg::smem_plan(tp::distinct_query({}), parse_tile("32x32x8/4x4")).distinct_slots[0], 256);
  // 40 f64 columns (80 words) do not fit: no table, the plain list's rows.
  {
    tp::DistinctQuery q;
    q.h = DType::F64;
    q.cols.assign(40, tp::DistinctCol::H);
    const Plan p = tp::distinct_query(q);
    EXPECT_EQ(cg::smem_plan(p, t).distinct_slots[0], 0);
    const std::string src = generate_source(p, t);
    EXPECT_EQ(count(src, "TileDistinct"), 0u);
    EXPECT_EQ(count(src, "gm::BlockAppend<Shape>::reserve(S_marks, S_append.counter, row)"), 1u);
  }
}

// Distinct lists on the tiles of OddTilesCompile and on sm_80; on the tile chosen for lists no
// more than a few words spill (the rounds pick the pair's accumulators with static indices).
TEST(ListCodegen, DistinctKernelsCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  const char* tiles[] = {"128x128x8/8x8", "32x32x8/4x4",    "64x32x4/4x2",
                         "16x64x16/1x4",  "128x256x8/8x16", "32x16x32/2x2"};
  for (const auto& [name, q] : distinct_queries()) {
    const Plan p = tp::distinct_query(q);
    for (const char* tile : tiles) {
      SCOPED_TRACE(name + " " + tile);
      const std::string log = compile(generate_source(p, parse_tile(tile)), "sm_90a");
      if (std::string(tile) == "128x128x8/8x8") EXPECT_LE(spill_bytes(log), 64) << log;
    }
    SCOPED_TRACE(name + " sm_80");
    compile(generate_source(p, parse_tile("128x128x8/8x8")), "sm_80");
  }
  // A key-grouped join (rows and columns reached through jrow / jcol).
  CodegenOptions o;
  o.grouped_join = true;
  tp::DistinctQuery j;
  j.join_keys = true;
  j.under_if = true;
  const std::string src = generate_source(tp::distinct_query(j), parse_tile("64x64x8/4x4"), o);
  EXPECT_NE(src.find("__ldg(jrow + st.i0 + om.row(e / Shape::TN))"), std::string::npos) << src;
  EXPECT_FALSE(spills(compile(src, "sm_90a")));
#endif
}

// Which distinct lists may run on a seen table (codegen's seen_table_columns): columns that are
// integer lookups of row / column vectors, stored as they are; the kernel renders both paths.
TEST(ListCodegen, SeenTableColumns) {
  using C = tp::DistinctCol;
  auto columns = [](std::vector<C> cols, DType g = DType::I32, DType h = DType::I32) {
    tp::DistinctQuery q;
    q.cols = std::move(cols);
    q.g = g;
    q.h = h;
    const Plan p = tp::distinct_query(q);
    return seen_table_columns(p, 0);
  };
  const Plan gh = tp::distinct_query({});
  const std::vector<int> a = seen_table_columns(gh, 0);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(gh.accesses[size_t(a[0])].pattern, Pattern::RowVec);
  EXPECT_EQ(gh.accesses[size_t(a[1])].pattern, Pattern::ColVec);
  EXPECT_EQ(columns({C::H, C::G, C::H}, DType::I8, DType::I64).size(), 3u);
  EXPECT_EQ(columns({C::G}, DType::Bool).size(), 1u);
  EXPECT_TRUE(columns({C::I, C::J}).empty());                    // axis values: the hash
  EXPECT_TRUE(columns({C::G, C::Acc}).empty());                  // an accumulator
  EXPECT_TRUE(columns({C::G}, DType::F32).empty());              // floats
  EXPECT_TRUE(columns({C::G, C::H, C::G, C::H, C::G}).empty());  // more than kSeenColumns
  const std::string src = generate_source(gh, parse_tile("128x128x8/8x8"));
  EXPECT_EQ(count(src, "const bool S_seen = a.S_seen != 0u;"), 1u);
  EXPECT_EQ(count(src, "gm::SeenCells<Shape> S_cells("), 1u);
  // A lone list with the direct loop reaches the pair loop only on its tile hash: no cell there.
  EXPECT_EQ(count(src, "S_cells.mark(S_seen && S_emitted"), 0u);
  EXPECT_EQ(count(src, "S_cells.flush("), 1u);
  EXPECT_EQ(count(src, "TD td("), 1u);  // the tile hash in the else branches
  // Only lists on seen tables: the direct loop (parts in registers) where every one runs on its
  // table, twice (tiles inside the ranges without bounds tests, edge tiles with them); not with a
  // dense output beside them.
  EXPECT_EQ(count(src, "S_cells.mark_cell(krs0 + kcs0[n]);"), 2u);
  EXPECT_EQ(count(src, "if (tile_inside) {"), 2u);  // the direct loop's and the pair loop's
  tp::DistinctQuery with_table;
  with_table.cols = {C::G};
  with_table.aggregate = true;
  const std::string beside = generate_source(tp::distinct_query(with_table), parse_tile("128x128x8/8x8"));
  EXPECT_EQ(count(beside, "mark_cell"), 0u);
  EXPECT_EQ(count(beside, "S_cells.mark(S_seen && S_emitted, st.tmap.row(m), st.tmap.col(n));"), 1u);  // in pass 1
  tp::DistinctQuery two;
  two.second = {C::H};
  const std::string both = generate_source(tp::distinct_query(two), parse_tile("128x128x8/8x8"));
  EXPECT_EQ(count(both, "if (S_seen && T_seen) {"), 1u);
  EXPECT_EQ(count(both, "mark_cell"), 4u);
  // The pair loop (inside and edge copies) runs where either list is on its table: both mark
  // their cells in pass 1.
  EXPECT_EQ(count(both, "S_cells.mark(S_seen && S_emitted"), 2u);
  EXPECT_EQ(count(both, "T_cells.mark(T_seen && T_emitted"), 2u);
  EXPECT_EQ(count(generate_source(tp::distinct_query(tp::DistinctQuery{{C::I, C::J}}), parse_tile("128x128x8/8x8")),
                  "SeenCells"),
            0u);
}

// A list on a seen table beside one on the tile hash only: the seen table is flushed after the
// pair loop, when the other list's table has had its turn, so the two regions must not overlap
// (they did: the hash's empty slots, all ones, became 32 set cells; fuzz seeds 635180867, 568071701).
TEST(ListCodegen, SeenTablesFollowTheHashTables) {
  using C = tp::DistinctCol;
  tp::DistinctQuery q;
  q.cols = {C::G};
  q.second = {C::I, C::J};  // axis values: the hash only
  const Plan p = tp::distinct_query(q);
  ASSERT_EQ(p.lists.size(), 2u);
  ASSERT_FALSE(seen_table_columns(p, 0).empty());
  ASSERT_TRUE(seen_table_columns(p, 1).empty());
  for (const char* tile : {"128x128x8/8x8", "64x32x8/4x4", "32x32x8/4x4"}) {
    SCOPED_TRACE(tile);
    const cg::SmemPlan s = cg::smem_plan(p, parse_tile(tile));
    ASSERT_GT(s.distinct_slots[1], 0);
    ASSERT_GE(s.seen_off[0], 0);
    EXPECT_GE(size_t(s.seen_off[0]), size_t(s.distinct_off) + s.distinct_bytes);
    const size_t seen_bytes = 4 * size_t(gm::kSeenWords + parse_tile(tile).bm + parse_tile(tile).bn);
    EXPECT_LE(size_t(s.seen_off[0]) + seen_bytes, s.epilogue);
    EXPECT_EQ(s.seen_off[1], -1);
  }
}

// The value box (codegen/seen_box.h): row-major strides, the 32768-cell limit exactly, spans
// beyond int64 and products that would overflow never multiplied past the limit.
TEST(ListCodegen, SeenBoxOfRanges) {
  const auto box = seen_box_of({{-3, 3}, {250, 255}});
  ASSERT_TRUE(box);
  EXPECT_EQ(box->cells, 42);
  EXPECT_EQ(box->words(), 2);
  EXPECT_EQ(box->lo, (std::vector<int64_t>{-3, 250}));
  EXPECT_EQ(box->span, (std::vector<int64_t>{7, 6}));
  EXPECT_EQ(box->stride, (std::vector<int64_t>{6, 1}));
  const auto three = seen_box_of({{0, 1}, {0, 3}, {10, 14}});
  ASSERT_TRUE(three);
  EXPECT_EQ(three->stride, (std::vector<int64_t>{20, 5, 1}));
  EXPECT_EQ(seen_box_of({{-64, 63}, {0, 255}})->cells, kSeenCells);
  EXPECT_EQ(seen_box_of({{-64, 63}, {0, 255}})->words(), 1024);
  EXPECT_FALSE(seen_box_of({{-64, 64}, {0, 255}}));
  EXPECT_EQ(seen_box_of({{-16384, 16383}})->cells, kSeenCells);
  EXPECT_FALSE(seen_box_of({{-16384, 16384}}));
  EXPECT_FALSE(seen_box_of({{INT64_MIN, INT64_MAX}}));      // span 2^64
  EXPECT_FALSE(seen_box_of({{INT64_MIN, 0}}));              // span 2^63 + 1
  EXPECT_FALSE(seen_box_of({{0, 1 << 20}, {0, 1 << 20}}));  // product past the limit
  EXPECT_FALSE(seen_box_of({{0, 40000}, {0, 0}}));
  EXPECT_EQ(seen_box_of({{INT64_MAX, INT64_MAX}, {INT64_MIN, INT64_MIN}})->cells, 1);
  EXPECT_FALSE(seen_box_of({{1, 0}}));  // empty
  EXPECT_FALSE(seen_box_of({}));
  EXPECT_FALSE(seen_box_of({{0, 0}, {0, 0}, {0, 0}, {0, 0}, {0, 0}}));  // five columns
}
