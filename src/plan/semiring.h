// Recognises the semiring form of a plan's reduction: what `explain` measures against the
// peak ceilings, and what code generation picks instructions for (DPX, packed i16, bit-packed
// or-and). One place, so the two always agree.
#pragma once
#include <string>

#include "plan/plan.h"

namespace gamut {

struct SemiringForm {
  // "fma" (sum of products), "add-max", "add-min" (tropical), "max-min", "min-max"
  // (bottleneck), "or-and" (boolean), or "general" (anything else).
  std::string op = "general";
  CType type = CType::Unknown;     // the accumulator type
  int row_access = -1;             // the two loads combined by the step (Plan::accesses)
  int col_access = -1;
  double ops_per_step = 0;         // arithmetic per (i, j, k), as MPMML counts (add+max = 2)
  bool recognised() const { return op != "general"; }
};

// The form of a plan with exactly one accumulator updated once per k by `acc op= x (*) y`
// where x reads a row operand and y a column operand (either order); "general" otherwise.
SemiringForm semiring_form(const Plan& plan);

// Arithmetic per (i, j, k) of any plan: the expression nodes evaluated per inner step
// (a rough count for "general" forms, exact for the recognised ones).
double ops_per_step(const Plan& plan);

}  // namespace gamut
