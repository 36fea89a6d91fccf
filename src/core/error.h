// Errors carry the exit status of spec section 9 and exactly one line of text.
#pragma once
#include <stdexcept>
#include <string>

namespace gamut {

enum class ExitCode : int { Ok = 0, Query = 1, Usage = 2, Data = 3, Device = 4 };

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& line) : std::runtime_error(line), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// A data error names the binding it is about: "data error: A: expected 2 dimensions, got 3".
[[noreturn]] void throw_data_error(const std::string& binding, const std::string& message);
[[noreturn]] void throw_device_error(const std::string& message);
[[noreturn]] void throw_usage_error(const std::string& message);
// Not enough memory (or a size beyond any memory): exit 4, "resource error: ...".
[[noreturn]] void throw_resource_error(const std::string& message);

}  // namespace gamut
