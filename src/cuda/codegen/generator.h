// Code generator, the kernel's generator state (kernel.cpp: the prologue, the mainloop
// stage and the kernel; epilogue.cpp: the output iterators and the lists;
// distinct.cpp: distinct lists). One Gen renders one plan for one tile.
#pragma once
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cuda/codegen/internal.h"
#include "cuda/codegen/join_groups.h"
#include "plan/semiring.h"

namespace gamut::cuda::cg {

const char* store_op_code(StoreOp op);    // gm::kAdd, ...

struct Gen {
  const Plan& P;
  const TileConfig& T;
  ArgLayout A;
  SmemPlan S;
  std::vector<int> inner_acc;             // accesses the reduce body reads
  std::vector<std::pair<const Stmt*, int>> aggs;   // aggregate Store statements, in source order
  Code c;
  Renderer inner_r, outer_r;
  // Packed 16-bit tropical steps (packed16.cpp): the row and column access, else -1.
  int pk_row = -1, pk_col = -1;
  bool grouped_join = false;

  Gen(const Plan& plan, const TileConfig& tile, const CodegenOptions& options)
      : P(plan), T(tile), A(arg_layout(plan)), S(smem_plan(plan, tile)),
        inner_acc(inner_accesses(plan)), inner_r(plan, Renderer::Ctx::Inner),
        outer_r(plan, Renderer::Ctx::Outer) {
    number_aggregates(P.outer);
    grouped_join = options.grouped_join;
    if (grouped_join && !join_grouping_form(plan)) unsupported("a key-grouped join for this plan");
    if (options.packed16) {
      if (!packed16_form(plan, tile)) unsupported("packed 16-bit steps for this plan or tile");
      const SemiringForm f = semiring_form(plan);
      pk_row = f.row_access;
      pk_col = f.col_access;
    }
  }
  bool packed() const { return pk_row >= 0; }
  // The kernel's read of argument word s (kernel_args.h): `a.NAME`.
  std::string arg(int s) const { return A.field(s); }
  // The epilogue's read of accumulator n at fragment (m, n): packed lanes are widened there, so
  // no second, i32 copy of the accumulators is ever live.
  std::string acc_read(int n) const {
    return packed() ? "st.packed_acc(m, n, red_end > red_begin)" : "st.acc" + std::to_string(n) + "[m][n]";
  }
  // Element type of access a's shared buffers: the column operand of packed steps stays 16-bit.
  std::string smem_cpp(int a) const { return a == pk_col ? "short" : frag_cpp(access_ctype(P, a)); }

  // Key-grouped joins (join_groups.h): blocks run tiles of key-ordered positions, mapped back to
  // row / column indices through jrow / jcol (-1 past the tile's end).
  bool grouped() const { return grouped_join; }
  std::string row_at(const std::string& pos) const {
    return grouped() ? "(" + pos + " < row_end ? __ldg(jrow + " + pos + ") : -1)" : pos;
  }
  std::string col_at(const std::string& pos) const {
    return grouped() ? "(" + pos + " < col_end ? __ldg(jcol + " + pos + ") : -1)" : pos;
  }
  std::string in_range() const { return grouped() ? "i >= 0 && j >= 0" : "i < row_end && j < col_end"; }
  // Whether the `when` pass bits exist: grouped joins match their keys by construction.
  bool has_pass() const { return grouped() ? P.when.mask != kNoExpr : P.when.present(); }
  // The block -> tile order: L2-friendly groups of row tiles, or, with top/bottom lists per i
  // (per j), all row (column) tiles first so that each group's threshold tightens early.
  std::string tile_order() const {
    for (const ListOutput& l : P.lists)
      if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per != PerGroup::None)
        return l.per == PerGroup::Col ? "gm::tile_coords_spread<true>" : "gm::tile_coords_spread<false>";
    return "gm::tile_coords<8>";
  }
  // Project outputs in vector runs along j: not when j follows a key order.
  bool runs_along_j(int d) const { return !grouped() && output_runs_along_j(P, d); }

