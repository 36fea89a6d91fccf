// Semantic analysis: AST -> Plan (names, access patterns, operand kinds, axis roles, types and
// promotion, accumulator monoids, output-operator classification, join keys).
#pragma once
#include <map>
#include <string>

#include "lang/ast.h"
#include "plan/plan.h"

namespace gamut {

// Element types of the inputs, where known (after binding). Inputs missing here are typed
// Unknown: the plan is then checked for everything except type rules that need them.
struct TypeEnv {
  std::map<std::string, DType> inputs;
};

// Errors go to diags; the plan is meaningful only when diags has none.
Plan analyze(const AstQuery& ast, const Source& src, const TypeEnv& env, Diagnostics& diags);

// Parse and analyse; throws QueryError (exit 1) with every diagnostic.
Plan build_plan(const Source& src, const TypeEnv& env = {});

}  // namespace gamut
