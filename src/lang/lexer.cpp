#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "lang/token.h"

namespace gamut {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::End: return "end of input"; case Tok::Ident: return "identifier";
    case Tok::Int: return "integer"; case Tok::Float: return "number";
    case Tok::KwBatch: return "'batch'"; case Tok::KwWhere: return "'where'"; case Tok::KwWhen: return "'when'";
    case Tok::KwIn: return "'in'"; case Tok::KwReduce: return "'reduce'"; case Tok::KwLet: return "'let'";
    case Tok::KwIf: return "'if'"; case Tok::KwEmit: return "'emit'"; case Tok::KwTop: return "'top'";
    case Tok::KwBottom: return "'bottom'"; case Tok::KwBy: return "'by'"; case Tok::KwPer: return "'per'";
    case Tok::KwDistinct: return "'distinct'"; case Tok::KwAs: return "'as'";
    case Tok::LParen: return "'('"; case Tok::RParen: return "')'"; case Tok::LBracket: return "'['";
    case Tok::RBracket: return "']'"; case Tok::LBrace: return "'{'"; case Tok::RBrace: return "'}'";
    case Tok::Comma: return "','"; case Tok::Semi: return "';'"; case Tok::Colon: return "':'";
    case Tok::Question: return "'?'"; case Tok::Plus: return "'+'"; case Tok::Minus: return "'-'";
    case Tok::Star: return "'*'"; case Tok::Slash: return "'/'"; case Tok::Percent: return "'%'";
    case Tok::Shl: return "'<<'"; case Tok::Shr: return "'>>'"; case Tok::Amp: return "'&'";
    case Tok::Pipe: return "'|'"; case Tok::Caret: return "'^'"; case Tok::Tilde: return "'~'";
    case Tok::Bang: return "'!'"; case Tok::AmpAmp: return "'&&'"; case Tok::PipePipe: return "'||'";
    case Tok::Lt: return "'<'"; case Tok::Le: return "'<='"; case Tok::Gt: return "'>'"; case Tok::Ge: return "'>='";
    case Tok::EqEq: return "'=='"; case Tok::Ne: return "'!='"; case Tok::Assign: return "'='";
    case Tok::PlusAssign: return "'+='"; case Tok::MinusAssign: return "'-='"; case Tok::StarAssign: return "'*='";
    case Tok::MaxAssign: return "'max='"; case Tok::MinAssign: return "'min='"; case Tok::OrAssign: return "'|='";
    case Tok::AndAssign: return "'&='"; case Tok::XorAssign: return "'^='";
  }
  return "token";
}

static const std::unordered_map<std::string, Tok>& keywords() {
  static const std::unordered_map<std::string, Tok> kw = {
      {"batch", Tok::KwBatch}, {"where", Tok::KwWhere}, {"when", Tok::KwWhen}, {"in", Tok::KwIn},
      {"reduce", Tok::KwReduce}, {"let", Tok::KwLet}, {"if", Tok::KwIf}, {"emit", Tok::KwEmit},
      {"top", Tok::KwTop}, {"bottom", Tok::KwBottom}, {"by", Tok::KwBy}, {"per", Tok::KwPer},
      {"distinct", Tok::KwDistinct}, {"as", Tok::KwAs}};
  return kw;
}

namespace {
struct Lexer {
  const Source& src;
  Diagnostics& diags;
  const std::string& s;
  size_t p = 0;
  int line = 1, col = 1;
  std::vector<Token> out;

  Lexer(const Source& src_, Diagnostics& d) : src(src_), diags(d), s(src_.text) {}

  char peek(size_t o = 0) const { return p + o < s.size() ? s[p + o] : '\0'; }
  // Moves over n characters: columns count characters (a UTF-8 sequence is one, and so is a
  // byte that is not UTF-8), not bytes.
  void advance(size_t n = 1) {
    for (size_t q = 0; q < n && p < s.size(); ++q) {
      if (s[p] == '\n') {
        ++line;
        col = 1;
        ++p;
      } else {
        p += size_t(std::max(1, utf8_length(s, p)));
        ++col;
      }
    }
  }
  void push(Tok k, size_t start, int l, int c) {
    Token t;
    t.kind = k;
    t.text = s.substr(start, p - start);
    t.span = {l, c, int(p - start)};
    t.offset = start;
    out.push_back(std::move(t));
  }

