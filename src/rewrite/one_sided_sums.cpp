#include "rewrite/one_sided_sums.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"
#include "rewrite/query_text.h"
#include "rewrite/reciprocal_norms.h"
#include "sema/analyze.h"

namespace gamut {

namespace {

// Which axes an expression depends on.
constexpr int kRow = 1, kCol = 2, kRed = 4;
constexpr size_t kMaxTerms = 64;   // an expansion larger than this is not a distance
// The readers below recurse through lets and revisit shared subexpressions: a summand deeper than
// kMaxLetDepth lets or kMaxDepth levels, whose text exceeds kMaxText, or that takes more than
// kMaxVisits steps to read is not rewritten (thousands of chained lets overflowed the stack; lets
// used twice at every level double the text).
constexpr int kMaxLetDepth = 256;
constexpr int kMaxDepth = 1024;  // recursion through lets and the expressions between them
constexpr size_t kMaxText = size_t(1) << 16;
constexpr long kMaxVisits = 200000;

bool one_sided(int side) { return (side & (kRow | kCol)) != (kRow | kCol); }

// A product of factors (their query text, sorted) times a coefficient.
using Factor = std::pair<std::string, int>;   // text, side
struct Term {
  double coef = 1;
  std::vector<Factor> factors;
  int side = 0;
};

std::string number_text(double v) {
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return s;
}

std::string scalar_text(const Scalar& v) {
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
      case ExprKind::Const: case ExprKind::Param: return 0;
      case ExprKind::Axis:
        return AxisRole(e.index) == AxisRole::Row ? kRow : AxisRole(e.index) == AxisRole::Col ? kCol
               : AxisRole(e.index) == AxisRole::Red ? kRed : -1;
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
    for (ExprId k : {e.a, e.b, e.c}) if (k != kNoExpr) kids.push_back(k);
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
    if (t) for (Term& x : *t) x.coef *= c;
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
      case Pattern::RowRed: case Pattern::RedRow: return kRow | kRed;
      case Pattern::RedCol: case Pattern::ColRed: return kCol | kRed;
      case Pattern::RowVec: return kRow;
      case Pattern::ColVec: return kCol;
      case Pattern::RedVec: return kRed;
      case Pattern::RowCol: case Pattern::ColRow: return kRow | kCol;
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
int let_depth(const Plan& p) {
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

// Terms with the same factors merged, zero ones dropped, cross products written row factor first.
std::vector<Term> merged(const std::vector<Term>& in) {
  std::map<std::vector<Factor>, Term> by;
  std::vector<std::vector<Factor>> order;
  for (const Term& t : in) {
    auto it = by.find(t.factors);
    if (it == by.end()) {
      by.emplace(t.factors, t);
      order.push_back(t.factors);
    } else {
      it->second.coef += t.coef;
    }
  }
  std::vector<Term> out;
  for (const auto& f : order)
    if (by[f].coef != 0) out.push_back(by[f]);
  return out;
}

std::string product_text(const Term& t) {
  std::string s;
  for (const Factor& f : t.factors) s += (s.empty() ? "" : " * ") + f.first;
  return s.empty() ? "1" : s;
}

// `+= c * f...;` (or -=) for one term, without the accumulator's name.
std::string update_text(const Term& t) {
  const double c = std::fabs(t.coef);
  return std::string(t.coef < 0 ? "-= " : "+= ") + (c == 1 ? "" : number_text(c) + " * ") + product_text(t) + ";\n";
}

// One stage's accumulators: name, declaration, updates.
struct StageSums {
  std::vector<std::string> decls, updates, stores;
  bool empty() const { return decls.empty(); }
};

}  // namespace

std::optional<OneSidedRewrite> one_sided_sums(const Plan& p, const Instance& inst, const Source& source,
                                              const Bindings& bindings, F32Math f32_math) {
  if (p.batched || !p.typed || p.k_sequential || p.accs.empty() || p.inner.empty()) return std::nullopt;
  if (inst.row.size() == 0 || inst.col.size() == 0 || inst.red.size() == 0) return std::nullopt;
  if (uses_prefix(p, "os_")) return std::nullopt;  // keep the stages' own names free
  if (let_depth(p) > kMaxLetDepth) return std::nullopt;
  for (const Accumulator& a : p.accs)
    if (a.monoid != Monoid::Sum) return std::nullopt;
  const InnerText it(p);
  // Each accumulator's updates (+= / -=; no `if`), and the axes its summand reads.
  std::vector<std::vector<const Stmt*>> updates(p.accs.size());
  std::vector<int> side(p.accs.size(), 0);
  for (const Stmt& s : p.inner) {
    if (s.kind == StmtKind::Let) continue;
    if (s.kind != StmtKind::Update || (s.update != UpdateOp::Add && s.update != UpdateOp::Sub)) return std::nullopt;
    const int t = it.side(s.value);
    if (t < 0 || it.text(s.value).empty()) return std::nullopt;
    updates[size_t(s.target)].push_back(&s);
    side[size_t(s.target)] |= t;
  }
  for (const auto& u : updates)
    if (u.empty()) return std::nullopt;  // (an accumulator the reduce body never updates)

  // Expansion (b): every two-sided accumulator as terms, their cross products one product of a
  // row-side and a column-side factor (per-k weights inside a cross product are not expanded).
  std::vector<std::vector<Term>> terms(p.accs.size());
  std::string cross;
  bool expand = true, expands_any = false;
  for (size_t a = 0; a < p.accs.size() && expand; ++a) {
    if (one_sided(side[a])) continue;
    std::vector<Term> all;
    expand = p.accs[a].type == CType::F32;
    for (size_t u = 0; u < updates[a].size() && expand; ++u) {
      const Stmt* s = updates[a][u];
      auto t = it.expand(s->value);
      expand = t && all.size() + t->size() <= kMaxTerms;
      if (expand)
        for (Term& x : *t) all.push_back(Term{s->update == UpdateOp::Sub ? -x.coef : x.coef, x.factors, x.side});
    }
    if (!expand) break;
    terms[a] = merged(all);
    for (Term& t : terms[a]) {
      if (one_sided(t.side)) {
        expands_any = true;
        continue;
      }
      if (t.factors.size() != 2 || !one_sided(t.factors[0].second) || !one_sided(t.factors[1].second)) {
        expand = false;
        break;
      }
      if (t.factors[0].second & kCol) std::swap(t.factors[0], t.factors[1]);
      const std::string key = t.factors[0].first + " * " + t.factors[1].first;
      if (cross.empty()) cross = key;
      expand = expand && cross == key;
    }
  }
  expand = expand && !cross.empty();

  const std::string I = p.axis(AxisRole::Row).name, J = p.axis(AxisRole::Col).name, K = p.axis(AxisRole::Red).name;
  std::optional<QueryText> q = split_query(source);
  if (!q) return std::nullopt;
  TypeEnv env;
  for (size_t o = 0; o < p.operands.size(); ++o) env.inputs[p.operands[o].name] = inst.inputs[o]->dtype;
  // (c) Where the main stage runs on the tensor cores, `num / sqrt(a * b)` of a row sum a and a
  // column sum b becomes `(num) * (os_rsq_a[i] * os_rsq_b[j])`, each factor `1 / sqrt(sum)` once
  // per row or column: two multiplications per pair instead of a square root and a division.
  // It changes the rounding by a few units in the last place, far below the tensor cores' own.
  std::vector<bool> row_sum(p.accs.size()), col_sum(p.accs.size());
  for (size_t a = 0; a < p.accs.size(); ++a) {
    row_sum[a] = one_sided(side[a]) && !(side[a] & kCol);
    col_sum[a] = one_sided(side[a]) && (side[a] & kCol);
  }
  const std::vector<NormQuotient> quotients = norm_quotients(p, source, row_sum, col_sum);

  // The program for one choice: with expansion (b), or hoisting whole accumulators only (a); with
  // or without the reciprocal norms (c).
  auto build = [&](bool expanded, bool norms) -> std::optional<OneSidedRewrite> {
    StageSums rows, cols;
    std::map<size_t, std::string> rsq;  // accumulator -> its `1 / sqrt` vector read
    std::vector<std::string> main_decls, main_updates, main_lets;
    bool cross_acc = false;
    // A one-sided sum into a stage: its accumulator os_s<n>, stored as os_row<n> / os_col<n>.
    auto add_sum = [&](bool row, const Accumulator& acc, const std::string& init, const std::vector<std::string>& ups) {
      StageSums& st = row ? rows : cols;
      const std::string n = std::to_string(rows.decls.size() + cols.decls.size());
      const std::string s = "os_s" + n, out = (row ? "os_row" : "os_col") + n;
      st.decls.push_back("  " + s + ": " + std::string(ctype_name(acc.type)) + " = " + init + ";\n");
      for (const std::string& u : ups) st.updates.push_back("    " + s + " " + u);
      st.stores.push_back("  " + out + "[" + (row ? I : J) + "] += " + s + ";\n");
      env.inputs[out] = storage_type_of(acc.type);
      return out + "[" + (row ? I : J) + "]";
    };
    for (size_t a = 0; a < p.accs.size(); ++a) {
      const Accumulator& acc = p.accs[a];
      if (one_sided(side[a])) {  // (a): the accumulator itself, from its initial value
        std::vector<std::string> ups;
        for (const Stmt* s : updates[a])
          ups.push_back(std::string(s->update == UpdateOp::Sub ? "-= " : "+= ") + it.text(s->value) + ";\n");
        const bool row = !(side[a] & kCol);
        main_lets.push_back("  let " + acc.name + " = " + add_sum(row, acc, scalar_text(acc.init), ups) + ";\n");
        const bool quotient = std::any_of(quotients.begin(), quotients.end(),
                                          [a](const NormQuotient& x) { return x.row_acc == a || x.col_acc == a; });
        if (norms && quotient) {
          const std::string n = std::to_string(rows.decls.size() + cols.decls.size() - 1);  // the sum just added
          const std::string out = "os_rsq" + n, at = "[" + (row ? I : J) + "]";
          (row ? rows : cols).stores.push_back("  " + out + at + " += 1.0 / sqrt(os_s" + n + ");\n");
          env.inputs[out] = storage_type_of(acc.type);
          rsq[a] = out + at;
        }
        continue;
      }
      if (!expanded) {  // kept as written
        main_decls.push_back("  " + acc.name + ": " + std::string(ctype_name(acc.type)) + " = " + scalar_text(acc.init) + ";\n");
        for (const Stmt* s : updates[a])
          main_updates.push_back("    " + acc.name + (s->update == UpdateOp::Sub ? " -= " : " += ") + it.text(s->value) +
                                 ";\n");
        continue;
      }
      // (b): init + row terms + column terms + c * os_dot.
      std::vector<std::string> row_ups, col_ups;
      double c = 0;
      for (const Term& t : terms[a]) {
        if (!one_sided(t.side)) {
          c += t.coef;
          continue;
        }
        (t.side & kCol ? col_ups : row_ups).push_back(update_text(t));
      }
      std::string e = acc.init.f != 0 ? number_text(acc.init.f) : "";
      auto plus = [&e](const std::string& x) { e += (e.empty() ? "" : " + ") + x; };
      if (!row_ups.empty()) plus(add_sum(true, acc, "0", row_ups));
      if (!col_ups.empty()) plus(add_sum(false, acc, "0", col_ups));
      if (c != 0) {
        cross_acc = true;
        const std::string f = std::fabs(c) == 1 ? "os_dot" : number_text(std::fabs(c)) + " * os_dot";
        e = e.empty() ? (c < 0 ? "-" + f : f) : e + (c < 0 ? " - " : " + ") + f;
      }
      bool nonneg = acc.init.f >= 0;
      for (const Stmt* s : updates[a]) nonneg = nonneg && s->update == UpdateOp::Add && it.squares(s->value);
      if (e.empty()) e = "0.0";
      // (The clamp keeps NaN: `max` ignores it, and a NaN operand must give NaN as written.)
      if (nonneg) {
        main_lets.push_back("  let os_" + acc.name + " = " + e + ";\n");
        main_lets.push_back("  let " + acc.name + " = os_" + acc.name + " < 0.0 ? 0.0 : os_" + acc.name + ";\n");
      } else {
        main_lets.push_back("  let " + acc.name + " = " + e + ";\n");
      }
    }
    if (cross_acc) {
      main_decls.insert(main_decls.begin(), "  os_dot: f32 = 0;\n");
      main_updates.insert(main_updates.begin(), "    os_dot += " + cross + ";\n");
    }
    if (it.gave_up() || main_decls.empty() || (rows.empty() && cols.empty())) return std::nullopt;
    std::string output = q->output;
    if (norms) {
      std::vector<std::pair<Span, std::string>> reps;
      for (const NormQuotient& x : quotients)
        reps.push_back({x.span, "(" + x.num + ") * (" + rsq[x.row_acc] + " * " + rsq[x.col_acc] + ")"});
      const std::optional<Source> src = replaced(source, reps);
      const std::optional<QueryText> rq = src ? split_query(*src) : std::nullopt;
      if (!rq) return std::nullopt;
      output = rq->output;
    }

    PushdownProgram prog;
    auto stage = [&](const std::string& name, const std::string& text, const std::vector<std::string>& from,
                     std::vector<std::pair<std::string, std::vector<int64_t>>> dims) -> bool {
      Plan sp;
      try {
        sp = build_plan(Source{source.name + " [" + name + "]", text}, env);
      } catch (const Error&) {
        return false;
      }
      if (!sp.typed) return false;
      StageQuery st{name, text, {}, from, std::move(dims), std::nullopt, std::nullopt};
      for (const Operand& o : sp.operands)
        if (o.name.rfind("os_", 0) != 0) st.inputs.push_back(o.name);
      for (const Param& param : sp.params) {
        if (!bindings.scalars.count(param.name)) return false;  // a range symbol inferred from extents
        st.inputs.push_back(param.name);
      }
      prog.stages.push_back(std::move(st));
      return true;
    };
    const std::string kr = range_text(inst.red.begin, inst.red.end);
    std::vector<std::string> produced;
    for (int r = 0; r < 2; ++r) {
      const StageSums& st = r == 0 ? rows : cols;
      if (st.empty()) continue;
      std::ostringstream s;
      s << "where (" << (r == 0 ? I + " in " + range_text(inst.row.begin, inst.row.end) + ", os_j in [0, 1)"
                                : "os_i in [0, 1), " + J + " in " + range_text(inst.col.begin, inst.col.end))
        << ") {\n";
      for (const std::string& d : st.decls) s << d;
      s << "  reduce (" << K << " in " << kr << ") {\n";
      for (const std::string& u : st.updates) s << u;
      s << "  }\n";
      for (const std::string& o : st.stores) s << o;
      s << "}\n";
      std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
      for (const std::string& o : st.stores) {
        const std::string name = o.substr(2, o.find('[') - 2);
        dims.push_back({name, {r == 0 ? inst.row.end : inst.col.end}});
        produced.push_back(name);
      }
      if (!stage(r == 0 ? "one-sided sums per " + I : "one-sided sums per " + J, s.str(), {}, std::move(dims)))
        return std::nullopt;
    }
    std::ostringstream m;
    m << "where (" << I << " in " << range_text(inst.row.begin, inst.row.end) << ", " << J << " in "
      << range_text(inst.col.begin, inst.col.end) << ")" << (q->when.empty() ? "" : " " + q->when) << " {\n";
    for (const std::string& d : main_decls) m << d;
    m << "  reduce (" << K << " in " << kr << ") {\n";
    for (const std::string& u : main_updates) m << u;
    m << "  }\n";
    for (const std::string& l : main_lets) m << l;
    m << output << "}\n";
    std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
    for (size_t d = 0; d < p.dense.size(); ++d)
      if (!p.dense[d].is_project()) dims.push_back({p.dense[d].name, inst.dense_shapes[d]});
    const std::string main_name = expanded ? "the cross sum, the rest in the epilogue" : "the two-sided sums";
    if (!stage(main_name + (norms ? ", norms as reciprocal square roots" : ""), m.str(), produced, std::move(dims)))
      return std::nullopt;
    // It must produce the original's outputs, and (b) must put the cross sum on the tensor cores.
    const Plan main = build_plan(Source{source.name + " [main]", m.str()}, env);
    if (!same_outputs(p, main)) return std::nullopt;
    if ((expanded || norms) && !executed_math(main, f32_math).tensor_cores()) return std::nullopt;
    const double M = double(inst.row.size()), N = double(inst.col.size()), Kn = double(inst.red.size());
    prog.original_work = M * N * Kn * double(p.inner.size());
    prog.rewritten_work =
        M * N * Kn * double(main.inner.size()) + (M + N) * Kn * double(rows.updates.size() + cols.updates.size());
    prog.main_plan = std::make_shared<const Plan>(main);
    return OneSidedRewrite{std::move(prog), expanded && expands_any ? "expand-squares" : "hoist-one-sided"};
  };
  for (bool expanded : {true, false})
    for (bool norms : {true, false})
      if ((expand || !expanded) && (!quotients.empty() || !norms))
        if (auto r = build(expanded, norms)) return r;
  return std::nullopt;
}

}  // namespace gamut
