// top/bottom lists (outputs/list/codegen/lists.h): before pass 2 the global thresholds gate the tile (a tile
// without a pair at or below them ends there), then the tile's candidates are selected per group
// (gm::TileSelect, src/cuda/outputs/list/device/gamut_list.cuh): the tile's per-group thresholds
// (from and into the global ones) clear the marks of the rows that cannot be among their
// group's N best, and every kept row also goes into its group's reservoir. Each pair's rank
// comes from the accumulators when the key reads nothing else, else from rendering the
// statements that lead to the emit (lets, ifs) for the key alone. Where the shared memory the
// mainloop frees holds the tile's BM x BN ranks (tensor-core tiles), every rank is computed
// once into it and the selection's passes read it there: the rank code appears once instead of
// in each unrolled pass (whose code size kept the warps waiting on the instruction cache), and
// the passes visit only the marked pairs, 8 at a time (gm::StashedRanks: a shorter compile for
// a little kernel time).
// Elsewhere the rank is computed again in each pass rather than held in registers (rows x cols
// ranks spill on the largest tiles).
// With block-resident thresholds (KernelContext::resident_top, gm::ResidentTop) the tile's
// pairs are selected against its rows' (columns') thresholds kept in the block instead: no
// global thresholds, reservoirs or stored ranks.
#include <cstdlib>
#include <set>
#include <string>

#include "cuda/outputs/list/codegen/lists.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

class TopBottomRows final : public ListRows {
 public:
  TopBottomRows(KernelContext& ctx, size_t l)
      : ListRows(ctx, l), resident_(ctx.resident_top), stash_(!resident_ && ctx.tile_ranks_offset() >= 0) {
    // (With epilogue warpgroups the tile barrier stays: without it compute-sanitizer's racecheck
    // reports the hand-over's shared copy as written after the outputs' reads, ordered only by the
    // named barriers' arrive and sync; bench/NOTES.md session 39.)
    ctx.warp_outputs = warp_select() && !ctx.epilogue_warpgroups;
    const PerGroup g = spec().per;
    const gm::ListGroup group = g == PerGroup::Row ? gm::kGroupRow : g == PerGroup::Col ? gm::kGroupCol : gm::kGroupAll;
    select_ = "gm::TileSelect<Shape, " + to_string(int(group)) + ">";
    top_ = spec().mode == ListMode::Top ? "true" : "false";
    walk_expr(P, spec().key, [&](const Expr& e) {
      if (e.kind == ExprKind::Acc) key_accs_.insert(e.index);
      direct_ = direct_ && e.kind != ExprKind::Load && e.kind != ExprKind::Local;
    });
  }

  // One scope. The gate (gm::TileSelect::gate) first clears the marks the global thresholds
  // already exclude; a block left without marks skips the selection, the rows and the
  // reservoirs. A key read from the accumulators alone is tested there on the key itself
  // (rank_within, before any rank is stored); another is ranked into shared memory first and
  // tested on those ranks, or, without that space, passes the gate as it is.
  void append(Code& c) override {
    if (resident_) return append_resident(c);
    c.open("");
    declare(c);
    if (!direct_ && stash_) store_ranks(c);
    c.open("const auto within = [&](int m, int n, unsigned t) -> bool");
    if (direct_) {
      key_scope(c);
      c.line("return gm::rank_within(" + X.outer_r.expr(spec().key) + ", t, " + top_ + ");");
    } else {
      c.line(stash_ ? "return rank(m, n) <= t;" : "(void)m; (void)n; (void)t; return true;");
    }
    c.close(";");
    c.line("// Every thread, together; false in all of them when no pair of the block can be kept.");
    c.open("if (" + select_ + "::gate(" + X.map.object + ", within, " + name("marks") + ", " + name("append") +
           ".limit(), gthr, at, ss))");
    if (direct_ && stash_) store_ranks(c);
    c.line(select_ + "::select(" + X.map.object + ", rank, " + name("marks") + ", " + name("append") +
           ".limit(), gthr, at, ss);");
    rows(c);
    c.line(select_ + "::refresh(gthr, rsv, " + name("append") + ".limit(), at, ss);");
    c.close();
    c.close();
  }

