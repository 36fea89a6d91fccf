#include "lang/diagnostics.h"

#include <algorithm>
#include <sstream>

namespace gamut {

std::string Source::line(int n) const {
  int cur = 1;
  size_t start = 0;
  for (size_t p = 0; p < text.size() && cur < n; ++p)
    if (text[p] == '\n') { ++cur; start = p + 1; }
  if (cur != n) return "";
  size_t end = text.find('\n', start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

void Diagnostics::error(Span span, std::string message) {
  // Identical duplicates come from re-analysing one expression; keep the first.
  for (const auto& d : list_)
    if (d.span.line == span.line && d.span.col == span.col && d.message == message) return;
  list_.push_back({span, std::move(message)});
}

std::string Diagnostics::render_one(const Diagnostic& d) const {
  std::ostringstream out;
  out << src_.name << ":" << d.span.line << ":" << d.span.col << ": error: " << d.message;
  std::string text = src_.line(d.span.line);
  if (d.span.line > 0 && !text.empty()) {
    for (char& c : text) if (c == '\t') c = ' ';
    out << "\n  " << text << "\n  ";
    int col = std::max(1, d.span.col);
    out << std::string(size_t(col - 1), ' ') << '^';
    int len = std::max(1, std::min<int>(d.span.length, int(text.size()) - col + 1));
    if (len > 1) out << std::string(size_t(len - 1), '~');
  }
  return out.str();
}

std::string Diagnostics::render() const {
  std::string out;
  for (size_t n = 0; n < list_.size(); ++n) {
    if (n) out += "\n";
    out += render_one(list_[n]);
  }
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
