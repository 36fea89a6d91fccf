// What the bound rewrites that write stage queries share: the parts of the original query text a
// stage keeps verbatim, and the checks that a stage stands in for the original.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "lang/diagnostics.h"
#include "plan/plan.h"

namespace gamut {

// The parts of the query text a product stage keeps verbatim.
struct QueryText {
  std::string when;     // "when (...)" or ""
  std::string output;   // everything between the end of the reduce block and the closing brace
};

// Cut the query text at its tokens (the plan keeps only one-line spans); nothing when the text
// does not have the expected shape.
std::optional<QueryText> split_query(const Source& src);

// Whether any name the query declares or uses starts with `prefix`.
bool uses_prefix(const Plan& p, const std::string& prefix);

// The product stage must produce exactly the original's outputs: same names, order and types.
bool same_outputs(const Plan& a, const Plan& b);

// "[b, e)"
std::string range_text(int64_t b, int64_t e);

}  // namespace gamut
