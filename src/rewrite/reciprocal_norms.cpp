#include "rewrite/reciprocal_norms.h"

#include <algorithm>

namespace gamut {

namespace {

// Whether the parentheses of a piece of query text balance (a span that starts inside a
// parenthesised operand does not).
bool balanced(const std::string& t) {
  int depth = 0;
  for (char c : t) {
    depth += c == '(' ? 1 : c == ')' ? -1 : 0;
    if (depth < 0) return false;
  }
  return depth == 0;
}

}  // namespace

std::vector<NormQuotient> norm_quotients(const Plan& p, const Source& src, const std::vector<bool>& row_sum,
                                         const std::vector<bool>& col_sum) {
  std::vector<NormQuotient> out;
  auto acc_of = [&](ExprId id) -> int {
    const Expr& e = p.expr(id);
    return e.kind == ExprKind::Acc && p.accs[size_t(e.index)].type == CType::F32 ? e.index : -1;
  };
  for (const Expr& e : p.exprs) {
    if (e.kind != ExprKind::Binary || e.binop != BinOp::Div || e.type != CType::F32) continue;
    const Expr& r = p.expr(e.b);
    if (r.kind != ExprKind::Call || r.fn != Fn::Sqrt || r.args.size() != 1) continue;
    const Expr& m = p.expr(r.args[0]);
    if (m.kind != ExprKind::Binary || m.binop != BinOp::Mul) continue;
    int a = acc_of(m.a), b = acc_of(m.b);
    if (a < 0 || b < 0) continue;
    if (col_sum[size_t(a)]) std::swap(a, b);
    if (!row_sum[size_t(a)] || !col_sum[size_t(b)]) continue;  // one row sum, one column sum
    // The plan's spans: the quotient's and numerator's start where the numerator does (inside its
    // parentheses, if any), a call's is its name. The text runs to the call's closing parenthesis.
    const Span n = p.expr(e.a).span;
    if (n.line != e.span.line || r.span.line != e.span.line || n.col < 1 || r.span.col <= n.col) continue;
    const std::string l = src.line(e.span.line);
    if (std::any_of(l.begin(), l.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) continue;
    size_t begin = size_t(n.col - 1), end = std::string::npos;
    const size_t name = size_t(r.span.col - 1), open = l.find('(', name), slash = l.rfind('/', name);
    if (open == std::string::npos || slash == std::string::npos || slash < begin + size_t(n.length)) continue;
    if (l.find_first_not_of(" \t", slash + 1) != name) continue;
    for (size_t c = open, depth = 0; c < l.size() && end == std::string::npos; ++c)
      if (l[c] == '(') ++depth;
      else if (l[c] == ')' && --depth == 0) end = c + 1;
    if (end == std::string::npos) continue;
    auto numerator = [&] {
      const size_t last = l.find_last_not_of(" \t", slash - 1);
      return last == std::string::npos || last < begin ? std::string() : l.substr(begin, last + 1 - begin);
    };
    std::string num = numerator();
    for (int outer = 0; outer < 8 && !balanced(num); ++outer) {  // widen to the parentheses around it
      const size_t before = l.find_last_not_of(" \t", begin == 0 ? 0 : begin - 1);
      if (begin == 0 || before == std::string::npos || l[before] != '(') break;
      begin = before;
      num = numerator();
    }
    if (num.empty() || !balanced(num) || !balanced(l.substr(begin, end - begin))) continue;
    out.push_back(NormQuotient{Span{e.span.line, int(begin + 1), int(end - begin)}, num, size_t(a), size_t(b)});
  }
  return out;
}

std::optional<Source> replaced(const Source& src, std::vector<std::pair<Span, std::string>> reps) {
  std::sort(reps.begin(), reps.end(), [](const auto& x, const auto& y) {
    return std::make_pair(x.first.line, x.first.col) > std::make_pair(y.first.line, y.first.col);
  });
  std::vector<size_t> starts{0};
  for (size_t c = 0; c < src.text.size(); ++c)
    if (src.text[c] == '\n') starts.push_back(c + 1);
  Source out = src;
  for (size_t r = 0; r < reps.size(); ++r) {
    const Span s = reps[r].first;
    if (r > 0 && s.line == reps[r - 1].first.line && s.col + s.length > reps[r - 1].first.col) return std::nullopt;
    if (s.line < 1 || size_t(s.line) > starts.size()) return std::nullopt;
    const size_t begin = starts[size_t(s.line) - 1];
    const size_t end = size_t(s.line) < starts.size() ? starts[size_t(s.line)] : src.text.size();
    for (size_t c = begin; c < end; ++c)
      if (static_cast<unsigned char>(src.text[c]) >= 0x80) return std::nullopt;
    const size_t at = begin + size_t(s.col - 1);
    if (at + size_t(s.length) > end) return std::nullopt;
    out.text.replace(at, size_t(s.length), reps[r].second);
  }
  return out;
}


}  // namespace gamut
