// gamut._gamut: the Python face of the C++ library (include/gamut/gamut.h). The package
// python/gamut re-exports it with the exception classes and type stubs.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <gamut/gamut.h>

#include <memory>

#include "arrays.h"

namespace nb = nanobind;
using namespace nb::literals;
using gamut::py::Framework;

namespace {

// Python objects cached in function statics are released handles, kept for the process: a static
// nb::object would be released after the interpreter is gone.

// The Python exception classes (gamut/_errors.py), by exit status; registered at import.
PyObject* g_error_class[5] = {};

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const gamut::Error& e) {
    const int c = int(e.code());
    PyObject* cls = c >= 1 && c <= 4 && g_error_class[c] ? g_error_class[c] : PyExc_RuntimeError;
    PyErr_SetString(cls, e.what());
  }
}

[[noreturn]] void usage(const std::string& m) { throw gamut::Error(gamut::ExitCode::Usage, "usage error: " + m); }

// One call's bindings and options, and the imported arrays that must live until it is over.
struct Call {
  gamut::Inputs inputs;
  gamut::Options options;
  std::vector<nb::ndarray<nb::ro>> keep;
  std::vector<nb::object> relaid;               // device copies the framework made (below)
  std::vector<std::string> notes;               // and why
  bool have_array = false, have_gpu_array = false, stream_given = false;
  int gpu_id = 0;
  Framework framework = Framework::NumPy;       // of the first array
  Framework gpu_framework = Framework::Other;   // of the first array in device memory
};

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

bool is_numpy_scalar(nb::handle v) {
  return gamut::py::framework_of(v) == Framework::NumPy && nb::hasattr(v, "item") &&
         nb::cast<std::string>(nb::handle(Py_TYPE(v.ptr())).attr("__name__")) != "ndarray";
}

