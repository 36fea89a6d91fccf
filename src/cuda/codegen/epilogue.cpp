// Code generator, the epilogue: every (i, j) of the thread's fragment goes through the output
// statements into the output iterators (project runs, aggregate sinks with block pre-reduction)
// and the lists (pass 1 marks, top/bottom tile selection, pass 2 rows with one reservation per
// block). The iterators see accumulator values and coordinates only, never the mainloop.
#include "cuda/codegen/generator.h"

namespace gamut::cuda::cg {

using std::to_string;

void Gen::outer_leaf(const Stmt& s, Code& out) {
  if (s.kind == StmtKind::Update) unsupported("an accumulator update outside reduce");
  if (s.kind == StmtKind::Emit) {
    const ListOutput& l = P.lists[size_t(s.target)];
    const std::string n = to_string(s.target);
    out.line("ef" + n + " = true;");
    for (size_t k = 0; k < l.columns.size(); ++k)
      out.line("ec" + n + "_" + to_string(k) + " = " + outer_r.expr_as(s.columns[k], l.columns[k].type) + ";");
    if (l.key != kNoExpr) out.line("ek" + n + " = " + outer_r.expr(l.key) + ";");
    return;
  }
  const int d = s.target;
  const std::string n = to_string(d), v = outer_r.expr_as(s.value, P.dense[size_t(d)].type);
  if (P.dense[size_t(d)].is_project()) {
    if (runs_along_j(d)) {
      out.line("pv" + n + "[v] = " + v + ";");
      out.line("pm" + n + "[v] = true;");
    } else {
      out.line("out" + n + "[" + out_offset(d, "j") + "] = " + v + ";");
    }
    return;
  }
  std::string id;
  for (const auto& [st, n] : aggs)
    if (st == &s) id = to_string(n);
  out.line("af" + id + " = true;");
  out.line("ak" + id + " = gm::u64(" + out_offset(d, "j") + ");");
  out.line("av" + id + " = " + v + ";");
}

void Gen::epilogue() {
  bool tables = false;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    const DenseOutput& o = P.dense[d];
    if (o.is_project()) continue;
    if (o.type == CType::Bool) unsupported("an aggregate of bool values");
    const std::string n = to_string(d), t = out_type(int(d));
    if (S.table_off[d] >= 0) {
      tables = true;
      c.line("gm::TableSink<" + t + ", " + store_op_code(o.op) + ", " + to_string(S.table_slots) +
             ", Shape::THREADS> sk" + n + ";");
      c.line("sk" + n + ".init(smem + " + to_string(S.table_off[d]) + ", out" + n + ", gm::u64(" +
             arg(A.dense[d].elems) + "));");
    } else {
      c.line("gm::GlobalSink<" + t + ", " + store_op_code(o.op) + "> sk" + n + "{out" + n + "};");
    }
  }
  for (const auto& [s, id] : aggs) {
    const DenseOutput& o = P.dense[size_t(s->target)];
    c.line("gm::AggRun<" + out_type(s->target) + ", " + store_op_code(o.op) + "> ar" + to_string(id) + ";");
    c.line("ar" + to_string(id) + ".reset();");
  }
  for (size_t l = 0; l < P.lists.size(); ++l)
    c.line("const gm::ListAppend la" + to_string(l) + "{reinterpret_cast<gm::u64*>(" + arg(A.lists[l].counter) +
           "), " + arg(A.lists[l].capacity) + "};");
  list_decls();
  if (tables) c.line("__syncthreads();  // tables initialised");
  const bool direct_loop = direct_tables_form();
  if (direct_loop) {
    std::string all;
    for (size_t d = 0; d < P.dense.size(); ++d) all += (all.empty() ? "sk" : " && sk") + to_string(d) + ".direct";
    c.open("if (" + all + ")");
    direct_table_loop();
    c.close();
    c.open("else");
  }
  c.line("#pragma unroll");
  c.open("for (int m = 0; m < Shape::TM; ++m)");
  c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ";");
  c.line("#pragma unroll");
  c.open("for (int c = 0; c < Shape::TN / Shape::VN; ++c)");
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (runs_along_j(int(d)))
      c.line(out_type(int(d)) + " pv" + to_string(d) + "[Shape::VN]; bool pm" + to_string(d) + "[Shape::VN];");
  c.line("#pragma unroll");
  c.open("for (int v = 0; v < Shape::VN; ++v)");
  c.line("const int n = c * Shape::VN + v;");
  c.line("const int j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (runs_along_j(int(d)))
      c.line("pv" + to_string(d) + "[v] = " + out_type(int(d)) + "(0); pm" + to_string(d) + "[v] = false;");
  for (const auto& [s, id] : aggs)
    c.line("bool af" + to_string(id) + " = false; gm::u64 ak" + to_string(id) + " = 0; " + out_type(s->target) +
           " av" + to_string(id) + " = " + out_type(s->target) + "(0);");
  for (size_t l = 0; l < P.lists.size(); ++l) c.line("bool ef" + to_string(l) + " = false;");
  std::string ok = in_range();
  if (has_pass()) ok += " && ((pass[(m * Shape::TN + n) / 32] >> ((m * Shape::TN + n) % 32)) & 1u) != 0";
  c.open("if (" + ok + ")");
  // With lists, through gm::opaque: nothing computed here is carried into their pass 2.
  for (size_t n = 0; n < P.accs.size(); ++n)
    c.line((P.lists.empty() ? "const " : "") + acc_type(int(n)) + " acc" + to_string(n) + " = " +
           acc_read(int(n)) + ";" + (P.lists.empty() ? "" : " gm::opaque(acc" + to_string(n) + ");"));
  locals(false, c);
  outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Emit) emit_mark(s, out);
    else outer_leaf(s, out);
  });
  c.close();
  for (const auto& [s, id] : aggs)
    c.line("ar" + to_string(id) + ".step(af" + to_string(id) + ", ak" + to_string(id) + ", av" + to_string(id) +
           ", sk" + to_string(s->target) + ");");
  // Lists: pass 1 only marks the pairs whose row reached the emit; top/bottom select among
  // the marks (preselect), the rows are rendered and stored after the loop (list_rows).
  for (size_t l = 0; l < P.lists.size(); ++l)
    c.line("pr" + to_string(l) + "[(m * Shape::TN + n) / 32] |= unsigned(ef" + to_string(l) +
           ") << ((m * Shape::TN + n) % 32);");
  c.close();  // v
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (runs_along_j(int(d)))
      c.line("gm::store_run<" + out_type(int(d)) + ", Shape::VN>(out" + to_string(d) + " + " +
             out_offset(int(d), "st.j0 + st.tmap.col(c * Shape::VN)") + ", pv" + to_string(d) + ", pm" +
             to_string(d) + ", ov" + to_string(d) + ");");
  c.close();  // c
  c.close();  // m
  if (direct_loop) c.close();  // else
  for (const auto& [s, id] : aggs) c.line("ar" + to_string(id) + ".finish(sk" + to_string(s->target) + ");");
  if (tables) {
    c.line("__syncthreads();  // every commit is in its table");
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (S.table_off[d] >= 0) c.line("sk" + to_string(d) + ".flush();");
  }
  for (size_t l = 0; l < P.lists.size(); ++l) {
    if (P.lists[l].mode == ListMode::Distinct) {
      list_rows_distinct(l);
      continue;
    }
    if (!preselected(l)) {
      list_rows(l);
      continue;
    }
    // One scope: the rows pass 2 keeps go into the group reservoirs of the selection.
    c.open("");
    preselect(l);
    list_rows(l);
    c.line("gm::TileSelect<Shape, " + per_code(l) + ">::refresh(gthr, rsv, la" + to_string(l) + ".limit(), at, ss);");
    c.close();
  }
}

