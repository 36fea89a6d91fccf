#include "rewrite/aggregate_pushdown.h"

#include <sstream>

#include "plan/semiring.h"

namespace gamut {

namespace {

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
  const SemiringForm form = semiring_form(p);
  if (form.op != "fma") return std::nullopt;
  // Factors loaded as they are, no cast: the segment sums then add the same values the
  // product multiplies (a widening cast to another type would change the sums' arithmetic).
  const Expr& prod = p.expr(p.inner[0].value);
  if (p.expr(prod.a).kind != ExprKind::Load || p.expr(prod.b).kind != ExprKind::Load || prod.type != acc.type)
    return std::nullopt;
  const int a = form.row_access, b = form.col_access;
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
  // (One typed pass, NDArray::i64_range: get_i64 per element cost ~6 ns each.)
  auto max_plus_one = [&](int access, const AxisRange& r) {
    const NDArray& v = *inst.inputs[size_t(p.accesses[size_t(access)].operand)];
    if (r.size() <= 0) return int64_t(0);
    int64_t lo = 0, hi = 0;
    v.i64_range(r.begin, r.size(), lo, hi);
    return hi == INT64_MAX ? INT64_MAX : std::max<int64_t>(hi + 1, 0);  // (no overflow)
  };
  int64_t G = inst.dense_shapes[0][0];
  int64_t H = diagonal ? max_plus_one(h_access, inst.col) : inst.dense_shapes[0][1];
  const AxisRange &I = inst.row, &J = inst.col, &K = inst.red;

  PushdownProgram prog;
  prog.original_work = double(I.size()) * double(J.size()) * double(K.size());
  prog.rewritten_work = double(G) * double(K.size()) * double(I.size()) + double(H) * double(K.size()) * double(J.size()) +
                        double(G) * double(H) * double(K.size());
  // Only where it pays: the rewritten work at most a quarter of the original.
  if (!(prog.rewritten_work * 4 <= prog.original_work)) return std::nullopt;

  bool a_k_minor = p.accesses[size_t(a)].pattern == Pattern::RowRed;  // A[i,k]
  bool b_k_major = p.accesses[size_t(b)].pattern == Pattern::RedCol;  // B[k,j]
  std::ostringstream s1, s2, s3;
  // (G^T A)[g, k] = sum_i [g[i] == g] A[i, k]: the one-hot mask makes it an MMLT over i. A select,
  // not a product with the mask: 0 * inf would spread a non-finite value into every group.
  s1 << "where (pd_g in " << range(0, G) << ", pd_k in " << range(K.begin, K.end) << ") {\n"
     << "  pd_s = 0;\n  reduce (pd_i in " << range(I.begin, I.end) << ") {\n"
     << "    pd_s += " << g << "[pd_i] == pd_g ? " << A << (a_k_minor ? "[pd_i, pd_k]" : "[pd_k, pd_i]") << " : 0;\n"
     << "  }\n  pd_A[pd_g, pd_k] = pd_s;\n}\n";
  // (B H)[k, h] = sum_j B[k, j] [h[j] == h]
  s2 << "where (pd_k in " << range(K.begin, K.end) << ", pd_h in " << range(0, H) << ") {\n"
     << "  pd_s = 0;\n  reduce (pd_j in " << range(J.begin, J.end) << ") {\n"
     << "    pd_s += " << h << "[pd_j] == pd_h ? " << B << (b_k_major ? "[pd_k, pd_j]" : "[pd_j, pd_k]") << " : 0;\n"
     << "  }\n  pd_B[pd_k, pd_h] = pd_s;\n}\n";
  s3 << "where (pd_g in " << range(0, G) << ", pd_h in " << range(0, H) << ")" << (diagonal ? " when (pd_g == pd_h)" : "")
     << " {\n  " << acc.name << " = 0;\n  reduce (pd_k in " << range(K.begin, K.end) << ") {\n"
     << "    " << acc.name << " += pd_A[pd_g, pd_k] * pd_B[pd_k, pd_h];\n  }\n  " << out.name
     << (diagonal ? "[pd_g]" : "[pd_g, pd_h]") << " += " << acc.name << ";\n}\n";
  // The same two stages as descriptions, for a dedicated segment-sum kernel. pd_s has the type of
  // `bool * X`: X's load type, bool counting as i32.
  auto sum_type = [&](int access) {
    CType t = compute_type_of(inst.inputs[size_t(p.accesses[size_t(access)].operand)]->dtype);
    return t == CType::Bool ? CType::I32 : t;
  };
  SegmentSum seg_a{A, g, "pd_A", true, a_k_minor, G, I, K, sum_type(a)};
  SegmentSum seg_b{B, h, "pd_B", false, !b_k_major, H, J, K, sum_type(b)};
  prog.stages.push_back({"push-down: segment sum of " + A + " by " + g, s1.str(), {A, g}, {}, {}, seg_a, std::nullopt});
  prog.stages.push_back({"push-down: segment sum of " + B + " by " + h, s2.str(), {B, h}, {}, {}, seg_b, std::nullopt});
  prog.stages.push_back({"push-down: small product", s3.str(), {}, {"pd_A", "pd_B"}, {{out.name, inst.dense_shapes[0]}}, std::nullopt, std::nullopt});
  return prog;
}

}  // namespace gamut
