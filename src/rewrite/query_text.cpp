#include "rewrite/query_text.h"

#include <vector>

#include "lang/token.h"

namespace gamut {

std::optional<QueryText> split_query(const Source& src) {
  Diagnostics diags(src);
  const std::vector<Token> toks = lex(src, diags);
  if (diags.any()) return std::nullopt;
  auto begin_of = [&](size_t t) { return toks[t].offset; };  // (columns count characters, not bytes)
  auto end_of = [&](size_t t) { return begin_of(t) + toks[t].text.size(); };
  // The token closing the bracket opened at `open`, or 0 when unmatched. Any closer closes the
  // innermost opener: a range `[0, N)` closes its `[` with `)`.
  auto closing = [&](size_t open) -> size_t {
    int depth = 0;
    for (size_t t = open; t < toks.size(); ++t) {
      const Tok k = toks[t].kind;
      depth += k == Tok::LParen || k == Tok::LBracket || k == Tok::LBrace ? 1
               : k == Tok::RParen || k == Tok::RBracket || k == Tok::RBrace ? -1 : 0;
      if (depth == 0) return t;
    }
    return 0;
  };
  auto is = [&](size_t t, Tok k) { return t < toks.size() && toks[t].kind == k; };

  size_t t = 0;
  while (t < toks.size() && toks[t].kind != Tok::KwWhere) ++t;
  if (!is(t + 1, Tok::LParen) || !(t = closing(t + 1))) return std::nullopt;
  QueryText q;
  if (is(t + 1, Tok::KwWhen)) {
    const size_t w = t + 1;
    if (!is(w + 1, Tok::LParen) || !(t = closing(w + 1))) return std::nullopt;
    q.when = src.text.substr(begin_of(w), end_of(t) - begin_of(w));
  }
  const size_t body = t + 1;
  if (!is(body, Tok::LBrace)) return std::nullopt;
  const size_t body_end = closing(body);
  size_t r = body + 1;
  while (r < body_end && toks[r].kind != Tok::KwReduce) ++r;
  if (r >= body_end || !is(r + 1, Tok::LParen)) return std::nullopt;
  const size_t red_args = closing(r + 1);
  if (!red_args || !is(red_args + 1, Tok::LBrace)) return std::nullopt;
  const size_t red_end = closing(red_args + 1);
  if (!red_end || red_end >= body_end) return std::nullopt;
  q.output = src.text.substr(end_of(red_end), begin_of(body_end) - end_of(red_end));
  return q;
}

std::string range_text(int64_t b, int64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + ")"; }

bool uses_prefix(const Plan& p, const std::string& prefix) {
  auto has = [&](const std::string& n) { return n.rfind(prefix, 0) == 0; };
  for (const Axis& a : p.axes) if (has(a.name)) return true;
  for (const Operand& o : p.operands) if (has(o.name)) return true;
  for (const Param& q : p.params) if (has(q.name)) return true;
  for (const Accumulator& a : p.accs) if (has(a.name)) return true;
  for (const Local& l : p.locals) if (has(l.name)) return true;
  for (const DenseOutput& d : p.dense) if (has(d.name)) return true;
  for (const ListOutput& l : p.lists) if (has(l.name)) return true;
  return false;
}

bool same_outputs(const Plan& a, const Plan& b) {
  if (a.dense.size() != b.dense.size() || a.lists.size() != b.lists.size()) return false;
  for (size_t d = 0; d < a.dense.size(); ++d)
    if (a.dense[d].name != b.dense[d].name || a.dense[d].type != b.dense[d].type || a.dense[d].op != b.dense[d].op)
      return false;
  for (size_t l = 0; l < a.lists.size(); ++l) {
    const ListOutput &x = a.lists[l], &y = b.lists[l];
    if (x.name != y.name || x.columns.size() != y.columns.size()) return false;
    for (size_t c = 0; c < x.columns.size(); ++c)
      if (x.columns[c].name != y.columns[c].name || x.columns[c].type != y.columns[c].type) return false;
  }
  return true;
}

}  // namespace gamut