void bind_value(Call& c, const std::string& name, nb::handle v) {
  if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr())) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow) throw gamut::Error(gamut::ExitCode::Data, "data error: " + name + ": the integer does not fit in 64 bits");
    c.inputs.scalar(name, int64_t(x));
    return;
  }
  if (PyFloat_Check(v.ptr())) {
    c.inputs.scalar(name, PyFloat_AsDouble(v.ptr()));
    return;
  }
  if (v.is_none()) usage(name + ": None is neither an array nor a number");
  if (is_numpy_scalar(v)) {   // np.float32(0.5), np.int64(3)
    bind_value(c, name, v.attr("item")());
    return;
  }
  gamut::ArrayRef a = gamut::py::import_array(name, v, c.keep);
  const Framework f = gamut::py::framework_of(v);
  if (a.device.is_gpu() && !rows_contiguous(a)) {
    if (nb::object copy = relayout_on_device(f, v); copy.is_valid()) {
      c.notes.push_back(name + ": strides " + dims_text(a.strides) + " on cuda:" + std::to_string(a.device.id) +
                        ": copied to a contiguous layout on the device (by " + (f == Framework::Torch ? "torch" : "cupy") + ")");
      a = gamut::py::import_array(name, copy, c.keep);
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

// A CUDA stream given as an int (cudaStream_t), a torch.cuda.Stream (.cuda_stream) or a CuPy
// stream (.ptr).
void* stream_of(nb::handle s) {
  if (s.is_none()) return nullptr;
  if (PyLong_Check(s.ptr())) return reinterpret_cast<void*>(nb::cast<uintptr_t>(s));
  if (nb::hasattr(s, "cuda_stream")) return reinterpret_cast<void*>(nb::cast<uintptr_t>(s.attr("cuda_stream")));
  if (nb::hasattr(s, "ptr")) return reinterpret_cast<void*>(nb::cast<uintptr_t>(s.attr("ptr")));
  usage("stream: give an int (cudaStream_t), a torch.cuda.Stream or a cupy.cuda.Stream");
}

// devices=2, devices="all" or devices=[0, 1] (several GPUs, docs/multi-gpu.md).
gamut::Devices devices_of(nb::handle v) {
  const char* how = "devices=: give a count of GPUs (1 or more), 'all', or a list of GPU ordinals such as [0, 1]";
  if (v.is_none()) return {};   // the current GPU, as without devices=
  if (nb::isinstance<nb::str>(v)) {
    if (nb::cast<std::string>(v) != "all") usage(how);
    return gamut::Devices::all();
  }
  if (PyBool_Check(v.ptr())) usage(how);
  if (PyLong_Check(v.ptr())) {
    const long long n = nb::cast<long long>(v);
    if (n < 1 || n > 1 << 20) usage("devices=" + std::to_string(n) + ": give a count of 1 or more, or 'all'");
    return gamut::Devices::first(int(n));
  }
  if (!nb::isinstance<nb::list>(v) && !nb::isinstance<nb::tuple>(v)) usage(how);
  std::vector<int> ordinals;
  for (nb::handle x : v) {
    if (PyBool_Check(x.ptr()) || !PyLong_Check(x.ptr())) usage(how);
    const long long d = nb::cast<long long>(x);
    if (d < 0 || d > 1 << 20) usage("devices=: GPU ordinal " + std::to_string(d) + " is out of range");
    ordinals.push_back(int(d));
  }
  if (ordinals.empty()) usage(how);
  return gamut::Devices::list(std::move(ordinals));
}

// Options are keywords too; these names are not bindings (bind such inputs with Query.run).
bool set_option(gamut::Options& o, const std::string& key, nb::handle v) {
  if (key == "backend") o.backend = nb::cast<std::string>(nb::str(v));
  else if (key == "f32_math") o.f32_math = nb::cast<std::string>(nb::str(v));
  else if (key == "threads") o.threads = nb::cast<int>(v);
  else if (key == "stream") o.stream = stream_of(v);   // (Call::stream_given notes it)
  else if (key == "devices") o.devices = devices_of(v);
  else return false;
  return true;
}

void bind_mapping(Call& c, nb::handle mapping, bool options_too) {
  for (auto [k, v] : nb::borrow<nb::dict>(mapping)) {
    if (!nb::isinstance<nb::str>(k)) usage("binding names are strings");
    const std::string key = nb::cast<std::string>(k);
    if (options_too && set_option(c.options, key, v)) {
      c.stream_given |= key == "stream";
      continue;
    }
    bind_value(c, key, v);
  }
}

nb::dict stats_dict(const gamut::RunStats& s) {
  nb::dict d;
  d["backend"] = s.backend;
  d["seconds"] = s.seconds;
  d["kernel_seconds"] = s.kernel_seconds;
  d["wall_seconds"] = s.wall_seconds;
  d["compile_ms"] = s.compile_ms;
  d["cache"] = s.cache;
  d["tile"] = s.tile;
  d["math"] = s.math;           // spec section 10: "ieee", "bf16", "tf32", ...
  d["mainloop"] = s.mainloop;   // "simt", "mma.sync", "wgmma", "wgmma+tma", "cpu"
  d["threads"] = s.threads;
  d["device_peak_bytes"] = s.device_peak_bytes;
  if (!s.devices.empty()) {   // several GPUs
    d["devices"] = s.devices;
    d["partition"] = s.partition.substr(0, s.partition.find('\n'));
    d["merge"] = s.merge;
    d["merge_seconds"] = s.merge_seconds;
  }
  d["M"] = s.m;
  d["N"] = s.n;
  d["K"] = s.k;
  d["batch"] = s.batch;
  d["rewrites"] = s.rewrites;
  d["list_rows_appended"] = s.list_rows_appended;
  d["list_seen_cells"] = s.list_seen_cells;
  d["copies"] = s.copies;
  return d;
}

// The framework's current stream on the inputs' GPU: torch.cuda.current_stream(),
// cupy.cuda.get_current_stream(); otherwise the legacy default stream.
void* framework_stream(Framework f, int device) {
  if (f == Framework::Torch) {
    static nb::handle torch_c = nb::object(nb::module_::import_("torch").attr("_C")).release();
    static nb::handle raw = nb::object(nb::getattr(torch_c, "_cuda_getCurrentRawStream", nb::none())).release();
    if (!raw.is_none()) return reinterpret_cast<void*>(nb::cast<uintptr_t>(raw(device)));
    static nb::handle current = nb::object(nb::module_::import_("torch").attr("cuda").attr("current_stream")).release();
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(current(device).attr("cuda_stream")));
  }
  if (f == Framework::CuPy) {
    static nb::handle current = nb::object(nb::module_::import_("cupy").attr("cuda").attr("get_current_stream")).release();
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(current().attr("ptr")));
  }
  return nullptr;
}

// Runs the call: on the GPU, in order on the caller's stream (the framework's current one
// unless stream= was given).
void prepare_stream(Call& c) {
  if (c.have_gpu_array && !c.stream_given) c.options.stream = framework_stream(c.gpu_framework, c.gpu_id);
}

