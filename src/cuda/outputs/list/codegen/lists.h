// Lists (`emit`), shared by outputs/list/codegen/lists.cpp, top_bottom.cpp and distinct.cpp. The list
// operator marks, in pass 1 of the pair loop, the pairs whose row reached the emit (one bit per
// pair); after the loop each list appends its rows (pass 2) with a strategy of its own:
//   ListRows         plain lists: one reservation per block (gm::BlockAppend), then the marked
//                    pairs' rows rendered again and stored in order;
//   TopBottomRows    top/bottom lists: the tile's candidates selected first against the group
//                    thresholds (gm::TileSelect), the kept rows also go into the reservoirs;
//                    or, per i / per j of N <= 32 in a persistent kernel, against the block's
//                    own thresholds of its band (gm::ResidentTop, KernelContext::resident_top);
//   DistinctRows     distinct lists: the tile's rows de-duplicated in shared memory
//                    (gm::TileDistinct) before they are appended; or, for columns of vector
//                    lookups whose values the host found in a small box, the pairs mark
//                    their rows' cells in a seen table (gm::SeenCells) and nothing is appended.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cuda/outputs/output_operator.h"

namespace gamut::cuda::cg {

class ListRows {
 public:
  ListRows(KernelContext& ctx, size_t l) : X(ctx), P(ctx.P), l_(l), n_(std::to_string(l)) {}
  virtual ~ListRows() = default;
  // Before the pair loop, after the marks are declared.
  virtual void before_pairs(Code&) {}
  // After a pair's statements: its mark (efN) into the bits prN.
  virtual void mark(Code& c);
  // Pass 2: the list's rows appended after the pair loop.
  virtual void append(Code& c) { rows(c); }

 protected:
  // One reservation per block for the marked pairs, then their rows: a loop over the marked
  // pairs with one copy of the row's code.
  void rows(Code& c);
  // The reservation's call: gm::BlockAppend's; TopBottomRows with resident thresholds, its own
  // (one per warp where the warps select their own rows).
  virtual std::string reserve() const { return "gm::BlockAppend<Shape>::reserve"; }
  static bool unrolled_experiment();  // GAMUT_EXPERIMENT_UNROLLED_ROWS=1 (lists.cpp)
  void rows_unrolled(Code& c);
  // The row of the thread's pair `e` (a run-time m * cols + n) into efN / ecN_k (and ekN), with
  // i, j and that pair's accumulators in scope.
  void pair_row(Code& c);
  // The same for the pair at map indices em, en (expressions); `static_row`: em is a constant after
  // unrolling (the pick is then a tree over one map row).
  void pair_row(Code& c, const std::string& em, const std::string& en, bool static_row = false);
  void row_decls(Code& c);  // efN, ecN_k, ekN
  // pair_row's accumulators of the pair at em, en (e = em * cols + en): picked from the
  // registers by a tree of selects, or from elsewhere (TopBottomRows: a copy in shared memory).
  virtual void pick_accs(Code& c, bool static_row);
  // The list's Emit statement rendered as the whole row (columns, key).
  void emit_row(const Stmt& s, Code& out) const;
  // Stores of the rendered row at `row` (below the capacity), then ++row. m, n: the names of
  // the pair's map indices.
  void row_stores(Code& c, const std::string& m, const std::string& n);
  // After a row is stored (top/bottom: into its group's reservoir).
  virtual void stored(Code&, const std::string& /*m*/, const std::string& /*n*/) {}
  const ListOutput& spec() const { return P.lists[l_]; }
  // The list's identifiers in the kernel (names.h): `name("marks")` is Top_marks.
  std::string name(const std::string& suffix) const { return X.N.list(int(l_), suffix); }
  const std::string& col(size_t k) const { return X.N.column(int(l_), int(k)); }

  KernelContext& X;
  const Plan& P;
  size_t l_;
  std::string n_;  // the list's number
};

// The run-time condition of the lists' direct loop (every list on its seen table, at most two,
// no dense outputs; ListOperator::direct_loop), or "" where the plan has none. With one list
// the pair loop then runs only where that list is on its tile hash.
std::string seen_direct_condition(const KernelContext& ctx);

std::unique_ptr<ListRows> make_top_bottom_rows(KernelContext& ctx, size_t l);
std::unique_ptr<ListRows> make_distinct_rows(KernelContext& ctx, size_t l);

}  // namespace gamut::cuda::cg
