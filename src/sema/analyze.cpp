// Query-level analysis: axes, accumulators, statements, outputs, `when`, monoids.
#include <cmath>
#include <functional>
#include <limits>
#include <set>

#include "plan/semiring.h"
#include "sema/sema_impl.h"

namespace gamut::sema {

namespace {
std::string pos(Span s) { return std::to_string(s.line) + ":" + std::to_string(s.col); }

// Constant folding for accumulator initial values: numbers, inf, unary minus, casts.
std::optional<Scalar> const_value(const AstExpr& e) {
  switch (e.kind) {
    case AstExpr::Int: return Scalar::of_int(CType::I64, e.ival);
    case AstExpr::Float: return Scalar::of_float(CType::F64, e.fval);
    case AstExpr::Ident:
      if (e.name == "inf") return Scalar::of_float(CType::F64, std::numeric_limits<double>::infinity());
      return std::nullopt;
    case AstExpr::Unary: {
      auto v = const_value(*e.args[0]);
      if (!v || e.op != Tok::Minus) return std::nullopt;
      if (v->type == CType::F64) { *v = Scalar::of_float(CType::F64, -v->f); }
      else { v->i = int64_t(0ull - uint64_t(v->i)); v->f = double(v->i); }
      return v;
    }
    default: return std::nullopt;
  }
}
}  // namespace

Plan Analyzer::run() {
  analyze_axes();
  // Names written after `reduce` are outputs; collect them first so reads can be rejected.
  collect_outputs(ast_.outer);
  declare_accs();
  infer_acc_types();
  local_index_.clear();
  plan_.inner = lower_inner(ast_.inner);
  local_index_.clear();
  lower_when();
  plan_.outer = lower_outer(ast_.outer);
  classify_monoids();
  finish_output_types();
  lower_finish();
  classify_operands();
  bool typed = true;
  for (const Operand& o : plan_.operands) typed &= o.dtype.has_value();
  for (const Accumulator& a : plan_.accs) typed &= a.type != CType::Unknown;
  plan_.typed = typed && !diags_.any();
  return std::move(plan_);
}

void Analyzer::analyze_axes() {
  auto add_axis = [&](const AstAxis& a, AxisRole role) {
    for (const Axis& x : plan_.axes)
      if (x.name == a.name) diags_.error(a.span, "axis '" + a.name + "' is declared twice (first at " + pos(x.span) + ")");
    Axis ax;
    ax.name = a.name;
    ax.role = role;
    ax.span = a.span;
    if (a.range) {
      ax.has_range = true;
      ax.begin = lower_bound(*a.range->begin);
      ax.end = lower_bound(*a.range->end);
    }
    plan_.axes.push_back(ax);
  };
  add_axis(ast_.row, AxisRole::Row);
  add_axis(ast_.col, AxisRole::Col);
  add_axis(ast_.red, AxisRole::Red);
  if (ast_.batch) {
    plan_.batched = true;
    add_axis(*ast_.batch, AxisRole::Batch);
  }
}

// Range bounds: LIT, P, P + LIT, P - LIT, LIT + P.
Bound Analyzer::lower_bound(const AstExpr& e) {
  Bound b;
  b.text = src_.slice(e.span);
  auto param = [&](const AstExpr& x) {
    int p = find_or_add_param(x.name, x.span);
    plan_.params[size_t(p)].integer_only = true;
    return p;
  };
  auto is_int = [](const AstExpr& x) { return x.kind == AstExpr::Int; };
  auto is_sym = [&](const AstExpr& x) {
    if (x.kind != AstExpr::Ident || x.name == "inf") return false;
    for (const auto& a : {&ast_.row, &ast_.col, &ast_.red})
      if (a->name == x.name) return false;
    return !(ast_.batch && ast_.batch->name == x.name);
  };
  if (is_int(e)) { b.offset = e.ival; return b; }
  if (is_sym(e)) { b.param = param(e); b.scale = 1; return b; }
  if (e.kind == AstExpr::Binary && (e.op == Tok::Plus || e.op == Tok::Minus)) {
    const AstExpr& l = *e.args[0];
    const AstExpr& r = *e.args[1];
    if (is_sym(l) && is_int(r)) {
      b.param = param(l);
      b.scale = 1;
      b.offset = e.op == Tok::Plus ? r.ival : -r.ival;
      return b;
    }
    if (is_int(l) && is_sym(r) && e.op == Tok::Plus) {
      b.param = param(r);
      b.scale = 1;
      b.offset = l.ival;
      return b;
    }
  }
  diags_.error(e.span, "a range bound must be an integer literal or a parameter plus or minus a literal (M, N - 1)");
  return b;
}

void Analyzer::collect_outputs(const std::vector<AstStmt>& stmts) {
  for (const AstStmt& s : stmts) {
    if (s.kind == AstStmt::If) collect_outputs(s.body);
    if (s.kind == AstStmt::Update && s.target->kind == AstExpr::Index && !output_names_.count(s.target->name))
      output_names_[s.target->name] = s.target->span;
  }
}

void Analyzer::declare_accs() {
  static const std::set<std::string> acc_types = {"i32", "i64", "f32", "f64"};
  for (const AstAccDecl& d : ast_.accs) {
    if (acc_index_.count(d.name)) {
      diags_.error(d.span, "accumulator '" + d.name + "' is declared twice");
      continue;
    }
    for (const Axis& a : plan_.axes)
      if (a.name == d.name) diags_.error(d.span, "'" + d.name + "' is an axis and cannot be an accumulator");
    Accumulator acc;
    acc.name = d.name;
    acc.span = d.span;
    acc.type = CType::Unknown;
    if (!d.type.empty()) {
      if (!acc_types.count(d.type)) {
        std::string m = "accumulator type must be i32, i64, f32 or f64, found '" + d.type + "'";
        if (dtype_from_name(d.type)) m += " (a storage type; accumulators use i32, i64, f32 or f64)";
        diags_.error(d.type_span, m);
      } else {
        acc.type = d.type == "i32" ? CType::I32 : d.type == "i64" ? CType::I64 : d.type == "f32" ? CType::F32 : CType::F64;
        acc.declared_type = true;
      }
    }
    acc_index_[d.name] = int(plan_.accs.size());
    plan_.accs.push_back(acc);
    acc_decl_.push_back(&d);
  }
  acc_updates_.assign(plan_.accs.size(), {});
  acc_read_inner_.assign(plan_.accs.size(), false);
}

// An undeclared accumulator's type follows the inputs its updates read (through lets and
// enclosing conditions): f64 > floating > i64 > i32.
void Analyzer::infer_acc_types() {
  std::map<std::string, std::set<std::string>> let_reads;
  std::vector<std::set<std::string>> acc_reads(plan_.accs.size());
  std::function<void(const AstExpr&, std::set<std::string>&)> reads = [&](const AstExpr& e, std::set<std::string>& out) {
    if (e.kind == AstExpr::Index) out.insert(e.name);
    if (e.kind == AstExpr::Ident)
      if (auto it = let_reads.find(e.name); it != let_reads.end()) out.insert(it->second.begin(), it->second.end());
    for (const auto& a : e.args) reads(*a, out);
  };
  std::function<void(const std::vector<AstStmt>&, const std::set<std::string>&)> walk =
      [&](const std::vector<AstStmt>& stmts, const std::set<std::string>& cond) {
        for (const AstStmt& s : stmts) {
          if (s.kind == AstStmt::Let) {
            std::set<std::string> r = cond;
            reads(*s.value, r);
            let_reads[s.name] = r;
          } else if (s.kind == AstStmt::If) {
            std::set<std::string> c = cond;
            reads(*s.cond, c);
            walk(s.body, c);
          } else if (s.kind == AstStmt::Update && s.target->kind == AstExpr::Ident) {
            auto it = acc_index_.find(s.target->name);
            if (it == acc_index_.end()) continue;
            acc_reads[size_t(it->second)].insert(cond.begin(), cond.end());
            reads(*s.value, acc_reads[size_t(it->second)]);
          }
        }
      };
  walk(ast_.inner, {});
  for (size_t a = 0; a < plan_.accs.size(); ++a) {
    Accumulator& acc = plan_.accs[a];
    if (!acc.declared_type) {
      bool unknown = false, f64 = false, flt = false, i64 = false;
      for (const std::string& n : acc_reads[a]) {
        auto it = env_.inputs.find(n);
        if (it == env_.inputs.end()) { unknown = true; continue; }
        f64 |= it->second == DType::F64;
        flt |= is_float(it->second);
        i64 |= it->second == DType::I64;
      }
      acc.type = f64 ? CType::F64 : (unknown ? CType::Unknown : flt ? CType::F32 : i64 ? CType::I64 : CType::I32);
      if (unknown && !f64) acc.type = CType::Unknown;
    }
    const AstAccDecl& d = *acc_decl_[a];  // (a name declared twice has one entry)
    auto v = const_value(*d.init);
    if (!v) {
      diags_.error(d.init->span, "an accumulator's initial value must be a constant (a number, inf or -inf)");
      continue;
    }
    if (acc.type != CType::Unknown && !init_fits(*v, acc, d.init->span)) continue;
    acc.init = acc.type == CType::Unknown ? *v : convert_scalar(*v, acc.type);
  }
}

// An initial value must be representable in the accumulator's type: an integer accumulator
// takes an integral value in its range (or inf / -inf: its limits), f32 a finite value below
// f32's maximum.
bool Analyzer::init_fits(const Scalar& v, const Accumulator& acc, Span span) {
  std::string ctx = "the type of accumulator '" + acc.name + "'";
  if (is_integer(acc.type) && v.type == CType::F64 && std::isfinite(v.f)) {
    bool in_range = acc.type == CType::I32 ? std::fabs(v.f) <= 2147483648.0 : std::fabs(v.f) <= 9223372036854775808.0;
    if (v.f != std::trunc(v.f) || !in_range) {
      diags_.error(span, "initial value " + src_.slice(span) + " is not an integer of " + std::string(ctype_name(acc.type)) +
                             ", " + ctx);
      return false;
    }
    return check_literal(Scalar::of_int(CType::I64, int64_t(v.f)), acc.type, span, ctx);
  }
  return check_literal(v, acc.type, span, ctx);
}

Stmt Analyzer::lower_let(const AstStmt& s, bool inner) {
  Stmt st;
  st.kind = StmtKind::Let;
  st.span = s.span;
  st.value = lower(*s.value, inner ? Ctx::Inner : Ctx::Outer);
  bool clash = acc_index_.count(s.name) || local_index_.count(s.name) || output_names_.count(s.name);
  for (const Axis& a : plan_.axes) clash |= a.name == s.name;
  if (clash) diags_.error(s.name_span, "'" + s.name + "' is already declared; 'let' names must be new");
  // A weak value (a literal) gets its default type; lets are strong from here on.
  Local l{s.name, type(st.value), inner};
  plan_.locals.push_back(l);
  st.target = int(plan_.locals.size() - 1);
  local_index_[s.name] = st.target;
  return st;
}

std::vector<Stmt> Analyzer::lower_inner(const std::vector<AstStmt>& stmts) {
  std::vector<Stmt> out;
  for (const AstStmt& s : stmts) {
    switch (s.kind) {
      case AstStmt::Let: out.push_back(lower_let(s, true)); break;
      case AstStmt::If: {
        Stmt st;
        st.kind = StmtKind::If;
        st.span = s.span;
        st.cond = to_bool(lower(*s.cond, Ctx::Inner));
        auto saved = local_index_;
        st.body = lower_inner(s.body);
        local_index_ = saved;  // lets inside a block end with it
        out.push_back(std::move(st));
        break;
      }
      case AstStmt::Emit:
        diags_.error(s.span, "'emit' is only allowed after 'reduce' (it runs once per (i, j))");
        break;
      case AstStmt::Update: {
        const AstExpr& t = *s.target;
        if (t.kind == AstExpr::Index) {
          diags_.error(t.span, "outputs are written after 'reduce'; inside 'reduce' only accumulators are updated");
          break;
        }
        auto it = acc_index_.find(t.name);
        if (it == acc_index_.end()) {
          std::string m;
          if (local_index_.count(t.name)) m = "'" + t.name + "' is a 'let' value and cannot be updated";
          else {
            m = "unknown accumulator '" + t.name + "'";
            std::vector<std::string> names;
            for (const auto& [n, _] : acc_index_) names.push_back(n);
            if (std::string g = closest_name(t.name, names); !g.empty()) m += "; did you mean '" + g + "'?";
            else m += "; declare it before 'reduce' (" + t.name + " = 0;)";
          }
          diags_.error(t.span, m);
          lower(*s.value, Ctx::Inner);
          break;
        }
        int a = it->second;
        Accumulator& acc = plan_.accs[size_t(a)];
        Stmt st;
        st.kind = StmtKind::Update;
        st.span = s.span;
        st.target = a;
        switch (s.op) {
          case Tok::Assign: st.update = UpdateOp::Assign; break;
          case Tok::PlusAssign: st.update = UpdateOp::Add; break;
          case Tok::MinusAssign: st.update = UpdateOp::Sub; break;
          case Tok::StarAssign: st.update = UpdateOp::Mul; break;
          case Tok::MaxAssign: st.update = UpdateOp::Max; break;
          case Tok::MinAssign: st.update = UpdateOp::Min; break;
          case Tok::OrAssign: st.update = UpdateOp::Or; break;
          case Tok::AndAssign: st.update = UpdateOp::And; break;
          default: st.update = UpdateOp::Xor; break;
        }
        const AstExpr* value = s.value.get();
        // `ACC = max(ACC, e)` / `min(...)` count as max= / min= (spec section 5).
        if (st.update == UpdateOp::Assign && value->kind == AstExpr::Call &&
            (value->name == "max" || value->name == "min") && value->args.size() == 2) {
          for (int side = 0; side < 2; ++side) {
            const AstExpr& self = *value->args[size_t(side)];
            if (self.kind == AstExpr::Ident && self.name == t.name) {
              st.update = value->name == "max" ? UpdateOp::Max : UpdateOp::Min;
              value = value->args[size_t(1 - side)].get();
              break;
            }
          }
        }
        if ((st.update == UpdateOp::Or || st.update == UpdateOp::And || st.update == UpdateOp::Xor) &&
            acc.type != CType::Unknown && is_float(acc.type))
          diags_.error(s.op_span, "'" + std::string(tok_name(s.op)).substr(1, std::string(tok_name(s.op)).size() - 2) +
                                      "' needs an integer accumulator, but '" + acc.name + "' is " +
                                      std::string(ctype_name(acc.type)) +
                                      (acc.declared_type ? "" : " (inferred from the inputs; declare it, e.g. " + acc.name + ": i32 = 0)"));
        ExprId v = lower(*value, Ctx::Inner);
        if (st.update == UpdateOp::Add || st.update == UpdateOp::Sub || st.update == UpdateOp::Mul)
          v = integer_update_value(v, acc, s, *value);
        if (st.update == UpdateOp::Or || st.update == UpdateOp::And || st.update == UpdateOp::Xor) {
          if (type(v) != CType::Unknown && is_float(type(v)) && !is_float(acc.type))
            diags_.error(value->span, "'" + acc.name + "' is updated with bitwise operator but the value is " +
                                          std::string(ctype_name(type(v))));
        }
        st.value = coerce(v, acc.type);
        acc_updates_[size_t(a)].push_back(st.update);
        out.push_back(std::move(st));
        break;
      }
    }
  }
  return out;
}

// `ACC += e` (-=, *=) with an integer ACC and a floating e: C would compute ACC + e in floating
// point and truncate the sum at every step; converting e first would give another result. Both
// are easy to misread, so it is an error (docs/semantics.md); a bare parameter becomes an
// integer parameter instead. `=`, `max=` and `min=` convert as C does (for max/min both orders
// agree).
ExprId Analyzer::integer_update_value(ExprId v, const Accumulator& acc, const AstStmt& s, const AstExpr& value) {
  if (acc.type == CType::Unknown || !is_integer(acc.type) || type(v) == CType::Unknown || !is_float(type(v))) return v;
  const Expr& e = plan_.exprs[size_t(v)];
  if (e.kind == ExprKind::Param && weak(v)) return integer_operand(v, value, "an update of an integer accumulator");
  if (e.kind == ExprKind::Const && weak(v) && std::isinf(e.value.f)) return v;  // inf, -inf: the type's limits
  std::string op = tok_name(s.op);
  diags_.error(value.span, "'" + acc.name + "' is " + std::string(ctype_name(acc.type)) + " but this value is " +
                               std::string(ctype_name(type(v))) + "; " + op.substr(1, op.size() - 2) +
                               " would truncate at every step: convert the value (" + std::string(ctype_name(acc.type)) +
                               "(...)) or declare '" + acc.name + ": f64'");
  return error_expr(value.span);
}

void Analyzer::classify_monoids() {
  for (size_t a = 0; a < plan_.accs.size(); ++a) {
    Accumulator& acc = plan_.accs[a];
    std::set<Monoid> families;
    for (UpdateOp u : acc_updates_[a]) {
      switch (u) {
        case UpdateOp::Add: case UpdateOp::Sub: families.insert(Monoid::Sum); break;
        case UpdateOp::Mul: families.insert(Monoid::Prod); break;
        case UpdateOp::Max: families.insert(Monoid::Max); break;
        case UpdateOp::Min: families.insert(Monoid::Min); break;
        case UpdateOp::Or: families.insert(Monoid::Or); break;
        case UpdateOp::And: families.insert(Monoid::And); break;
        case UpdateOp::Xor: families.insert(Monoid::Xor); break;
        case UpdateOp::Assign: families.insert(Monoid::Sequential); break;
      }
    }
    acc.monoid = families.size() == 1 ? *families.begin() : families.empty() ? Monoid::Sum : Monoid::Sequential;
    if (acc_read_inner_[a]) acc.monoid = Monoid::Sequential;
    CType t = acc.type == CType::Unknown ? CType::F32 : acc.type;
    switch (acc.monoid) {
      case Monoid::Sum: case Monoid::Or: case Monoid::Xor: acc.identity = convert_scalar(Scalar::of_int(CType::I64, 0), t); break;
      case Monoid::Prod: acc.identity = convert_scalar(Scalar::of_int(CType::I64, 1), t); break;
      case Monoid::Max: acc.identity = lowest_of(t); break;
      case Monoid::Min: acc.identity = highest_of(t); break;
      case Monoid::And: acc.identity = convert_scalar(Scalar::of_int(CType::I64, -1), t); break;
      case Monoid::Sequential: acc.identity = acc.init; break;
    }
    if (acc.monoid == Monoid::Sequential) plan_.k_sequential = true;
  }
}

}  // namespace gamut::sema

