#include "core/error.h"

namespace gamut {

void throw_data_error(const std::string& binding, const std::string& message) {
  throw Error(ExitCode::Data, "data error: " + binding + ": " + message);
}
void throw_internal_error(const std::string& what) { throw Error(ExitCode::Query, "internal error: " + what); }
void throw_device_error(const std::string& message) {
  throw Error(ExitCode::Device, "device error: " + message);
}
void throw_usage_error(const std::string& message) {
  throw Error(ExitCode::Usage, "usage error: " + message);
}
void throw_resource_error(const std::string& message) {
  throw Error(ExitCode::Device, "resource error: " + message);
}

}  // namespace gamut