void Gen::list_decls() {
  for (size_t l = 0; l < P.lists.size(); ++l) {
    const std::string n = to_string(l);
    c.line("unsigned pr" + n + "[(Shape::TM * Shape::TN + 31) / 32];  // " + P.lists[l].name +
           ": rows that reached the emit");
    c.line("#pragma unroll");
    c.line("for (int w = 0; w < (Shape::TM * Shape::TN + 31) / 32; ++w) pr" + n + "[w] = 0u;");
  }
}

void Gen::preselect(size_t l) {
  const ListOutput& lo = P.lists[l];
  const std::string n = to_string(l), sel = "gm::TileSelect<Shape, " + per_code(l) + ">";
  const std::string kt = ctype_cpp(P.expr(lo.key).type);
  std::set<int> accs;
  bool direct = true;
  walk_expr(P, lo.key, [&](const Expr& e) {
    if (e.kind == ExprKind::Acc) accs.insert(e.index);
    direct = direct && e.kind != ExprKind::Load && e.kind != ExprKind::Local;
  });
  c.line("__shared__ " + sel + "::Smem ss;");
  c.line("unsigned* const gthr = reinterpret_cast<unsigned*>(" + arg(A.lists[l].threshold) + ");");
  c.line("unsigned* const rsv = reinterpret_cast<unsigned*>(" + arg(A.lists[l].reservoir) + ");");
  // Group g of the tile in the global thresholds: (b, i - row begin) per i, (b, j - col begin)
  // per j, from the Instance's ranges (row_begin.. col_end of the arguments; a grouped join's tile ranges are positions).
  const PerGroup per = lo.per;
  if (per == PerGroup::None) {
    c.line("const auto at = [&](int) -> gm::i64 { return 0; };");
  } else {
    const bool row = per == PerGroup::Row;
    const std::string pos = row ? "st.i0 + g" : "st.j0 + g", end = row ? "row_end" : "col_end";
    // The Instance's range: a grouped join's row_begin / row_end are one tile's positions.
    const std::string rb = grouped() ? (row ? "gm::arg_i32(" + arg(ArgLayout::kRowBegin) + ")" : "gm::arg_i32(" + arg(ArgLayout::kColBegin) + ")")
                                     : (row ? "row_begin" : "col_begin");
    const std::string re = grouped() ? (row ? "gm::arg_i32(" + arg(ArgLayout::kRowEnd) + ")" : "gm::arg_i32(" + arg(ArgLayout::kColEnd) + ")")
                                     : (row ? "row_end" : "col_end");
    c.line("const int gfirst = " + rb + ", gextent = " + re + " - gfirst;");
    c.open("const auto at = [&](int g) -> gm::i64");
    c.line("if (" + pos + " >= " + end + ") return -1;");
    c.line("return gm::i64(b) * gextent + (" + (row ? row_at(pos) : col_at(pos)) + " - gfirst);");
    c.close(";");
  }
  c.open("const auto rank = [&](int m, int n) -> unsigned");
  c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ", j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
  c.line("(void)i; (void)j;");
  for (size_t a = 0; a < P.accs.size(); ++a)
    if (!direct || accs.count(int(a)))
      c.line(acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_read(int(a)) + "; gm::opaque(acc" +
             to_string(a) + ");");
  if (direct) {
    c.line("return gm::rank32(" + outer_r.expr(lo.key) + ", " + top_code(l) + ");");
  } else {
    c.line(kt + " ek" + n + " = " + kt + "();");
    locals(false, c);
    outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind == StmtKind::Emit && size_t(s.target) == l) out.line("ek" + n + " = " + outer_r.expr(lo.key) + ";");
    });
    c.line("return gm::rank32(ek" + n + ", " + top_code(l) + ");");
  }
  c.close(";");
  c.line(sel + "::select(st.tmap, rank, pr" + n + ", la" + n + ".limit(), gthr, at, ss);");
}

