// The syntax tree, with source spans; sema turns it into a Plan.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lang/span.h"
#include "lang/token.h"

namespace gamut {

struct AstExpr;
using AstExprPtr = std::unique_ptr<AstExpr>;

// Nesting limits (docs/semantics.md, "Limits"). Every pass after the parser walks expressions
// and statement blocks recursively; these bounds keep that recursion within a known stack
// budget (tests/test_query_limits.cpp runs every pass at the limits on a small stack).
// An expression's depth counts every operator, call, cast, subscript, `?:` and parenthesis
// level; each operator of a flat chain `a + b + c` adds one level (the tree is left-deep).
constexpr int kMaxExprDepth = 256;
// `if` statements nested inside one another.
constexpr int kMaxIfDepth = 100;

struct AstExpr {
  enum Kind { Int, Float, Ident, Index, Unary, Binary, Ternary, Call } kind;
  Span span;
  std::string name;              // Ident, Index (array name), Call (function name)
  Tok op = Tok::End;             // Unary / Binary operator token
  int64_t ival = 0;              // Int
  double fval = 0;               // Int and Float
  std::vector<AstExprPtr> args;  // Index: subscripts; Call: arguments; Unary/Binary/Ternary: operands
  int depth = 1;                 // height of this subtree (a leaf is 1), at most kMaxExprDepth
};

struct AstRange {
  AstExprPtr begin, end;
  Span span;
};

struct AstAxis {
  std::string name;
  Span span;
  std::optional<AstRange> range;
};

struct AstEmitColumn {
  AstExprPtr expr;
  std::string alias;             // `as NAME`
  Span alias_span;
};

struct AstStmt {
  enum Kind { Let, Update, If, Emit } kind;
  Span span;
  // Let
  std::string name;
  Span name_span;
  // Update: target (Ident or Index), operator token, value
  AstExprPtr target;
  Tok op = Tok::Assign;
  Span op_span;
  AstExprPtr value;
  // If
  AstExprPtr cond;
  std::vector<AstStmt> body;
  // Emit
  std::string list;
  Span list_span;
  std::vector<AstEmitColumn> columns;
  enum Mode { Plain, Top, Bottom, Distinct } mode = Plain;
  AstExprPtr limit;              // N
  AstExprPtr key;                // by KEY
  std::string per;               // axis name, "" if none
  Span per_span;
};

struct AstAccDecl {
  std::string name;
  Span span;
  std::string type;              // "" when not declared
  Span type_span;
  AstExprPtr init;
};

struct AstQuery {
  std::optional<AstAxis> batch;
  AstAxis row, col, red;
  AstExprPtr when;
  std::vector<AstAccDecl> accs;
  std::vector<AstStmt> inner;
  std::vector<AstStmt> outer;
  // `finish { NAME[x, y] = EXPR; ... }` after the query body: Update statements with `=`
  // (docs/language.md section 9, "Finishing steps").
  std::vector<AstStmt> finish;
};

// Parse a whole query. Syntax errors go to diags (parsing resumes at the next statement, so
// several can be reported); the returned tree is only meaningful when diags has no errors.
AstQuery parse(const Source& src, Diagnostics& diags);

}  // namespace gamut