 private:
  // The band's state in the block (reset where the tile starts a band: the block's first tile,
  // or the first column (row) tile of a row (column) band, the grid's order putting those
  // first), the tile's marks selected against it, the rows at or below it appended.
  void append_resident(Code& c) {
    const bool per_row = spec().per == PerGroup::Row;
    // (void: a map type without kWarpRows, so the block-wide selection.)
    const std::string map = block_select_experiment() ? "void" : X.map.type;
    const std::string rt =
        "gm::ResidentTop<Shape, " + std::string(per_row ? "gm::kGroupRow" : "gm::kGroupCol") + ", " + map + ">";
    c.open("");
    c.line("typedef " + rt + " Resident;");
    c.line("Resident::Smem& rs = *reinterpret_cast<Resident::Smem*>(" +
           X.out_smem_at("resident_top", X.resident_top_offset, spec().name + "'s thresholds of the band") + ");");
    c.line(std::string("if (tile == tile_lo || ") + (per_row ? "tile_n" : "tile_m") +
           " == 0) Resident::reset(rs);  // a new band: nothing kept");
    key_lambdas(c);
    c.line("// Every thread of the tile (of the warp where Resident::WARP), together; false in all of them");
    c.line("// when none of its rows is kept.");
    c.open("if (Resident::select<" + top_ + ">(" + X.map.object + ", key, key_at, " + name("marks") + ", " +
           name("append") + ".limit(), rs))");
    rows(c);
    c.close();
    c.close();
  }

  // Resident thresholds per i on the wgmma map (TcMap::kWarpRows): each warp selects its own
  // rows (gm::ResidentTop::WARP). GAMUT_EXPERIMENT_BLOCK_SELECT=1: the block-wide selection
  // instead (an A/B switch, bench/NOTES.md session 39).
  static bool block_select_experiment() {
    const char* block = std::getenv("GAMUT_EXPERIMENT_BLOCK_SELECT");
    return block && std::string(block) == "1";
  }
  // Whether the kernel's tile loop may drop its tile barrier: the warps select their own rows
  // and the tiles are not split between consumer groups (ping-pong keeps the barrier).
  bool warp_select() const {
    return resident_ && spec().per == PerGroup::Row && X.map.warp_rows && X.tile_groups == 1 &&
           !block_select_experiment();
  }

  std::string reserve() const override { return resident_ ? "Resident::reserve" : ListRows::reserve(); }

  // The pair's key: `key(m, n)` for static m, n, which also keeps the pair's accumulator in
  // shared memory (`accs`, (rows * cols, THREADS)), and `key_at(e)` for a run-time e = m * cols
  // + n, from that copy (picking it from the registers would take a select per pair).
  void key_lambdas(Code& c) {
    const AccumulatorMap& M = X.map;
    const TileCoordinates& tc = *X.coords;
    const std::string kt = ctype_cpp(P.expr(spec().key).type);
    c.line(X.acc_type(0) + "* const accs = reinterpret_cast<" + X.acc_type(0) + "*>(" +
           X.out_smem_at("resident_accs", X.resident_accs_offset(), "the tile's accumulators, pair-major") +
           ");  // (" + M.rows + " * " + M.cols + ", Shape::THREADS)");
    c.open("const auto key = [&](int m, int n) -> " + kt);
    key_scope(c, false);  // (straight-line code, each key used once: nothing to keep apart)
    if (direct_ && !key_accs_.count(0)) c.line(X.acc_type(0) + " " + X.acc(0) + " = " + M.value(0) + ";");
    // (With epilogue warpgroups the consumers left them there.)
    if (!X.epilogue_warpgroups)
      c.line(KernelContext::resident_acc_at("accs", "(m * " + M.cols + " + n)") + " = " + X.acc(0) + ";");
    key_value(c);
    c.close(";");
    c.open("const auto key_at = [&](int e) -> " + kt);
    c.line("const int em = e / " + M.cols + ", en = e % " + M.cols + ";");
    c.line("const int i = " + tc.row_at("min(" + M.tile_row0 + " + " + M.row("em") + ", row_end - 1)") +
           ", j = " + tc.col_at("min(" + M.tile_col0 + " + " + M.col("en") + ", col_end - 1)") + ";");
    c.line("(void)i; (void)j;");
    c.line("const " + X.acc_type(0) + " " + X.acc(0) + " = " + pick() + ";");
    key_value(c);
    c.close(";");
  }

