// Rewrite passes over a typed plan: each a free function in its own file; the plan is
// printable after each (`gamut explain`). Passes append their name to Plan::rewrites.
#pragma once
#include "plan/plan.h"

namespace gamut {

// Run every pass in order; returns true when any changed the plan.
bool apply_rewrites(Plan& plan);

}  // namespace gamut
