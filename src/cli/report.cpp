#include "cli/report.h"

#include <new>

namespace gamut::cli {

namespace {

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// "FILE:LINE:COL: error: ..." -> file, line, col (FILE may itself contain ':').
bool query_location(const std::string& line, nlohmann::json& into) {
  const size_t mark = line.find(": error: ");
  if (mark == std::string::npos) return false;
  const std::string place = line.substr(0, mark);
  const size_t c2 = place.rfind(':');
  if (c2 == std::string::npos || c2 == 0) return false;
  const size_t c1 = place.rfind(':', c2 - 1);
  if (c1 == std::string::npos) return false;
  try {
    into["file"] = place.substr(0, c1);
    into["line"] = std::stoi(place.substr(c1 + 1, c2 - c1 - 1));
    into["col"] = std::stoi(place.substr(c2 + 1));
  } catch (const std::exception&) {
    return false;
  }
  return true;
}

}  // namespace

Failure failure_of(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& x) {
    static const char* const kinds[] = {"ok", "query", "usage", "data", "device"};
    Failure f{x.code(), kinds[int(x.code())], x.what()};
    if (f.text.rfind("internal error", 0) == 0) f.kind = "internal";
    return f;
  } catch (const std::bad_alloc&) {
    return Failure{ExitCode::Device, "device", "resource error: out of host memory"};
  } catch (const std::exception& x) {
    // A bug, not the user's input: still one line and no partial output.
    return Failure{ExitCode::Device, "internal", std::string("internal error: ") + x.what()};
  } catch (...) {
    return Failure{ExitCode::Device, "internal", "internal error: unknown exception"};
  }
}

nlohmann::json failure_json(const Failure& f) {
  const std::string line = first_line(f.text);
  nlohmann::json e = {{"kind", f.kind}, {"exit_status", int(f.code)}, {"message", line}, {"text", f.text}};
  if (f.code == ExitCode::Query) {
    query_location(line, e);
  } else if (f.code == ExitCode::Data && line.rfind("data error: ", 0) == 0) {
    const size_t from = std::string("data error: ").size(), colon = line.find(": ", from);
    if (colon != std::string::npos) e["binding"] = line.substr(from, colon - from);
  }
  return nlohmann::json{{"error", e}};
}

int report_failure(const Failure& f, bool json, std::ostream& out, std::ostream& err) {
  std::string text = f.text;
  if (text.empty() || text.back() != '\n') text += '\n';
  err << text << std::flush;
  if (json) out << failure_json(f).dump() << "\n" << std::flush;
  return int(f.code);
}

}  // namespace gamut::cli