  void run() {
    if (s.compare(0, 3, "\xEF\xBB\xBF") == 0) p = 3;  // a UTF-8 byte order mark: not part of line 1
    while (p < s.size()) {
      char ch = peek();
      if (ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') { advance(); continue; }
      if (ch == '#' || (ch == '/' && peek(1) == '/')) {
        while (p < s.size() && peek() != '\n') advance();
        continue;
      }
      if (ch == '/' && peek(1) == '*') {
        int l = line, c = col;
        advance(2);
        while (p < s.size() && !(peek() == '*' && peek(1) == '/')) advance();
        if (p >= s.size()) { diags.error({l, c, 2}, "unterminated comment"); break; }
        advance(2);
        continue;
      }
      size_t start = p;
      int l = line, c = col;
      if (std::isalpha(static_cast<unsigned char>(ch)) || ch == '_') {
        while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') advance();
        std::string word = s.substr(start, p - start);
        // `max=` / `min=` are update operators, `max(` a call, `max ==` a comparison.
        if ((word == "max" || word == "min") && peek() == '=' && peek(1) != '=') {
          advance();
          push(word == "max" ? Tok::MaxAssign : Tok::MinAssign, start, l, c);
          continue;
        }
        auto kw = keywords().find(word);
        push(kw == keywords().end() ? Tok::Ident : kw->second, start, l, c);
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(ch)) || (ch == '.' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
        lex_number(start, l, c);
        continue;
      }
      lex_punct(start, l, c);
    }
    Token end;
    end.kind = Tok::End;
    end.span = {line, col, 1};
    out.push_back(end);
  }

  // The character at p for a message: itself where printable, with its code point where it is
  // not ASCII, the byte in hex where the text is not UTF-8.
  std::string describe_character() const {
    char buf[64];
    int n = utf8_length(s, p);
    if (n == 0) {
      std::snprintf(buf, sizeof buf, "unexpected byte 0x%02X (the query is not valid UTF-8)",
                    unsigned(static_cast<unsigned char>(s[p])));
      return buf;
    }
    uint32_t cp = utf8_decode(s, p);
    if (cp < 32 || cp == 127 || (cp >= 0x80 && cp < 0xA0)) {
      std::snprintf(buf, sizeof buf, "unexpected control character U+%04X", unsigned(cp));
      return buf;
    }
    if (n == 1) return "unexpected character '" + std::string(1, s[p]) + "'";
    std::snprintf(buf, sizeof buf, " (U+%04X)", unsigned(cp));
    return "unexpected character '" + s.substr(p, size_t(n)) + "'" + buf;
  }

  void lex_number(size_t start, int l, int c) {
    bool is_float = false;
    while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
    if (peek() == '.') { is_float = true; advance(); while (std::isdigit(static_cast<unsigned char>(peek()))) advance(); }
    if ((peek() == 'e' || peek() == 'E') &&
        (std::isdigit(static_cast<unsigned char>(peek(1))) ||
         ((peek(1) == '+' || peek(1) == '-') && std::isdigit(static_cast<unsigned char>(peek(2)))))) {
      is_float = true;
      advance(2);
      while (std::isdigit(static_cast<unsigned char>(peek()))) advance();
    }
    if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
      while (std::isalnum(static_cast<unsigned char>(peek())) || peek() == '_') advance();
      diags.error({l, c, int(p - start)}, "malformed number '" + s.substr(start, p - start) + "'");
      return;
    }
    push(is_float ? Tok::Float : Tok::Int, start, l, c);
    Token& t = out.back();
    errno = 0;
    if (is_float) {
      t.fval = std::strtod(t.text.c_str(), nullptr);
      if (std::isinf(t.fval)) diags.error(t.span, "number '" + t.text + "' is too large (beyond the range of f64)");
    } else {
      unsigned long long v = std::strtoull(t.text.c_str(), nullptr, 10);
      if (errno == ERANGE || v > 9223372036854775807ull)
        diags.error(t.span, "integer literal '" + t.text + "' does not fit in 64 bits");
      t.ival = int64_t(v);
      t.fval = double(v);
    }
  }

  void lex_punct(size_t start, int l, int c) {
    char ch = peek(), n1 = peek(1);
    auto two = [&](Tok k) { advance(2); push(k, start, l, c); };
    auto one = [&](Tok k) { advance(1); push(k, start, l, c); };
    switch (ch) {
      case '(': return one(Tok::LParen); case ')': return one(Tok::RParen);
      case '[': return one(Tok::LBracket); case ']': return one(Tok::RBracket);
      case '{': return one(Tok::LBrace); case '}': return one(Tok::RBrace);
      case ',': return one(Tok::Comma); case ';': return one(Tok::Semi);
      case ':': return one(Tok::Colon); case '?': return one(Tok::Question);
      case '~': return one(Tok::Tilde);
      case '+': return n1 == '=' ? two(Tok::PlusAssign) : one(Tok::Plus);
      case '-': return n1 == '=' ? two(Tok::MinusAssign) : one(Tok::Minus);
      case '*': return n1 == '=' ? two(Tok::StarAssign) : one(Tok::Star);
      case '/': return one(Tok::Slash);
      case '%': return one(Tok::Percent);
      case '^': return n1 == '=' ? two(Tok::XorAssign) : one(Tok::Caret);
      case '!': return n1 == '=' ? two(Tok::Ne) : one(Tok::Bang);
      case '=': return n1 == '=' ? two(Tok::EqEq) : one(Tok::Assign);
      case '&': return n1 == '&' ? two(Tok::AmpAmp) : n1 == '=' ? two(Tok::AndAssign) : one(Tok::Amp);
      case '|': return n1 == '|' ? two(Tok::PipePipe) : n1 == '=' ? two(Tok::OrAssign) : one(Tok::Pipe);
      case '<': return n1 == '<' ? two(Tok::Shl) : n1 == '=' ? two(Tok::Le) : one(Tok::Lt);
      case '>': return n1 == '>' ? two(Tok::Shr) : n1 == '=' ? two(Tok::Ge) : one(Tok::Gt);
      default: break;
    }
    diags.error({l, c, 1}, describe_character());
    advance();
  }
};
}  // namespace

std::vector<Token> lex(const Source& src, Diagnostics& diags) {
  Lexer lx(src, diags);
  lx.run();
  return std::move(lx.out);
}

}  // namespace gamut
