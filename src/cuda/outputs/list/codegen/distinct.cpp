// Distinct lists (outputs/list/codegen/lists.h). Where every column is an integer lookup of a row or column
// vector (seen_table_columns) and the host found the values in a small box, the run's kernel
// argument turns on a seen table (gm::SeenCells, src/cuda/outputs/list/device/gamut_seen.cuh): the
// tile stages each row's and column's part of the cell in shared memory, pass 1 marks every
// emitted pair's cell, and after the loop the tile ORs its bits into the run's bitmap; the set
// cells are the list (outputs/list/finish/seen.h). Otherwise, and for every other distinct list:
//
// the block tile's rows are de-duplicated in shared memory
// (gm::TileDistinct, src/cuda/outputs/list/device/gamut_distinct.cuh) before the block appends them,
// so a tile whose pairs emit few distinct rows appends each of them once instead of once per
// pair. The device hash set after the kernel (outputs/list/finish/order.cpp) still removes repeats across
// tiles. A list whose table does not fit (rows too wide) appends its rows as a plain list does.
//
// Before each round of the table's claims, every thread sweeps its marked pairs: rows the table
// holds already are dropped right there (read-only look-ups, td.holds), and the first row it
// does not hold is the thread's candidate for the round. Without the sweep a thread spent one
// round (block barriers) per marked pair, even with nearly all of its rows in the table. The
// table is still between rounds (each round ends with a barrier; gamut_distinct.cuh), and
// td.round hears whether the sweep dropped rows (`hit`: no sign of a full table). The
// sweep and the overflow stores render rows in a loop unrolled over the map's rows, with a
// run-time loop over the row's marked pairs inside: the accumulator pick is then a select over
// one row's TN accumulators, not over all TM x TN (a 64-way chain of compares and selects per
// rendered row on an 8 x 8 map).
#include <algorithm>

#include "cuda/outputs/list/codegen/lists.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

class DistinctRows final : public ListRows {
 public:
  // Columns of vector lookups (seen_table_columns): a seen table where the host gave one, else
  // the tile hash; the choice is the kernel argument's, the same in every thread.
  DistinctRows(KernelContext& ctx, size_t l) : ListRows(ctx, l), seen_(seen_table_columns(ctx.P, l)) {}

  void before_pairs(Code& c) override {
    if (seen_.empty()) return;
    const TileCoordinates& tc = *X.coords;
    const AccumulatorMap& M = X.map;
    const auto& ls = X.A.lists[l_];
    c.line("// " + spec().name + ": on a seen table where the host found a small box for its values (gm::SeenCells:");
    c.line("// pass 1 marks the rows' cells, nothing is appended), else on the tile hash.");
    c.line("static_assert(gm::SeenCells<Shape>::BYTES == " + to_string(4 * (gm::kSeenWords + X.T.bm + X.T.bn)) +
           ", \"shared memory plan\");");
    c.line("const bool " + name("seen") + " = " + X.arg(ls.seen) + " != 0u;");
    c.line("gm::SeenCells<Shape> " + name("cells") + "(" +
           X.out_smem_at(name("cells"), size_t(X.S.seen_off[l_]), spec().name + "'s seen table (gm::SeenCells)") +
           ", int(" + X.arg(ls.seen_words) + "));");
    c.open("if (" + name("seen") + ")");
    c.line(name("cells") + ".clear();");
    c.line("#pragma unroll 1");
    c.open("for (int p = int(threadIdx.x); p < Shape::BM; p += Shape::THREADS)");
    c.line("const int i = " + tc.row_at(M.tile_row0 + " + p") + ";");
    c.line(name("cells") + ".row_part[p] = " + tc.row_valid("i") + " ? " + part(true) + " : 0u;");
    c.close();
    c.line("#pragma unroll 1");
    c.open("for (int p = int(threadIdx.x); p < Shape::BN; p += Shape::THREADS)");
    c.line("const int j = " + tc.col_at(M.tile_col0 + " + p") + ";");
    c.line(name("cells") + ".col_part[p] = " + tc.col_valid("j") + " ? " + part(false) + " : 0u;");
    c.close();
    c.line(name("cells") + ".ready();");
    c.close();
  }

