// Code generator, distinct lists: the block tile's rows are de-duplicated in shared memory
// (gm::TileDistinct, src/cuda/device/outputs/gamut_distinct.cuh) before the block appends them, so a
// tile whose pairs emit few distinct rows appends each of them once instead of once per pair.
// The device hash set after the kernel (lists/order.cpp) still removes repeats across tiles.
#include "cuda/codegen/generator.h"

namespace gamut::cuda::cg {

using std::to_string;

// The row of the thread's pair `e` (m * TN + n, a run-time value) into efN / ecN_k (and the
// key into ekN), with i, j and the accumulators of that pair in scope (also list_rows' compact
// pass 2). The accumulators are picked with static indices
// (a run-time index would move every accumulator to local memory); one copy of the statements
// then serves every pair, where list_rows unrolls them TM x TN times.
void Gen::distinct_pair(size_t l) {
  const std::string n = to_string(l);
  c.line("const int em = e / Shape::TN, en = e % Shape::TN;");
  c.line("const int i = " + row_at("st.i0 + st.tmap.row(em)") + ";");
  c.line("const int j = " + col_at("st.j0 + st.tmap.col(en)") + ";");
  row_decls(l);
  if (!P.accs.empty()) {
    for (size_t a = 0; a < P.accs.size(); ++a)
      c.line(acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_type(int(a)) + "();");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < Shape::TM; ++m)");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < Shape::TN; ++n)");
    c.open("if (m == em && n == en)");
    for (size_t a = 0; a < P.accs.size(); ++a) c.line("acc" + to_string(a) + " = " + acc_read(int(a)) + ";");
    c.close();
    c.close();
    c.close();
  }
  locals(false, c);
  outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Emit && size_t(s.target) == l) outer_leaf(s, out);
  });
  c.line("(void)ef" + n + ";  // marked in pass 1: the row exists");
}

// Stores of row `row` of list l (below the capacity): columns from `vals[k]`, then b, i, j.
void Gen::distinct_store(size_t l, const std::vector<std::string>& vals, const std::string& i,
                         const std::string& j) {
  const ListOutput& lo = P.lists[l];
  const auto& ls = A.lists[l];
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line("reinterpret_cast<" + ctype_cpp(lo.columns[k].type) + "*>(" + arg(ls.cols[k]) + ")[row] = " + vals[k] +
           ";");
  c.line("reinterpret_cast<int*>(" + arg(ls.b) + ")[row] = b;");
  c.line("reinterpret_cast<int*>(" + arg(ls.i) + ")[row] = " + i + ";");
  c.line("reinterpret_cast<int*>(" + arg(ls.j) + ")[row] = " + j + ";");
}

void Gen::list_rows_distinct(size_t l) {
  const int slots = S.distinct_slots[l];
  const ListOutput& lo = P.lists[l];
  if (slots == 0 || lo.key != kNoExpr) {   // rows too wide for the table: as a plain list
    list_rows(l);
    return;
  }
  const std::string n = to_string(l), words = to_string(S.distinct_words[l]);
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
  c.line("typedef gm::TileDistinct<Shape, " + words + ", " + to_string(slots) + "> TD;");
  c.line("static_assert(TD::BYTES <= " + to_string(S.epilogue - size_t(S.distinct_off)) + ", \"shared memory plan\");");
  c.line("TD td(smem + " + to_string(S.distinct_off) + ");");
  c.line("unsigned todo[TD::W], ov[TD::W];");
  c.line("#pragma unroll");
  c.line("for (int w = 0; w < TD::W; ++w) { todo[w] = pr" + n + "[w]; ov[w] = 0u; }");
  c.line("gm::opaque_bits(todo);");
  c.line("#pragma unroll 1");
  c.open("for (;;)");
  c.line("int e = 0;");
  c.line("const bool has = TD::next(todo, e);");
  c.line("unsigned rw[" + words + "] = {};");
  c.open("if (has)");
  distinct_pair(l);
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line("gm::row_put(rw + " + to_string(at[k]) + ", ec" + n + "_" + to_string(k) + ");");
  c.close();
  c.line("if (!td.round(has, e, rw, todo, ov)) break;  // every thread, together");
  c.close();
  c.line("gm::u64 row;");
  c.line("// Every thread, together; false in all of them when the block has no row.");
  c.open("if (td.reserve(ov, la" + n + ".counter, row))");
  // The slots' rows, with the (b, i, j) of the pair that claimed the slot.
  c.line("#pragma unroll 1");
  c.open("for (int s = int(threadIdx.x); s < " + to_string(slots) + "; s += Shape::THREADS)");
  c.line("const unsigned x = td.table[s];");
  c.line("if (x == TD::kEmpty) continue;");
  c.open("if (row < la" + n + ".capacity)");
  c.line("const unsigned* const rs = td.row(s);");
  std::vector<std::string> vals;
  for (size_t k = 0; k < lo.columns.size(); ++k) {
    const std::string v = "v" + to_string(k);
    c.line(ctype_cpp(lo.columns[k].type) + " " + v + "; gm::row_get(rs + " + to_string(at[k]) + ", " + v + ");");
    vals.push_back(v);
  }
  c.line("const gm::ThreadMap<Shape> om(TD::owner(x));");
  c.line("const int e = TD::pair(x);");
  distinct_store(l, vals, row_at("st.i0 + om.row(e / Shape::TN)"), col_at("st.j0 + om.col(e % Shape::TN)"));
  c.close();
  c.line("++row;");
  c.close();  // slots
  // Overflow rows: rendered again, as list_rows does.
  c.line("#pragma unroll 1");
  c.open("for (;;)");
  c.line("int e = 0;");
  c.line("if (!TD::next(ov, e)) break;");
  distinct_pair(l);
  vals.clear();
  for (size_t k = 0; k < lo.columns.size(); ++k) vals.push_back("ec" + n + "_" + to_string(k));
  c.open("if (row < la" + n + ".capacity)");
  distinct_store(l, vals, "i", "j");
  c.close();
  c.line("++row;");
  c.close();  // overflow
  c.close();  // reserve
  c.close();
}

}  // namespace gamut::cuda::cg
