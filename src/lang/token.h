// Tokens of the query language.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lang/diagnostics.h"

namespace gamut {

enum class Tok : uint8_t {
  End, Ident, Int, Float,
  // keywords
  KwBatch, KwWhere, KwWhen, KwIn, KwReduce, KwLet, KwIf, KwEmit, KwTop, KwBottom, KwBy, KwPer,
  KwDistinct, KwAs,
  // punctuation
  LParen, RParen, LBracket, RBracket, LBrace, RBrace, Comma, Semi, Colon, Question,
  // operators
  Plus, Minus, Star, Slash, Percent, Shl, Shr, Amp, Pipe, Caret, Tilde, Bang,
  AmpAmp, PipePipe, Lt, Le, Gt, Ge, EqEq, Ne,
  // assignments
  Assign, PlusAssign, MinusAssign, StarAssign, MaxAssign, MinAssign, OrAssign, AndAssign, XorAssign,
};

struct Token {
  Tok kind = Tok::End;
  std::string text;      // as written
  Span span;             // columns count characters
  size_t offset = 0;     // byte offset of the token in Source::text
  int64_t ival = 0;      // Int
  double fval = 0;       // Float (and Int, converted)
};

const char* tok_name(Tok t);   // for messages: "';'", "identifier"

// Lex the whole source; lexical errors go to diags (the bad character is skipped).
std::vector<Token> lex(const Source& src, Diagnostics& diags);

}  // namespace gamut