  void mark(Code& c) override {
    if (seen_.empty()) return ListRows::mark(c);
    const AccumulatorMap& M = X.map;
    // The marks too (the tile hash reads them), then the cell where the table runs: no branch.
    // A lone list with a direct loop reaches the pair loop only on its tile hash: no cell.
    ListRows::mark(c);
    if (P.lists.size() == 1 && !seen_direct_condition(X).empty()) return;
    c.line(name("cells") + ".mark(" + name("seen") + " && " + name("emitted") + ", " + M.row("m") + ", " + M.col("n") +
           ");");
  }

  void append(Code& c) override {
    if (seen_.empty()) return tile_rows(c);
    c.open("if (" + name("seen") + ")");
    c.line(name("cells") + ".flush(reinterpret_cast<unsigned*>(" + X.arg(X.A.lists[l_].seen) + "));");
    c.mid("else");
    tile_rows(c);
    c.close();
  }

 private:
  // The row (column) part of a pair's cell: the columns read at i (at j), each (value - lo) *
  // stride. The host bounded every value: value - lo is below the column's span, so each
  // product, part and cell is below the box's cells (32-bit).
  std::string part(bool row) const {
    const auto& ls = X.A.lists[l_];
    std::string r;
    for (size_t k = 0; k < seen_.size(); ++k) {
      if ((P.accesses[size_t(seen_[k])].pattern == Pattern::RowVec) != row) continue;
      r += std::string(r.empty() ? "" : " + ") + "unsigned(gm::to_i64(" + X.outer_r.load(seen_[k]) + ") - gm::i64(" +
           X.arg(ls.seen_lo[k]) + ")) * unsigned(" + X.arg(ls.seen_stride[k]) + ")";
    }
    return r.empty() ? std::string("0u") : r;
  }

