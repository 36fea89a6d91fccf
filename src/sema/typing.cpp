// Expression lowering and typing: names, access patterns, C promotion with weakly typed
// literals and parameters (docs/semantics.md), explicit casts.
#include <cmath>
#include <limits>

#include "sema/sema_impl.h"

namespace gamut::sema {

namespace {

const char* const kTakesHere = "the type it takes here";

int rank_of(CType t) {
  switch (t) {
    case CType::Bool: case CType::I32: return 0;
    case CType::I64: return 1;
    case CType::F32: return 2;
    case CType::F64: return 3;
    default: return -1;
  }
}
CType of_rank(int r) {
  static const CType t[] = {CType::I32, CType::I64, CType::F32, CType::F64};
  return t[r];
}
// bool counts as i32 in arithmetic
CType arith(CType t) { return t == CType::Bool ? CType::I32 : t; }

const std::vector<std::string>& function_names() {
  static const std::vector<std::string> f = {"abs", "min", "max", "clamp", "sqrt", "exp", "log", "pow",
                                             "floor", "ceil", "tanh", "f32", "f64", "i32", "i64"};
  return f;
}

}  // namespace

ExprId Analyzer::add(Expr e, bool is_weak) {
  plan_.exprs.push_back(std::move(e));
  weak_.push_back(is_weak);
  return ExprId(plan_.exprs.size() - 1);
}

ExprId Analyzer::constant(CType t, const Scalar& v, bool is_weak, Span span) {
  Expr e;
  e.kind = ExprKind::Const;
  e.type = t;
  e.value = convert_scalar(v, t);
  e.span = span;
  return add(std::move(e), is_weak);
}

ExprId Analyzer::error_expr(Span span) { return constant(CType::Unknown, Scalar{}, true, span); }

std::vector<std::string> Analyzer::axis_names() const {
  std::vector<std::string> n;
  for (const auto& a : plan_.axes) n.push_back(a.name);
  return n;
}

CType Analyzer::common(ExprId a, ExprId b, bool* weak_out) const {
  CType ta = type(a), tb = type(b);
  bool wa = weak(a), wb = weak(b);
  *weak_out = wa && wb;
  if (ta == CType::Unknown || tb == CType::Unknown) return CType::Unknown;
  ta = arith(ta);
  tb = arith(tb);
  if (wa && wb) return (is_float(ta) || is_float(tb)) ? CType::F64 : CType::I64;
  if (wa != wb) {
    CType strong = wa ? tb : ta, weakt = wa ? ta : tb;
    if (!is_float(weakt)) return strong;               // weak int adopts the strong type
    // The literal inf / -inf with a strong int: that type's limit (docs/language.md section 5).
    const Expr& w = plan_.exprs[size_t(wa ? a : b)];
    if (!is_float(strong) && w.kind == ExprKind::Const && is_float(w.value.type) && std::isinf(w.value.f))
      return strong;
    return is_float(strong) ? strong : CType::F64;     // weak float with a strong int: f64
  }
  return of_rank(std::max(rank_of(ta), rank_of(tb)));
}

ExprId Analyzer::coerce(ExprId id, CType to, bool explicit_cast) {
  CType from = type(id);
  if (to == CType::Unknown || from == CType::Unknown || from == to) return id;
  const Expr& e = plan_.exprs[size_t(id)];
  if (e.kind == ExprKind::Const) {
    // A literal takes the type of the operation it is used in (docs/semantics.md); one that
    // would wrap or overflow there is an error, not a silent change of value.
    if (!explicit_cast && weak(id) && !check_literal(e.value, to, e.span, kTakesHere))
      return error_expr(e.span);
    return constant(to, e.value, false, e.span);
  }
  if (e.kind == ExprKind::Param) {
    Expr p = e;
    p.type = to;
    return add(std::move(p), false);
  }
  Expr c;
  c.kind = ExprKind::Cast;
  c.type = to;
  c.a = id;
  c.span = e.span;
  return add(std::move(c), false);
}

ExprId Analyzer::to_bool(ExprId id) { return coerce(id, CType::Bool); }

bool Analyzer::check_literal(const Scalar& v, CType t, Span span, const std::string& context) {
  if (v.type == CType::Unknown) return true;
  if (t == CType::I32 && is_integer(v.type) &&
      (v.i < std::numeric_limits<int32_t>::min() || v.i > std::numeric_limits<int32_t>::max())) {
    std::string hint = context == kTakesHere ? "; write i64(" + std::to_string(v.i) + ") to compute in i64" : "";
    diags_.error(span, "integer " + std::to_string(v.i) + " does not fit in i32, " + context + hint);
    return false;
  }
  if (t == CType::F32 && is_float(v.type) && std::isfinite(v.f) && std::isinf(float(v.f))) {
    diags_.error(span, "number " + src_.slice(span) + " is too large for f32, " + context + " (it would become inf)");
    return false;
  }
  return true;
}

int Analyzer::find_or_add_param(const std::string& name, Span span) {
  for (size_t n = 0; n < plan_.params.size(); ++n)
    if (plan_.params[n].name == name) return int(n);
  plan_.params.push_back({name, false, span});
  return int(plan_.params.size() - 1);
}

ExprId Analyzer::lower(const AstExpr& e, Ctx ctx) {
  switch (e.kind) {
    case AstExpr::Int:
      return constant(CType::I64, Scalar::of_int(CType::I64, e.ival), true, e.span);
    case AstExpr::Float:
      return constant(CType::F64, Scalar::of_float(CType::F64, e.fval), true, e.span);
    case AstExpr::Ident:
      return lower_ident(e, ctx);
    case AstExpr::Index: {
      if (ctx == Ctx::Bound || ctx == Ctx::Init) {
        diags_.error(e.span, ctx == Ctx::Init ? "an accumulator's initial value must be a constant"
                                              : "a range bound must be a literal or a parameter");
        return error_expr(e.span);
      }
      if (ctx == Ctx::Finish) return lower_finish_read(e);
      int acc = resolve_access(e, ctx);
      if (acc < 0) return error_expr(e.span);
      const Operand& op = plan_.operands[size_t(plan_.accesses[size_t(acc)].operand)];
      Expr x;
      x.kind = ExprKind::Load;
      x.index = acc;
      x.type = op.dtype ? compute_type_of(*op.dtype) : CType::Unknown;
      x.span = e.span;
      return add(std::move(x), false);
    }
    case AstExpr::Unary:
      return lower_unary(e, ctx);
    case AstExpr::Binary:
      return lower_binary(e, ctx);
    case AstExpr::Ternary: {
      ExprId c = to_bool(lower(*e.args[0], ctx));
      ExprId a = lower(*e.args[1], ctx), b = lower(*e.args[2], ctx);
      bool w;
      CType t = common(a, b, &w);
      Expr x;
      x.kind = ExprKind::Select;
      x.type = t;
      x.a = c;
      x.b = coerce(a, t);
      x.c = coerce(b, t);
      x.span = e.span;
      return add(std::move(x), w);
    }
    case AstExpr::Call:
      return lower_call(e, ctx);
  }
  return error_expr(e.span);
}

ExprId Analyzer::lower_ident(const AstExpr& e, Ctx ctx) {
  const std::string& n = e.name;
  if (n == "inf")
    return constant(CType::F64, Scalar::of_float(CType::F64, std::numeric_limits<double>::infinity()), true, e.span);
  if (ctx == Ctx::Finish) return lower_finish_ident(e);
  for (const Axis& ax : plan_.axes) {
    if (ax.name != n) continue;
    if (ctx == Ctx::Bound || ctx == Ctx::Init) {
      diags_.error(e.span, "axis '" + n + "' cannot be used here; only literals and parameters");
      return error_expr(e.span);
    }
    if (ax.role == AxisRole::Red && ctx != Ctx::Inner) {
      diags_.error(e.span, "reduction axis '" + n + "' cannot be used " +
                               (ctx == Ctx::When ? std::string("in 'when'") : std::string("after 'reduce'")));
      return error_expr(e.span);
    }
    Expr x;
    x.kind = ExprKind::Axis;
    x.index = int(ax.role);
    x.type = CType::I32;
    x.span = e.span;
    return add(std::move(x), false);
  }
  if (auto it = local_index_.find(n); it != local_index_.end()) {
    Expr x;
    x.kind = ExprKind::Local;
    x.index = it->second;
    x.type = plan_.locals[size_t(it->second)].type;
    x.span = e.span;
    return add(std::move(x), false);
  }
  if (auto it = acc_index_.find(n); it != acc_index_.end()) {
    if (ctx == Ctx::When || ctx == Ctx::Bound || ctx == Ctx::Init) {
      diags_.error(e.span, "accumulator '" + n + "' cannot be used " +
                               (ctx == Ctx::When ? std::string("in 'when' (it is computed after the join)")
                                                 : std::string("here")));
      return error_expr(e.span);
    }
    if (ctx == Ctx::Inner && it->second != canonical_self_) acc_read_inner_[size_t(it->second)] = true;
    Expr x;
    x.kind = ExprKind::Acc;
    x.index = it->second;
    x.type = plan_.accs[size_t(it->second)].type;
    x.span = e.span;
    return add(std::move(x), false);
  }
  if (output_names_.count(n)) {
    diags_.error(e.span, "output '" + n + "' cannot be read; outputs are only written");
    return error_expr(e.span);
  }
  if (operand_rank_.count(n)) {
    diags_.error(e.span, "array '" + n + "' needs indices, e.g. " + n + "[" + plan_.axes[0].name + ", ...]");
    return error_expr(e.span);
  }
  if (ctx == Ctx::Init) {
    diags_.error(e.span, "an accumulator's initial value must be a constant (a number, inf or -inf), not '" + n + "'");
    return error_expr(e.span);
  }
  // Any other identifier is a scalar parameter, bound at run time: a weak number.
  int p = find_or_add_param(n, e.span);
  Expr x;
  x.kind = ExprKind::Param;
  x.index = p;
  x.type = CType::F64;
  x.span = e.span;
  return add(std::move(x), true);
}

ExprId Analyzer::lower_unary(const AstExpr& e, Ctx ctx) {
  ExprId a = lower(*e.args[0], ctx);
  CType t = type(a);
  Expr x;
  x.kind = ExprKind::Unary;
  x.span = e.span;
  if (e.op == Tok::Bang) {
    x.unop = UnOp::Not;
    x.type = CType::Bool;
    x.a = to_bool(a);
    return add(std::move(x), false);
  }
  if (e.op == Tok::Tilde) {
    a = integer_operand(a, e, "'~'");
    x.unop = UnOp::BitNot;
    x.type = arith(type(a));
    x.a = coerce(a, x.type);
    return add(std::move(x), weak(a));
  }
  // Negation: fold constants so `-inf` and `-1` stay constants (and weak).
  const Expr& ae = plan_.exprs[size_t(a)];
  if (ae.kind == ExprKind::Const && t != CType::Unknown) {
    Scalar v = ae.value;
    CType rt = arith(t);
    v = convert_scalar(v, rt);
    if (is_float(rt)) v.f = -v.f; else v.i = int64_t(0ull - uint64_t(v.i));
    return constant(rt, v, weak(a), e.span);
  }
  x.unop = UnOp::Neg;
  x.type = t == CType::Unknown ? t : arith(t);
  x.a = coerce(a, x.type);
  return add(std::move(x), weak(a));
}

// Integer-only operand: a weak parameter becomes an integer parameter; floats are errors.
ExprId Analyzer::integer_operand(ExprId id, const AstExpr& at, const char* what) {
  const Expr& e = plan_.exprs[size_t(id)];
  if (e.kind == ExprKind::Param && weak(id)) {
    plan_.params[size_t(e.index)].integer_only = true;
    Expr p = e;
    p.type = CType::I64;
    return add(std::move(p), true);
  }
  if (e.type != CType::Unknown && is_float(e.type)) {
    diags_.error(e.span, std::string(what) + " needs integer operands, but this is " +
                             std::string(ctype_name(e.type)));
    return error_expr(e.span);
  }
  (void)at;
  return id;
}

ExprId Analyzer::lower_binary(const AstExpr& e, Ctx ctx) {
  ExprId a = lower(*e.args[0], ctx), b = lower(*e.args[1], ctx);
  Expr x;
  x.kind = ExprKind::Binary;
  x.span = e.span;
  bool w = false;
  switch (e.op) {
    case Tok::Plus: case Tok::Minus: case Tok::Star: case Tok::Slash: {
      x.binop = e.op == Tok::Plus ? BinOp::Add : e.op == Tok::Minus ? BinOp::Sub
              : e.op == Tok::Star ? BinOp::Mul : BinOp::Div;
      x.type = common(a, b, &w);
      break;
    }
    case Tok::Percent: case Tok::Amp: case Tok::Pipe: case Tok::Caret: {
      const char* sym = e.op == Tok::Percent ? "'%'" : e.op == Tok::Amp ? "'&'" : e.op == Tok::Pipe ? "'|'" : "'^'";
      a = integer_operand(a, e, sym);
      b = integer_operand(b, e, sym);
      x.binop = e.op == Tok::Percent ? BinOp::Mod : e.op == Tok::Amp ? BinOp::BitAnd
              : e.op == Tok::Pipe ? BinOp::BitOr : BinOp::BitXor;
      x.type = common(a, b, &w);
      break;
    }
    case Tok::Shl: case Tok::Shr: {
      a = integer_operand(a, e, e.op == Tok::Shl ? "'<<'" : "'>>'");
      b = integer_operand(b, e, e.op == Tok::Shl ? "'<<'" : "'>>'");
      x.binop = e.op == Tok::Shl ? BinOp::Shl : BinOp::Shr;
      // C: the result has the (promoted) left operand's type; a weak left adopts a strong right.
      x.type = weak(a) && !weak(b) ? common(a, b, &w) : (type(a) == CType::Unknown ? CType::Unknown : arith(type(a)));
      w = weak(a) && weak(b);
      break;
    }
    case Tok::Lt: case Tok::Le: case Tok::Gt: case Tok::Ge: case Tok::EqEq: case Tok::Ne: {
      x.binop = e.op == Tok::Lt ? BinOp::Lt : e.op == Tok::Le ? BinOp::Le : e.op == Tok::Gt ? BinOp::Gt
              : e.op == Tok::Ge ? BinOp::Ge : e.op == Tok::EqEq ? BinOp::Eq : BinOp::Ne;
      CType t = common(a, b, &w);
      x.a = coerce(a, t);
      x.b = coerce(b, t);
      x.type = CType::Bool;
      return add(std::move(x), false);
    }
    case Tok::AmpAmp: case Tok::PipePipe:
      x.binop = e.op == Tok::AmpAmp ? BinOp::LogAnd : BinOp::LogOr;
      x.a = to_bool(a);
      x.b = to_bool(b);
      x.type = CType::Bool;
      return add(std::move(x), false);
    default:
      diags_.error(e.span, "unsupported operator");
      return error_expr(e.span);
  }
  if (x.type == CType::Bool) x.type = CType::I32;
  x.a = coerce(a, x.type);
  x.b = coerce(b, x.type);
  return add(std::move(x), w);
}

ExprId Analyzer::lower_call(const AstExpr& e, Ctx ctx) {
  const std::string& n = e.name;
  auto arity = [&](size_t lo, size_t hi) {
    if (e.args.size() >= lo && e.args.size() <= hi) return true;
    std::string want = lo == hi ? std::to_string(lo)
                     : hi > 100 ? (e.args.size() > hi ? "at most " + std::to_string(hi) : std::to_string(lo) + " or more")
                                : std::to_string(lo) + " to " + std::to_string(hi);
    diags_.error(e.span, "'" + n + "' takes " + want + " argument" + (lo == 1 && hi == 1 ? "" : "s") + ", got " +
                             std::to_string(e.args.size()));
    return false;
  };
  if (ctx == Ctx::Finish && n == "sum") return lower_finish_sum(e);
  std::optional<CType> cast;
  if (n == "f32") cast = CType::F32;
  if (n == "f64") cast = CType::F64;
  if (n == "i32") cast = CType::I32;
  if (n == "i64") cast = CType::I64;
  if (cast) {
    if (!arity(1, 1)) return error_expr(e.span);
    ExprId a = lower(*e.args[0], ctx);
    ExprId r = coerce(a, *cast, true);  // an explicit conversion wraps / rounds as C does
    if (type(a) == CType::Unknown) {  // keep the cast's type visible even before types are known
      Expr c;
      c.kind = ExprKind::Cast;
      c.type = *cast;
      c.a = a;
      c.span = e.span;
      return add(std::move(c), false);
    }
    if (r == a) {
      // A cast gives its type (C): a weak value cast to its own default type becomes strong, so
      // `f32(a) * f64(s)` is f64 and `n + i64(2)` is i64 (the node is copied: `a` may be shared).
      if (!weak(a)) return r;
      Expr strong = plan_.exprs[size_t(a)];
      return add(std::move(strong), false);
    }
    weak_[size_t(r)] = false;
    return r;
  }
  static const std::map<std::string, Fn> fns = {
      {"abs", Fn::Abs}, {"min", Fn::Min}, {"max", Fn::Max}, {"clamp", Fn::Clamp}, {"sqrt", Fn::Sqrt},
      {"exp", Fn::Exp}, {"log", Fn::Log}, {"pow", Fn::Pow}, {"floor", Fn::Floor}, {"ceil", Fn::Ceil},
      {"tanh", Fn::Tanh}};
  auto it = fns.find(n);
  if (it == fns.end()) {
    std::string m = "unknown function '" + n + "'";
    if (operand_rank_.count(n)) m += "; arrays are indexed with [ ], as " + n + "[...]";
    else if (std::string g = closest_name(n, function_names()); !g.empty()) m += "; did you mean '" + g + "'?";
    diags_.error(e.span, m);
    for (const auto& a : e.args) lower(*a, ctx);
    return error_expr(e.span);
  }
  Fn fn = it->second;
  bool ok = fn == Fn::Min || fn == Fn::Max ? arity(2, 1000)
          : fn == Fn::Clamp ? arity(3, 3) : fn == Fn::Pow ? arity(2, 2) : arity(1, 1);
  if (!ok) return error_expr(e.span);
  std::vector<ExprId> args;
  for (const auto& a : e.args) args.push_back(lower(*a, ctx));
  // Common type of all arguments.
  ExprId acc = args[0];
  bool w = weak(acc);
  CType t = type(acc) == CType::Unknown ? CType::Unknown : arith(type(acc));
  for (size_t k = 1; k < args.size(); ++k) {
    bool wk;
    // common() needs ids; compare against a stand-in of the running type.
    CType tk = common(acc, args[k], &wk);
    if (tk != CType::Unknown && t != CType::Unknown) {
      t = tk;
      w = wk;
      acc = constant(t, Scalar{}, w, e.span);  // stand-in carrying the running type and weakness
    } else {
      t = CType::Unknown;
    }
  }
  bool transcendental = fn == Fn::Sqrt || fn == Fn::Exp || fn == Fn::Log || fn == Fn::Pow ||
                        fn == Fn::Floor || fn == Fn::Ceil || fn == Fn::Tanh;
  if (transcendental && t != CType::Unknown && !is_float(t)) t = CType::F64;  // C's <math.h>
  Expr x;
  x.kind = ExprKind::Call;
  x.fn = fn;
  x.type = t;
  x.span = e.span;
  for (ExprId a : args) x.args.push_back(coerce(a, t));
  return add(std::move(x), w);
}

}  // namespace gamut::sema
