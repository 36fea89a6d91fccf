// Array accesses: which index patterns of spec section 4 are allowed where.
#include "sema/sema_impl.h"

namespace gamut::sema {

namespace {

bool allowed(Pattern p, Ctx ctx) {
  switch (ctx) {
    case Ctx::Inner:
      return p != Pattern::RowCol && p != Pattern::ColRow;
    case Ctx::Outer: case Ctx::When:
      return p == Pattern::RowVec || p == Pattern::ColVec || p == Pattern::RowCol || p == Pattern::ColRow;
    default:
      return false;
  }
}

std::optional<Pattern> pattern_of(const std::vector<AxisRole>& r) {
  using A = AxisRole;
  if (r.size() == 1) {
    if (r[0] == A::Row) return Pattern::RowVec;
    if (r[0] == A::Col) return Pattern::ColVec;
    if (r[0] == A::Red) return Pattern::RedVec;
    return std::nullopt;
  }
  if (r.size() != 2) return std::nullopt;
  if (r[0] == A::Row && r[1] == A::Red) return Pattern::RowRed;
  if (r[0] == A::Red && r[1] == A::Row) return Pattern::RedRow;
  if (r[0] == A::Red && r[1] == A::Col) return Pattern::RedCol;
  if (r[0] == A::Col && r[1] == A::Red) return Pattern::ColRed;
  if (r[0] == A::Row && r[1] == A::Col) return Pattern::RowCol;
  if (r[0] == A::Col && r[1] == A::Row) return Pattern::ColRow;
  return std::nullopt;
}

}  // namespace

int Analyzer::resolve_access(const AstExpr& e, Ctx ctx) {
  const std::string& n = e.name;
  if (acc_index_.count(n) || local_index_.count(n)) {
    diags_.error(e.span, "'" + n + "' is a scalar value and cannot be indexed");
    return -1;
  }
  if (output_names_.count(n)) {
    diags_.error(e.span, "output '" + n + "' cannot be read; outputs are only written");
    return -1;
  }
  if (list_index_.count(n)) {
    diags_.error(e.span, "list '" + n + "' cannot be read");
    return -1;
  }
  size_t first = 0;
  if (plan_.batched) {
    const std::string& b = plan_.axis(AxisRole::Batch).name;
    if (e.args.empty() || e.args[0]->kind != AstExpr::Ident || e.args[0]->name != b) {
      diags_.error(e.span, "with 'batch (" + b + ")' every access starts with the batch axis: " + n + "[" + b + ", ...]");
      return -1;
    }
    first = 1;
  }
  std::vector<AxisRole> roles;
  for (size_t k = first; k < e.args.size(); ++k) {
    const AstExpr& ix = *e.args[k];
    const Axis* ax = nullptr;
    if (ix.kind == AstExpr::Ident)
      for (const Axis& a : plan_.axes)
        if (a.name == ix.name) ax = &a;
    if (!ax || ax->role == AxisRole::Batch) {
      std::string what = ix.kind == AstExpr::Ident ? "'" + ix.name + "'" : std::string("an expression");
      std::string m = "index of '" + n + "' must be an axis (" + plan_.axes[0].name + ", " + plan_.axes[1].name +
                      " or " + plan_.axes[2].name + "), found " + what;
      if (ax && ax->role == AxisRole::Batch) m = "the batch axis '" + ix.name + "' may only be the first index";
      diags_.error(ix.span, m);
      return -1;
    }
    roles.push_back(ax->role);
  }
  // Rank consistency: one array, one number of dimensions.
  int rank = int(e.args.size());
  if (auto it = operand_rank_.find(n); it != operand_rank_.end() && it->second != rank) {
    Span f = operand_first_[n];
    diags_.error(e.span, "array '" + n + "' is used with " + std::to_string(rank) + " indices here but " +
                             std::to_string(it->second) + " at " + std::to_string(f.line) + ":" + std::to_string(f.col));
    return -1;
  }
  auto pat = pattern_of(roles);
  std::string written = n + "[";
  for (size_t k = 0; k < e.args.size(); ++k) written += (k ? ", " : "") + (e.args[k]->kind == AstExpr::Ident ? e.args[k]->name : "?");
  written += "]";
  if (!pat || !allowed(*pat, ctx)) {
    std::string m = "access pattern " + written + " is not allowed ";
    if (ctx == Ctx::Inner)
      m += "inside 'reduce': matrices are indexed by a spatial axis and the reduction axis (" + n + "[" +
           plan_.axes[0].name + ", " + plan_.axes[2].name + "] or " + n + "[" + plan_.axes[2].name + ", " +
           plan_.axes[1].name + "])";
    else if (pat && pattern_uses_red(*pat))
      m += std::string(ctx == Ctx::When ? "in 'when'" : "after 'reduce'") + ": the reduction axis '" +
           plan_.axes[2].name + "' is only available inside 'reduce'";
    else
      m += "here; allowed: " + n + "[" + plan_.axes[0].name + "], " + n + "[" + plan_.axes[1].name + "], " + n +
           "[" + plan_.axes[0].name + ", " + plan_.axes[1].name + "]";
    diags_.error(e.span, m);
    return -1;
  }
  int op = -1;
  for (size_t k = 0; k < plan_.operands.size(); ++k)
    if (plan_.operands[k].name == n) op = int(k);
  if (op < 0) {
    Operand o;
    o.name = n;
    if (auto it = env_.inputs.find(n); it != env_.inputs.end()) o.dtype = it->second;
    o.kind = OperandKind::Mixed;
    o.span = e.span;
    plan_.operands.push_back(o);
    op = int(plan_.operands.size() - 1);
    operand_rank_[n] = rank;
    operand_first_[n] = e.span;
  }
  for (size_t k = 0; k < plan_.accesses.size(); ++k)
    if (plan_.accesses[k].operand == op && plan_.accesses[k].pattern == *pat) return int(k);
  plan_.accesses.push_back({op, *pat});
  plan_.operands[size_t(op)].accesses.push_back(int(plan_.accesses.size() - 1));
  return int(plan_.accesses.size() - 1);
}

void Analyzer::classify_operands() {
  for (Operand& o : plan_.operands) {
    bool row = false, col = false, rvec = false, cvec = false, kvec = false, out = false;
    for (int a : o.accesses) {
      switch (plan_.accesses[size_t(a)].pattern) {
        case Pattern::RowRed: case Pattern::RedRow: row = true; break;
        case Pattern::RedCol: case Pattern::ColRed: col = true; break;
        case Pattern::RowVec: rvec = true; break;
        case Pattern::ColVec: cvec = true; break;
        case Pattern::RedVec: kvec = true; break;
        case Pattern::RowCol: case Pattern::ColRow: out = true; break;
      }
    }
    int kinds = row + col + rvec + cvec + kvec + out;
    o.kind = kinds != 1 ? OperandKind::Mixed
           : row ? OperandKind::RowMatrix : col ? OperandKind::ColMatrix
           : rvec ? (o.is_index ? OperandKind::IndexVector : OperandKind::RowVector)
           : cvec ? (o.is_index ? OperandKind::IndexVector : OperandKind::ColVector)
           : kvec ? OperandKind::RedVector : OperandKind::OutputShaped;
  }
}

}  // namespace gamut::sema
