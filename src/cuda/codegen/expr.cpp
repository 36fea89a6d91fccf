// Code generator, part 2: plan expressions -> device C++ with gamut's exact semantics.
// Every rendered expression has the C++ type of its compute type (ctype_cpp); operators whose
// C++ meaning differs from docs/semantics.md go through the gm:: helpers of gamut_math.cuh.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "cuda/codegen/internal.h"

namespace gamut::cuda::cg {

namespace {

// A float literal that parses back to exactly `v` (9 / 17 significant digits round-trip).
std::string float_text(double v, bool f32) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f32 ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (f32) s += "f";
  return v < 0 || (v == 0 && std::signbit(v)) ? "(" + s + ")" : s;
}

}  // namespace

std::string Renderer::convert(const std::string& e, CType from, CType to) {
  if (from == to) return e;
  return convert_fn(to) + "(" + e + ")";
}

std::string Renderer::cond(const std::string& e, CType t) { return t == CType::Bool ? e : "gm::to_bool(" + e + ")"; }

std::string Renderer::literal(const Scalar& value, CType t) {
  const Scalar v = convert_scalar(value, t);
  switch (t) {
    case CType::Bool: return v.i != 0 ? "true" : "false";
    case CType::I32:
      if (v.i == std::numeric_limits<int32_t>::min()) return "gm::kI32Min";
      return v.i < 0 ? cat("(", std::to_string(v.i), ")") : std::to_string(v.i);
    case CType::I64:
      if (v.i == std::numeric_limits<int64_t>::min()) return "gm::kI64Min";
      return v.i < 0 ? cat("(", std::to_string(v.i), "LL)") : cat(std::to_string(v.i), "LL");
    case CType::F32: {
      const float f = float(v.f);
      if (std::isnan(f)) return "__int_as_float(0x7fc00000)";
      if (std::isinf(f)) return f > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(int(0xff800000u))";
      return float_text(double(f), true);
    }
    case CType::F64:
      if (std::isnan(v.f)) return "__longlong_as_double(0x7ff8000000000000LL)";
      if (std::isinf(v.f))
        return v.f > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                       : "__longlong_as_double(gm::i64(0xfff0000000000000ULL))";
      return float_text(v.f, false);
    case CType::Unknown: break;
  }
  unsupported("an untyped plan");
}

std::string Renderer::load(int access) const {
  const Access& acc = P.accesses[size_t(access)];
  const std::string& n = N.access(access);
  if (ctx_ == Ctx::Inner) return n;
  std::string off;
  switch (acc.pattern) {
    case Pattern::RowVec: off = "gm::i64(i)"; break;
    case Pattern::ColVec: off = "gm::i64(j)"; break;
    case Pattern::RowCol: off = "gm::i64(i) * " + N.access(access, "ld") + " + j"; break;
    case Pattern::ColRow: off = "gm::i64(j) * " + N.access(access, "ld") + " + i"; break;
    default:
      unsupported("an operand indexed by the reduction axis outside reduce (" + P.operands[size_t(acc.operand)].name +
                  ")");
  }
  if (P.batched) off = "gm::i64(b) * " + N.access(access, "bs") + " + " + off;
  return "gm::widen(" + n + "[" + off + "])";
}

std::string Renderer::expr_as(ExprId id, CType to) const {
  const Expr& e = P.expr(id);
  // A converted select converts the branch it takes, so the conversion is rendered into the
  // branches (constants then convert here): `f32(c ? 0.5 : -1)` compiled by ptxas -O2/-O3 (CUDA
  // 13.0) as f64 selects into half-written register pairs whose conversions it merged across
  // pairs, giving other pairs' values.
  if (e.kind == ExprKind::Select && e.type != to) {
    auto branch = [&](ExprId b) {
      const Expr& x = P.expr(b);
      if (x.kind == ExprKind::Const) return literal(convert_scalar(convert_scalar(x.value, x.type), e.type), to);
      return convert(expr_as(b, e.type), e.type, to);
    };
    return cat("(", cond(expr(e.a), P.expr(e.a).type), " ? ", branch(e.b), " : ", branch(e.c), ")");
  }
  // An integer that went through a float which holds it exactly (i32 or bool in f64, bool in
  // f32) and comes back as an integer converts integer to integer: the same value, and chains
  // like i32(f64(i32(...))) need no NaN tests (gm::to_i32's inline PTX would stay in the code).
  if (e.kind == ExprKind::Cast && is_float(e.type) && !is_float(to) && to != CType::Bool) {
    const CType from = P.expr(e.a).type;
    if (from == CType::Bool || (from == CType::I32 && e.type == CType::F64)) return expr_as(e.a, to);
  }
  return convert(expr(id), e.type, to);
}

