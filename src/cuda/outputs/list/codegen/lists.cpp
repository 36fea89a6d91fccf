// List outputs (`emit`, outputs/list/codegen/lists.h): rows are appended to column buffers through one
// global counter per list, with one reservation per block. Pass 1 (in the pair loop) only marks
// the pairs whose row reached the emit; pass 2 (after it) renders the emit's columns again for
// the marked pairs (no stores, no other lists) and stores them at consecutive rows. The counter
// counts rows past the capacity too: the host grows the buffers and runs again.
#include "cuda/outputs/list/codegen/lists.h"

#include <cstdlib>

#include "cuda/outputs/output_kind.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

class ListOperator final : public OutputOperator {
 public:
  explicit ListOperator(KernelContext& ctx) : X(ctx), P(ctx.P) {
    for (size_t l = 0; l < P.lists.size(); ++l) {
      const ListOutput& lo = P.lists[l];
      if (lo.mode == ListMode::Distinct)
        rows_.push_back(make_distinct_rows(ctx, l));
      else if ((lo.mode == ListMode::Top || lo.mode == ListMode::Bottom) && lo.key != kNoExpr)
        rows_.push_back(make_top_bottom_rows(ctx, l));
      else
        rows_.push_back(std::make_unique<ListRows>(ctx, l));
    }
  }

  std::vector<std::string> headers() const override {
    if (P.lists.empty()) return {};
    std::vector<std::string> h = {"gamut_list.cuh"};
    if (X.resident_top) h.push_back("gamut_resident_top.cuh");
    for (int slots : X.S.distinct_slots)
      if (slots > 0) {
        h.push_back("gamut_distinct.cuh");
        break;
      }
    for (size_t l = 0; l < P.lists.size(); ++l)
      if (!seen_table_columns(P, l).empty()) {
        h.push_back("gamut_seen.cuh");
        break;
      }
    return h;
  }

  void declare(Code& c) override {
    for (size_t l = 0; l < P.lists.size(); ++l)
      c.line("const gm::ListAppend " + X.N.list(int(l), "append") + "{reinterpret_cast<gm::u64*>(" +
             X.arg(X.A.lists[l].counter) + "), " + X.arg(X.A.lists[l].capacity) + "};");
    // Per-thread marks, one bit per pair: the row reached the emit (pass 1 sets them).
    for (size_t l = 0; l < P.lists.size(); ++l) {
      const std::string marks = X.N.list(int(l), "marks");
      c.line("unsigned " + marks + "[" + X.map.words() + "];  // one bit per pair: its row reached the emit");
      c.line("#pragma unroll");
      c.line("for (int w = 0; w < " + X.map.words() + "; ++w) " + marks + "[w] = 0u;");
    }
    for (auto& r : rows_) r->before_pairs(c);
  }
  void pair_begin(Code& c) override {
    for (size_t l = 0; l < P.lists.size(); ++l) c.line("bool " + X.N.list(int(l), "emitted") + " = false;");
  }
  // Pass 1: only that the row exists (columns and keys come later).
  bool leaf(const Stmt& s, Code& out) override {
    if (s.kind != StmtKind::Emit) return false;
    out.line(X.N.list(s.target, "emitted") + " = true;");
    return true;
  }
  void pair_end(Code& c) override {
    for (auto& r : rows_) r->mark(c);
  }
  void finish(Code& c) override {
    for (auto& r : rows_) r->append(c);
  }

  // Lists that all run on seen tables, in a plan without dense outputs: a direct loop that
  // marks each emitted pair's cell from the row and column parts held in registers (as the
  // aggregates' direct-table loop), without the pair loop's per-pair flags and marks. At most
  // two lists: each holds a column part per map column.
  std::string direct_condition() const override { return seen_direct_condition(X); }