void Gen::list_rows(size_t l) {
  const std::string n = to_string(l);
  c.open("");
  c.line("gm::u64 row;");
  c.line("// Every thread, together; false in all of them when the block has no row.");
  c.open("if (gm::BlockAppend<Shape>::reserve(pr" + n + ", la" + n + ".counter, row))");
  if (T.tm * T.tn >= kCompactRowsPairs) {
    list_rows_compact(l);
    c.close();  // reserve
    c.close();
    return;
  }
  c.line("#pragma unroll");
  c.open("for (int m = 0; m < Shape::TM; ++m)");
  c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ";");
  c.line("#pragma unroll");
  c.open("for (int n = 0; n < Shape::TN; ++n)");
  c.line("if (((pr" + n + "[(m * Shape::TN + n) / 32] >> ((m * Shape::TN + n) % 32)) & 1u) == 0u) continue;");
  c.line("const int j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
  row_decls(l);
  for (size_t a = 0; a < P.accs.size(); ++a)
    c.line(acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_read(int(a)) + "; gm::opaque(acc" + to_string(a) +
           ");");
  locals(false, c);
  outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Emit && size_t(s.target) == l) outer_leaf(s, out);
  });
  c.line("(void)ef" + n + ";  // marked in pass 1: the row exists");
  row_stores(l, "m", "n");
  c.close();  // n
  c.close();  // m
  c.close();  // reserve
  c.close();
}