namespace gamut {

Plan analyze(const AstQuery& ast, const Source& src, const TypeEnv& env, Diagnostics& diags) {
  sema::Analyzer a(ast, src, env, diags);
  Plan p = a.run();
  p.source_name = src.name;
  return p;
}

// Whether an operand of an integer sum of `bytes` bytes holds integers of a narrower storage
// type (widened through casts): then it never equals the sum type's limits.
static bool narrower_integer(const Plan& p, ExprId id, size_t bytes) {
  const Expr& e = p.expr(id);
  if (e.kind == ExprKind::Cast) return narrower_integer(p, e.a, bytes);
  if (e.kind != ExprKind::Load) return false;
  const std::optional<DType>& t = p.operands[size_t(p.accesses[size_t(e.index)].operand)].dtype;
  return t && !is_float(*t) && dtype_size(*t) < bytes;
}

// An integer tropical step gets the sum of infinities (InfSum): `-inf + w` is -inf in max-plus,
// `+inf + w` is +inf in min-plus, so that the type's limit can stand for "no edge". Where both
// operands are narrower integers (i8, u8, i16 into i32; i32 into i64) no sum reaches a limit or
// wraps, the plain `+` is the same function, and the step keeps it (and its DPX forms).
static void mark_integer_tropical_sum(Plan& p) {
  if (!p.typed) return;
  const SemiringForm f = semiring_form(p);
  if (f.op != "add-max" && f.op != "add-min") return;
  Expr& sum = p.exprs[size_t(p.inner[0].value)];
  if (sum.kind != ExprKind::Binary || sum.binop != BinOp::Add) return;
  if (sum.type != CType::I32 && sum.type != CType::I64) return;
  const size_t bytes = sum.type == CType::I32 ? 4 : 8;
  if (narrower_integer(p, sum.a, bytes) && narrower_integer(p, sum.b, bytes)) return;
  sum.inf_sum = f.op == "add-max" ? InfSum::MaxPlus : InfSum::MinPlus;
}

Plan build_plan(const Source& src, const TypeEnv& env) {
  Diagnostics diags(src);
  AstQuery ast = parse(src, diags);
  diags.throw_if_any();
  Plan p = analyze(ast, src, env, diags);
  diags.throw_if_any();
  mark_integer_tropical_sum(p);
  return p;
}

}  // namespace gamut