  void direct_loop(Code& c) override {
    // Inside tiles take a copy without the bounds tests (KernelContext::inside_and_edge).
    const AccumulatorMap& M = X.map;
    c.line("// Every list on its seen table: the cells' column parts in registers through the loop.");
    for (size_t l = 0; l < P.lists.size(); ++l) c.line("unsigned kcs" + to_string(l) + "[" + M.cols + "];");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < " + M.cols + "; ++n)");
    for (size_t l = 0; l < P.lists.size(); ++l)
      c.line("kcs" + to_string(l) + "[n] = " + X.N.list(int(l), "cells") + ".col_part[" + M.col("n") + "];");
    c.close();
    X.inside_and_edge(c, [&](bool bounds) { direct_pairs(c, bounds); });
  }

 private:
  void direct_pairs(Code& c, bool bounds) {
    const AccumulatorMap& M = X.map;
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < " + M.rows + "; ++m)");
    c.line("const int i = " + M.tile_row0 + " + " + M.row("m") + ";");
    for (size_t l = 0; l < P.lists.size(); ++l)
      c.line("const unsigned krs" + to_string(l) + " = " + X.N.list(int(l), "cells") + ".row_part[" + M.row("m") +
             "];");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < " + M.cols + "; ++n)");
    c.line("const int j = " + M.tile_col0 + " + " + M.col("n") + ";");
    const std::string test = X.pair_test(bounds);
    if (!test.empty()) c.open("if (" + test + ")");
    for (size_t a = 0; a < P.accs.size(); ++a)
      c.line("const " + X.acc_type(int(a)) + " " + X.acc(int(a)) + " = " + M.value(int(a)) + ";");
    X.locals(false, c);
    X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind != StmtKind::Emit) unsupported("a dense output in a seen-table epilogue");
      const std::string n = to_string(s.target);
      out.line(X.N.list(s.target, "cells") + ".mark_cell(krs" + n + " + kcs" + n + "[n]);");
    });
    if (!test.empty()) c.close();  // if
    c.close();                     // n
    c.close();                     // m
  }

  KernelContext& X;
  const Plan& P;
  std::vector<std::unique_ptr<ListRows>> rows_;
};

}  // namespace

std::string seen_direct_condition(const KernelContext& ctx) {
  const Plan& P = ctx.P;
  if (!P.dense.empty() || P.lists.empty() || P.lists.size() > 2 || !ctx.coords->positions_are_indices()) return "";
  std::string all;
  for (size_t l = 0; l < P.lists.size(); ++l) {
    if (seen_table_columns(P, l).empty()) return "";
    all += (all.empty() ? "" : " && ") + ctx.N.list(int(l), "seen");
  }
  return all;
}

std::unique_ptr<OutputOperator> make_list_operator(KernelContext& ctx) { return std::make_unique<ListOperator>(ctx); }

namespace {

// The lists' kind (outputs/output_kind.h): per list its words (list_output_args), the distinct
// lists' region and seen tables (plan_distinct_tables), one operator for all lists.
class ListKind final : public OutputKind {
 public:
  void args(ArgLayout& L, const Plan& plan, const Names& names) const override {
    for (size_t l = 0; l < plan.lists.size(); ++l) list_output_args(L, plan, names, int(l));
  }
  size_t smem(const Plan& plan, const TileConfig& tile, size_t off, SmemPlan& s) const override {
    return plan_distinct_tables(plan, tile, off, s);
  }
  void operators(KernelContext& ctx, std::vector<std::unique_ptr<OutputOperator>>& out) const override {
    out.push_back(make_list_operator(ctx));
  }
};

}  // namespace

const OutputKind& list_kind() {
  static const ListKind kind;
  return kind;
}

void ListRows::mark(Code& c) {
  c.line(name("marks") + X.map.bit("", "m", "n") + " |= unsigned(" + name("emitted") + ") << " +
         X.map.bit_shift("m", "n") + ";");
}

void ListRows::rows(Code& c) {
  c.open("");
  c.line("gm::u64 row;");
  if (reserve() == ListRows::reserve()) {
    c.line("// Every thread, together; false in all of them when the block has no row.");
  } else {
    c.line("// Every thread of the block (of the warp where Resident::WARP), together; false in all of them");
    c.line("// when it has no row.");
  }
  c.open("if (" + reserve() + "(" + name("marks") + ", " + name("append") + ".counter, row))");
  if (unrolled_experiment() && X.map.pairs < 128) {
    rows_unrolled(c);
    c.close();  // reserve
    c.close();
    return;
  }
  c.line("unsigned todo[" + X.map.words() + "];");
  c.line("#pragma unroll");
  c.line("for (int w = 0; w < " + X.map.words() + "; ++w) todo[w] = " + name("marks") + "[w];");
  c.line("gm::opaque_bits(todo);");
  c.line("int e = 0;");
  c.line("#pragma unroll 1");
  c.open("while (gm::next_bit(todo, e))");
  pair_row(c);
  row_stores(c, "em", "en");
  c.close();  // while
  c.close();  // reserve
  c.close();
}

