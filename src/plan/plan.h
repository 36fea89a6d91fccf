// The MMLT IR: what every backend consumes, without re-reading the AST.
//
// A plan is fully typed once the input element types are known (after binding). Sema inserts
// explicit Cast nodes, so every operator's operands already have the operator's operand type:
// engines never promote. Expressions live in one arena (Plan::exprs) and refer to each other
// by index, so plans are cheap to copy, compare and hash.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.h"
#include "lang/span.h"

namespace gamut {

using ExprId = int32_t;
constexpr ExprId kNoExpr = -1;

// Which loop variable an axis is.
enum class AxisRole : uint8_t { Row, Col, Red, Batch };

// A range bound: a literal or an integer scalar parameter plus a constant (`N - 1`).
struct Bound {
  int param = -1;        // index into Plan::params, -1: none
  int64_t scale = 0;     // value = scale * param + offset (scale is 0 or 1 in v1)
  int64_t offset = 0;
  std::string text;      // as written, for explain
};

struct Axis {
  std::string name;
  AxisRole role;
  bool has_range = false;        // false: inferred from operand extents
  Bound begin, end;              // half-open [begin, end)
  Span span;
};

// How an operand is indexed (spec section 4). r, c, k: row, column, reduction axis.
// With a batch axis every access is additionally prefixed by b.
enum class Pattern : uint8_t {
  RowRed,    // X[r, k]   row matrix, k contiguous
  RedRow,    // X[k, r]   row matrix, r contiguous
  RedCol,    // X[k, c]   column matrix, c contiguous
  ColRed,    // X[c, k]   column matrix, k contiguous
  RowVec,    // X[r]
  ColVec,    // X[c]
  RedVec,    // X[k]
  RowCol,    // X[r, c]   output-shaped input
  ColRow,    // X[c, r]
};
int pattern_rank(Pattern p);            // 1 or 2 (plus 1 with batch)
bool pattern_uses_red(Pattern p);       // depends on k
const char* pattern_name(Pattern p);    // "X[r,k]" style

// One (operand, pattern) pair that the query uses. An operand may appear under several
// patterns (a self-join: A[i,k] and A[j,k]).
struct Access {
  int operand;
  Pattern pattern;
};

// Classification of an input operand by all the patterns it is used with.
enum class OperandKind : uint8_t {
  RowMatrix, ColMatrix, RowVector, ColVector, RedVector, OutputShaped, IndexVector, Mixed
};

struct Operand {
  std::string name;
  std::optional<DType> dtype;    // known after binding
  OperandKind kind;
  std::vector<int> accesses;     // indices into Plan::accesses
  bool is_index = false;         // used as g[r] / h[c] in `when` or an output target
  Span span;                     // first use
};

struct Param {
  std::string name;
  bool integer_only = false;     // used in a range, `top N`, a shift, %, a bitwise op...
  Span span;
};

enum class ExprKind : uint8_t {
  Const,     // value in Expr::value
  Param,     // Expr::index: Plan::params
  Axis,      // Expr::index: AxisRole as int (the axis value, type I32)
  Load,      // Expr::index: Plan::accesses; type is compute_type_of(operand dtype)
  Acc,       // Expr::index: Plan::accs (current value)
  Local,     // Expr::index: Plan::locals
  Unary,     // a: operand
  Binary,    // a, b
  Select,    // a ? b : c
  Call,      // fn, args
  Cast,      // a converted to type
  Output,    // Expr::index: Plan::output_reads (only in finishing steps)
};
enum class UnOp : uint8_t { Neg, Not, BitNot };
enum class BinOp : uint8_t {
  Add, Sub, Mul, Div, Mod, Shl, Shr, BitAnd, BitOr, BitXor,
  Lt, Le, Gt, Ge, Eq, Ne, LogAnd, LogOr
};
enum class Fn : uint8_t { Abs, Min, Max, Clamp, Sqrt, Exp, Log, Pow, Floor, Ceil, Tanh };
const char* unop_symbol(UnOp op);
const char* binop_symbol(BinOp op);
const char* fn_name(Fn fn);

// The `+` of an integer tropical step (`acc max= x + y`, `acc min= x + y`): the sum type's
// limits are -inf and +inf, the semiring's zero absorbs, other sums saturate (docs/language.md,
// section 3). Set by build_plan on typed plans whose semiring form is add-max / add-min.
enum class InfSum : uint8_t { None, MaxPlus, MinPlus };

struct Expr {
  ExprKind kind;
  CType type;                      // result type
  InfSum inf_sum = InfSum::None;   // Binary Add only
  int index = -1;                  // see ExprKind
  UnOp unop = UnOp::Neg;
  BinOp binop = BinOp::Add;
  Fn fn = Fn::Abs;
  ExprId a = kNoExpr, b = kNoExpr, c = kNoExpr;
  std::vector<ExprId> args;        // Call (min/max take 2+, clamp 3, pow 2, others 1)
  Scalar value;                    // Const
  Span span;
};
// Operand types of a Binary: both a and b have this type (Casts inserted by sema). Comparisons
// and && || produce Bool; shifts and bitwise ops require integer operand types.

// Accumulator update operators. Assign is the general `ACC = e` (may read ACC).
enum class UpdateOp : uint8_t { Assign, Add, Sub, Mul, Max, Min, Or, And, Xor };
const char* update_symbol(UpdateOp op);    // "+=", "max=", "="

// The monoid an accumulator folds with; Sequential: not associative, k must run in order.
enum class Monoid : uint8_t { Sum, Prod, Max, Min, Or, And, Xor, Sequential };
const char* monoid_name(Monoid m);

struct Accumulator {
  std::string name;
  CType type;
  Scalar init;                     // the declared initial value, in `type`
  Monoid monoid;                   // Sum also covers -= (sum of negations)
  Scalar identity;                 // identity of the monoid in `type` (Sequential: init)
  bool declared_type = false;
  Span span;
};

struct Local {
  std::string name;
  CType type;
  bool inner;                      // per (i,j,k) (true) or per (i,j) (false)
};

// One index position of an output target: an axis, an index vector g[r], or an integer
// expression of the pair's values computed per store (Key: `Hist[b] += 1`, aggregates only;
// its extent comes from the bindings, docs/language.md section 6).
struct OutIndex {
  enum Kind : uint8_t { Axis, Lookup, Key } kind;
  AxisRole axis;                   // Row, Col or Batch (Key: Red, i.e. neither side)
  int access = -1;                 // Lookup: Plan::accesses entry of the index vector (g[r])
};

enum class StoreOp : uint8_t { Assign, Add, Max, Min, Or, And };
const char* store_symbol(StoreOp op);

// A dense output: a projection (`=`) or an aggregate (op=).
struct DenseOutput {
  std::string name;
  StoreOp op;
  CType type;                      // element type (bool results of += are counted as I32)
  std::vector<OutIndex> index;     // empty for a scalar output
  bool is_project() const { return op == StoreOp::Assign; }
  Span span;
};

// Finishing steps (docs/language.md section 9, "Finishing steps"): `finish { Mean[g] = S[g] /
// max(C[g], 1); }` after the query body. A step is a dense output computed element by element once every output
// of the run is final (merged over parts, blocks or stages): on the host, by the CPU engine's
// operations (cpu/finish.cpp), whichever engine ran. The steps are no part of the plan's
// statements, so no rewrite, stage program or partition sees them.
//
// One read of an output in a step's value (ExprKind::Output): OUT[x, y] with the step's index
// names, or sum(OUT).
struct OutputRead {
  int step = -1;                   // the Plan::finish step whose value reads it
  bool finished = false;           // reads Plan::finish[output] (an earlier step), else Plan::dense
  int output = -1;
  std::vector<int> dims;           // per dimension of the output as laid out: the step's index
  bool sum = false;                // sum(OUT): the sum of all its elements (i64 for integers)
  Span span;
};

struct FinishStep {
  std::string name;
  CType type;                      // the value's type
  std::vector<std::string> index;  // one name per dimension (empty: a 0-dimensional output)
  ExprId value = kNoExpr;
  Span span;
};

enum class ListMode : uint8_t { Plain, Top, Bottom, Distinct };
enum class PerGroup : uint8_t { None, Row, Col };

struct ListColumn {
  std::string name;
  CType type;
};

struct ListOutput {
  std::string name;
  std::vector<ListColumn> columns;
  ListMode mode = ListMode::Plain;
  PerGroup per = PerGroup::None;
  int64_t limit = 0;               // N of top/bottom when a literal
  int limit_param = -1;            // or a Plan::params index
  ExprId key = kNoExpr;            // top/bottom key (evaluated per (i,j) where the emit runs)
  Span span;

