// gamut's errors in Python (errors.cpp).
#pragma once
#include <nanobind/nanobind.h>

#include <string>

#include "call.h"

namespace gamut::py {

namespace nb = nanobind;

// The exception translator and gamut._gamut._register_errors (called by gamut/__init__.py with
// QueryError, UsageError, DataError, DeviceError).
void register_errors(nb::module_& m);

// Sets a UsageError as the current Python exception (for a C slot function, which returns NULL).
void raise_usage(const std::string& text);

// A std::bad_alloc from the library while `doing` ("running the query"): a resource error (exit
// 4, as on the command line) that names the inputs the library copies to C order, largest first,
// or else the query's outputs.
[[noreturn]] void out_of_host_memory(const Call& c, const Query& q, const char* doing);

}  // namespace gamut::py
