// gamut::Query: the query text checked once, a typed plan per signature of input types, and per
// call the same prepare() / execute() path as the command line.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <sstream>

#include "api/bound_call.h"
#include "api/device_memory.h"
#include "api/helper_threads.h"
#include "api/launch_records.h"
#include "api/query_memo.h"
#include "api/roofline.h"
#include "api/staging.h"
#include "core/error.h"
#include "core/host_phases.h"
#include "cpu/finish.h"
#include "cuda/codegen/kernel_variants.h"
#include "cuda/codegen/seen_box.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/kernel_sources.h"
#include "driver/kernels_ahead.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "partition/multi_device.h"
#include "sema/analyze.h"

namespace gamut {

// The plan whose math a run reports: a rewritten program's last stage where it keeps one.
static const Plan& math_plan(const Plan& plan, const Prepared* prep) {
  return prep && prep->program && prep->program->main_plan ? *prep->program->main_plan : plan;
}

struct Query::Impl {
  Source source;
  QueryInfo info;
  std::vector<std::string> index_operands;  // g in C[g[i]] or `when` keys: their values are read on the host
  api::QueryMemo memo;
  api::LaunchRecords records;
};

namespace {

RunOptions engine_options(const Options& o) {
  RunOptions r;
  if (o.backend == "auto")
    r.backend = Backend::Auto;
  else if (o.backend == "cpu")
    r.backend = Backend::Cpu;
  else if (o.backend == "gpu")
    r.backend = Backend::Gpu;
  else
    throw_usage_error("backend '" + o.backend + "': use auto, cpu or gpu");
  // tf32 and tf32x3 permit tensor cores (spec section 10); explain says which math ran.
  const std::optional<F32Math> math = f32_math_from_name(o.f32_math);
  if (!math) throw_usage_error("f32_math '" + o.f32_math + "': use ieee, tf32x3 or tf32");
  r.f32_math = *math;
  if (o.threads < 0) throw_usage_error("threads must not be negative, got " + std::to_string(o.threads));
  if (o.repeats < 0) throw_usage_error("repeats must not be negative, got " + std::to_string(o.repeats));
  r.threads = o.threads;
  r.tile = o.tile;
  r.kernel_variant = o.kernel_variant;
  std::string why;  // (checked whichever engine runs, as the command line checks --kernel-variant)
  if (!o.kernel_variant.empty() && !cuda::parse_kernel_variant(o.kernel_variant, &why)) throw_usage_error(why);
  r.use_tuned = o.tuned;
  r.repeats = o.repeats;
  r.progress = o.progress;
  r.cancel = o.cancel;
  if (o.interrupted && o.interrupt_ms <= 0)
    throw_usage_error("interrupt_ms must be positive, got " + std::to_string(o.interrupt_ms));
  return r;
}

// Runs at most this many pair-steps (pairs times the reduction's steps and the output
// statements) on the calling thread even when the caller polls for interrupts: a few ms of a
// product. Handing a run to the helper and back costs ~10 us on a 2-core host (and a 1.2 ms
// product there took ~50 us longer on the helper), so only longer runs go there.
constexpr double kUnpolledWork = double(1 << 24);

double pair_steps(const Plan& plan, const Instance& inst) {
  const double pairs = double(inst.batch) * double(inst.row.size()) * double(inst.col.size());
  const double k = double(std::max<int64_t>(inst.red.size(), 1));
  return pairs * (k * double(1 + plan.inner.size()) + double(1 + plan.outer.size()));
}

// run() (the engine) with Options::interrupted: on a helper thread, while this thread calls
// interrupted() every interrupt_ms until the run ends; the first true (or the caller's own
// cancel flag) sets the flag the engine reads (`ro.cancel`). The helper takes this thread's
// current GPU. Without a helper (no thread could start) the run is here, unpolled.
Results run_polled(const Options& o, RunOptions& ro, bool gpu, const std::function<Results()>& run) {
  std::atomic<bool> stop{false};
  const std::atomic<bool>* outer = ro.cancel;
  ro.cancel = &stop;
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    bool finished = false;
    Results res;
    std::exception_ptr error;
  } sh;
  const int device = gpu ? cuda::current_device() : -1;
  const bool started = api::run_on_helper(
      [&sh, &run, device] {
        try {
          if (device >= 0 && cuda::current_device() != device) cuda::set_current_device(device);
          sh.res = run();
        } catch (...) {
          sh.error = std::current_exception();
        }
      },
      [&sh] {
        std::lock_guard<std::mutex> lock(sh.mu);
        sh.finished = true;
        sh.cv.notify_one();
      });
  if (!started) {
    ro.cancel = outer;
    return run();
  }
  std::exception_ptr poll_error;
  {
    std::unique_lock<std::mutex> lock(sh.mu);
    const auto slice = std::chrono::milliseconds(o.interrupt_ms);
    while (!sh.cv.wait_for(lock, slice, [&sh] { return sh.finished; })) {
      if (stop.load()) continue;  // (asked already: waiting for the engine to stop)
      lock.unlock();
      bool now = outer && outer->load();
      try {
        now = now || o.interrupted();
      } catch (...) {
        poll_error = std::current_exception();
        now = true;
      }
      if (now) stop = true;
      lock.lock();
    }
  }
  if (poll_error) std::rethrow_exception(poll_error);
  if (sh.error) std::rethrow_exception(sh.error);
  return std::move(sh.res);
}

// Whether the GPU engine runs (auto: when a GPU is usable).
bool gpu_engine(const RunOptions& r) {
  return r.backend == Backend::Gpu || (r.backend == Backend::Auto && cuda::gpu_available(nullptr));
}

// The engine a run with these options takes, as explain's first line says it.
struct EngineChoice {
  bool gpu = false;    // the GPU engine runs
  std::string no_gpu;  // why no GPU is usable ("no NVIDIA GPU found"); empty where one is
  std::string line;    // "engine: cpu (no NVIDIA GPU found)\n"
};

// Why no GPU can be used, without the probe's lead ("no usable CUDA device: no NVIDIA GPU found
// (...)" -> "no NVIDIA GPU found (...)"); "" where one can.
std::string no_gpu_reason() {
  std::string why;
  if (cuda::gpu_available(&why)) return "";
  const std::string lead = "no usable CUDA device: ";
  return why.rfind(lead, 0) == 0 ? why.substr(lead.size()) : why;
}

EngineChoice explained_engine(const RunOptions& r) {
  EngineChoice c;
  c.no_gpu = no_gpu_reason();
  const bool present = c.no_gpu.empty();
  if (r.backend == Backend::Cpu) {
    c.line = "engine: cpu (backend cpu asked)\n";
  } else if (present) {
    c.gpu = true;
    c.line = "engine: gpu (" + cuda::device().name + ")\n";
  } else if (r.backend == Backend::Gpu) {
    c.line = "engine: none: backend gpu asked, but " + c.no_gpu + " (a run fails with a device error)\n";
  } else {
    c.line = "engine: cpu (" + c.no_gpu + ")\n";
  }
  return c;
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
  return t + (s.size() == 1 ? ",)" : ")");
}

std::string device_text(const Device& d) {
  switch (d.kind) {
    case DeviceKind::Cuda: return "cuda:" + std::to_string(d.id);
    case DeviceKind::CudaHost: return "host (pinned)";
    case DeviceKind::CudaManaged: return "managed";
    default: return "host";
  }
}

// The bound, planned call of these inputs as kernel_variants, compile_ahead and kernel_source see
// it (nothing runs).
std::unique_ptr<Prepared> prepared_call(Query::Impl& impl, const Inputs& inputs, const Options& options) {
  api::StagedInputs staged =
      api::stage_inputs(inputs, options.stream, gpu_engine(engine_options(options)), impl.index_operands);
  return api::BoundCall(impl.memo, impl.source, staged, options).take_prepared(impl.source);
}

// The GPU kernel run_gpu would run for this instance (on this device, or without one an H100).
cuda::KernelSpec kernel_for(const Instance& inst, const RunOptions& ro) {
  // (Seen tables: the engine also reads device vectors' ranges; here host data decides.)
  return cuda::gpu_kernel_spec(inst, gpu_run_options(ro), explained_target(), cuda::seen_boxes(inst));
}

// explain's line on who chose the kernel (RunStats::kernel_choice).
std::string kernel_choice_line(const cuda::KernelSpec& k) {
  const std::string by = k.choice == "tuned"    ? "tuned (the winner `gamut tune` stored for this GPU)"
                         : k.choice == "forced" ? "forced (kernel_variant)"
                                                : "heuristic";
  return "kernel choice: " + by + ", family " + k.family + "\n";
}

std::string location(const Plan& plan, Span s) {
  return plan.source_name + ":" + std::to_string(s.line) + ":" + std::to_string(s.col);
}

DeviceRequest device_request(const Devices& d) { return DeviceRequest{d.count, d.ordinals}; }

// The GPUs a run goes to (empty: the normal run on the current device); errors name `devices=`.
std::vector<int> run_devices(const Options& o, const RunOptions& r) {
  std::string why;
  const int visible = r.backend == Backend::Cpu || !cuda::gpu_available(&why) ? 0 : cuda::device_count();
  return resolve_devices(device_request(o.devices), visible, r.backend == Backend::Cpu, "devices=", why);
}

// explain needs no GPU: a count names GPUs 0 to N-1 whether or not they are visible.
std::vector<int> explained_devices(const Devices& d) {
  if (d.count < -1) throw_usage_error("devices=" + std::to_string(d.count) + ": give a count of 1 or more, or all");
  for (int o : d.ordinals)
    if (o < 0) throw_usage_error("devices=: device ordinal " + std::to_string(o) + " is negative");
  if (!d.ordinals.empty()) return d.ordinals;
  const int n = d.count < 0 ? (cuda::gpu_available(nullptr) ? cuda::device_count() : 0) : d.count;
  std::vector<int> out;
  for (int k = 0; k < n; ++k) out.push_back(k);
  return out;
}

// The calling thread's GPU for a scope (a rewritten program's first stages run on the first GPU asked).
class CurrentDeviceScope {
 public:
  explicit CurrentDeviceScope(int ordinal) : previous_(cuda::current_device()) { cuda::set_current_device(ordinal); }
  ~CurrentDeviceScope() {
    try {
      cuda::set_current_device(previous_);
    } catch (...) {  // (it was current a moment ago)
    }
  }
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

