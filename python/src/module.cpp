// gamut._gamut: the Python face of the C++ library (include/gamut/gamut.h). The package
// python/gamut re-exports it with the exception classes and type stubs. A call's keywords and
// values become the library's inputs in bindings.cpp and values.cpp; errors.cpp words errors.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <gamut/gamut.h>

#include <memory>

#include "arrays.h"
#include "core/host_phases.h"
#include "blocks.h"
#include "call.h"
#include "errors.h"

namespace nb = nanobind;
using namespace nb::literals;
using gamut::py::Call;
using gamut::py::Framework;

namespace {

// Python objects cached in function statics are released handles, kept for the process: a static
// nb::object would be released after the interpreter is gone.

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
  d["kernel_choice"] = s.kernel_choice;   // GPU: "heuristic", "tuned" (gamut.tune's table) or "forced"
  d["kernel_family"] = s.kernel_family;
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
  // Options that did not apply to the engine that ran, in one line as the CLI's summary says it
  // ("" when none).
  std::string ignored;
  for (const std::string& o : s.ignored_options) ignored += (ignored.empty() ? "ignored: " : ", ") + o + "=";
  if (!ignored.empty())
    ignored += std::string(s.ignored_options.size() == 1 ? " (it applies" : " (they apply") +
               " to the GPU engine; the CPU engine ran: " + s.engine_reason + ")";
  d["ignored"] = ignored;
  if (!s.host_phases.empty()) {  // GAMUT_HOST_PHASES=1: [(phase, us), ...]
    nb::list phases;
    for (const auto& [name, us] : s.host_phases) phases.append(nb::make_tuple(name, us));
    d["host_phases_us"] = phases;
  }
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

// The main thread (of the main interpreter): the one Python runs signal handlers on.
unsigned long g_main_thread = 0;

bool on_main_thread() { return PyThread_get_thread_ident() == g_main_thread; }

nb::dict run_call(const gamut::Query& q, Call& c, gamut::RunStats* stats) {
  gamut::host_phase("py: bind the keywords");
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
  // Ctrl-C: Python runs signal handlers on the main thread only. There, a long run works on the
  // library's helper thread while this thread looks every 50 ms (PyErr_CheckSignals, with the
  // GIL); a handler that raises (KeyboardInterrupt) stops the run (gamut::Cancelled) and its
  // exception is what the call raises. Short runs stay on this thread (Options::interrupted).
  bool signalled = false;
  if (on_main_thread())
    c.options.interrupted = [&signalled] {
      nb::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() == 0) return false;
      signalled = true;  // (the handler's exception is set on this thread)
      return true;
    };
  auto raise_signalled = [] {
    if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    throw nb::python_error();
  };
  gamut::host_phase("py: stream, allocator");
  gamut::Result r;
  try {
    nb::gil_scoped_release nogil;
    gamut::host_phase("py: release the GIL");
    r = q.run(c.inputs, c.options);
    gamut::host_phase("py: Query::run's return");
  } catch (const std::bad_alloc&) {
    if (signalled) raise_signalled();
    gamut::py::out_of_host_memory(c, q, "running the query");
  } catch (...) {
    if (signalled) raise_signalled();
    throw;
  }
  if (signalled) raise_signalled();  // the run ended before it saw the request
  gamut::host_phase("py: back from Query::run");
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
  gamut::host_phase("py: export the outputs");
  // (Taken on every path, q(...) too: the next call starts from none.)
  std::vector<std::pair<std::string, double>> phases = gamut::host_phases_take();
  if (stats) {
    *stats = std::move(r.stats);
    if (gamut::host_phases_on()) stats->host_phases = std::move(phases);
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

// q(**bindings): the type's tp_call slot, so that CPython hands over the keywords as one dict,
// however many there are (a nanobind method refuses more than 1024 keywords); it calls _call.
PyObject* g_call = nullptr;

PyObject* query_tp_call(PyObject* self, PyObject* args, PyObject* kwargs) {
  if (PyTuple_GET_SIZE(args) != 0) {
    gamut::py::raise_usage("a query takes its bindings as keywords, q(A=a, B=b), or a mapping, q.run({'A': a, 'B': b})");
    return nullptr;
  }
  nb::object kw = kwargs ? nb::borrow(kwargs) : nb::object(nb::dict());
  PyObject* argv[] = {self, kw.ptr()};
  return PyObject_Vectorcall(g_call, argv, 2, nullptr);
}

PyType_Slot g_query_slots[] = {{Py_tp_call, (void*)query_tp_call}, {0, nullptr}};

// q.explain / q.kernel_source: a mapping of bindings and keyword options, or keyword bindings
// and options (gamut/__init__.py passes both as they came).
void bind_call(Call& c, const gamut::Query& q, nb::handle inputs, nb::handle kwargs, const char* how) {
  if (inputs.is_none()) {
    gamut::py::bind_keywords(c, q, kwargs, how);
  } else {
    gamut::py::set_options(c, kwargs);
    gamut::py::bind_inputs(c, q, inputs);
  }
}

}  // namespace

NB_MODULE(_gamut, m) {
  m.doc() = "gamut: matrix-multiplication-like tasks as declarative queries (C++ extension)";
  gamut::py::register_errors(m);
  g_main_thread = nb::cast<unsigned long>(nb::module_::import_("threading").attr("main_thread")().attr("ident"));

  nb::class_<gamut::Query>(m, "Query", "A compiled query: call it with arrays and scalars as keywords.",
                          nb::is_weak_referenceable(), nb::type_slots(g_query_slots))
      .def(
          "run",
          [](const gamut::Query& q, nb::handle inputs, nb::kwargs options) {
            gamut::host_phase_start();
            Call c;
            gamut::py::set_options(c, options);
            gamut::py::bind_inputs(c, q, inputs);
            gamut::RunStats stats;
            nb::dict out = run_call(q, c, &stats);
            return nb::make_tuple(out, stats_dict(stats));
          },
          "inputs"_a, "options"_a,
          "Run on a mapping of bindings (any names); returns (outputs, stats).")
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

  m.def(
      "_call",
      [](const gamut::Query& q, nb::dict kwargs) {
        gamut::host_phase_start();
        Call c;
        gamut::py::bind_keywords(c, q, kwargs, "q(...)");
        return run_call(q, c, nullptr);
      },
      "query"_a, "kwargs"_a);
  g_call = m.attr("_call").ptr();   // (the module holds it)
  m.def(
      "_explain",
      [](const gamut::Query& q, nb::handle inputs, nb::dict kwargs) {
        Call c;
        bind_call(c, q, inputs, kwargs, "q.explain(...)");
        prepare_stream(c);
        std::string text;
        try {
          text = q.explain(c.inputs, c.options);
        } catch (const std::bad_alloc&) {
          gamut::py::out_of_host_memory(c, q, "explaining the query");
        }
        for (const std::string& n : c.notes) text += "  " + n + "\n";
        return text;
      },
      "query"_a, "inputs"_a.none(), "kwargs"_a);
  m.def(
      "_kernel_source",
      [](const gamut::Query& q, nb::handle inputs, nb::dict kwargs) {
        Call c;
        bind_call(c, q, inputs, kwargs, "q.kernel_source(...)");
        return q.kernel_source(c.inputs, c.options);
      },
      "query"_a, "inputs"_a.none(), "kwargs"_a);

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
  m.def(
      "_tune",
      [](std::vector<std::string> families, double seconds, std::vector<std::vector<int64_t>> sizes,
         std::string out, int repeats, nb::object progress) {
        gamut::TuneOptions o;
        o.families = std::move(families);
        o.seconds = seconds;
        for (const std::vector<int64_t>& s : sizes) {
          if (s.size() != 2) throw gamut::Error(gamut::ExitCode::Usage, "usage error: sizes are (M, K) pairs");
          o.sizes.emplace_back(s[0], s[1]);
        }
        o.out_dir = std::move(out);
        o.repeats = repeats;
        if (!progress.is_none()) o.progress = [&progress](double f, const std::string& what) { progress(f, what); };
        const gamut::TuneReport r = gamut::tune(o);
        nb::dict d;
        d["table_path"] = r.table_path;
        d["out_path"] = r.out_path;
        d["json"] = r.json;
        d["lines"] = r.lines;
        d["stopped"] = r.stopped;
        d["seconds"] = r.seconds;
        return d;
      },
      "families"_a, "seconds"_a, "sizes"_a, "out"_a, "repeats"_a, "progress"_a.none());
  m.def("_tune_families", &gamut::tune_families);
  gamut::py::register_blocks(m);
}