  bool ranked() const { return mode == ListMode::Top || mode == ListMode::Bottom; }
};

enum class StmtKind : uint8_t { Let, Update, If, Store, Emit };

struct Stmt {
  StmtKind kind;
  int target = -1;                 // Let: local; Update: acc; Store: output; Emit: list
  UpdateOp update = UpdateOp::Add; // Update
  ExprId value = kNoExpr;          // Let, Update, Store value
  ExprId cond = kNoExpr;           // If
  std::vector<Stmt> body;          // If
  std::vector<ExprId> columns;     // Emit: one expr per ListOutput column; Store: one integer
                                   // expr per OutIndex::Key position of the output, in order
  Span span;
};

// `when`: equi-join keys (g[r] == h[c] conjuncts) and whatever is left as a mask.
struct JoinKey {
  int row_access;                  // Plan::accesses of the row-side index vector
  int col_access;
};
struct When {
  std::vector<JoinKey> keys;
  ExprId mask = kNoExpr;           // remaining condition, Bool; kNoExpr: none
  bool present() const { return !keys.empty() || mask != kNoExpr; }
};

struct Plan {
  std::string source_name;
  std::vector<Axis> axes;          // Row, Col, Red, then Batch if present
  bool batched = false;
  std::vector<Operand> operands;
  std::vector<Access> accesses;
  std::vector<Param> params;
  std::vector<Expr> exprs;
  std::vector<Accumulator> accs;
  std::vector<Local> locals;
  When when;
  std::vector<Stmt> inner;         // the reduce body, per (i,j,k)
  std::vector<Stmt> outer;         // output statements, per (i,j)
  std::vector<DenseOutput> dense;
  std::vector<ListOutput> lists;
  std::vector<FinishStep> finish;         // after the run, in order
  std::vector<OutputRead> output_reads;   // of the finishing steps' values
  bool k_sequential = false;       // some accumulator must see k in increasing order
  bool typed = false;              // every CType known (no Unknown)
  std::vector<std::string> rewrites;  // names of rewrite passes applied, in order

  const Axis& axis(AxisRole r) const;
  const Axis* find_axis(AxisRole r) const;
  const Expr& expr(ExprId id) const { return exprs[size_t(id)]; }
};

// Human-readable dump for `gamut explain` (stable text; tests match parts of it).
std::string print_plan(const Plan& plan);

// One statement as print_plan writes it, on one line (an If as its condition only).
std::string print_stmt(const Plan& plan, const Stmt& s);

// The Emit statement of list l (each list has exactly one), or null.
const Stmt* emit_of(const Plan& plan, size_t l);

// A distinct list whose every column is an integer lookup of a row or column vector, stored as
// it is (Areas(Pzip[i], Rzip[j])): the accesses of its columns, in column order; empty for any
// other list. Its rows are cells of the box of those vectors' values: the GPU may run it on a
// seen table (src/cuda/codegen/seen_box.h).
std::vector<int> distinct_lookup_columns(const Plan& plan, size_t l);

}  // namespace gamut