 private:
  int previous_;
};

}  // namespace

// A run that was one launch (RunOptions::launch_record filled) as the query's record for its
// signature: how the plan's operands map to the bindings, the outputs, the run's record.
static void keep_record(Query::Impl& impl, std::string signature, cuda::LaunchRecord&& launch, const Plan& plan,
                        const Inputs& inputs, Device output_device, const Result& r) {
  auto call = std::make_shared<api::RecordedCall>();
  call->launch = std::move(launch);
  for (const Operand& o : plan.operands) {
    int position = -1, n = 0;
    for (const auto& [name, a] : inputs.arrays) {
      if (name == o.name) position = n;
      ++n;
    }
    call->operand_binding.push_back(position);
  }
  call->output_device = output_device;
  for (const Output& o : r.outputs) {
    if (o.is_list) return;
    call->outputs.push_back({o.name, o.array.dtype, o.array.shape});
  }
  if (call->outputs.size() != call->launch.outputs.size()) return;
  call->stats = r.stats;
  call->stats.seconds = call->stats.kernel_seconds = call->stats.wall_seconds = call->stats.compile_ms = 0;
  call->stats.cache = "record";
  call->stats.host_phases.clear();
  impl.records.keep(std::move(signature), std::move(call));
}

Query Query::compile(const std::string& text, const std::string& name) {
  auto impl = std::make_shared<Impl>();
  impl->source = Source{name, text};
  // Checked without input types now (query errors surface here); typed per call signature.
  const Plan plan = build_plan(impl->source, {});
  QueryInfo& info = impl->info;
  info.name = name;
  info.batched = plan.batched;
  for (const Operand& o : plan.operands) {
    info.inputs.push_back(o.name);
    if (o.is_index) impl->index_operands.push_back(o.name);
    const int rank = o.accesses.empty() ? 0 : pattern_rank(plan.accesses[size_t(o.accesses[0])].pattern);
    info.input_info.push_back(BindingInfo{o.name, location(plan, o.span), rank, o.is_index, false});
  }
  for (const DenseOutput& d : plan.dense)
    for (const OutIndex& x : d.index)
      if (x.kind == OutIndex::Lookup)
        info.input_info[size_t(plan.accesses[size_t(x.access)].operand)].output_index = true;
  for (const Param& p : plan.params) {
    info.params.push_back(p.name);
    info.param_info.push_back(BindingInfo{p.name, location(plan, p.span), 0, false, false});
  }
  for (const DenseOutput& d : plan.dense) info.outputs.emplace_back(d.name, false);
  for (const FinishStep& f : plan.finish) info.outputs.emplace_back(f.name, false);
  for (const ListOutput& l : plan.lists) info.outputs.emplace_back(l.name, true);
  return Query(std::move(impl));
}

