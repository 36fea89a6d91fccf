// Part (c) of the one-sided rewrite (rewrite/one_sided_sums.h): where the main stage runs on the
// tensor cores, a quotient `num / sqrt(a * b)` of a hoisted row sum a and column sum b (cosine
// similarity's `dot / sqrt(nq * nx)`) is rewritten in the query text as
// `(num) * (os_rsq_a[i] * os_rsq_b[j])`, the factors `1 / sqrt(sum)` computed by the stages.
// These find the quotients in the plan and replace their text.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lang/diagnostics.h"
#include "plan/plan.h"

namespace gamut {

struct NormQuotient {
  Span span;          // the quotient's text, numerator to the call's closing parenthesis
  std::string num;    // the numerator's text
  size_t row_acc = 0, col_acc = 0;
};

// The quotients of the plan (one line each, ASCII, parentheses balanced) whose product is of an
// accumulator with row_sum set and one with col_sum set (f32 both).
std::vector<NormQuotient> norm_quotients(const Plan& p, const Source& src, const std::vector<bool>& row_sum,
                                         const std::vector<bool>& col_sum);

// The source with one-line spans replaced; nothing where two overlap or a line is not ASCII.
std::optional<Source> replaced(const Source& src, std::vector<std::pair<Span, std::string>> reps);

}  // namespace gamut