  void number_aggregates(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Store && !P.dense[size_t(s.target)].is_project())
        aggs.push_back({&s, int(aggs.size())});
      number_aggregates(s.body);
    }
  }

  std::string acc_type(int n) const { return ctype_cpp(P.accs[size_t(n)].type); }
  std::string out_type(int d) const { return ctype_cpp(P.dense[size_t(d)].type); }
  std::string loader(int a) const {
    std::string r = "L";
    return r.append(std::to_string(a));
  }

  // ---- the inner op ------------------------------------------------------------------------
  void inner_update(const Stmt& s, Code& out);

  void locals(bool inner, Code& out) {
    for (size_t n = 0; n < P.locals.size(); ++n)
      if (P.locals[n].inner == inner)
        out.line(ctype_cpp(P.locals[n].type) + " l" + std::to_string(n) + " = " + ctype_cpp(P.locals[n].type) + "();");
  }

  void inner_functor();

  // ---- the stage: loaders, fragments and the inner op per k-slice ----------------------------
  void stage();

  // The body of Stage::step: fragments of every operand, the inner op on every (m, n).
  void generic_step();

  // ---- the kernel --------------------------------------------------------------------------
  // Linear element offset of dense output d at (b, i, jname).
  std::string out_offset(int d, const std::string& jname) const;

  // Accesses read outside the mainloop: `when`, output statements, list keys, output indices.
  std::set<int> outer_accesses() const;

  std::string when_condition() const;

  void kernel_prologue();

  void setup();

  // One output statement of the epilogue (Let and If are the renderer's).
  void outer_leaf(const Stmt& s, Code& out);

  void epilogue();
  // Pass 2 of a list as a loop over the marked pairs (epilogue.cpp), for threads of at
  // least this many pairs.
  static constexpr int kCompactRowsPairs = 128;
  void list_rows_compact(size_t l);
  void row_decls(size_t l);   // efN, ecN_k, ekN of list l
  void row_stores(size_t l, const std::string& m, const std::string& n);   // stores, reservoir, ++row

  // ---- aggregates into outputs that fit the block tables (direct_tables.cpp) ---------------
  // Every output an aggregate whose table maps it directly when small, and whose position is a
  // row part plus a column part: the epilogue then has a second, compact pair loop for that case.
  bool direct_tables_form() const;
  std::string direct_part(int d, bool row) const;   // the row (column) part of d's position
  void direct_table_loop();

  // ---- top / bottom lists: pre-selection per block tile (gm::TileSelect) --------------------
  bool preselected(size_t l) const {
    const ListOutput& lo = P.lists[l];
    return (lo.mode == ListMode::Top || lo.mode == ListMode::Bottom) && lo.key != kNoExpr;
  }
  std::string top_code(size_t l) const { return P.lists[l].mode == ListMode::Top ? "true" : "false"; }
  std::string per_code(size_t l) const {
    const PerGroup g = P.lists[l].per;
    return g == PerGroup::Row ? "1" : g == PerGroup::Col ? "2" : "0";
  }

  // Pass 1 of the lists: only that the row exists (columns and keys come later).
  void emit_mark(const Stmt& s, Code& out) { out.line("ef" + std::to_string(s.target) + " = true;"); }

  // Per-thread marks, one bit per pair: the row reached the emit (pass 1 sets them).
  void list_decls();

  // top/bottom: the tile's per-group thresholds (from and into the global ones) clear the marks
  // of the rows that cannot be among their group's N best. The selection computes each pair's
  // rank again where it needs it rather than holding TM x TN ranks (which spill on the largest
  // tiles): from the accumulators when the key reads nothing else, else by rendering the
  // statements that lead to the emit (lets, ifs) for the key alone.
  void preselect(size_t l);

  // Pass 2 of list l: one global atomic per block reserves the marked rows; the emit's columns
  // are rendered again (no stores, no other lists) for the marked pairs and stored in order.
  // The counter counts rows past the capacity too: the host grows the buffers and reruns.
  void list_rows(size_t l);

  // ---- distinct lists (distinct.cpp) -------------------------------------------------
  // Pass 2 of a distinct list: the tile's rows de-duplicated in shared memory (gm::TileDistinct)
  // and each distinct row appended once, with one reservation per block; list_rows when the
  // plan has no table for the list (smem_plan: rows too wide).
  void list_rows_distinct(size_t l);
  // The row of the thread's pair `e` (a run-time m * TN + n) into efN / ecN_k, with i and j.
  void distinct_pair(size_t l);
  // The stores of list l's row `row`: columns vals[k], then b, i, j.
  void distinct_store(size_t l, const std::vector<std::string>& vals, const std::string& i, const std::string& j);

  std::string run();
};

}  // namespace gamut::cuda::cg