std::string Renderer::expr(ExprId id) const {
  const Expr& e = P.expr(id);
  switch (e.kind) {
    case ExprKind::Const: return literal(e.value, e.type);
    case ExprKind::Param: return param_name(e.index, e.type);
    case ExprKind::Axis: {
      const AxisRole r = AxisRole(e.index);
      std::string name = r == AxisRole::Row ? "i" : r == AxisRole::Col ? "j" : r == AxisRole::Red ? "k" : "b";
      if (r == AxisRole::Red && ctx_ == Ctx::Outer) unsupported("the reduction axis outside reduce");
      return convert(name, CType::I32, e.type);
    }
    case ExprKind::Load: return convert(load(e.index), access_ctype(P, e.index), e.type);
    case ExprKind::Acc: return convert(N.acc(e.index), P.accs[size_t(e.index)].type, e.type);
    case ExprKind::Local: return convert(N.local(e.index), P.locals[size_t(e.index)].type, e.type);
    case ExprKind::Unary: {
      CType t = P.expr(e.a).type;
      std::string a = expr(e.a);
      if (e.unop == UnOp::Not) return convert("(!" + cond(a, t) + ")", CType::Bool, e.type);
      if (t == CType::Bool) {  // bool counts as i32 in arithmetic
        a = convert(a, t, CType::I32);
        t = CType::I32;
      }
      std::string r;
      if (e.unop == UnOp::Neg)
        r = is_float(t) ? "(-" + a + ")" : "gm::neg(" + a + ")";
      else if (is_float(t))
        unsupported("~ on a float");
      else
        r = "(~" + a + ")";
      return convert(r, t, e.type);
    }
    case ExprKind::Binary: return binary(e);
    case ExprKind::Select:
      return cat("(", cond(expr(e.a), P.expr(e.a).type), " ? ", expr_as(e.b, e.type), " : ", expr_as(e.c, e.type), ")");
    case ExprKind::Call: return call(e);
    case ExprKind::Cast: return expr_as(e.a, e.type);
    case ExprKind::Output: break;  // (finishing steps run on the host: cpu/finish.cpp)
  }
  unsupported("an unknown expression kind");
}

std::string Renderer::binary(const Expr& e) const {
  CType t = P.expr(e.a).type;
  std::string a = expr(e.a), b = expr_as(e.b, t);  // sema made both operand types equal
  const BinOp op = e.binop;
  switch (op) {
    case BinOp::Lt:
    case BinOp::Le:
    case BinOp::Gt:
    case BinOp::Ge:
    case BinOp::Eq:
    case BinOp::Ne: return convert("(" + a + " " + binop_symbol(op) + " " + b + ")", CType::Bool, e.type);
    case BinOp::LogAnd:
    case BinOp::LogOr:
      return convert(cat("(", cond(a, t), " ", binop_symbol(op), " ", cond(b, t), ")"), CType::Bool, e.type);
    default: break;
  }
  if (t == CType::Bool) {  // arithmetic and bitwise operators see bools as i32
    a = convert(a, t, CType::I32);
    b = convert(b, t, CType::I32);
    t = CType::I32;
  }
  const bool fl = is_float(t);
  // 0 - x and x * -1 on integers render as gm::neg: as sub / mul, NVVM turns them into the
  // negations that ptxas loses inside min(min(x, -x), c) (gamut_math.cuh, neg).
  auto int_literal = [&](ExprId id, int64_t v) {
    const Expr& c = P.expr(id);
    return !fl && c.kind == ExprKind::Const && !is_float(c.type) && c.value.i == v;
  };
  if (op == BinOp::Sub && int_literal(e.a, 0)) return convert("gm::neg(" + b + ")", t, e.type);
  if (op == BinOp::Mul && int_literal(e.b, -1)) return convert("gm::neg(" + a + ")", t, e.type);
  if (op == BinOp::Mul && int_literal(e.a, -1)) return convert("gm::neg(" + b + ")", t, e.type);
  std::string r;
  switch (op) {
    case BinOp::Add:
      if (e.inf_sum != InfSum::None && !fl && !plain_sums_)  // an integer tropical step: the limits are infinities
        r = std::string(e.inf_sum == InfSum::MaxPlus ? "gm::inf_sum_max(" : "gm::inf_sum_min(") + a + ", " + b + ")";
      else
        r = fl ? "(" + a + " + " + b + ")" : "gm::add(" + a + ", " + b + ")";
      break;
    case BinOp::Sub: r = fl ? "(" + a + " - " + b + ")" : "gm::sub(" + a + ", " + b + ")"; break;
    case BinOp::Mul: r = fl ? "(" + a + " * " + b + ")" : "gm::mul(" + a + ", " + b + ")"; break;
    case BinOp::Div: r = fl ? "(" + a + " / " + b + ")" : "gm::div(" + a + ", " + b + ")"; break;
    case BinOp::Mod: r = "gm::mod(" + a + ", " + b + ")"; break;
    case BinOp::Shl:
    case BinOp::Shr:
    case BinOp::BitAnd:
    case BinOp::BitOr:
    case BinOp::BitXor:
      if (fl) unsupported(std::string("the operator ") + binop_symbol(op) + " on floats");
      if (op == BinOp::Shl)
        r = "gm::shl(" + a + ", " + b + ")";
      else if (op == BinOp::Shr)
        r = "gm::shr(" + a + ", " + b + ")";
      else
        r = "(" + a + " " + binop_symbol(op) + " " + b + ")";
      break;
    default: unsupported("an unknown binary operator");
  }
  return convert(r, t, e.type);
}

