// How a failure reaches the user: the one-line error (then, for a query error, the source line,
// a caret and any further errors) on stderr; with --json also one JSON object on stdout.
#pragma once
#include <exception>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/error.h"

namespace gamut::cli {

struct Failure {
  ExitCode code = ExitCode::Device;
  std::string kind;   // query | usage | data | device | internal
  std::string text;   // the whole report; its first line is the one-line error
};

// Any exception as a failure: gamut's Error with its own status; out of host memory a resource
// error (4); anything else an internal error (4), still one line.
Failure failure_of(const std::exception_ptr& e);

// {"error": {"kind", "exit_status", "message" (the first line), "text" (all of it), and where
// known "file", "line", "col" (query errors) or "binding" (data errors)}}
nlohmann::json failure_json(const Failure& f);

// Prints the failure and returns the exit status.
int report_failure(const Failure& f, bool json, std::ostream& out, std::ostream& err);

}  // namespace gamut::cli