// GAMUT_EXPERIMENT_UNROLLED_ROWS=1: pass 2 unrolled over the map for threads of fewer than 128
// pairs (plain and distinct lists' rule before session 30; top / bottom lists, which always had
// the loop, get it too under the switch), to compare run times on the device. It shapes the
// source, hence the cache key.
bool ListRows::unrolled_experiment() {
  const char* e = std::getenv("GAMUT_EXPERIMENT_UNROLLED_ROWS");
  return e && std::string(e) == "1";
}

void ListRows::rows_unrolled(Code& c) {
  const AccumulatorMap& M = X.map;
  const TileCoordinates& tc = *X.coords;
  c.line("#pragma unroll");
  c.open("for (int m = 0; m < " + M.rows + "; ++m)");
  c.line("const int i = " + tc.row_at(M.tile_row0 + " + " + M.row("m")) + ";");
  c.line("#pragma unroll");
  c.open("for (int n = 0; n < " + M.cols + "; ++n)");
  c.line("if (((" + name("marks") + M.bit("", "m", "n") + " >> " + M.bit_shift("m", "n") + ") & 1u) == 0u) continue;");
  c.line("const int j = " + tc.col_at(M.tile_col0 + " + " + M.col("n")) + ";");
  row_decls(c);
  for (size_t a = 0; a < P.accs.size(); ++a)
    c.line(X.acc_type(int(a)) + " " + X.acc(int(a)) + " = " + M.value(int(a)) + "; gm::opaque(" + X.acc(int(a)) + ");");
  X.locals(false, c);
  X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Emit && size_t(s.target) == l_) emit_row(s, out);
  });
  c.line("(void)" + name("emitted") + ";  // marked in pass 1: the row exists");
  row_stores(c, "m", "n");
  c.close();  // n
  c.close();  // m
}

// One copy of the row's statements serves every marked pair: unrolled over the map (rows x cols
// copies), the epilogue was 2.6x the instructions, twice the NVRTC time, and slower where many
// pairs are kept (bench/NOTES.md, session 30).
void ListRows::pair_row(Code& c) { pair_row(c, "e / " + X.map.cols, "e % " + X.map.cols); }

void ListRows::pair_row(Code& c, const std::string& em, const std::string& en, bool static_row) {
  const AccumulatorMap& M = X.map;
  c.line("const int em = " + em + ", en = " + en + ";");
  c.line("const int i = " + X.coords->row_at(M.tile_row0 + " + " + M.row("em")) + ";");
  c.line("const int j = " + X.coords->col_at(M.tile_col0 + " + " + M.col("en")) + ";");
  row_decls(c);
  pick_accs(c, static_row);
  X.locals(false, c);
  X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Emit && size_t(s.target) == l_) emit_row(s, out);
  });
  c.line("(void)" + name("emitted") + ";  // marked in pass 1: the row exists");
}

// Picked by a tree of selects on e's bits (gm::pick_pair): a run-time register index would move
// every accumulator to local memory, and a compare per pair costs twice the instructions.
void ListRows::pick_accs(Code& c, bool static_row) {
  const AccumulatorMap& M = X.map;
  for (size_t a = 0; a < P.accs.size(); ++a) {
    const std::string decl = "const " + X.acc_type(int(a)) + " " + X.acc(int(a)) + " = gm::pick_pair<";
    if (static_row) {  // (a tree over the whole map would not fold em's bits: en is not known < cols)
      c.open(decl + M.cols + ">(en, [&](auto pair)");
      c.line("const int m = em;");
      c.line("constexpr int n = decltype(pair)::value;");
    } else {
      c.open(decl + M.rows + " * " + M.cols + ">(em * " + M.cols + " + en, [&](auto pair)");
      c.line("constexpr int m = decltype(pair)::value / " + M.cols + ", n = decltype(pair)::value % " + M.cols + ";");
    }
    c.line("return " + M.value(int(a)) + ";");
    c.close(");");
  }
}

