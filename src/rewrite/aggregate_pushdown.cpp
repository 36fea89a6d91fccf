#include "rewrite/aggregate_pushdown.h"

#include <sstream>

namespace gamut {

namespace {

// The Load a factor reads, looking through a widening cast; -1 when it is not a plain load.
int load_access(const Plan& p, ExprId id) {
  const Expr& e = p.expr(id);
  if (e.kind == ExprKind::Load) return e.index;
  return -1;
}

bool is_acc(const Plan& p, ExprId id, int acc) {
  const Expr& e = p.expr(id);
  return e.kind == ExprKind::Acc && e.index == acc;
}

std::string range(int64_t b, int64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + ")"; }

}  // namespace

std::optional<PushdownProgram> aggregate_pushdown(const Plan& p, const Instance& inst) {
  // Shape of the query: one sum accumulator fed by A[.] * B[.], one grouped `+=` output.
  if (p.batched || p.k_sequential || !p.typed || p.accs.size() != 1 || !p.lists.empty() || p.dense.size() != 1)
    return std::nullopt;
  const Accumulator& acc = p.accs[0];
  if (acc.monoid != Monoid::Sum || acc.init.i != 0 || acc.init.f != 0.0) return std::nullopt;
  if (p.inner.size() != 1 || p.inner[0].kind != StmtKind::Update || p.inner[0].update != UpdateOp::Add) return std::nullopt;
  const Expr& prod = p.expr(p.inner[0].value);
  if (prod.kind != ExprKind::Binary || prod.binop != BinOp::Mul || prod.type != acc.type) return std::nullopt;
  int a = load_access(p, prod.a), b = load_access(p, prod.b);
  if (a < 0 || b < 0) return std::nullopt;
  auto row_side = [&](int x) { Pattern q = p.accesses[size_t(x)].pattern; return q == Pattern::RowRed || q == Pattern::RedRow; };
  auto col_side = [&](int x) { Pattern q = p.accesses[size_t(x)].pattern; return q == Pattern::RedCol || q == Pattern::ColRed; };
  if (row_side(b) && col_side(a)) std::swap(a, b);
  if (!row_side(a) || !col_side(b)) return std::nullopt;
  if (p.outer.size() != 1 || p.outer[0].kind != StmtKind::Store || !is_acc(p, p.outer[0].value, 0)) return std::nullopt;
  const DenseOutput& out = p.dense[0];
  if (out.op != StoreOp::Add || out.type != acc.type) return std::nullopt;

  // Grouping: C[g[i], h[j]] without `when`, or T[g[i]] with the single join key g[i] == h[j].
  int g_access = -1, h_access = -1;
  bool diagonal = false;
  if (!p.when.present() && out.index.size() == 2 && out.index[0].kind == OutIndex::Lookup &&
      out.index[1].kind == OutIndex::Lookup && out.index[0].axis == AxisRole::Row && out.index[1].axis == AxisRole::Col) {
    g_access = out.index[0].access;
    h_access = out.index[1].access;
  } else if (p.when.keys.size() == 1 && p.when.mask == kNoExpr && out.index.size() == 1 &&
             out.index[0].kind == OutIndex::Lookup && out.index[0].axis == AxisRole::Row &&
             p.accesses[size_t(out.index[0].access)].operand == p.accesses[size_t(p.when.keys[0].row_access)].operand) {
    g_access = p.when.keys[0].row_access;
    h_access = p.when.keys[0].col_access;
    diagonal = true;
  } else {
    return std::nullopt;
  }

  const std::string& A = p.operands[size_t(p.accesses[size_t(a)].operand)].name;
  const std::string& B = p.operands[size_t(p.accesses[size_t(b)].operand)].name;
  const std::string& g = p.operands[size_t(p.accesses[size_t(g_access)].operand)].name;
  const std::string& h = p.operands[size_t(p.accesses[size_t(h_access)].operand)].name;
  for (const std::string& n : {A, B, g, h})
    if (n.rfind("pd_", 0) == 0) return std::nullopt;  // keep the stage queries' own names free

  // Group counts: every g value in range is below G (binding checked that), likewise h.
  auto max_plus_one = [&](int access, const AxisRange& r) {
    const NDArray& v = *inst.inputs[size_t(p.accesses[size_t(access)].operand)];
    int64_t m = 0;
    for (int64_t x = r.begin; x < r.end; ++x) m = std::max(m, v.get_i64(x) + 1);
    return m;
  };
  int64_t G = inst.dense_shapes[0][0];
  int64_t H = diagonal ? max_plus_one(h_access, inst.col) : inst.dense_shapes[0][1];
  const AxisRange &I = inst.row, &J = inst.col, &K = inst.red;

  PushdownProgram prog;
  prog.original_work = double(I.size()) * double(J.size()) * double(K.size());
  // Segment sums are one pass over A and over B; the small product is G x H x K.
  prog.rewritten_work = double(K.size()) * (double(I.size()) + double(J.size())) + double(G) * double(H) * double(K.size());
  // Only where it pays: the rewritten work at most a quarter of the original.
  if (!(prog.rewritten_work * 4 <= prog.original_work)) return std::nullopt;

  bool a_k_minor = p.accesses[size_t(a)].pattern == Pattern::RowRed;  // A[i,k]
  bool b_k_major = p.accesses[size_t(b)].pattern == Pattern::RedCol;  // B[k,j]
  std::ostringstream s1, s2, s3;
  // (G^T A)[g, k] = sum_i [g[i] == g] A[i, k]: a grouped aggregate over the (i, k) grid, one
  // element per pair (the reduction axis has length 1 and no work), fully parallel.
  const std::string ri = "pd_i in " + range(I.begin, I.end), rk = "pd_k in " + range(K.begin, K.end);
  s1 << "where (" << (a_k_minor ? ri + ", " + rk : rk + ", " + ri) << ") {\n"
     << "  pd_s = 0;\n  reduce (pd_u in [0, 1)) { }\n"
     << "  pd_A[" << g << "[pd_i], pd_k] += " << A << (a_k_minor ? "[pd_i, pd_k]" : "[pd_k, pd_i]") << ";\n}\n";
  // (B H)[k, h] = sum_j B[k, j] [h[j] == h]
  const std::string rj = "pd_j in " + range(J.begin, J.end);
  s2 << "where (" << (b_k_major ? rk + ", " + rj : rj + ", " + rk) << ") {\n"
     << "  pd_s = 0;\n  reduce (pd_u in [0, 1)) { }\n"
     << "  pd_B[pd_k, " << h << "[pd_j]] += " << B << (b_k_major ? "[pd_k, pd_j]" : "[pd_j, pd_k]") << ";\n}\n";
  s3 << "where (pd_g in " << range(0, G) << ", pd_h in " << range(0, H) << ")" << (diagonal ? " when (pd_g == pd_h)" : "")
     << " {\n  " << acc.name << " = 0;\n  reduce (pd_k in " << range(K.begin, K.end) << ") {\n"
     << "    " << acc.name << " += pd_A[pd_g, pd_k] * pd_B[pd_k, pd_h];\n  }\n  " << out.name
     << (diagonal ? "[pd_g]" : "[pd_g, pd_h]") << " += " << acc.name << ";\n}\n";
  const std::vector<int64_t> a_dims = {G, K.end}, b_dims = {K.end, H};
  prog.stages.push_back({"push-down: segment sum of " + A + " by " + g, s1.str(), {A, g}, {}, {{"pd_A", a_dims}}});
  prog.stages.push_back({"push-down: segment sum of " + B + " by " + h, s2.str(), {B, h}, {}, {{"pd_B", b_dims}}});
  prog.stages.push_back({"push-down: small product", s3.str(), {}, {"pd_A", "pd_B"}, {{out.name, inst.dense_shapes[0]}}});
  return prog;
}

}  // namespace gamut
