// Recursive-descent parser with C precedence (spec section 4) and statement-level recovery.
#include <algorithm>
#include <string>

#include "lang/ast.h"

namespace gamut {

namespace {

struct SyntaxError {};  // unwinds to the nearest recovery point

const std::vector<std::string>& keyword_words() {
  static const std::vector<std::string> w = {"batch", "where", "when", "in", "reduce", "let", "if",
                                             "emit", "top", "bottom", "by", "per", "distinct", "as"};
  return w;
}

class Parser {
 public:
  Parser(const Source& src, Diagnostics& d) : diags_(d) { toks_ = lex(src, d); }

  AstQuery query() {
    AstQuery q;
    try {
      if (at(Tok::KwBatch)) {
        next();
        expect(Tok::LParen, "after 'batch'");
        q.batch = axis();
        expect(Tok::RParen, "to close the batch axis");
      }
      expect_keyword(Tok::KwWhere, "a query starts with 'where' (or 'batch')");
      expect(Tok::LParen, "after 'where'");
      q.row = axis();
      expect(Tok::Comma, "between the two 'where' axes");
      q.col = axis();
      if (at(Tok::Comma)) fail(peek().span, "'where' takes exactly two axes (rows, columns)");
      expect(Tok::RParen, "to close the 'where' axes");
      if (at(Tok::KwWhen)) {
        next();
        expect(Tok::LParen, "after 'when'");
        q.when = expr();
        expect(Tok::RParen, "to close the 'when' condition");
      }
      expect(Tok::LBrace, "to open the query body");
    } catch (SyntaxError&) {
      return q;  // a broken header makes the rest meaningless
    }
    // Accumulator declarations up to `reduce`.
    bool declared = false;
    while (!at(Tok::KwReduce) && !at(Tok::End) && !at(Tok::RBrace)) {
      // `reduse (k)`: a misspelled keyword, not a declaration; report it and read on as `reduce`.
      if (at(Tok::Ident) && peek(1).kind == Tok::LParen) {
        std::string m = "expected 'reduce' after the accumulator declarations, found " + describe(peek());
        if (std::string g = closest_name(peek().text, keyword_words()); !g.empty()) m += "; did you mean '" + g + "'?";
        diags_.error(peek().span, m);
        toks_[pos_].kind = Tok::KwReduce;
        break;
      }
      declared = true;
      try {
        q.accs.push_back(acc_decl());
      } catch (SyntaxError&) {
        recover();
      }
    }
    if (!declared && !stopped())
      diags_.error(peek().span, "expected at least one accumulator declaration (NAME = VALUE;) before 'reduce'");
    try {
      expect_keyword(Tok::KwReduce, "expected 'reduce' after the accumulator declarations");
      expect(Tok::LParen, "after 'reduce'");
      q.red = axis();
      expect(Tok::RParen, "to close the 'reduce' axis");
      expect(Tok::LBrace, "to open the 'reduce' body");
    } catch (SyntaxError&) {
      return q;
    }
    q.inner = block_body();
    expect_soft(Tok::RBrace, "to close the 'reduce' body");
    q.outer = block_body();
    expect_soft(Tok::RBrace, "to close the query body");
    // `finish` is a word only here (a name elsewhere), so no query that names something
    // `finish` changes meaning.
    if (at(Tok::Ident) && peek().text == "finish" && !stopped()) finish_block(q);
    if (!at(Tok::End) && !stopped())
      diags_.error(peek().span, "unexpected " + describe(peek()) + " after the end of the query");
    return q;
  }

 private:
  std::vector<Token> toks_;
  size_t pos_ = 0;
  Diagnostics& diags_;
  int nest_ = 0;     // active expression recursion levels (parentheses, unary operators, calls, ?:)
  int if_depth_ = 0; // enclosing `if` statements
  bool resynced_ = false;  // skip_statement() already moved to the next statement