  // The thread's accumulator of pair e, from the copy key() made.
  static std::string pick() { return KernelContext::resident_acc_at("accs", "e"); }

  // Pass 2's accumulator of pair e: with resident thresholds from key()'s copy.
  void pick_accs(Code& c, bool static_row) override {
    if (!resident_) return ListRows::pick_accs(c, static_row);
    c.line(X.acc_type(0) + " " + X.acc(0) + " = " + pick() + ";");
  }

  // `return` of the key (wrapped in open ... close: gm::rank32 of it), with i, j and the
  // accumulators in scope.
  void key_value(Code& c, const std::string& open = "", const std::string& close = "") {
    const ListOutput& lo = spec();
    const std::string kt = ctype_cpp(P.expr(lo.key).type);
    if (direct_) {
      c.line("return " + open + X.outer_r.expr(lo.key) + close + ";");
      return;
    }
    c.line(kt + " " + name("key") + " = " + kt + "();");
    X.locals(false, c);
    X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind == StmtKind::Emit && size_t(s.target) == l_)
        out.line(name("key") + " = " + X.outer_r.expr(lo.key) + ";");
    });
    c.line("return " + open + name("key") + close + ";");
  }

  // The pair's rank, named `name`.
  void rank_lambda(Code& c, const std::string& name) {
    c.open("const auto " + name + " = [&](int m, int n) -> unsigned");
    key_scope(c);
    key_value(c, "gm::rank32(", ", " + top_ + ")");
    c.close(";");
  }

  // The selection's shared words, thresholds, reservoirs, the group of a tile row / column in
  // the global thresholds, and the pair's rank: `rank` (or `rank_of`, which store_ranks keeps
  // in shared memory for `rank` to read).
  void declare(Code& c) {
    const ListOutput& lo = spec();
    const AccumulatorMap& M = X.map;
    const TileCoordinates& tc = *X.coords;
    c.line("__shared__ " + select_ + "::Smem ss;  // TileSelect<shape, groups: 0 one, 1 per i, 2 per j>");
    c.line("unsigned* const gthr = reinterpret_cast<unsigned*>(" + X.arg(X.A.lists[l_].threshold) + ");");
    c.line("unsigned* const rsv = reinterpret_cast<unsigned*>(" + X.arg(X.A.lists[l_].reservoir) + ");");
    // Group g of the tile in the global thresholds: (b, i - row begin) per i, (b, j - col begin)
    // per j, from the Instance's ranges (a grouped join's tile ranges are positions).
    if (lo.per == PerGroup::None) {
      c.line("const auto at = [&](int) -> gm::i64 { return 0; };");
    } else {
      const bool row = lo.per == PerGroup::Row;
      const std::string pos = (row ? M.tile_row0 : M.tile_col0) + " + g", end = row ? "row_end" : "col_end";
      c.line("const int gfirst = " + tc.range_first(row) + ", gextent = " + tc.range_end(row) + " - gfirst;");
      c.open("const auto at = [&](int g) -> gm::i64");
      c.line("if (" + pos + " >= " + end + ") return -1;");
      c.line("return gm::i64(b) * gextent + (" + (row ? tc.row_at(pos) : tc.col_at(pos)) + " - gfirst);");
      c.close(";");
    }
    rank_lambda(c, stash_ ? "rank_of" : "rank");
  }

  // i, j and the accumulators the key reads, for the pair (m, n) of a lambda's arguments. The
  // selection ranks every pair of the thread, present or not. A key that reads operands
  // (qn[i] + xn[j] - 2 * dot) reads them at the last row / column of the ranges for pairs past
  // them (those pairs are never marked, so their rank is not used): no read out of bounds, and
  // no branch (an early return here spills registers in the unrolled selection).
  void key_scope(Code& c, bool opaque = true) {
    const AccumulatorMap& M = X.map;
    const TileCoordinates& tc = *X.coords;
    const std::string row_pos = M.tile_row0 + " + " + M.row("m"), col_pos = M.tile_col0 + " + " + M.col("n");
    c.line("const int i = " + tc.row_at(direct_ ? row_pos : "min(" + row_pos + ", row_end - 1)") +
           ", j = " + tc.col_at(direct_ ? col_pos : "min(" + col_pos + ", col_end - 1)") + ";");
    c.line("(void)i; (void)j;");
    for (size_t a = 0; a < P.accs.size(); ++a)
      if (!direct_ || key_accs_.count(int(a)))
        c.line(X.acc_type(int(a)) + " " + X.acc(int(a)) + " = " + M.value(int(a)) + ";" +
               (opaque ? " gm::opaque(" + X.acc(int(a)) + ");" : ""));
  }

  // Every rank computed once into the shared memory the mainloop freed (tensor-core tiles), for
  // the passes of the selection to read there.
  void store_ranks(Code& c) {
    const AccumulatorMap& M = X.map;
    // (rows x cols, THREADS): a thread's ranks pair-major, so a warp's reads are consecutive words.
    c.line("unsigned* const " + name("ranks") + " = reinterpret_cast<unsigned*>(" +
           X.out_smem_at(name("ranks"), size_t(X.tile_ranks_offset()), spec().name + "'s ranks of the tile's pairs") +
           ");  // (" + M.rows + " * " + M.cols + ", Shape::THREADS)");
    c.line("gm::tile_sync<Shape::THREADS>();  // earlier users of the space (mainloop, other lists) are done");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < " + M.rows + "; ++m)");
    c.line("#pragma unroll");
    c.line("for (int n = 0; n < " + M.cols + "; ++n) " + name("ranks") + "[(m * " + M.cols +
           " + n) * Shape::THREADS + int(threadIdx.x)] = rank_of(m, n);");
    c.close();
    // Each thread reads only its own ranks, at any pair (the selection visits the marked ones).
    c.line("// Each thread reads only its own ranks: no barrier between the stores and the reads.");
    c.line("const gm::StashedRanks<Shape::THREADS, " + M.cols + "> rank{" + name("ranks") + "};");
  }

  void stored(Code& c, const std::string& m, const std::string& n) override {
    if (resident_) return;  // (no reservoirs)
    const AccumulatorMap& M = X.map;
    c.line("const int g = " + select_ + "::group(" + M.row(m) + ", " + M.col(n) + ");");
    c.line(select_ + "::keep(rsv, " + name("append") + ".limit(), at(g), g, i, j, gm::rank32(" + name("key") + ", " +
           top_ + "), ss);");
  }

  std::string select_, top_;
  bool resident_;           // block-resident thresholds (gm::ResidentTop)
  bool stash_;              // the tile's ranks fit in the shared memory the mainloop freed
  bool direct_ = true;      // the key reads the accumulators alone
  std::set<int> key_accs_;  // the accumulators it reads
};

}  // namespace

std::unique_ptr<ListRows> make_top_bottom_rows(KernelContext& ctx, size_t l) {
  return std::make_unique<TopBottomRows>(ctx, l);
}

}  // namespace gamut::cuda::cg
