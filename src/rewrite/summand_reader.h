// The reader of a reduce body's summands for the one-sided rewrite (one_sided_sums.cpp): which axes
// an expression reads, its query text with lets written out, whether it is a sum of squares, and
// its expansion into products of one-sided factors. Every walk is bounded (the limits below), so
// that no query, however many lets it chains, overflows the stack or walks exponentially long.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace gamut::summand {

// Which axes an expression depends on.
constexpr int kRow = 1, kCol = 2, kRed = 4;
constexpr size_t kMaxTerms = 64;  // an expansion larger than this is not a distance
// The readers below recurse through lets and revisit shared subexpressions: a summand deeper than
// kMaxLetDepth lets or kMaxDepth levels, whose text exceeds kMaxText, or that takes more than
// kMaxVisits steps to read is not rewritten (thousands of chained lets overflowed the stack; lets
// used twice at every level double the text).
constexpr int kMaxLetDepth = 256;
constexpr int kMaxDepth = 1024;  // recursion through lets and the expressions between them
constexpr size_t kMaxText = size_t(1) << 16;
constexpr long kMaxVisits = 200000;

inline bool one_sided(int side) { return (side & (kRow | kCol)) != (kRow | kCol); }

// A product of factors (their query text, sorted) times a coefficient.
using Factor = std::pair<std::string, int>;  // text, side
struct Term {
  double coef = 1;
  std::vector<Factor> factors;
  int side = 0;
};

inline std::string number_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

inline std::string scalar_text(const Scalar& v) {
  if (is_float(v.type)) return number_text(v.f);
  if (v.type == CType::I64) return "i64(" + std::to_string(v.i) + ")";
  return v.i < 0 ? "(" + std::to_string(v.i) + ")" : std::to_string(v.i);
}

// The inner statements of a plan read back as query text, with their sides.
class InnerText {
 public:
  explicit InnerText(const Plan& p) : p_(p) {
    for (const Stmt& s : p.inner)
      if (s.kind == StmtKind::Let) lets_[s.target] = s.value;
  }

  // True once a reader gave up (kMaxVisits, kMaxText): its answers are then "no form", and the
  // rewrite must not rely on any of them.
  bool gave_up() const { return gave_up_; }

  // Axes the expression depends on; -1 where it reads something a stage cannot (an
  // accumulator, the batch axis).
  int side(ExprId id) const {
    const Enter in(*this);
    if (spent()) return -1;
    const Expr& e = p_.expr(id);
    switch (e.kind) {
      case ExprKind::Const:
      case ExprKind::Param: return 0;
      case ExprKind::Axis:
        return AxisRole(e.index) == AxisRole::Row   ? kRow
               : AxisRole(e.index) == AxisRole::Col ? kCol
               : AxisRole(e.index) == AxisRole::Red ? kRed
                                                    : -1;
      case ExprKind::Load: return pattern_side(p_.accesses[size_t(e.index)].pattern);
      case ExprKind::Acc: return -1;
      case ExprKind::Local: {
        auto it = lets_.find(e.index);
        return it == lets_.end() ? -1 : side(it->second);
      }
      default: break;
    }
    int s = 0;
    std::vector<ExprId> kids = e.args;
    for (ExprId k : {e.a, e.b, e.c})
      if (k != kNoExpr) kids.push_back(k);
    for (ExprId k : kids) {
      const int t = side(k);
      if (t < 0) return -1;
      s |= t;
    }
    return s;
  }

  // The expression as query text (lets written out); "" where it has no query form.
  std::string text(ExprId id) const {
    const Enter in(*this);
    if (spent()) return "";
    std::string t = text_of(id);
    if (t.size() > kMaxText) {
      gave_up_ = true;
      return "";
    }
    return t;
  }

  // Whether the value is a sum of squares (`t * t`, `pow(t, 2)`) times non-negative constants:
  // never negative as written, so that its expansion is clamped at 0 (cancellation may take it
  // below; a `sqrt` after it would give NaN).
  bool squares(ExprId id) const {
    const Enter in(*this);
    if (spent()) return false;
    return squares_of(id);
  }

  // The summand as a sum of products of one-sided factors; nothing where it is not a polynomial
  // in them computed in f32.
  std::optional<std::vector<Term>> expand(ExprId id) const {
    const Enter in(*this);
    if (spent()) return std::nullopt;
    return expand_of(id);
  }