std::string Renderer::call(const Expr& e) const {
  const auto& args = e.args;
  auto need = [&](size_t n) {
    if (args.size() < n) unsupported(std::string("too few arguments to ") + fn_name(e.fn));
  };
  switch (e.fn) {
    case Fn::Abs: {  // abs/min/max/clamp keep the argument type (bool counts as i32 for abs)
      need(1);
      const CType t = e.type == CType::Bool ? CType::I32 : e.type;
      return convert("gm::abs_(" + expr_as(args[0], t) + ")", t, e.type);
    }
    case Fn::Min:
    case Fn::Max: {  // bools in i32: a bool value may be held as int 0/1
      need(2);
      const CType t = e.type == CType::Bool ? CType::I32 : e.type;
      const char* f = e.fn == Fn::Min ? "gm::min_(" : "gm::max_(";
      std::string r = expr_as(args[0], t);
      for (size_t n = 1; n < args.size(); ++n) r = f + r + ", " + expr_as(args[n], t) + ")";
      return convert(r, t, e.type);
    }
    case Fn::Clamp: {
      need(3);
      const CType t = e.type == CType::Bool ? CType::I32 : e.type;
      return convert(
          "gm::clamp_(" + expr_as(args[0], t) + ", " + expr_as(args[1], t) + ", " + expr_as(args[2], t) + ")", t,
          e.type);
    }
    default: break;
  }
  // The rest compute in a float type: the argument's, f64 for integers (as <math.h>).
  const CType ft = is_float(e.type) ? e.type : CType::F64;
  const std::string sfx = ft == CType::F32 ? "f" : "";
  if (e.fn == Fn::Pow) {
    need(2);
    return convert("pow" + sfx + "(" + expr_as(args[0], ft) + ", " + expr_as(args[1], ft) + ")", ft, e.type);
  }
  need(1);
  std::string name;
  switch (e.fn) {
    case Fn::Sqrt: name = "sqrt"; break;
    case Fn::Exp: name = "exp"; break;
    case Fn::Log: name = "log"; break;
    case Fn::Floor: name = "floor"; break;
    case Fn::Ceil: name = "ceil"; break;
    case Fn::Tanh: name = "tanh"; break;
    default: unsupported(std::string("the function ") + fn_name(e.fn));
  }
  return convert(name + sfx + "(" + expr_as(args[0], ft) + ")", ft, e.type);
}

std::string Renderer::echo(const Stmt& s) const {
  std::string r = print_stmt(P, s);
  if (s.span.line > 0) r = cat(P.source_name, ":", std::to_string(s.span.line), ": ", r);
  for (char& ch : r)
    if (ch < 32 || ch > 126 || ch == '\\') ch = '?';  // one comment line, whatever the file name holds
  return "// " + r;
}

void Renderer::stmts(const std::vector<Stmt>& body, Code& out,
                     const std::function<void(const Stmt&, Code&)>& leaf) const {
  for (const Stmt& s : body) {
    // The statement as the query has it, above its rendering (dropped where it renders nothing).
    const size_t before = out.mark();
    out.line(echo(s));
    const size_t after = out.mark();
    switch (s.kind) {
      case StmtKind::Let:
        if (const auto call = let_calls_.find(s.target); call != let_calls_.end())
          out.line(N.local(s.target) + " = " + call->second + ";");
        else
          out.line(cat(N.local(s.target), " = ", expr_as(s.value, P.locals[size_t(s.target)].type), ";"));
        break;
      case StmtKind::If:
        out.open("if (" + cond(expr(s.cond), P.expr(s.cond).type) + ")");
        stmts(s.body, out, leaf);
        out.close();
        break;
      default: leaf(s, out); break;
    }
    if (out.mark() == after) out.rewind(before);
  }
}

}  // namespace gamut::cuda::cg