nb::dict run_call(const gamut::Query& q, Call& c, gamut::RunStats* stats) {
  prepare_stream(c);
  // Outputs go where the inputs are, in their framework: the first device array's, else the
  // first array's. Device outputs come from that framework's allocator where it has one.
  const Framework out_fw = c.have_gpu_array ? c.gpu_framework : c.framework;
  std::unique_ptr<gamut::py::FrameworkAllocator> alloc;
  if (c.have_gpu_array) {
    alloc = std::make_unique<gamut::py::FrameworkAllocator>(out_fw);
    if (alloc->usable()) {
      c.options.allocator = [a = alloc.get()](gamut::DType t, const std::vector<int64_t>& shape, gamut::Device d) {
        return a->allocate(t, shape, d);
      };
    } else {
      alloc.reset();
    }
  }
  // Device outputs for a framework gamut cannot order its work with (JAX reads a DLPack
  // capsule on streams of its own): ready before they are handed over.
  c.options.synchronize = c.have_gpu_array && out_fw != Framework::Torch && out_fw != Framework::CuPy;
  gamut::Result r;
  {
    nb::gil_scoped_release nogil;
    r = q.run(c.inputs, c.options);
  }
  nb::dict out;
  for (const gamut::Output& o : r.outputs) {
    if (!o.is_list) {
      out[o.name.c_str()] = gamut::py::export_array(o.array, out_fw, alloc.get());
      continue;
    }
    nb::dict cols;
    for (const auto& [name, a] : o.columns) cols[name.c_str()] = gamut::py::export_array(a, out_fw, alloc.get());
    out[o.name.c_str()] = cols;
  }
  if (stats) {
    *stats = std::move(r.stats);
    stats->copies.insert(stats->copies.begin(), c.notes.begin(), c.notes.end());
  }
  return out;
}

std::string describe(const gamut::Query& q) {
  const gamut::QueryInfo& i = q.info();
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s.empty() ? std::string("-") : s;
  };
  std::vector<std::string> outs;
  for (const auto& [n, list] : i.outputs) outs.push_back(n + (list ? " (list)" : ""));
  return "<gamut.Query " + i.name + ": inputs " + join(i.inputs) + "; parameters " + join(i.params) + "; outputs " +
         join(outs) + ">";
}

}  // namespace

NB_MODULE(_gamut, m) {
  m.doc() = "gamut: matrix-multiplication-like tasks as declarative queries (C++ extension)";
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
      "query"_a, "usage"_a, "data"_a, "device"_a);

  nb::class_<gamut::Query>(m, "Query", "A compiled query: call it with arrays and scalars as keywords.",
                          nb::is_weak_referenceable())
      .def(
          "__call__",
          [](const gamut::Query& q, nb::kwargs kwargs) {
            Call c;
            bind_mapping(c, kwargs, true);
            return run_call(q, c, nullptr);
          },
          "Run on the keyword arrays and scalars; backend=, f32_math=, threads=, stream=, devices= are options.")
      .def(
          "run",
          [](const gamut::Query& q, nb::dict inputs, nb::kwargs options) {
            Call c;
            for (auto [k, v] : options)
              if (!set_option(c.options, nb::cast<std::string>(k), v))
                usage("run(): unknown option '" + nb::cast<std::string>(k) + "' (backend, f32_math, threads, stream, devices)");
            bind_mapping(c, inputs, false);
            gamut::RunStats stats;
            nb::dict out = run_call(q, c, &stats);
            return nb::make_tuple(out, stats_dict(stats));
          },
          "inputs"_a, "options"_a,
          "Run on a mapping of bindings (any names); returns (outputs, stats).")
      .def(
          "explain",
          [](const gamut::Query& q, nb::kwargs kwargs) {
            Call c;
            bind_mapping(c, kwargs, true);
            prepare_stream(c);
            std::string text = q.explain(c.inputs, c.options);
            for (const std::string& n : c.notes) text += "  " + n + "\n";
            return text;
          },
          "The plan; with bindings the typed plan, extents, rewrites, kernel and input placement.")
      .def(
          "kernel_source",
          [](const gamut::Query& q, nb::kwargs kwargs) {
            Call c;
            bind_mapping(c, kwargs, true);
            return q.kernel_source(c.inputs, c.options);
          },
          "The CUDA C++ the GPU backend compiles for these bindings.")
      .def_prop_ro("name", [](const gamut::Query& q) { return q.info().name; })
      .def_prop_ro("text", [](const gamut::Query& q) { return q.text(); })
      .def_prop_ro("inputs", [](const gamut::Query& q) { return q.info().inputs; })
      .def_prop_ro("params", [](const gamut::Query& q) { return q.info().params; })
      .def_prop_ro("outputs", [](const gamut::Query& q) {
        std::vector<std::string> v;
        for (const auto& o : q.info().outputs) v.push_back(o.first);
        return v;
      })
      .def("__repr__", &describe);

  m.def("compile", &gamut::Query::compile, "text"_a, "name"_a = "<query>", "Parse and check a query.");
  m.def("load", &gamut::Query::load, "path"_a, "Read a query file and compile it.");
  m.def("version", [] { return std::string(gamut::version()); });
  m.def("gpu_available", [] {
    std::string why;
    const bool ok = gamut::gpu_available(&why);
    return nb::make_tuple(ok, why);
  });
  m.def("cache_dir", &gamut::kernel_cache_dir);
  m.def("clear_cache", &gamut::clear_kernel_cache);
}
