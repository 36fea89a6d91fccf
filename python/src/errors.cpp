// gamut's errors in Python: one exception class per exit status (gamut/_errors.py), the command
// line's message in Python's words (keywords, not NAME=FILE.npy or --backend), and out of memory
// as a resource error that names what needed it.
#include "errors.h"

#include <algorithm>
#include <cstdio>
#include <regex>

namespace gamut::py {

namespace {

PyObject* g_error_class[5] = {};   // by exit status, registered at import

// The library words some messages for the command line, whose bindings are NAME=VALUE words and
// whose options are flags; a Python caller passes keywords. (Only these phrases differ.)
std::string python_words(std::string m) {
  static const std::pair<std::regex, const char*> rules[] = {
      {std::regex(R"(; pass (\w+)=FILE\.npy)"), "; pass an array as the keyword argument $1"},
      {std::regex(R"(; pass (\w+)=VALUE)"), "; pass a number as the keyword argument $1"},
      {std::regex(R"(; bind a number, \w+=VALUE)"), "; pass a number"},
      {std::regex(R"(; bind a \.npy file)"), "; pass an array"},
      {std::regex(R"(\(bind arrays as \w+=FILE\.npy\))"), "(an input array takes an array)"},
      {std::regex(R"(--backend (\w+))"), "backend='$1'"},
      {std::regex(R"(--dim (gives|extent|extents)\b)"), "dims= $1"},
      {std::regex(R"(from --dim\b)"), "from dims="},
      {std::regex(R"(--dim (\w+):)"), "dims['$1']:"},
      {std::regex(R"(devices= (\w+))"), "devices=$1"},   // (the library's "devices= 2")
  };
  if (m.find('=') == std::string::npos && m.find("--") == std::string::npos && m.find(".npy") == std::string::npos) return m;
  for (const auto& [re, with] : rules) m = std::regex_replace(m, re, with);
  return m;
}

void set_error(int code, const std::string& text) {
  PyObject* cls = code >= 1 && code <= 4 && g_error_class[code] ? g_error_class[code] : PyExc_RuntimeError;
  PyErr_SetString(cls, text.c_str());
}

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Cancelled&) {  // a run stopped at the caller's request (run_call: a signal)
    PyErr_SetNone(PyExc_KeyboardInterrupt);
  } catch (const Error& e) {
    set_error(int(e.code()), python_words(e.what()));
  } catch (const std::bad_alloc&) {   // (the command line's words for it; calls name what needed it)
    set_error(int(ExitCode::Device), "resource error: out of host memory");
  } catch (const std::bad_cast& e) {   // a value of the wrong type that no check above caught
    set_error(int(ExitCode::Usage), std::string("usage error: an argument has the wrong type (") + e.what() + ")");
  }
}

std::string bytes_text(double b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) b /= 1024, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u ? "%.2f %s" : "%.0f %s", b, units[u]);
  return buf;
}

// Does the library copy this host array to C order before it reads it (docs/python.md)?
bool copied_to_c_order(const ArrayRef& a, double& bytes) {
  if (a.device.is_gpu()) return false;
  double n = 1;
  int64_t want = 1;
  bool c_order = true;
  for (size_t d = a.shape.size(); d-- > 0;) {
    n *= double(a.shape[d]);
    if (a.shape[d] != 1 && !a.strides.empty() && a.strides[d] != want) c_order = false;
    want *= a.shape[d];
  }
  bytes = n * double(dtype_size(a.dtype));
  return !c_order && n > 0;
}

}  // namespace

void register_errors(nb::module_& m) {
  nb::register_exception_translator(translate_error);
  m.def(
      "_register_errors",
      [](nb::handle query, nb::handle usage_cls, nb::handle data, nb::handle device) {
        nb::handle classes[] = {query, usage_cls, data, device};
        for (int c = 1; c <= 4; ++c) {
          Py_XDECREF(g_error_class[c]);
          g_error_class[c] = classes[c - 1].inc_ref().ptr();
        }
      },
      nb::arg("query"), nb::arg("usage"), nb::arg("data"), nb::arg("device"));
}

void raise_usage(const std::string& text) { set_error(int(ExitCode::Usage), "usage error: " + text); }

void out_of_host_memory(const Call& c, const Query& q, const char* doing) {
  std::vector<std::pair<double, std::string>> copies;
  for (const auto& [name, a] : c.inputs.arrays)
    if (double b = 0; copied_to_c_order(a, b))
      copies.emplace_back(b, "copying input " + name + " (" + std::string(dtype_name(a.dtype)) + ", " + bytes_text(b) + ") to C order");
  std::sort(copies.rbegin(), copies.rend());
  std::string what;
  for (const auto& [b, text] : copies) what += (what.empty() ? "" : ", or ") + text;
  std::string outs;
  for (const auto& [name, list] : q.info().outputs) outs += (outs.empty() ? "" : ", ") + name;
  if (what.empty()) what = "for the outputs (" + outs + ") and the engine's working memory";
  throw Error(ExitCode::Device, "resource error: out of host memory " + std::string(doing) + ": " + what);
}

}  // namespace gamut::py
