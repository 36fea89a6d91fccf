#include "rewrite/list_provenance.h"

#include <cstring>

namespace gamut {
namespace {

ExprId add_expr(Plan& p, Expr e) {
  p.exprs.push_back(std::move(e));
  return ExprId(p.exprs.size() - 1);
}

ExprId axis_expr(Plan& p, AxisRole r) {
  Expr e;
  e.kind = ExprKind::Axis;
  e.type = CType::I32;
  e.index = int(r);
  return add_expr(p, e);
}

ExprId zero_expr(Plan& p) {
  Expr e;
  e.kind = ExprKind::Const;
  e.type = CType::I32;
  e.value = Scalar::of_int(CType::I32, 0);
  return add_expr(p, e);
}

// Appends `extra[l]` to every emit into a ranked list l, wherever it sits (inside ifs too).
void extend_emits(std::vector<Stmt>& stmts, const std::vector<std::vector<ExprId>>& extra) {
  for (Stmt& s : stmts) {
    if (s.kind == StmtKind::Emit && !extra[size_t(s.target)].empty())
      s.columns.insert(s.columns.end(), extra[size_t(s.target)].begin(), extra[size_t(s.target)].end());
    extend_emits(s.body, extra);
  }
}

}  // namespace

bool has_provenance(const ListOutput& list) {
  const size_t n = list.columns.size();
  return list.ranked() && n >= size_t(kProvenanceColumnCount) &&
         list.columns[n - kProvenanceColumnCount].name == kProvenanceColumns[0];
}

Plan with_list_provenance(const Plan& plan) {
  Plan p = plan;
  std::vector<std::vector<ExprId>> extra(p.lists.size());
  for (size_t l = 0; l < p.lists.size(); ++l) {
    ListOutput& list = p.lists[l];
    if (!list.ranked() || has_provenance(list)) continue;
    const ExprId b = p.batched ? axis_expr(p, AxisRole::Batch) : zero_expr(p);
    extra[l] = {list.key, b, axis_expr(p, AxisRole::Row), axis_expr(p, AxisRole::Col)};
    list.columns.push_back({kProvenanceColumns[0], p.expr(list.key).type});
    for (int c = 1; c < kProvenanceColumnCount; ++c) list.columns.push_back({kProvenanceColumns[c], CType::I32});
  }
  extend_emits(p.outer, extra);
  p.rewrites.push_back("list-provenance");
  return p;
}

}  // namespace gamut
