// Keywords and mappings of a Python call -> gamut::Inputs and gamut::Options, with the command
// line's checks in Python's words: a misspelt binding gets "did you mean", a float output index is a
// data error named once, a binding named like an option points to q.run(mapping), and options
// are checked for their type and range before they reach the library.
#include <gamut/gamut.h>

#include <cmath>
#include <cstring>
#include <iterator>

#include "call.h"
#include "lang/diagnostics.h"   // closest_name: the command line's did-you-mean
#include "values.h"

namespace gamut::py {

namespace {

constexpr int kMaxThreads = 1024;   // as the command line's --threads (src/cli/args.h)
const char* const kOptions[] = {"backend", "f32_math", "threads", "stream", "devices", "dims", "provenance", "as_written", "finish", "tuned", "kernel_variant"};

[[noreturn]] void usage(const std::string& m) { throw Error(ExitCode::Usage, "usage error: " + m); }

// A value as the message shows it (short).
std::string shown(nb::handle v) {
  std::string r;
  try {
    r = nb::cast<std::string>(nb::repr(v));
  } catch (...) {
    r = "?";
  }
  return r.size() > 40 ? r.substr(0, 37) + "..." : r;
}

// A Python int (or anything with __index__, such as np.int64; not bool) that fits in a long long.
bool integer(nb::handle v, long long& out) {
  if (PyBool_Check(v.ptr()) || PyFloat_Check(v.ptr()) || !PyIndex_Check(v.ptr())) return false;
  nb::object i = nb::steal(PyNumber_Index(v.ptr()));
  if (!i.is_valid()) {
    PyErr_Clear();
    return false;
  }
  int overflow = 0;
  out = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
  return !overflow;
}

std::string text_option(const char* key, nb::handle v, const char* choices) {
  if (!nb::isinstance<nb::str>(v)) usage(std::string(key) + "=" + shown(v) + ": give a string, " + choices);
  return nb::cast<std::string>(v);
}

int threads_of(nb::handle v) {
  if (v.is_none()) return 0;
  long long n = 0;
  if (!integer(v, n) || n < 0 || n > kMaxThreads)
    usage("threads=" + shown(v) + ": threads must be an integer from 1 to " + std::to_string(kMaxThreads) +
          " (0 or None: every hardware thread)");
  return int(n);
}

void* pointer_of(const char* what, nb::handle v) {
  long long p = 0;
  if (!integer(v, p) || p < 0)
    usage("stream=" + shown(v) + ": " + what + " is not a stream handle (a non-negative int)");
  return reinterpret_cast<void*>(uintptr_t(p));
}

// A CUDA stream given as an int (cudaStream_t), a torch.cuda.Stream (.cuda_stream) or a CuPy
// stream (.ptr).
void* stream_of(nb::handle s) {
  if (s.is_none()) return nullptr;
  if (PyLong_Check(s.ptr())) return pointer_of("the int", s);
  if (nb::hasattr(s, "cuda_stream")) return pointer_of("its cuda_stream", s.attr("cuda_stream"));
  if (nb::hasattr(s, "ptr")) return pointer_of("its ptr", s.attr("ptr"));
  usage("stream=" + shown(s) + ": give an int (cudaStream_t), a torch.cuda.Stream or a cupy.cuda.Stream");
}

// devices=2, devices="all" or devices=[0, 1] (several GPUs, docs/multi-gpu.md).
gamut::Devices devices_of(nb::handle v) {
  const char* how = "devices=: give a count of GPUs (1 or more), 'all', or a list of GPU ordinals such as [0, 1]";
  if (v.is_none()) return {};   // the current GPU, as without devices=
  if (nb::isinstance<nb::str>(v)) {
    if (nb::cast<std::string>(v) != "all") usage(how);
    return gamut::Devices::all();
  }
  long long n = 0;
  if (integer(v, n)) {
    if (n < 1 || n > 1 << 20) usage("devices=" + shown(v) + ": give a count of 1 or more, or 'all'");
    return gamut::Devices::first(int(n));
  }
  if (!nb::isinstance<nb::list>(v) && !nb::isinstance<nb::tuple>(v)) usage(how);
  std::vector<int> ordinals;
  for (nb::handle x : v) {
    long long d = 0;
    if (!integer(x, d)) usage(how);
    if (d < 0 || d > 1 << 20) usage("devices=: GPU ordinal " + shown(x) + " is out of range");
    ordinals.push_back(int(d));
  }
  if (ordinals.empty()) usage(how);
  return gamut::Devices::list(std::move(ordinals));
}

// dims={"Hist": [13], "T": (4, 5)} (or an int for one dimension): the extents of aggregate outputs
// that no input sizes, as the command line's --dim NAME=D1,D2 and Inputs::extent.
void dims_of(Call& c, nb::handle v) {
  const char* how = "dims=: give a dict of output names to extents, such as dims={'Hist': [13]}";
  if (v.is_none()) return;
  if (!nb::isinstance<nb::dict>(v)) usage(how);
  for (auto [k, x] : nb::borrow<nb::dict>(v)) {
    if (!nb::isinstance<nb::str>(k)) usage(how);
    const std::string name = nb::cast<std::string>(k);
    std::vector<int64_t> ext;
    long long n = 0;
    if (integer(x, n)) {
      ext.push_back(n);
    } else if (nb::isinstance<nb::list>(x) || nb::isinstance<nb::tuple>(x)) {
      for (nb::handle e : x) {
        if (!integer(e, n)) usage("dims['" + name + "']=" + shown(x) + ": extents are integers");
        ext.push_back(n);
      }
    } else {
      usage("dims['" + name + "']=" + shown(x) + ": give an int or a list of ints");
    }
    for (int64_t e : ext)
      if (e < 0) usage("dims['" + name + "']=" + shown(x) + ": extents are 0 or more");
    c.inputs.extent(name, std::move(ext));
  }
}

bool set_option(Call& c, const std::string& key, nb::handle v) {
  gamut::Options& o = c.options;
  if (key == "backend") o.backend = text_option("backend", v, "'auto', 'cpu' or 'gpu'");
  else if (key == "f32_math") o.f32_math = text_option("f32_math", v, "'ieee', 'tf32x3' or 'tf32'");
  else if (key == "threads") o.threads = threads_of(v);
  else if (key == "stream") {
    o.stream = stream_of(v);
    c.stream_given = true;
  }
  else if (key == "devices") o.devices = devices_of(v);
  else if (key == "dims") dims_of(c, v);
  else if (key == "provenance") {
    if (!PyBool_Check(v.ptr())) usage("provenance=" + shown(v) + ": give True or False");
    o.list_provenance = v.ptr() == Py_True;
  }
  else if (key == "finish") {
    if (!PyBool_Check(v.ptr())) usage("finish=" + shown(v) + ": give True or False");
    o.finish = v.ptr() == Py_True;
  }
  else if (key == "as_written") {
    if (!nb::isinstance<nb::bool_>(v)) usage("as_written=" + shown(v) + ": give True or False");
    o.as_written = nb::cast<bool>(v);
  }
  else if (key == "tuned") {
    if (!nb::isinstance<nb::bool_>(v)) usage("tuned=" + shown(v) + ": give True or False");
    o.tuned = nb::cast<bool>(v);
  }
  else if (key == "kernel_variant") {
    if (!nb::isinstance<nb::str>(v)) usage("kernel_variant=" + shown(v) + ": give a variant's text");
    o.kernel_variant = nb::cast<std::string>(v);
  }
  else return false;
  return true;
}

// Rows contiguous and no negative strides: what the GPU engine reads in place.
bool rows_contiguous(const gamut::ArrayRef& a) {
  for (size_t d = 0; d < a.strides.size(); ++d)
    if (a.strides[d] < 0 || (d + 1 == a.strides.size() && a.strides[d] != 1 && a.shape[d] > 1)) return false;
  return true;
}

std::string dims_text(const std::vector<int64_t>& v) {
  std::string t = "(";
  for (size_t k = 0; k < v.size(); ++k) t += (k ? ", " : "") + std::to_string(v[k]);
  return t + (v.size() == 1 ? ",)" : ")");
}

// A device array whose rows are not contiguous (a transpose, a column slice with steps): a
// contiguous copy on the device, made by its own framework in order on its stream.
nb::object relayout_on_device(Framework f, nb::handle v) {
  if (f == Framework::Torch) return v.attr("contiguous")();
  if (f == Framework::CuPy) {
    static nb::handle cupy = nb::object(nb::module_::import_("cupy")).release();
    return cupy.attr("ascontiguousarray")(v);
  }
  return nb::object();
}

// The query's input or parameter `name`; a name it does not have is a usage error with the
// command line's did-you-mean (among the options too where they are keywords as well).
const gamut::BindingInfo& binding_info(const Query& q, const std::string& name, bool options_too) {
  const gamut::QueryInfo& info = q.info();
  for (const gamut::BindingInfo& b : info.input_info)
    if (b.name == name) return b;
  for (const gamut::BindingInfo& b : info.param_info)
    if (b.name == name) return b;
  std::vector<std::string> all;
  for (const gamut::BindingInfo& b : info.param_info) all.push_back(b.name);
  for (const gamut::BindingInfo& b : info.input_info) all.push_back(b.name);
  std::string near = closest_name(name, all), option;
  if (near.empty() && options_too) option = closest_name(name, std::vector<std::string>(std::begin(kOptions), std::end(kOptions)));
  usage("binding '" + name + "' matches no input or parameter of the query" +
        (!near.empty() ? " (did you mean '" + near + "'?)" : !option.empty() ? " (did you mean the option '" + option + "'?)" : ""));
}

bool has_binding(const Query& q, const std::string& name) {
  for (const std::string& n : q.info().inputs)
    if (n == name) return true;
  for (const std::string& n : q.info().params)
    if (n == name) return true;
  return false;
}

bool is_param(const Query& q, const std::string& name) {
  for (const std::string& n : q.info().params)
    if (n == name) return true;
  return false;
}

bool is_float_type(DType t) { return t == DType::F16 || t == DType::BF16 || t == DType::F32 || t == DType::F64; }

void bind_value(Call& c, const Query& q, const std::string& name, nb::handle v, bool options_too) {
  const gamut::BindingInfo& info = binding_info(q, name, options_too);
  // Text for a scalar parameter: the command line's data error for `thres=abc`, in its words.
  if (PyUnicode_CheckExact(v.ptr()) && is_param(q, name))
    throw Error(ExitCode::Data, "data error: " + name + ": the str '" + nb::cast<std::string>(v) +
                                    "' is not a number (" + name + " is a scalar parameter of the query, " +
                                    info.location + ")");
  Value val = classify(name, v);
  if (val.kind == Value::Int) {
    c.inputs.scalar(name, val.i);
    return;
  }
  if (val.kind == Value::Float) {
    c.inputs.scalar(name, val.f);
    return;
  }
  gamut::ArrayRef a = import_array(name, std::move(val.nd), c.keep, val.bf16);
  if (is_param(q, name))   // (after the element type's own errors; the command line: `thres=x.npy`)
    throw Error(ExitCode::Data, "data error: " + name + ": an array is not a number (" + name +
                                    " is a scalar parameter of the query, " + info.location + ")");
  if (!val.note.empty()) c.notes.push_back(val.note);
  if (val.made) c.relaid.push_back(val.object);
  // An output index must hold integers: a data error before the query is typed for it (as the
  // command line says it, once; typing would name every use).
  if (info.output_index && is_float_type(a.dtype))
    throw Error(ExitCode::Data, "data error: " + name + ": an index vector must hold integers, got " +
                                    std::string(gamut::dtype_name(a.dtype)) + " (used as an output index at " +
                                    info.location + ")");
  // Outputs come back in the framework of the inputs; what NumPy made of another object is NumPy.
  const Framework f = val.made ? Framework::NumPy : framework_of(v);
  if (a.device.is_gpu() && !rows_contiguous(a)) {
    if (nb::object copy = relayout_on_device(f, v); copy.is_valid()) {
      c.notes.push_back(name + ": strides " + dims_text(a.strides) + " on cuda:" + std::to_string(a.device.id) +
                        ": copied to a contiguous layout on the device (by " + (f == Framework::Torch ? "torch" : "cupy") + ")");
      a = import_array(name, copy, c.keep);
      c.relaid.push_back(std::move(copy));
    }
  }
  if (!c.have_array) c.framework = f;
  if (a.device.is_gpu() && !c.have_gpu_array) {
    c.gpu_framework = f;
    c.gpu_id = a.device.id;
    c.have_gpu_array = true;
  }
  c.have_array = true;
  c.inputs.array(name, std::move(a));
}

std::string key_of(nb::handle k) {
  if (!nb::isinstance<nb::str>(k)) usage("binding names are strings, got " + shown(k));
  return nb::cast<std::string>(k);
}

}  // namespace

bool is_option_name(const std::string& key) {
  for (const char* o : kOptions)
    if (key == o) return true;
  return false;
}

void bind_keywords(Call& c, const Query& q, nb::handle kwargs, const char* how) {
  for (auto [k, v] : nb::borrow<nb::dict>(kwargs)) {
    const std::string key = key_of(k);
    if (is_option_name(key)) {
      if (has_binding(q, key))
        usage("'" + key + "' is an option of " + how + " and also a binding of the query: bind it through a mapping, " +
              "q.run({'" + key + "': ...}, **options) (or q.explain({...}, **options)), whose keywords are only options");
      set_option(c, key, v);
      continue;
    }
    bind_value(c, q, key, v, true);
  }
}

void bind_inputs(Call& c, const Query& q, nb::handle inputs) {
  nb::dict d;
  if (nb::isinstance<nb::dict>(inputs)) {
    d = nb::borrow<nb::dict>(inputs);
  } else {
    try {
      d = nb::borrow<nb::dict>(nb::module_::import_("builtins").attr("dict")(inputs));
    } catch (nb::python_error&) {
      usage("the inputs must be a mapping of binding names to arrays and numbers, got a " +
            nb::cast<std::string>(nb::handle(Py_TYPE(inputs.ptr())).attr("__name__")));
    }
  }
  for (auto [k, v] : d) bind_value(c, q, key_of(k), v, false);
}

void set_options(Call& c, nb::handle options) {
  for (auto [k, v] : nb::borrow<nb::dict>(options)) {
    const std::string key = key_of(k);
    if (!set_option(c, key, v))
      usage("unknown option '" + key + "' (backend, f32_math, threads, stream, devices, dims, provenance, as_written, finish, tuned, kernel_variant); bindings go in the mapping");
  }
}

}  // namespace gamut::py