 private:
  bool spent() const {
    if (++visits_ > kMaxVisits || depth_ > kMaxDepth) gave_up_ = true;
    return gave_up_;
  }
  // The readers' recursion depth, for spent().
  struct Enter {
    const InnerText& t;
    explicit Enter(const InnerText& x) : t(x) { ++t.depth_; }
    ~Enter() { --t.depth_; }
  };

  std::string text_of(ExprId id) const {
    const Expr& e = p_.expr(id);
    switch (e.kind) {
      case ExprKind::Const: return e.type == CType::Bool ? "" : scalar_text(e.value);
      case ExprKind::Param: return p_.params[size_t(e.index)].name;
      case ExprKind::Axis: return axis(AxisRole(e.index));
      case ExprKind::Load: return load(e.index);
      case ExprKind::Acc: return "";
      case ExprKind::Local: {
        auto it = lets_.find(e.index);
        return it == lets_.end() ? "" : wrap(text(it->second));
      }
      case ExprKind::Unary: return wrap(std::string(unop_symbol(e.unop)) + wrap(text(e.a)));
      case ExprKind::Binary: {
        const std::string a = text(e.a), b = text(e.b);
        return a.empty() || b.empty() ? "" : "(" + a + " " + binop_symbol(e.binop) + " " + b + ")";
      }
      case ExprKind::Select: {
        const std::string c = text(e.a), a = text(e.b), b = text(e.c);
        return c.empty() || a.empty() || b.empty() ? "" : "(" + c + " ? " + a + " : " + b + ")";
      }
      case ExprKind::Cast:
        if (e.type == CType::Bool || e.type == CType::Unknown) return "";
        return wrap(std::string(ctype_name(e.type)) + "(" + text(e.a) + ")");
      case ExprKind::Call: {
        std::string s = std::string(fn_name(e.fn)) + "(";
        for (size_t k = 0; k < e.args.size(); ++k) {
          const std::string a = text(e.args[k]);
          if (a.empty()) return "";
          s += (k ? ", " : "") + a;
        }
        return s + ")";
      }
      case ExprKind::Output: return "";  // (finishing steps only)
    }
    return "";
  }

  bool squares_of(ExprId id) const {
    const Expr& e = p_.expr(id);
    switch (e.kind) {
      case ExprKind::Const: return is_float(e.type) ? e.value.f >= 0 : e.value.i >= 0;
      case ExprKind::Local: {
        auto it = lets_.find(e.index);
        return it != lets_.end() && squares(it->second);
      }
      case ExprKind::Binary: {
        if (e.binop == BinOp::Add) return squares(e.a) && squares(e.b);
        if (e.binop != BinOp::Mul) return false;
        // A product: every factor that is not itself non-negative appears an even number of times.
        std::map<std::string, int> odd;
        std::vector<ExprId> todo{id};
        while (!todo.empty()) {
          const ExprId f = todo.back();
          todo.pop_back();
          const Expr& x = p_.expr(f);
          if (x.kind == ExprKind::Binary && x.binop == BinOp::Mul) {
            todo.push_back(x.a);
            todo.push_back(x.b);
          } else if (!squares(f)) {
            const std::string t = text(f);
            if (t.empty()) return false;
            odd[t] ^= 1;
          }
        }
        for (const auto& [t, o] : odd)
          if (o) return false;
        return true;
      }
      case ExprKind::Call:
        return e.fn == Fn::Pow && e.args.size() == 2 && p_.expr(e.args[1]).kind == ExprKind::Const &&
               p_.expr(e.args[1]).value.f == 2.0;
      default: return false;
    }
  }

  std::optional<std::vector<Term>> expand_of(ExprId id) const {
    const Expr& e = p_.expr(id);
    const int s = side(id);
    if (s < 0) return std::nullopt;
    if (one_sided(s) && e.kind != ExprKind::Const) {  // a factor as it is
      const std::string t = text(id);
      if (t.empty()) return std::nullopt;
      return std::vector<Term>{Term{1, {Factor{t, s}}, s}};
    }
    if (e.type != CType::F32) return std::nullopt;
    switch (e.kind) {
      case ExprKind::Const: return std::vector<Term>{Term{e.value.f, {}, 0}};
      case ExprKind::Local: {
        auto it = lets_.find(e.index);
        if (it == lets_.end()) return std::nullopt;
        return expand(it->second);
      }
      case ExprKind::Unary:
        if (e.unop != UnOp::Neg) return std::nullopt;
        return scaled(expand(e.a), -1);
      case ExprKind::Binary:
        switch (e.binop) {
          case BinOp::Add: return sum(expand(e.a), expand(e.b));
          case BinOp::Sub: return sum(expand(e.a), scaled(expand(e.b), -1));
          case BinOp::Mul: return product(expand(e.a), expand(e.b));
          default: return std::nullopt;
        }
      case ExprKind::Call:  // pow(x, 2)
        if (e.fn == Fn::Pow && e.args.size() == 2 && p_.expr(e.args[1]).kind == ExprKind::Const &&
            p_.expr(e.args[1]).value.f == 2.0)
          return product(expand(e.args[0]), expand(e.args[0]));
        return std::nullopt;
      default: return std::nullopt;
    }
  }

