// One-sided sums hoisted, squared differences expanded: a bound rewrite that puts distances and
// similarities on the tensor cores as users write them (docs/tensor-cores.md, "Distances").
//
// (a) hoist-one-sided: an accumulator whose summand reads only the row side (i and k) or only the
//     column side (j and k) is the same for every pair of a row (column): a stage computes it
//     once per row (column) as a vector, and the main query reads the vector. Cosine similarity's
//     `nq += Q[i,k]*Q[i,k]; nx += X[j,k]*X[j,k]` leave `dot += Q[i,k]*X[j,k]`, one accumulator.
//     The sums are the same sums in the same order: exact on the CPU.
// (b) expand-squares: an accumulator whose summand is a polynomial in row-side and column-side
//     factors with one cross product (`(a - b)^2`, `(a + b)^2`, constant coefficients) becomes
//         sum_k row terms  +  sum_k column terms  +  c * sum_k a[i,k] b[j,k]
//     the first two hoisted as in (a), the cross sum the main query's one accumulator (on the
//     tensor cores), the rest in its epilogue. It changes the rounding (cancellation where the
//     points are close): it applies only where the cross sum then runs on the tensor cores, i.e.
//     where the precision already allows them (bf16 / f16 inputs; f32 under f32_math tf32 or
//     tf32x3). Under IEEE f32 the query keeps its written form.
// (c) reciprocal norms (rewrite/reciprocal_norms.h): under the same precisions, `num / sqrt(a * b)`
//     of a hoisted row sum and column sum becomes `(num) * (os_rsq_a[i] * os_rsq_b[j])`.
//
// The program: a row stage and a column stage (queries over one row or column of pairs, each
// present only when it has sums) and the main query, whose output block is the original's text.
// It reads no data: device inputs are fine (driver/pipeline.cpp keeps stage outputs on the device).
#pragma once
#include <optional>
#include <string>

#include "bind/bind.h"
#include "lang/diagnostics.h"
#include "plan/math_choice.h"
#include "rewrite/aggregate_pushdown.h"

namespace gamut {

struct OneSidedRewrite {
  PushdownProgram program;
  std::string name;   // "expand-squares" when (b) applied, else "hoist-one-sided"
};

// The rewritten program for a bound plan under `f32_math`, or nothing when neither part applies.
std::optional<OneSidedRewrite> one_sided_sums(const Plan& plan, const Instance& inst, const Source& source,
                                              const Bindings& bindings, F32Math f32_math);

}  // namespace gamut