  // One level of the parser's own recursion; more than kMaxExprDepth is an error, so that
  // neither this parser nor a later pass can run out of stack on nested input.
  struct Nest {
    Parser& p;
    Nest(Parser& parser, Span at) : p(parser) {
      if (p.nest_ >= kMaxExprDepth) p.too_deep(at);
      ++p.nest_;
    }
    ~Nest() { --p.nest_; }
  };
  [[noreturn]] void too_deep(Span at) {
    fail(at, "expression nested too deeply: more than " + std::to_string(kMaxExprDepth) +
                 " levels (each operator of a chain like a + b + c, each call and each parenthesis counts one);"
                 " split it with 'let'");
  }

  const Token& peek(size_t o = 0) const { return toks_[std::min(pos_ + o, toks_.size() - 1)]; }
  bool at(Tok k) const { return peek().kind == k; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < toks_.size() - 1) ++pos_;
    return t;
  }
  bool stopped() const { return diags_.full(); }

  static std::string describe(const Token& t) {
    if (t.kind == Tok::End) return "end of input";
    if (t.kind == Tok::Ident) return "'" + t.text + "'";
    if (t.kind == Tok::Int || t.kind == Tok::Float) return "number '" + t.text + "'";
    return tok_name(t.kind);
  }

  [[noreturn]] void fail(Span span, const std::string& msg) {
    diags_.error(span, msg);
    throw SyntaxError{};
  }

  // A missing ';' is reported at the end of the previous token, where the user forgot it.
  Span after_previous() const {
    if (pos_ == 0) return peek().span;
    Span s = toks_[pos_ - 1].span;
    s.col += s.length;
    s.length = 1;
    return s;
  }

  const Token& expect(Tok k, const std::string& where) {
    if (!at(k)) {
      std::string msg = "expected " + std::string(tok_name(k)) + " " + where + ", found " + describe(peek());
      fail(k == Tok::Semi || k == Tok::RParen ? after_previous() : peek().span, msg);
    }
    return next();
  }
  void expect_soft(Tok k, const std::string& where) {
    try { expect(k, where); } catch (SyntaxError&) {}
  }

  // A missing ';' before a token that cannot continue the statement (a token on a later line,
  // '}', a statement keyword, the end) is reported and taken as read: the next statement then
  // parses normally instead of being skipped by recovery.
  void expect_semi(const std::string& where) {
    if (at(Tok::Semi)) { next(); return; }
    bool ends_statement = pos_ > 0 && (peek().span.line > toks_[pos_ - 1].span.line || at(Tok::RBrace) ||
                                       at(Tok::End) || at(Tok::KwReduce) || at(Tok::KwLet) || at(Tok::KwIf) ||
                                       at(Tok::KwEmit));
    if (!ends_statement) expect(Tok::Semi, where);  // throws: recovery skips the rest
    diags_.error(after_previous(), "expected ';' " + where + ", found " + describe(peek()));
  }

  void expect_keyword(Tok k, const std::string& msg) {
    if (at(k)) { next(); return; }
    std::string m = msg + ", found " + describe(peek());
    if (at(Tok::Ident)) {
      std::string guess = closest_name(peek().text, keyword_words());
      if (!guess.empty()) m += "; did you mean '" + guess + "'?";
    }
    fail(peek().span, m);
  }

  // Skip to just after the next ';' at this nesting level, to a '}' that closes a block, or to a
  // keyword that starts a statement (these never occur inside an expression).
  void recover() {
    if (resynced_) {
      resynced_ = false;
      return;
    }
    int depth = 0;
    bool moved = false;
    while (!at(Tok::End)) {
      Tok k = peek().kind;
      if (depth == 0 && moved &&
          (k == Tok::KwReduce || k == Tok::KwLet || k == Tok::KwIf || k == Tok::KwEmit))
        return;
      moved = true;
      if (k == Tok::LBrace) ++depth;
      if (k == Tok::RBrace) {
        if (depth == 0) return;
        --depth;
      }
      next();
      if (k == Tok::Semi && depth == 0) return;
    }
  }