Query Query::load(const std::string& path) {
  Source s = read_query_file(path);
  return compile(s.text, s.name);
}

const QueryInfo& Query::info() const { return impl_->info; }
const std::string& Query::text() const { return impl_->source.text; }

Result Query::run(const Inputs& inputs, const Options& options) const {
  const auto t0 = std::chrono::steady_clock::now();
  // Host phases (GAMUT_HOST_PHASES=1): added to the caller's where it started them (the Python
  // binding, which takes them all), else this call's own, dropped once the locals are freed.
  const bool own_phases = host_phases_on() && !host_phase_started();
  if (own_phases) host_phase_start();
  host_phase("before Query::run");
  struct LastMark {  // (destroyed after every other local)
    bool own;
    ~LastMark() {
      host_phase("run: locals freed");
      if (own) host_phases_take();
    }
  } last_mark{own_phases};
  // A repeated call whose signature a recorded call had: its launch again (launch_records.h).
  std::string signature = impl_->records.signature(inputs, options);
  if (const auto recorded = impl_->records.find(signature)) {
    host_phase("run: signature (a launch record)");
    Result r = api::replay(*recorded, inputs, options);
    r.stats.host_phases = host_phases_take(false);
    r.stats.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  RunOptions ro = engine_options(options);
  const bool gpu = gpu_engine(ro);
  // Several GPUs read the inputs on the host: each part uploads them to its own GPU.
  const std::vector<int> devices = run_devices(options, ro);
  const bool several = !devices.empty();
  host_phase("run: options, engine, devices");
  api::StagedInputs staged = api::stage_inputs(inputs, options.stream, gpu && !several, impl_->index_operands);
  host_phase("run: stage inputs");
  api::BoundCall call(impl_->memo, impl_->source, staged, options);
  host_phase("run: bind (memo)");
  const Prepared* prep = call.prepared();
  const Plan& plan = call.plan();
  Instance& inst = call.instance();
  ro.compile_ahead = call.first_run();
  if (!prep)
    ro.kernel_memo = call.kernel_memo();
  else
    ro.stage_memo = [impl = impl_](const std::string& key) { return impl->memo.stage_memo(key); };
  // A rewritten program: its first stages on the first GPU asked, its last stage in parts.
  std::optional<CurrentDeviceScope> on_first;
  if (several && prep) on_first.emplace(devices[0]);
  if (several) ro.devices = devices;
  // Device inputs in, device outputs out: the GPU engine writes dense outputs into the caller's
  // memory (its Allocator, else cudaMalloc) in order on its stream, and nothing waits.
  ro.stream = options.stream;
  std::vector<Allocation> written;
  std::vector<std::vector<Allocation>> written_lists;  // per list: its columns, where the engine wrote them
  if (gpu && !several && staged.output_device.is_gpu()) {
    written.resize(plan.dense.size());
    ro.asynchronous = true;
    // The caller's memory for one output: its allocator's, else gamut's on its stream.
    auto allocate = [&options, device = staged.output_device](DType t, const std::vector<int64_t>& shape, size_t bytes,
                                                              const std::string& what) {
      return api::output_memory(options, device, t, shape, bytes, what);
    };
    // The callbacks outlive this block (execute calls them): they hold `allocate` by value.
    ro.dense_output = [&written, &plan, &inst, allocate](size_t d, size_t bytes) -> void* {
      written[d] = allocate(storage_type_of(plan.dense[d].type), inst.dense_shapes[d], bytes, plan.dense[d].name);
      return written[d].data;
    };
    // Lists ordered on the device are copied into the caller's memory there (no round trip
    // through the host); the engine brings the others to the host and they are placed below.
    written_lists.resize(plan.lists.size());
    ro.list_output = [&written_lists, &plan, allocate](size_t l, int64_t rows) {
      std::vector<void*> to;
      std::vector<Allocation>& cols = written_lists[l];
      cols.clear();
      for (const ListColumn& c : plan.lists[l].columns) {
        const DType t = storage_type_of(c.type);
        cols.push_back(allocate(t, {rows}, size_t(rows) * dtype_size(t), "list " + plan.lists[l].name));
        to.push_back(cols.back().data);
      }
      return to;
    };
  }
  // A run that may be one launch is recorded, keyed by what it read (launch_records.h).
  cuda::LaunchRecord launch;
  const bool recordable = gpu && !several && !prep && ro.dense_output && plan.lists.empty() &&
                          (plan.finish.empty() || !options.finish) && impl_->index_operands.empty() &&
                          staged.copies.empty() && staged.device.size() == inputs.arrays.size() &&
                          api::LaunchRecords::may_record(options);
  if (recordable) {
    if (signature.empty()) signature = api::LaunchRecords::key(inputs, options, cuda::current_device());
    ro.launch_record = &launch;
  }
  RunReport rep;
  const auto engine = [&]() { return prep ? execute(*prep, ro, &rep) : execute(inst, ro, &rep); };
  // (A run that writes into memory from the caller's allocator stays on the calling thread: a
  // framework's allocator may depend on it, as PyTorch's current stream does.)
  const bool polled = options.interrupted && !options.allocator && pair_steps(plan, inst) > kUnpolledWork;
  host_phase("run: callbacks");
  Results res = polled ? run_polled(options, ro, gpu, engine) : engine();
  host_phase("run: engine's end");
  if (res.dense.size() != plan.dense.size() || res.lists.size() != plan.lists.size())
    throw_device_error("internal error: the engine returned " + std::to_string(res.dense.size() + res.lists.size()) +
                       " outputs for " + std::to_string(plan.dense.size() + plan.lists.size()));

  // Finishing steps, once every output is final (merged over GPUs or a program's stages): on the
  // host, whichever engine ran; outputs in device memory come down for it first.
  std::vector<NDArray> finished;
  if (!plan.finish.empty() && options.finish) {
    std::vector<NDArray> downloaded(plan.dense.size());
    std::vector<const NDArray*> dense(plan.dense.size());
    std::vector<bool> read(plan.dense.size(), false);
    for (const OutputRead& x : plan.output_reads)
      if (!x.finished) read[size_t(x.output)] = true;
    for (size_t d = 0; d < plan.dense.size(); ++d) {
      dense[d] = &res.dense[d];
      if (!ro.dense_output || !read[d]) continue;
      NDArray& h = downloaded[d];
      h.dtype = res.dense[d].dtype;
      h.shape = res.dense[d].shape;
      h.data = std::vector<std::byte>(size_t(h.size()) * dtype_size(h.dtype));
      api::copy_bytes(h.data.data(), written[d].data, h.data.size(), options.stream, true);
      dense[d] = &h;
    }
    finished = run_finish(plan, inst.params, dense);
  }
  Result r;
  r.outputs = api::make_outputs(plan, std::move(res), staged.output_device, options,
                                ro.dense_output ? &written : nullptr, ro.list_output ? &written_lists : nullptr);
  if (!finished.empty()) {
    std::vector<Output> f = api::finished_outputs(plan, std::move(finished), staged.output_device, options);
    r.outputs.insert(r.outputs.begin() + std::ptrdiff_t(plan.dense.size()), std::make_move_iterator(f.begin()),
                     std::make_move_iterator(f.end()));
  }
  host_phase("run: outputs");
  if (options.synchronize && (gpu || staged.output_device.is_gpu())) api::synchronize_stream(options.stream);
  RunStats& s = r.stats;
  s = std::move(rep);  // what the engines recorded; the instance and the call add the rest
  s.m = inst.row.size();
  s.n = inst.col.size();
  s.k = inst.red.size();
  s.batch = inst.batch;
  s.batched = plan.batched;
  // What ran: the engine names its mainloop ("cpu" for the CPU engine; on the GPU a forced tile
  // or a grouped join keeps SIMT), and the math is SIMT's unless a tensor-core mainloop ran.
  // (A rewritten program's CPU stages name none.)
  s.mainloop = s.backend != "gpu" ? "cpu" : s.mainloop.empty() ? "simt" : s.mainloop;
  MathChoice math = executed_math(math_plan(plan, prep), ro.f32_math);
  // ("wgmma+tma": the wgmma mainloop fed by TMA)
  if (math.tensor_cores() && s.mainloop.rfind("wgmma", 0) != 0 && s.mainloop != "mma.sync") math.math = InnerMath::Simt;
  s.math = math.math_name();
  s.rewrites = plan.rewrites;
  s.copies = std::move(staged.copies);
  if (!gpu) {
    const std::string why = ro.backend == Backend::Cpu ? "" : no_gpu_reason();
    s.engine_reason = why.empty() ? "backend cpu asked" : why;
    if (!options.tile.empty()) s.ignored_options.push_back("tile");
    if (!options.kernel_variant.empty()) s.ignored_options.push_back("kernel_variant");
    if (options.repeats > 0) s.ignored_options.push_back("repeats");
    if (ro.f32_math != F32Math::Ieee) s.ignored_options.push_back("f32_math");
  }
  if (several && prep && s.devices.empty()) {  // (a last stage that did not run in parts)
    s.devices = {devices[0]};
    s.partition = "partition: one part (the rewritten program " + (plan.rewrites.empty() ? "" : plan.rewrites.back()) +
                  " runs whole) on GPU " + std::to_string(devices[0]) + "\n";
  }
  if (launch.kernel)
    keep_record(*impl_, std::move(signature), std::move(launch), plan, inputs, staged.output_device, r);
  host_phase("run: stats");
  s.host_phases = host_phases_take(false);
  s.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string Query::explain(const Inputs& inputs, const Options& options) const {
  const EngineChoice engine = explained_engine(engine_options(options));
  if (inputs.empty()) return engine.line + print_plan(plan_with_rewrites(impl_->source, {}));
  const bool gpu = gpu_engine(engine_options(options));
  api::StagedInputs staged = api::stage_inputs(inputs, options.stream, gpu, impl_->index_operands);
  const std::vector<std::string> copies = staged.copies;
  const bool in_place = !staged.device.empty();
  const auto prep = api::BoundCall(impl_->memo, impl_->source, staged, options).take_prepared(impl_->source);
  const Plan& plan = prep->plan;
  const Instance& inst = prep->instance;
  std::ostringstream out;
  out << engine.line;
  out << print_plan(plan);
  out << "bound: M=" << inst.row.size() << " N=" << inst.col.size() << " K=" << inst.red.size();
  if (plan.batched) out << " batch=" << inst.batch;
  out << "\n";
  for (size_t d = 0; d < plan.dense.size(); ++d)
    out << "  " << plan.dense[d].name << " shape " << shape_text(inst.dense_shapes[d]) << "\n";
  if (prep->program) {
    out << "rewrite " << (plan.rewrites.empty() ? "?" : plan.rewrites.back()) << ": " << prep->program->original_work
        << " inner steps become " << prep->program->rewritten_work << "; runs as " << prep->program->stages.size()
        << " stages:\n";
    for (const auto& st : prep->program->stages) out << "# " << st.name << "\n" << st.text;
  }
  // The roofline is the GPU's (its measured ceilings): it says nothing about a CPU run.
  if (engine.gpu) out << api::roofline(plan, inst);
  {
    // The math line names what the GPU kernel this instance gets would run: a forced tile, a
    // key-grouped join or packed 16-bit steps keep the SIMT mainloop.
    const F32Math f32 = engine_options(options).f32_math;
    MathChoice math = executed_math(math_plan(plan, prep.get()), f32);
    if (math.tensor_cores() && !prep->program && !kernel_for(inst, engine_options(options)).options.tensor_cores()) {
      math.why = std::string("could run as ") + math.math_name() +
                 " on tensor cores; this kernel variant (a forced --tile, a key-grouped join or packed 16-bit steps) "
                 "keeps SIMT";
      math.math = InnerMath::Simt;
    }
    if (engine.gpu)
      out << explain_math(math);
    else  // what runs is the CPU engine; the GPU's choice is only what it would be
      out << "math: the CPU engine's (each operation in the query's types); on a GPU it would be "
          << explain_math(math).substr(std::string("math: ").size());
  }
  out << "inputs:\n";
  for (const auto& [name, a] : inputs.arrays) {
    std::string how = "used in place";
    for (const std::string& c : copies)
      if (c.compare(0, name.size() + 2, name + ": ") == 0) how = c.substr(name.size() + 2);
    out << "  " << name << ": " << dtype_name(a.dtype) << " " << shape_text(a.shape) << " on " << device_text(a.device)
        << ", " << how << "\n";
  }
  if (in_place)
    out << "  (inputs read in device memory: no aggregate push-down, bit packing, packed 16-bit steps or key-grouped "
           "joins, which read the data on the host)\n";
  if (const std::vector<int> devices = explained_devices(options.devices); devices.size() > 1) {
    if (prep->program) {
      std::string all;
      for (int d : devices) all += (all.empty() ? "" : ",") + std::to_string(d);
      out << "partition: the rewritten program's first stages on GPU " << devices[0]
          << ", its last stage in parts on GPUs " << all << " (the run's statistics give the parts)\n";
    } else {
      out << describe_devices(choose_partition(inst, int(devices.size())), devices);
    }
  }
  const cuda::KernelSpec kernel = kernel_for(inst, engine_options(options));
  const std::string& tile = kernel.label;
  if (engine.gpu)
    out << "gpu: " << cuda::device().name << ", tile " << tile << "\n";
  else if (engine.no_gpu.empty())  // (a GPU is present, but backend cpu was asked)
    out << "gpu: " << cuda::device().name << " (not used); on it the kernel would take tile " << tile << "\n";
  else
    out << "gpu: none (" << engine.no_gpu << "); on an H100 the kernel would take tile " << tile << "\n";
  if (!prep->program) out << kernel_choice_line(kernel);
  return out.str();
}

std::vector<std::string> Query::kernel_variants(const Inputs& inputs, const Options& options) const {
  const auto prep = prepared_call(*impl_, inputs, options);
  if (prep->program) return {};
  const cuda::GpuRunOptions go = gpu_run_options(engine_options(options));
  const Instance& inst = prep->instance;
  const cuda::KernelRequest request{
      go.tile, go.masked_joins, go.f32_math, cuda::every_distinct_seen(*inst.plan, cuda::seen_boxes(inst)), {}, true};
  std::vector<std::string> out;
  for (const cuda::KernelVariant& v : cuda::kernel_variants(inst, explained_target(), request)) out.push_back(v.str());
  return out;
}

void Query::compile_ahead(const Inputs& inputs, const std::vector<Options>& runs, int threads) const {
  std::vector<KernelSource> kernels(1);  // (KernelsAhead leaves the first to its caller: none here)
  const cuda::KernelTarget target = explained_target();
  for (const Options& options : runs) {
    try {
      const auto prep = prepared_call(*impl_, inputs, options);
      for (KernelSource& k : kernel_sources(*prep, target, gpu_run_options(engine_options(options))))
        kernels.push_back(std::move(k));
    } catch (const Error&) {  // (the run reports it)
    }
  }
  if (threads < 1 || kernels.size() < 2) return;
  KernelsAhead(std::move(kernels), target.arch, threads).wait();
}

std::string Query::kernel_source(const Inputs& inputs, const Options& options) const {
  const auto prep = prepared_call(*impl_, inputs, options);
  std::string out;
  for (const KernelSource& k : kernel_sources(*prep, explained_target(), gpu_run_options(engine_options(options))))
    out += k.title + "\n" + k.source;
  return out;
}

}  // namespace gamut
