#include "plan/semiring.h"

#include <functional>

namespace gamut {

namespace {

// The access a factor loads, looking through widening casts; -1 when it is not a load.
int loaded(const Plan& p, ExprId id) {
  const Expr& e = p.expr(id);
  if (e.kind == ExprKind::Cast) return loaded(p, e.a);
  return e.kind == ExprKind::Load ? e.index : -1;
}

bool row_side(const Plan& p, int a) {
  Pattern q = p.accesses[size_t(a)].pattern;
  return q == Pattern::RowRed || q == Pattern::RedRow;
}
bool col_side(const Plan& p, int a) {
  Pattern q = p.accesses[size_t(a)].pattern;
  return q == Pattern::RedCol || q == Pattern::ColRed;
}

}  // namespace

SemiringForm semiring_form(const Plan& p) {
  SemiringForm f;
  if (p.accs.size() != 1 || p.inner.size() != 1 || p.inner[0].kind != StmtKind::Update) return f;
  const Stmt& u = p.inner[0];
  const Expr& v = p.expr(u.value);
  ExprId x = kNoExpr, y = kNoExpr;
  std::string op;
  auto binary = [&](BinOp b) { return v.kind == ExprKind::Binary && v.binop == b; };
  auto call2 = [&](Fn fn) { return v.kind == ExprKind::Call && v.fn == fn && v.args.size() == 2; };
  switch (u.update) {
    case UpdateOp::Add:
      if (binary(BinOp::Mul)) { op = "fma"; x = v.a; y = v.b; }
      break;
    case UpdateOp::Max:
      if (binary(BinOp::Add)) { op = "add-max"; x = v.a; y = v.b; }
      else if (call2(Fn::Min)) { op = "max-min"; x = v.args[0]; y = v.args[1]; }
      break;
    case UpdateOp::Min:
      if (binary(BinOp::Add)) { op = "add-min"; x = v.a; y = v.b; }
      else if (call2(Fn::Max)) { op = "min-max"; x = v.args[0]; y = v.args[1]; }
      break;
    case UpdateOp::Or:
      if (binary(BinOp::BitAnd) || binary(BinOp::LogAnd)) { op = "or-and"; x = v.a; y = v.b; }
      break;
    default:
      break;
  }
  if (op.empty()) return f;
  int a = loaded(p, x), b = loaded(p, y);
  if (a < 0 || b < 0) return f;
  if (row_side(p, b) && col_side(p, a)) std::swap(a, b);
  if (!row_side(p, a) || !col_side(p, b)) return f;
  f.op = op;
  f.type = p.accs[0].type;
  f.row_access = a;
  f.col_access = b;
  f.ops_per_step = 2;
  return f;
}

double ops_per_step(const Plan& p) {
  SemiringForm f = semiring_form(p);
  if (f.recognised()) return f.ops_per_step;
  // Count the operator nodes reachable from the inner statements (loads and casts are free).
  double n = 0;
  std::function<void(ExprId)> walk = [&](ExprId id) {
    if (id == kNoExpr) return;
    const Expr& e = p.expr(id);
    if (e.kind == ExprKind::Unary || e.kind == ExprKind::Binary || e.kind == ExprKind::Select || e.kind == ExprKind::Call) n += 1;
    walk(e.a);
    walk(e.b);
    walk(e.c);
    for (ExprId a : e.args) walk(a);
  };
  std::function<void(const std::vector<Stmt>&)> stmts = [&](const std::vector<Stmt>& ss) {
    for (const Stmt& s : ss) {
      walk(s.value);
      walk(s.cond);
      if (s.kind == StmtKind::Update) n += 1;  // the fold itself
      stmts(s.body);
    }
  };
  stmts(p.inner);
  return n;
}

}  // namespace gamut