// Pass 2 for threads of 128 pairs and more: a loop over the marked pairs with one copy of the
// row's code (the accumulators picked by static indices, Gen::distinct_pair), instead of
// TM x TN unrolled copies. Unrolled, the epilogue of the one-block tile 128x256x16/8x16 was
// ~12K instructions and its warps waited on the instruction cache with no other block to
// hide it (Q5 4.44 ms there against 3.04 for the product, bench/NOTES.md).
void Gen::list_rows_compact(size_t l) {
  const std::string n = to_string(l);
  c.line("unsigned todo[(Shape::TM * Shape::TN + 31) / 32];");
  c.line("#pragma unroll");
  c.line("for (int w = 0; w < (Shape::TM * Shape::TN + 31) / 32; ++w) todo[w] = pr" + n + "[w];");
  c.line("gm::opaque_bits(todo);");
  c.line("int e = 0;");
  c.line("#pragma unroll 1");
  c.open("while (gm::next_bit(todo, e))");
  distinct_pair(l);
  row_stores(l, "em", "en");
  c.close();
}

// The row's variables of list l, before the output statements render into them.
void Gen::row_decls(size_t l) {
  const ListOutput& lo = P.lists[l];
  const std::string n = to_string(l);
  c.line("bool ef" + n + " = false;");
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line(ctype_cpp(lo.columns[k].type) + " ec" + n + "_" + to_string(k) + " = " + ctype_cpp(lo.columns[k].type) +
           "();");
  if (lo.key != kNoExpr)
    c.line(ctype_cpp(P.expr(lo.key).type) + " ek" + n + " = " + ctype_cpp(P.expr(lo.key).type) + "();");
}

// Stores of the rendered row at `row` (below the capacity), then ++row; top/bottom rows also go
// into their group's reservoir. m, n: the names of the pair's fragment indices.
void Gen::row_stores(size_t l, const std::string& m, const std::string& n_) {
  const ListOutput& lo = P.lists[l];
  const auto& ls = A.lists[l];
  const std::string n = to_string(l);
  c.open("if (row < la" + n + ".capacity)");
  for (size_t k = 0; k < lo.columns.size(); ++k)
    c.line("reinterpret_cast<" + ctype_cpp(lo.columns[k].type) + "*>(" + arg(ls.cols[k]) + ")[row] = ec" + n +
           "_" + to_string(k) + ";");
  c.line("reinterpret_cast<int*>(" + arg(ls.b) + ")[row] = b;");
  c.line("reinterpret_cast<int*>(" + arg(ls.i) + ")[row] = i;");
  c.line("reinterpret_cast<int*>(" + arg(ls.j) + ")[row] = j;");
  if (lo.key != kNoExpr)
    c.line("reinterpret_cast<" + ctype_cpp(P.expr(lo.key).type) + "*>(" + arg(ls.key) + ")[row] = ek" + n + ";");
  if (preselected(l)) {
    const std::string sel = "gm::TileSelect<Shape, " + per_code(l) + ">";
    c.line("const int g = " + sel + "::group(st.tmap.row(" + m + "), st.tmap.col(" + n_ + "));");
    c.line(sel + "::keep(rsv, la" + n + ".limit(), at(g), g, i, j, gm::rank32(ek" + n + ", " + top_code(l) + "), ss);");
  }
  c.close();
  c.line("++row;");
}

}  // namespace gamut::cuda::cg