  // Moves past the statement that starts here (to its ';', or its block's closing '}'); the
  // next recover() then has nothing to skip.
  void skip_statement() {
    int depth = 0;
    while (!at(Tok::End)) {
      Tok k = peek().kind;
      if (k == Tok::RBrace && depth == 0) break;  // closes an enclosing block: not ours
      next();
      if (k == Tok::LBrace) ++depth;
      if ((k == Tok::RBrace && --depth == 0) || (k == Tok::Semi && depth == 0)) break;
    }
    resynced_ = true;
  }

  AstAxis axis() {
    AstAxis a;
    const Token& name = expect(Tok::Ident, "naming an axis");
    a.name = name.text;
    a.span = name.span;
    if (at(Tok::KwIn)) {
      next();
      AstRange r;
      r.span = expect(Tok::LBracket, "to open a range [s, e]").span;
      r.begin = expr();
      expect(Tok::Comma, "between the range bounds");
      r.end = expr();
      if (!at(Tok::RBracket) && !at(Tok::RParen))
        fail(peek().span, "expected ']' or ')' to close the range, found " + describe(peek()));
      next();
      a.range = std::move(r);
    }
    return a;
  }

  AstAccDecl acc_decl() {
    AstAccDecl d;
    if (at(Tok::KwLet))
      fail(peek().span, "'let' is not allowed before 'reduce'; declare accumulators as NAME = VALUE;");
    const Token& name = expect(Tok::Ident, "naming an accumulator (NAME = VALUE;)");
    d.name = name.text;
    d.span = name.span;
    if (at(Tok::Colon)) {
      next();
      const Token& t = expect(Tok::Ident, "naming the accumulator type");
      d.type = t.text;
      d.type_span = t.span;
    }
    if (!at(Tok::Assign))
      fail(peek().span, "expected '=' after accumulator '" + d.name + "', found " + describe(peek()));
    next();
    d.init = expr();
    expect_semi("after the accumulator declaration");
    return d;
  }

  std::vector<AstStmt> block_body() {
    std::vector<AstStmt> out;
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      if (stopped()) { while (!at(Tok::End)) next(); break; }
      try {
        out.push_back(statement());
      } catch (SyntaxError&) {
        recover();
      }
    }
    return out;
  }

  AstStmt statement() {
    AstStmt s;
    s.span = peek().span;
    if (at(Tok::KwLet)) {
      next();
      s.kind = AstStmt::Let;
      const Token& n = expect(Tok::Ident, "after 'let'");
      s.name = n.text;
      s.name_span = n.span;
      expect(Tok::Assign, "after the 'let' name");
      s.value = expr();
      expect_semi("after the 'let' statement");
      return s;
    }
    if (at(Tok::KwIf)) {
      if (if_depth_ >= kMaxIfDepth) {
        Span at = peek().span;
        skip_statement();  // all of it: the levels inside are not reported again
        fail(at, "'if' statements nested too deeply: more than " + std::to_string(kMaxIfDepth) + " levels");
      }
      struct Level {
        int& d;
        explicit Level(int& depth) : d(depth) { ++d; }
        ~Level() { --d; }
      } level(if_depth_);
      next();
      s.kind = AstStmt::If;
      expect(Tok::LParen, "after 'if'");
      s.cond = expr();
      expect(Tok::RParen, "to close the 'if' condition");
      if (at(Tok::LBrace)) {
        next();
        s.body = block_body();
        expect(Tok::RBrace, "to close the 'if' block");
      } else {
        s.body.push_back(statement());
      }
      return s;
    }
    if (at(Tok::KwEmit)) return emit();
    if (at(Tok::LBrace)) fail(peek().span, "a bare block is not a statement; use 'if (...) { ... }'");
    // An update: TARGET OP VALUE;
    if (!at(Tok::Ident)) fail(peek().span, "expected a statement, found " + describe(peek()));
    s.kind = AstStmt::Update;
    s.target = postfix();
    switch (peek().kind) {
      case Tok::Assign: case Tok::PlusAssign: case Tok::MinusAssign: case Tok::StarAssign:
      case Tok::MaxAssign: case Tok::MinAssign: case Tok::OrAssign: case Tok::AndAssign:
      case Tok::XorAssign:
        s.op = peek().kind;
        s.op_span = peek().span;
        next();
        break;
      default: {
        std::string m = "expected an assignment operator (= += -= *= max= min= |= &= ^=) after the target, found " +
                        describe(peek());
        if (s.target->kind == AstExpr::Ident) {
          std::string g = closest_name(s.target->name, keyword_words());
          if (!g.empty()) m += "; did you mean '" + g + "'?";
        }
        fail(peek().span, m);
      }
    }
    s.value = expr();
    expect_semi("after the statement");
    return s;
  }