  // The tile hash (gm::TileDistinct), then the device hash set after the kernel.
  void tile_rows(Code& c) {
    const int slots = X.S.distinct_slots[l_];
    const ListOutput& lo = spec();
    if (slots == 0 || lo.key != kNoExpr) {  // rows too wide for the table: as a plain list
      rows(c);
      return;
    }
    const AccumulatorMap& M = X.map;
    const std::string words = to_string(X.S.distinct_words[l_]);
    // Column k's first word in the row.
    std::vector<int> at;
    int w = 0;
    for (const ListColumn& col : lo.columns) {
      at.push_back(w);
      w += ctype_bytes(col.type) > 4 ? 2 : 1;
    }
    c.open("");
    c.line("// " + lo.name + ": each distinct row of the tile once (gm::TileDistinct), then the rows that");
    c.line("// found no room in the table.");
    const int cands = X.S.distinct_cands[l_];
    c.line("typedef gm::TileDistinct<Shape, " + words + ", " + to_string(slots) +
           (cands > 1 ? ", " + to_string(cands) : std::string()) + "> TD;  // (shape, row words, table slots" +
           (cands > 1 ? ", candidates per sweep)" : ")"));
    c.line("static_assert(TD::BYTES <= " + to_string(X.S.distinct_bytes) + ", \"shared memory plan\");");
    c.line(
        "TD td(" +
        X.out_smem_at("distinct", size_t(X.S.distinct_off), "the distinct lists' tables (gm::TileDistinct), in turn") +
        ");");
    c.line("unsigned todo[TD::W], ov[TD::W];");
    c.line("#pragma unroll");
    c.line("for (int w = 0; w < TD::W; ++w) { todo[w] = " + name("marks") + "[w]; ov[w] = 0u; }");
    c.line("gm::opaque_bits(todo);");
    c.line("#pragma unroll 1");
    c.open("for (;;)");
    // The sweep (see above): one copy of the row's code per map row, sm static.
    c.line("// Sweep: rows the table holds are dropped; the first TD::CANDS other rows are this");
    c.line("// thread's candidates (staged; pairs 8 bits each in epack), each offered in a round of its own.");
    c.line("int found = 0;");
    c.line("unsigned epack = 0u;");
    c.line("bool hit = false;");
    // Without these, each map row's addresses were computed once for all rounds and held: spills
    // (distinct_if_batched at 128x128x8/8x8 on sm_90a).
    c.line("gm::opaque(" + M.tile_row0 + ");  // the rows' addresses per round, not held across rounds");
    c.line("gm::opaque(" + M.tile_col0 + ");");
    open_pairs_by_row(c, "todo", "found < TD::CANDS && ");
    c.line("unsigned rw[" + words + "];");
    for (size_t k = 0; k < lo.columns.size(); ++k)
      c.line("gm::row_put(rw + " + to_string(at[k]) + ", " + col(k) + ");");
    c.line("if (td.holds(rw)) {  // dropped: its equal is appended from its slot");
    c.line("  hit = true;");
    c.line("  continue;");
    c.line("}");
    c.line("td.offer(found, rw);");
    c.line("epack |= unsigned(sm * " + M.cols + " + sn) << (8 * found);");
    c.line("++found;");
    c.close();  // while
    c.line("TD::set_row_bits(todo, sm, bits);");
    c.close();  // sm
    c.line("int state = TD::kNext;");
    c.line("#pragma unroll 1");
    c.open("for (int x = 0; x < TD::CANDS; ++x)");
    c.line("state = td.round(x, x < found, int((epack >> (8 * x)) & 255u), hit, todo, ov);  // every thread, together");
    c.line("if (state == TD::kNext) continue;");
    c.line("// Full: this thread's later candidates overflow too. Idle after round 0: the next sweep.");
    c.line("if (state == TD::kFull)");
    c.line("  for (int y = x + 1; y < found; ++y) TD::set(ov, int((epack >> (8 * y)) & 255u));");
    c.line("if (state == TD::kIdle && x > 0) state = TD::kNext;");
    c.line("break;");
    c.close();
    c.line("if (state != TD::kNext) break;  // no candidate anywhere, or the table is full");
    c.close();
    c.line("gm::u64 row;");
    c.line("// Every thread, together; false in all of them when the block has no row.");
    c.open("if (td.reserve(ov, " + name("append") + ".counter, row))");
    // The slots' rows, with the (b, i, j) of the pair that claimed the slot.
    c.line("#pragma unroll 1");
    c.open("for (int s = int(threadIdx.x); s < " + to_string(slots) + "; s += Shape::THREADS)");
    c.line("const unsigned x = td.table[s];");
    c.line("if (x == TD::kEmpty) continue;");
    c.open("if (row < " + name("append") + ".capacity)");
    c.line("const unsigned* const rs = td.row(s);");
    std::vector<std::string> vals;
    for (size_t k = 0; k < lo.columns.size(); ++k) {
      const std::string v = cat("v", to_string(k));
      c.line(ctype_cpp(lo.columns[k].type) + " " + v + "; gm::row_get(rs + " + to_string(at[k]) + ", " + v + ");");
      vals.push_back(v);
    }
    // The map of the thread that claimed the slot.
    c.line("const " + M.type + " om(TD::owner(x));");
    c.line("const int e = TD::pair(x);");
    store(c, vals, X.coords->row_at(M.tile_row0 + " + om.row(e / " + M.cols + ")"),
          X.coords->col_at(M.tile_col0 + " + om.col(e % " + M.cols + ")"));
    c.close();
    c.line("++row;");
    c.close();  // slots
    // Overflow rows: rendered again, as a plain list's (per map row, as the sweep).
    open_pairs_by_row(c, "ov", "");
    vals.clear();
    for (size_t k = 0; k < lo.columns.size(); ++k) vals.push_back(col(k));
    c.open("if (row < " + name("append") + ".capacity)");
    store(c, vals, "i", "j");
    c.close();
    c.line("++row;");
    c.close();  // while
    c.close();  // overflow
    c.close();  // reserve
    c.close();
  }

  const std::vector<int> seen_;  // the columns' accesses where they may take a seen table
  // Opens `for (sm) { bits = row sm of BITS; while (WHILE bits) {` and renders the pair (sm, sn)'s
  // row: sm static (unrolled), so the accumulator pick is a tree over one map row. The caller
  // closes both.
  void open_pairs_by_row(Code& c, const std::string& bits, const std::string& while_also) {
    c.line("#pragma unroll");
    c.open("for (int sm = 0; sm < " + X.map.rows + "; ++sm)");
    c.line("unsigned bits = TD::row_bits(" + bits + ", sm);");
    c.line("#pragma unroll 1");
    c.open("while (" + while_also + "bits != 0u)");
    c.line("const int sn = __ffs(int(bits)) - 1;");
    c.line("bits &= bits - 1u;");
    pair_row(c, "sm", "sn", true);
  }

