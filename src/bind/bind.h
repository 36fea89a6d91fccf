// Binding: data and scalars from the command line -> a validated Instance.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "lang/diagnostics.h"
#include "sema/analyze.h"

namespace gamut {

struct Bindings {
  std::map<std::string, NDArray> arrays;                 // NAME=file.npy
  std::map<std::string, std::string> scalars;            // NAME=3.5 (text as given)
  std::map<std::string, std::vector<int64_t>> dims;      // --dim NAME=D1[,D2]
};

// The element types of the bound arrays, for typing the plan.
TypeEnv type_env(const Bindings& b);

// Validate `b` against a typed plan and resolve every extent. Throws Error: Data (exit 3) for a
// missing, mis-shaped or out-of-range binding, for an axis range beyond kMaxAxisEnd and for an
// output whose bytes do not fit in 64 bits (core/sizes.h); Usage (exit 2) for a binding the
// query lacks. Whether the run fits in memory is checked later (bind/footprint.h).
// The Instance points into `b` (and `plan`), which must outlive it.
Instance bind(const Plan& plan, const Bindings& b);

// Parse a scalar binding's text: an integer gives I64, anything else numeric F64.
// Throws a data error naming `name` for text that is not a number.
Scalar parse_scalar(const std::string& name, const std::string& text);

}  // namespace gamut