  // `finish { TARGET = EXPR; ... }`: each statement an Update with `=` (sema checks the forms).
  void finish_block(AstQuery& q) {
    next();
    try {
      expect(Tok::LBrace, "after 'finish'");
    } catch (SyntaxError&) {
      return;
    }
    while (!at(Tok::RBrace) && !at(Tok::End)) {
      if (stopped()) { while (!at(Tok::End)) next(); return; }
      try {
        AstStmt s;
        s.span = peek().span;
        if (!at(Tok::Ident))
          fail(peek().span, "expected a finishing step (NAME[x, ...] = EXPR;), found " + describe(peek()));
        s.kind = AstStmt::Update;
        s.target = postfix();
        if (!at(Tok::Assign))
          fail(peek().span, "expected '=' after the finishing step's target (a step is NAME[x, ...] = EXPR;), found " +
                                describe(peek()));
        s.op = Tok::Assign;
        s.op_span = next().span;
        s.value = expr();
        expect_semi("after the finishing step");
        q.finish.push_back(std::move(s));
      } catch (SyntaxError&) {
        recover();
      }
    }
    expect_soft(Tok::RBrace, "to close the 'finish' block");
  }

  AstStmt emit() {
    AstStmt s;
    s.kind = AstStmt::Emit;
    s.span = next().span;
    const Token& n = expect(Tok::Ident, "naming the list after 'emit'");
    s.list = n.text;
    s.list_span = n.span;
    expect(Tok::LParen, "after the list name");
    if (!at(Tok::RParen)) {
      for (;;) {
        AstEmitColumn c;
        c.expr = expr();
        if (at(Tok::KwAs)) {
          next();
          const Token& a = expect(Tok::Ident, "after 'as'");
          c.alias = a.text;
          c.alias_span = a.span;
        }
        s.columns.push_back(std::move(c));
        if (!at(Tok::Comma)) break;
        next();
      }
    }
    expect(Tok::RParen, "to close the emitted columns");
    if (at(Tok::KwTop) || at(Tok::KwBottom)) {
      s.mode = at(Tok::KwTop) ? AstStmt::Top : AstStmt::Bottom;
      next();
      s.limit = unary();
      expect(Tok::KwBy, "after 'top N' / 'bottom N'");
      s.key = expr();
      if (at(Tok::KwPer)) {
        next();
        const Token& a = expect(Tok::Ident, "naming an axis after 'per'");
        s.per = a.text;
        s.per_span = a.span;
      }
    } else if (at(Tok::KwDistinct)) {
      next();
      s.mode = AstStmt::Distinct;
    }
    expect_semi("after 'emit'");
    return s;
  }

  // ---- expressions, lowest precedence first ----
  AstExprPtr make(AstExpr::Kind k, Span span) {
    auto e = std::make_unique<AstExpr>();
    e->kind = k;
    e->span = span;
    return e;
  }
  static Span join(Span a, Span b) {
    if (a.line != b.line) return a;
    return {a.line, a.col, std::max(1, b.col + b.length - a.col)};
  }
  // Sets e's height from its operands; a tree deeper than kMaxExprDepth is an error at `at`
  // (checked as each node is built, so no deeper tree ever exists).
  AstExprPtr finish(AstExprPtr e, Span at) {
    int d = 0;
    for (const auto& a : e->args) d = std::max(d, a->depth);
    e->depth = d + 1;
    if (e->depth > kMaxExprDepth) too_deep(at);
    return e;
  }

  AstExprPtr expr() { return ternary(); }