  static std::string wrap(const std::string& s) { return s.empty() ? "" : "(" + s + ")"; }
  static std::optional<std::vector<Term>> scaled(std::optional<std::vector<Term>> t, double c) {
    if (t)
      for (Term& x : *t) x.coef *= c;
    return t;
  }
  static std::optional<std::vector<Term>> sum(std::optional<std::vector<Term>> a, std::optional<std::vector<Term>> b) {
    if (!a || !b || a->size() + b->size() > kMaxTerms) return std::nullopt;
    a->insert(a->end(), b->begin(), b->end());
    return a;
  }
  static std::optional<std::vector<Term>> product(const std::optional<std::vector<Term>>& a,
                                                  const std::optional<std::vector<Term>>& b) {
    if (!a || !b || a->size() * b->size() > kMaxTerms) return std::nullopt;
    std::vector<Term> out;
    for (const Term& x : *a)
      for (const Term& y : *b) {
        Term t{x.coef * y.coef, x.factors, x.side | y.side};
        t.factors.insert(t.factors.end(), y.factors.begin(), y.factors.end());
        std::sort(t.factors.begin(), t.factors.end());
        out.push_back(std::move(t));
      }
    return out;
  }
  static int pattern_side(Pattern q) {
    switch (q) {
      case Pattern::RowRed:
      case Pattern::RedRow: return kRow | kRed;
      case Pattern::RedCol:
      case Pattern::ColRed: return kCol | kRed;
      case Pattern::RowVec: return kRow;
      case Pattern::ColVec: return kCol;
      case Pattern::RedVec: return kRed;
      case Pattern::RowCol:
      case Pattern::ColRow: return kRow | kCol;
    }
    return -1;
  }
  std::string axis(AxisRole r) const { return p_.axis(r).name; }
  std::string load(int access) const {
    const Access& a = p_.accesses[size_t(access)];
    const std::string I = axis(AxisRole::Row), J = axis(AxisRole::Col), K = axis(AxisRole::Red);
    std::string idx;
    switch (a.pattern) {
      case Pattern::RowRed: idx = I + ", " + K; break;
      case Pattern::RedRow: idx = K + ", " + I; break;
      case Pattern::RedCol: idx = K + ", " + J; break;
      case Pattern::ColRed: idx = J + ", " + K; break;
      case Pattern::RowVec: idx = I; break;
      case Pattern::ColVec: idx = J; break;
      case Pattern::RedVec: idx = K; break;
      case Pattern::RowCol: idx = I + ", " + J; break;
      case Pattern::ColRow: idx = J + ", " + I; break;
    }
    return p_.operands[size_t(a.operand)].name + "[" + idx + "]";
  }

  const Plan& p_;
  std::map<int, ExprId> lets_;
  mutable long visits_ = 0;
  mutable int depth_ = 0;
  mutable bool gave_up_ = false;
};

// The longest chain of lets the inner statements read through (a let's depth: one more than the
// deepest let its value reads), found without recursion.
inline int let_depth(const Plan& p) {
  std::map<int, int> depth;  // local -> depth
  int deepest = 0;
  for (const Stmt& s : p.inner) {
    if (s.kind != StmtKind::Let) continue;
    int d = 0;
    std::vector<ExprId> todo{s.value};
    while (!todo.empty()) {
      const Expr& e = p.expr(todo.back());
      todo.pop_back();
      if (e.kind == ExprKind::Local) {
        auto it = depth.find(e.index);
        if (it != depth.end()) d = std::max(d, it->second);
        continue;
      }
      for (ExprId k : e.args) todo.push_back(k);
      for (ExprId k : {e.a, e.b, e.c})
        if (k != kNoExpr) todo.push_back(k);
    }
    depth[s.target] = d + 1;
    deepest = std::max(deepest, d + 1);
  }
  return deepest;
}

}  // namespace gamut::summand
