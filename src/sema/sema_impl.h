// Internal state shared by the analysis files (typing.cpp, analyze.cpp).
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sema/analyze.h"

namespace gamut::sema {

// Where an expression is evaluated: decides which names and access patterns are allowed.
enum class Ctx { When, Inner, Outer, Bound, Init, Finish };

class Analyzer {
 public:
  Analyzer(const AstQuery& ast, const Source& src, const TypeEnv& env, Diagnostics& d)
      : ast_(ast), src_(src), env_(env), diags_(d) {}
  Plan run();

  // ---- typing.cpp: expressions ----
  ExprId lower(const AstExpr& e, Ctx ctx);
  // Converts to `to` (a Cast node, or a converted constant). A literal that does not fit `to`
  // (an integer beyond i32, a number beyond f32) is an error unless `explicit_cast`.
  ExprId coerce(ExprId id, CType to, bool explicit_cast = false);
  // Does literal value v fit type t? Reports at span where it does not.
  bool check_literal(const Scalar& v, CType t, Span span, const std::string& context);
  ExprId to_bool(ExprId id);
  CType type(ExprId id) const { return plan_.exprs[size_t(id)].type; }
  bool weak(ExprId id) const { return weak_[size_t(id)]; }
  ExprId add(Expr e, bool weak);
  ExprId constant(CType t, const Scalar& v, bool weak, Span span);
  // Resolve an array access X[...] to a Plan::accesses index (-1 on error).
  int resolve_access(const AstExpr& e, Ctx ctx);
  int find_or_add_param(const std::string& name, Span span);

 private:
  // ---- typing.cpp helpers ----
  CType common(ExprId a, ExprId b, bool* weak_out) const;
  ExprId lower_ident(const AstExpr& e, Ctx ctx);
  ExprId lower_unary(const AstExpr& e, Ctx ctx);
  ExprId lower_binary(const AstExpr& e, Ctx ctx);
  ExprId lower_call(const AstExpr& e, Ctx ctx);
  ExprId integer_operand(ExprId id, const AstExpr& at, const char* what);
  ExprId error_expr(Span span);

  // ---- analyze.cpp ----
  void analyze_axes();
  Bound lower_bound(const AstExpr& e);
  void collect_outputs(const std::vector<AstStmt>& stmts);
  void infer_acc_types();
  bool init_fits(const Scalar& v, const Accumulator& acc, Span span);
  ExprId integer_update_value(ExprId v, const Accumulator& acc, const AstStmt& s, const AstExpr& value);
  void declare_accs();
  std::vector<Stmt> lower_inner(const std::vector<AstStmt>& stmts);
  std::vector<Stmt> lower_outer(const std::vector<AstStmt>& stmts);
  Stmt lower_let(const AstStmt& s, bool inner);
  Stmt lower_store(const AstStmt& s);
  // ---- computed_index.cpp: output positions given by an integer expression ----
  bool computed_index(const AstExpr& ix) const;
  ExprId lower_computed_index(const AstExpr& ix, const std::string& output, StoreOp op);
  Stmt lower_emit(const AstStmt& s);
  void lower_when();
  void classify_monoids();
  void finish_output_types();
  void classify_operands();

  // ---- finish.cpp: finishing steps ----
  void lower_finish();
  ExprId lower_finish_ident(const AstExpr& e);
  ExprId lower_finish_read(const AstExpr& e);
  ExprId lower_finish_sum(const AstExpr& e);
  // The output a finishing step may read by this name: (finished, index), or (false, -1) after
  // reporting why it cannot be read.
  std::pair<bool, int> finish_source(const AstExpr& e);
  ExprId output_read(OutputRead r, CType t, Span span);

 public:
  const AstQuery& ast_;
  const Source& src_;
  const TypeEnv& env_;
  Diagnostics& diags_;
  Plan plan_;
  std::vector<bool> weak_;
  // Scope
  std::map<std::string, int> acc_index_;
  std::vector<const AstAccDecl*> acc_decl_;       // per Plan::accs, its declaration
  std::map<std::string, int> local_index_;        // visible lets of the block being lowered
  std::map<std::string, int> output_index_;       // dense outputs
  std::map<std::string, Span> output_names_;      // every array written (dense) and its first span
  std::map<std::string, int> list_index_;
  std::map<std::string, int> operand_rank_;
  std::map<std::string, Span> operand_first_;
  std::vector<std::vector<UpdateOp>> acc_updates_;
  std::vector<bool> acc_read_inner_;
  int canonical_self_ = -1;
  // The finishing step being lowered: its index names and whether an output read uses each.
  std::map<std::string, int> finish_index_;       // earlier steps by name
  std::vector<std::string> step_index_;
  std::vector<bool> step_index_read_;
  int canonical_self_unused_ = 0;                        // acc whose self-read is being canonicalised
  std::vector<std::string> axis_names() const;
};

}  // namespace gamut::sema
