// gamut's one exception type, shared by the engine, the command line and the library: it carries
// the exit status of docs/language.md section 16 (its category) and the message the CLI prints.
#pragma once
#include <stdexcept>
#include <string>

#include "gamut/export.h"

namespace gamut {

// The exit status of `gamut` for each category of failure (docs/language.md section 16).
enum class ExitCode : int { Ok = 0, Query = 1, Usage = 2, Data = 3, Device = 4 };

// what(): the first line is the one-line summary (query errors: `FILE:LINE:COL: error: ...`,
// then the source line and a caret; data errors: `data error: NAME: ...`).
class GAMUT_API Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& text) : std::runtime_error(text), code_(code) {}
  ExitCode code() const noexcept { return code_; }
  // "query", "usage", "data" or "device": the category name the Python exceptions carry.
  const char* category() const noexcept {
    switch (code_) {
      case ExitCode::Query: return "query";
      case ExitCode::Usage: return "usage";
      case ExitCode::Data: return "data";
      default: return "device";
    }
  }

 private:
  ExitCode code_;
};

// A run stopped before it finished because the caller asked (Options::cancel, or
// Options::interrupted returning true); the Python package raises KeyboardInterrupt for it.
// Nothing of the run is kept and the query stays usable. code() is ExitCode::Device (the run did
// not complete); catch Cancelled before Error to tell it apart.
class GAMUT_API Cancelled : public Error {
 public:
  Cancelled() : Error(ExitCode::Device, "interrupted: the run was cancelled before it finished") {}
};

}  // namespace gamut
