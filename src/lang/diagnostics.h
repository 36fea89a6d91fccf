// Compiler-style diagnostics: "FILE:LINE:COL: error: MESSAGE", the source line and a caret.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "lang/span.h"

namespace gamut {

struct Source {
  std::string name;   // file name, or "<expr>" for -e
  std::string text;   // UTF-8; a leading byte order mark is ignored
  // Line n (1-based) without the newline, a trailing '\r' or a leading byte order mark.
  std::string line(int n) const;
  // The text a single-line span covers (columns count characters).
  std::string slice(Span span) const;
};

// Bytes of the well-formed UTF-8 character at s[p] (1 for ASCII), or 0 where s[p] does not start
// one (a stray continuation byte, an overlong form, a surrogate, a truncated sequence).
int utf8_length(const std::string& s, size_t p);
// The code point of the well-formed character at s[p] (utf8_length(s, p) > 0).
uint32_t utf8_decode(const std::string& s, size_t p);

struct Diagnostic {
  Span span;
  std::string message;
};

// Collects errors; several are reported at once where the phase can carry on.
class Diagnostics {
 public:
  // At most this many are kept: a file of garbage must not produce a million messages.
  static constexpr size_t kMaxErrors = 20;

  explicit Diagnostics(const Source& src) : src_(src) {}
  void error(Span span, std::string message);
  bool any() const { return !list_.empty(); }
  size_t count() const { return list_.size(); }
  bool full() const { return list_.size() >= kMaxErrors; }
  const std::vector<Diagnostic>& list() const { return list_; }
  // One block of text: for each error its line, the source line and a caret underline.
  std::string render() const;
  std::string render_one(const Diagnostic& d) const;
  // Throws QueryError (exit 1) with render() when any error was reported.
  void throw_if_any() const;
  const Source& source() const { return src_; }

 private:
  const Source& src_;
  std::vector<Diagnostic> list_;
  size_t dropped_ = 0;   // errors beyond kMaxErrors
};

// An error in the query text (exit status 1): what() is the rendered diagnostics, whose first
// line is the one-line summary.
class QueryError : public Error {
 public:
  QueryError(const std::string& rendered, ExitCode code = ExitCode::Query) : Error(code, rendered) {}
};

// Did-you-mean: the candidate closest to `name` within a small edit distance, or "".
std::string closest_name(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace gamut
