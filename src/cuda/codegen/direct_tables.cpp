// Code generator, aggregates into small outputs (Q3's counts per pair of areas): when every
// aggregate output fits its block table (gm::TableSink direct, at most SLOTS elements), the
// pairs commit with one shared atomic each, at the slot the row and column parts of the output
// position give. The row part is computed once per fragment row, the column part once per
// fragment column (held in registers), and no run combiner or probing code is rendered per
// pair: the general loop's per-pair code (loads of g[i], h[j], key compare, hashed commit) made
// Q3's epilogue ~12K instructions, and the profile showed its warps waiting on the instruction
// cache (bench/NOTES.md). The general loop stays for outputs larger than the table.
#include "cuda/codegen/generator.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {
// Which side of the output position a term of output_index belongs to.
enum class Side { Row, Col, None };
Side side_of(const Plan& P, const OutIndex& x) {
  if (x.kind == OutIndex::Axis)
    return x.axis == AxisRole::Col ? Side::Col : Side::Row;   // the batch index goes with the row
  const Pattern p = P.accesses[size_t(x.access)].pattern;
  return p == Pattern::RowVec ? Side::Row : p == Pattern::ColVec ? Side::Col : Side::None;
}
}  // namespace

bool Gen::direct_tables_form() const {
  if (aggs.empty() || !P.lists.empty() || grouped()) return false;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    if (P.dense[d].is_project() || S.table_off[d] < 0) return false;
    for (const OutIndex& x : output_index(P, int(d)))
      if (side_of(P, x) == Side::None) return false;
  }
  return true;
}

std::string Gen::direct_part(int d, bool row) const {
  const std::vector<OutIndex> idx = output_index(P, d);
  std::string r;
  for (size_t p = 0; p < idx.size(); ++p) {
    if ((side_of(P, idx[p]) == Side::Row) != row) continue;
    std::string term;
    if (idx[p].kind == OutIndex::Lookup) term = "gm::to_i64(" + outer_r.load(idx[p].access) + ")";
    else term = idx[p].axis == AxisRole::Row ? "gm::i64(i)" : idx[p].axis == AxisRole::Col ? "gm::i64(j)" : "gm::i64(b)";
    r += (r.empty() ? "" : " + ") + term + " * os" + to_string(d) + "_" + to_string(p);
  }
  // Positions were checked on the host (every index in range), and the output has at most
  // SLOTS elements here, so each part fits an unsigned.
  return r.empty() ? "0u" : "unsigned(" + r + ")";
}

void Gen::direct_table_loop() {
  // The column parts: one per fragment column, in registers through the loop.
  for (size_t d = 0; d < P.dense.size(); ++d) {
    const std::string n = to_string(d);
    c.line("unsigned kc" + n + "[Shape::TN];");
  }
  c.line("#pragma unroll");
  c.open("for (int n = 0; n < Shape::TN; ++n)");
  c.line("const int j = st.j0 + st.tmap.col(n);");
  for (size_t d = 0; d < P.dense.size(); ++d)
    c.line("kc" + to_string(d) + "[n] = j < col_end ? " + direct_part(int(d), false) + " : 0u;");
  c.close();
  c.line("#pragma unroll");
  c.open("for (int m = 0; m < Shape::TM; ++m)");
  c.line("const int i = st.i0 + st.tmap.row(m);");
  for (size_t d = 0; d < P.dense.size(); ++d)
    c.line("const unsigned kr" + to_string(d) + " = i < row_end ? " + direct_part(int(d), true) + " : 0u;");
  c.line("#pragma unroll");
  c.open("for (int n = 0; n < Shape::TN; ++n)");
  c.line("const int j = st.j0 + st.tmap.col(n);");
  std::string ok = in_range();
  if (has_pass()) ok += " && ((pass[(m * Shape::TN + n) / 32] >> ((m * Shape::TN + n) % 32)) & 1u) != 0";
  c.open("if (" + ok + ")");
  for (size_t a = 0; a < P.accs.size(); ++a)
    c.line("const " + acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_read(int(a)) + ";");
  locals(false, c);
  outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
    if (s.kind != StmtKind::Store) unsupported("a list in a direct-table epilogue");
    const int d = s.target;
    const std::string n = to_string(d);
    out.line("sk" + n + ".add_direct(kr" + n + " + kc" + n + "[n], " + outer_r.expr_as(s.value, P.dense[size_t(d)].type) +
             ");");
  });
  c.close();  // if
  c.close();  // n
  c.close();  // m
}

}  // namespace gamut::cuda::cg