  // Stores of row `row`: columns from `vals[k]`, then b, i, j.
  void store(Code& c, const std::vector<std::string>& vals, const std::string& i, const std::string& j) {
    const ListOutput& lo = spec();
    const auto& ls = X.A.lists[l_];
    for (size_t k = 0; k < lo.columns.size(); ++k)
      c.line("reinterpret_cast<" + ctype_cpp(lo.columns[k].type) + "*>(" + X.arg(ls.cols[k]) + ")[row] = " + vals[k] +
             ";");
    c.line("reinterpret_cast<int*>(" + X.arg(ls.b) + ")[row] = b;");
    c.line("reinterpret_cast<int*>(" + X.arg(ls.i) + ")[row] = " + i + ";");
    c.line("reinterpret_cast<int*>(" + X.arg(ls.j) + ")[row] = " + j + ";");
  }
};

}  // namespace

std::unique_ptr<ListRows> make_distinct_rows(KernelContext& ctx, size_t l) {
  return std::make_unique<DistinctRows>(ctx, l);
}

// gm::TileDistinct's table, slot rows and per-thread staging, one list at a time after the
// aggregate tables (which are flushed before the lists). A tile of BM x BN pairs gets a quarter
// as many slots (at most kDistinctSlots): more distinct rows than that make the table overflow,
// and then the rows are appended as they are anyway. A list whose table does not fit
// kDistinctBudget bytes even at kDistinctMinSlots gets none (its rows append as a plain list's).
size_t plan_distinct_tables(const Plan& plan, const TileConfig& t, size_t off, SmemPlan& s) {
  s.distinct_slots.assign(plan.lists.size(), 0);
  s.distinct_words.assign(plan.lists.size(), 0);
  s.distinct_cands.assign(plan.lists.size(), 0);
  size_t region = 0;
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    const ListOutput& lo = plan.lists[l];
    // (gm::TileDistinct keeps a map row's pairs in one word: wgmma's rows of 64 pairs append
    // their rows as a plain list's, which only a seen table's fallback does.)
    if (lo.mode != ListMode::Distinct || lo.key != kNoExpr || lo.columns.empty() || t.tn > 32) continue;
    int words = 0;
    for (const ListColumn& c : lo.columns) words += ctype_bytes(c.type) > 4 ? 2 : 1;
    int slots = std::min(kDistinctSlots, std::max(kDistinctMinSlots, t.bm * t.bn / 4));
    auto bytes = [&](int n, int cands) { return size_t(4) * size_t(n + n * words + cands * t.threads() * words); };
    while (slots > kDistinctMinSlots && bytes(slots, 1) > kDistinctBudget) slots /= 2;
    if (bytes(slots, 1) > kDistinctBudget) continue;
    // Several candidates per sweep where their staging fits next to the same table.
    const int cands = bytes(slots, kDistinctCandidates) <= kDistinctBudget ? kDistinctCandidates : 1;
    s.distinct_slots[l] = slots;
    s.distinct_words[l] = words;
    s.distinct_cands[l] = cands;
    region = std::max(region, bytes(slots, cands));
  }
  // Seen tables: one each (they live through the pair loop together). A lone distinct list uses
  // either its seen table or its tile hash, so both may start at the region's offset; with other
  // distinct lists, the seen tables follow the tables' region: they are flushed after the pair
  // loop, when the other lists' tables have had their turns, and a hash table's empty slots
  // (all ones) would become set cells.
  s.seen_off.assign(plan.lists.size(), -1);
  size_t users = 0;
  for (size_t l = 0; l < plan.lists.size(); ++l)
    users += s.distinct_slots[l] > 0 || !seen_table_columns(plan, l).empty();
  region = round16(region);
  s.distinct_bytes = region;
  const size_t seen_at = users > 1 ? region : 0;
  size_t seen = 0;
  for (size_t l = 0; l < plan.lists.size(); ++l)
    if (!seen_table_columns(plan, l).empty()) {
      s.seen_off[l] = long(seen_at + seen);
      seen += round16(size_t(4) * size_t(gm::kSeenWords + t.bm + t.bn));
    }
  region = std::max(region, seen_at + seen);
  if (region == 0) return off;
  s.distinct_off = long(round16(off));
  for (long& o : s.seen_off)
    if (o >= 0) o += s.distinct_off;
  return size_t(s.distinct_off) + region;
}

}  // namespace gamut::cuda::cg

namespace gamut::cuda {

std::vector<int> seen_table_columns(const Plan& plan, size_t l) {
  std::vector<int> access = distinct_lookup_columns(plan, l);
  if (access.size() > size_t(gm::kSeenColumns)) access.clear();
  return access;
}

}  // namespace gamut::cuda