  AstExprPtr ternary() {
    Nest nest(*this, peek().span);
    AstExprPtr c = binary(0);
    if (!at(Tok::Question)) return c;
    Span q = next().span;
    AstExprPtr a = expr();
    expect(Tok::Colon, "in '?:'");
    AstExprPtr b = ternary();
    auto e = make(AstExpr::Ternary, join(c->span, b->span));
    e->args.push_back(std::move(c));
    e->args.push_back(std::move(a));
    e->args.push_back(std::move(b));
    return finish(std::move(e), q);
  }

  static int precedence(Tok k) {
    switch (k) {
      case Tok::PipePipe: return 1; case Tok::AmpAmp: return 2; case Tok::Pipe: return 3;
      case Tok::Caret: return 4; case Tok::Amp: return 5;
      case Tok::EqEq: case Tok::Ne: return 6;
      case Tok::Lt: case Tok::Le: case Tok::Gt: case Tok::Ge: return 7;
      case Tok::Shl: case Tok::Shr: return 8;
      case Tok::Plus: case Tok::Minus: return 9;
      case Tok::Star: case Tok::Slash: case Tok::Percent: return 10;
      default: return -1;
    }
  }

  // Precedence climbing over the left-associative binary levels: a chain of one level is built
  // in this loop (recursion only for a higher level on the right), as a left-deep tree.
  AstExprPtr binary(int min_prec) {
    AstExprPtr lhs = unary();
    for (;;) {
      int p = precedence(peek().kind);
      if (p < 0 || p < min_prec) break;
      Token op = next();
      AstExprPtr rhs = binary(p + 1);
      auto e = make(AstExpr::Binary, join(lhs->span, rhs->span));
      e->op = op.kind;
      e->args.push_back(std::move(lhs));
      e->args.push_back(std::move(rhs));
      lhs = finish(std::move(e), op.span);
    }
    return lhs;
  }

  AstExprPtr unary() {
    if (at(Tok::Minus) || at(Tok::Bang) || at(Tok::Tilde) || at(Tok::Plus)) {
      Nest nest(*this, peek().span);
      Token op = next();
      AstExprPtr a = unary();
      if (op.kind == Tok::Plus) return a;
      auto e = make(AstExpr::Unary, join(op.span, a->span));
      e->op = op.kind;
      e->args.push_back(std::move(a));
      return finish(std::move(e), op.span);
    }
    return postfix();
  }

  AstExprPtr postfix() {
    const Token& t = peek();
    if (t.kind == Tok::Int || t.kind == Tok::Float) {
      next();
      auto e = make(t.kind == Tok::Int ? AstExpr::Int : AstExpr::Float, t.span);
      e->ival = t.ival;
      e->fval = t.fval;
      return e;
    }
    if (t.kind == Tok::LParen) {
      next();
      AstExprPtr e = expr();
      expect(Tok::RParen, "to close '('");
      return e;
    }
    if (t.kind != Tok::Ident) fail(t.span, "expected an expression, found " + describe(t));
    Token name = next();
    if (at(Tok::LBracket)) {
      next();
      auto e = make(AstExpr::Index, name.span);
      e->name = name.text;
      if (at(Tok::RBracket)) fail(peek().span, "array '" + name.text + "' needs at least one index");
      for (;;) {
        e->args.push_back(expr());
        if (!at(Tok::Comma)) break;
        next();
      }
      Span close = expect(Tok::RBracket, "to close the index list").span;
      e->span = join(name.span, close);
      return finish(std::move(e), name.span);
    }
    if (at(Tok::LParen)) {
      next();
      auto e = make(AstExpr::Call, name.span);
      e->name = name.text;
      if (!at(Tok::RParen)) {
        for (;;) {
          e->args.push_back(expr());
          if (!at(Tok::Comma)) break;
          next();
        }
      }
      expect(Tok::RParen, "to close the argument list");
      return finish(std::move(e), name.span);
    }
    auto e = make(AstExpr::Ident, name.span);
    e->name = name.text;
    return e;
  }
};

}  // namespace

AstQuery parse(const Source& src, Diagnostics& diags) {
  Parser p(src, diags);
  return p.query();
}

}  // namespace gamut