// The row's variables, before the output statements render into them.
void ListRows::row_decls(Code& c) {
  const ListOutput& lo = spec();
  c.line("bool " + name("emitted") + " = false;");
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line(ctype_cpp(lo.columns[k].type) + " " + col(k) + " = " + ctype_cpp(lo.columns[k].type) + "();");
  if (lo.key != kNoExpr)
    c.line(ctype_cpp(P.expr(lo.key).type) + " " + name("key") + " = " + ctype_cpp(P.expr(lo.key).type) + "();");
}

void ListRows::emit_row(const Stmt& s, Code& out) const {
  const ListOutput& lo = spec();
  out.line(name("emitted") + " = true;");
  // (Plain and distinct lists: one NaN, gm::one_nan.)
  const bool one_nan = !lo.ranked();
  for (size_t k = 0; k < lo.columns.size(); ++k) {
    const std::string v = X.outer_r.expr_as(s.columns[k], lo.columns[k].type);
    out.line(col(k) + " = " + (one_nan && is_float(lo.columns[k].type) ? "gm::one_nan(" + v + ")" : v) + ";");
  }
  if (lo.key != kNoExpr) out.line(name("key") + " = " + X.outer_r.expr(lo.key) + ";");
}

void ListRows::row_stores(Code& c, const std::string& m, const std::string& n) {
  const ListOutput& lo = spec();
  const auto& ls = X.A.lists[l_];
  c.open("if (row < " + name("append") + ".capacity)");
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line("reinterpret_cast<" + ctype_cpp(lo.columns[k].type) + "*>(" + X.arg(ls.cols[k]) + ")[row] = " + col(k) +
           ";");
  c.line("reinterpret_cast<int*>(" + X.arg(ls.b) + ")[row] = b;");
  c.line("reinterpret_cast<int*>(" + X.arg(ls.i) + ")[row] = i;");
  c.line("reinterpret_cast<int*>(" + X.arg(ls.j) + ")[row] = j;");
  if (lo.key != kNoExpr)
    c.line("reinterpret_cast<" + ctype_cpp(P.expr(lo.key).type) + "*>(" + X.arg(ls.key) + ")[row] = " + name("key") +
           ";");
  stored(c, m, n);
  c.close();
  c.line("++row;");
}

void list_output_args(ArgLayout& L, const Plan& plan, const Names& N, int l) {
  const ListOutput& lo = plan.lists[size_t(l)];
  ArgLayout::ListSlots s;
  s.counter = L.add(N.list(l, "counter"), lo.name + ": u64 [rows that reached the emit, N]");
  s.capacity = L.add(N.list(l, "capacity"), "rows the buffers hold");
  for (size_t c = 0; c < lo.columns.size(); ++c)
    s.cols.push_back(L.add(N.column(l, int(c)),
                           "column " + lo.columns[c].name + " (" + std::string(ctype_name(lo.columns[c].type)) + ")"));
  s.b = L.add(N.list(l, "rows_b"), "int32 b of each row");
  s.i = L.add(N.list(l, "rows_i"), "int32 i of each row");
  s.j = L.add(N.list(l, "rows_j"), "int32 j of each row");
  if (lo.key != kNoExpr) s.key = L.add(N.list(l, "key"), "the key of each row");
  if (lo.key != kNoExpr && (lo.mode == ListMode::Top || lo.mode == ListMode::Bottom)) {
    s.threshold = L.add(N.list(l, "threshold"), "u32 rank per group, lowered by the tiles");
    s.reservoir = L.add(N.list(l, "reservoir"), "u32 [groups][slots] ranks of kept rows, or 0");
  }
  if (!seen_table_columns(plan, size_t(l)).empty()) {
    s.seen = L.add(N.list(l, "seen"), "u32 bitmap of the columns' value box (gm::SeenCells), or 0: the tile hash");
    s.seen_words = L.add(N.list(l, "seen_words"), "words of the bitmap in use");
    for (size_t c = 0; c < lo.columns.size(); ++c) {
      s.seen_lo.push_back(
          L.add(N.list(l, "seen_lo" + to_string(c)), "i64 first value of column " + lo.columns[c].name));
      s.seen_stride.push_back(
          L.add(N.list(l, "seen_stride" + to_string(c)), "cells per step of column " + lo.columns[c].name));
    }
  }
  L.lists.push_back(s);
}

}  // namespace gamut::cuda::cg
