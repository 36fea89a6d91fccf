#include "lang/diagnostics.h"

#include <algorithm>
#include <sstream>

namespace gamut {

namespace {
constexpr int kShownColumns = 100;  // of a source line under a diagnostic
}  // namespace

int utf8_length(const std::string& s, size_t p) {
  auto byte = [&](size_t q) { return q < s.size() ? static_cast<unsigned char>(s[q]) : 0u; };
  auto cont = [&](size_t q) { return (byte(q) & 0xC0u) == 0x80u; };
  unsigned c = byte(p);
  if (p >= s.size()) return 0;
  if (c < 0x80) return 1;
  if (c < 0xC2) return 0;                                    // continuation byte or overlong lead
  if (c < 0xE0) return cont(p + 1) ? 2 : 0;
  if (c < 0xF0) {
    unsigned c1 = byte(p + 1);
    if (!cont(p + 1) || !cont(p + 2)) return 0;
    if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0)) return 0;   // overlong, surrogate
    return 3;
  }
  if (c < 0xF5) {
    unsigned c1 = byte(p + 1);
    if (!cont(p + 1) || !cont(p + 2) || !cont(p + 3)) return 0;
    if ((c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 >= 0x90)) return 0;   // overlong, > U+10FFFF
    return 4;
  }
  return 0;
}

uint32_t utf8_decode(const std::string& s, size_t p) {
  int n = utf8_length(s, p);
  auto b = [&](size_t q) { return uint32_t(static_cast<unsigned char>(s[q])); };
  switch (n) {
    case 1: return b(p);
    case 2: return (b(p) & 0x1Fu) << 6 | (b(p + 1) & 0x3Fu);
    case 3: return (b(p) & 0x0Fu) << 12 | (b(p + 1) & 0x3Fu) << 6 | (b(p + 2) & 0x3Fu);
    case 4: return (b(p) & 0x07u) << 18 | (b(p + 1) & 0x3Fu) << 12 | (b(p + 2) & 0x3Fu) << 6 | (b(p + 3) & 0x3Fu);
    default: return 0xFFFD;
  }
}

std::string Source::line(int n) const {
  int cur = 1;
  size_t start = 0;
  for (size_t p = 0; p < text.size() && cur < n; ++p)
    if (text[p] == '\n') { ++cur; start = p + 1; }
  if (cur != n || n < 1) return "";
  size_t end = text.find('\n', start);
  std::string l = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (n == 1 && l.compare(0, 3, "\xEF\xBB\xBF") == 0) l.erase(0, 3);
  if (!l.empty() && l.back() == '\r') l.pop_back();
  return l;
}

namespace {
// Byte offset of character column `col` (1-based) in `l`; an invalid byte counts as one column.
size_t byte_of_column(const std::string& l, int col) {
  size_t p = 0;
  for (int c = 1; c < col && p < l.size(); ++c) p += size_t(std::max(1, utf8_length(l, p)));
  return std::min(p, l.size());
}
}  // namespace

std::string Source::slice(Span span) const {
  std::string l = line(span.line);
  size_t a = byte_of_column(l, span.col);
  size_t b = byte_of_column(l, span.col + std::max(0, span.length));
  return l.substr(a, b - a);
}

void Diagnostics::error(Span span, std::string message) {
  // Identical duplicates come from re-analysing one expression; keep the first.
  for (const auto& d : list_)
    if (d.span.line == span.line && d.span.col == span.col && d.message == message) return;
  if (full()) {
    ++dropped_;
    return;
  }
  list_.push_back({span, std::move(message)});
}

std::string Diagnostics::render_one(const Diagnostic& d) const {
  std::ostringstream out;
  out << src_.name << ":" << d.span.line << ":" << d.span.col << ": error: " << d.message;
  std::string raw = src_.line(d.span.line);
  // The line as shown: one column per character (tabs as spaces, control characters and bytes
  // that are not UTF-8 as '?'), so that the caret lands under the reported column.
  std::vector<std::string> shown;
  for (size_t p = 0; p < raw.size();) {
    int n = utf8_length(raw, p);
    unsigned char c = static_cast<unsigned char>(raw[p]);
    if (n == 1) shown.emplace_back(1, c == '\t' ? ' ' : (c < 32 || c == 127) ? '?' : char(c));
    else if (n > 1) shown.push_back(raw.substr(p, size_t(n)));
    else shown.emplace_back("?");
    p += size_t(std::max(1, n));
  }
  if (d.span.line <= 0 || shown.empty()) return out.str();
  // A long line (a generated query) is shown as a window around the column.
  const int chars = int(shown.size()), col = std::max(1, d.span.col);
  int first = 1, last = chars;
  if (chars > kShownColumns) {
    first = std::max(1, std::min(col - kShownColumns / 2, chars - kShownColumns + 1));
    last = std::min(chars, first + kShownColumns - 1);
  }
  std::string text = first > 1 ? "..." : "";
  for (int c = first; c <= last; ++c) text += shown[size_t(c - 1)];
  if (last < chars) text += "...";
  out << "\n  " << text << "\n  ";
  out << std::string(size_t(col - first + (first > 1 ? 3 : 0)), ' ') << '^';
  int len = std::max(1, std::min<int>(d.span.length, last - col + 1));
  if (len > 1) out << std::string(size_t(len - 1), '~');
  return out.str();
}

std::string Diagnostics::render() const {
  std::string out;
  for (size_t n = 0; n < list_.size(); ++n) {
    if (n) out += "\n";
    out += render_one(list_[n]);
  }
  if (dropped_) out += "\n" + src_.name + ": " + std::to_string(dropped_) + " more error" + (dropped_ > 1 ? "s" : "") + " not shown";
  return out;
}

void Diagnostics::throw_if_any() const {
  if (any()) throw QueryError(render());
}

static size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  // About a third of the letters may be wrong; one-letter names get no guesses.
  size_t limit = name.size() / 3 + (name.size() >= 2 ? 1 : 0), best_d = limit + 1;
  for (const auto& c : candidates) {
    if (c == name) continue;
    size_t d = edit_distance(name, c);
    if (d <= limit && d < best_d) { best_d = d; best = c; }
  }
  return best;
}

}  // namespace gamut
