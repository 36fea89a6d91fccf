#include "driver/pipeline.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "bind/footprint.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "core/sizes.h"
#include "cpu/engine.h"
#include "cuda/codegen/kernel_variants.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/kernels_ahead.h"
#include "partition/multi_device.h"
#include "semantics/bit_pack.h"
#if GAMUT_HAVE_CUDA
#include "cuda/stages/bit_pack.h"
#include "cuda/stages/segment_sum.h"
#endif
#include <algorithm>

#include "data/npy.h"
#include "rewrite/bitpack_orand.h"
#include "rewrite/list_provenance.h"
#include "rewrite/one_sided_sums.h"
#include "rewrite/passes.h"

namespace gamut {

Source read_query_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw_usage_error("query file '" + path + "' is a directory");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw_usage_error("cannot read query file '" + path + "': " + std::strerror(errno));
  // Read in pieces up to a bound: a pipe or device (/dev/zero) would otherwise fill memory.
  std::string text;
  char piece[65536];
  while (f.read(piece, sizeof piece) || f.gcount() > 0) {
    text.append(piece, size_t(f.gcount()));
    if (text.size() > kMaxQueryBytes)
      throw_usage_error("query file '" + path + "' is longer than " + std::to_string(kMaxQueryBytes) +
                        " bytes: is it a query?");
  }
  if (f.bad()) throw_usage_error("cannot read query file '" + path + "': " + std::strerror(errno));
  return Source{path, std::move(text)};
}

bool looks_numeric(const std::string& v) {
  if (v == "inf" || v == "-inf") return true;
  char* end = nullptr;
  std::strtod(v.c_str(), &end);
  return !v.empty() && end && *end == '\0';
}

std::vector<int64_t> parse_dim_extents(const std::string& name, const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || v < 0)
      throw_usage_error("--dim " + name + "=" + text + ": extents are non-negative integers");
    if (errno == ERANGE)
      throw_usage_error("--dim " + name + "=" + text + ": extent " + part + " does not fit in 64 bits");
    out.push_back(v);
  }
  if (out.empty()) throw_usage_error("--dim " + name + ": give at least one extent");
  return out;
}

Bindings parse_bindings(const std::vector<std::string>& args, const std::vector<std::string>& dims) {
  Bindings b;
  for (const std::string& a : args) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage_error("binding '" + a + "' is not NAME=VALUE");
    std::string name = a.substr(0, eq), value = a.substr(eq + 1);
    if (b.arrays.count(name) || b.scalars.count(name)) throw_usage_error("'" + name + "' is bound twice");
    if (looks_numeric(value))
      b.scalars[name] = value;
    else
      b.arrays[name] = read_npy(value, name);
  }
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage_error("--dim '" + d + "' is not NAME=D1[,D2]");
    std::string name = d.substr(0, eq);
    if (b.dims.count(name)) throw_usage_error("--dim " + name + " is given twice");
    b.dims[name] = parse_dim_extents(name, d.substr(eq + 1));
  }
  return b;
}

// Bound rewrites: push-down depends on the group counts, bit packing on the data's values,
// known only now; one-sided sums on the input types and the math.
std::optional<BoundRewrite> bound_rewrite(const Plan& plan, const Instance& inst, const Source& source,
                                          const Bindings& b, const RewriteChoice& rewrites) {
  if (rewrites.data) {
    if (auto prog = aggregate_pushdown(plan, inst)) return BoundRewrite{std::move(*prog), "aggregate-pushdown"};
    // Boolean products: exact only on 0/1 data, which is known only now.
    if (auto bits = bitpack_orand(plan, inst, source, b)) return BoundRewrite{std::move(*bits), "bitpack-orand"};
  }
  if (rewrites.one_sided)
    if (auto os = one_sided_sums(plan, inst, source, b, rewrites.f32_math))
      return BoundRewrite{std::move(os->program), os->name};
  return std::nullopt;
}

static RewriteChoice all_or_none(bool bound_rewrites) { return RewriteChoice{bound_rewrites, bound_rewrites}; }

static void apply(Prepared* p, BoundRewrite rw) {
  p->program = std::move(rw.program);
  p->plan.rewrites.push_back(std::move(rw.name));
}

static void apply_bound_rewrites(Prepared* p, const RewriteChoice& rewrites) {
  if (auto rw = bound_rewrite(p->plan, p->instance, p->source, p->bindings, rewrites)) apply(p, std::move(*rw));
}

// A typed plan bound to the bindings, before any bound rewrite.
static std::unique_ptr<Prepared> bound_typed(Source source, Bindings bindings, const Plan& typed) {
  auto p = std::make_unique<Prepared>();
  p->source = std::move(source);
  p->bindings = std::move(bindings);
  p->plan = typed;
  p->instance = bind(p->plan, p->bindings);
  return p;
}

Plan plan_with_rewrites(const Source& source, const TypeEnv& env) {
  Plan plan = build_plan(source, env);
  apply_rewrites(plan);
  return plan;
}

std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, bool bound_rewrites) {
  return prepare(std::move(source), std::move(bindings), all_or_none(bound_rewrites));
}

std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const RewriteChoice& rewrites) {
  auto p = std::make_unique<Prepared>();
  p->source = std::move(source);
  p->bindings = std::move(bindings);
  p->plan = build_plan(p->source, type_env(p->bindings));
  p->instance = bind(p->plan, p->bindings);
  if (apply_rewrites(p->plan)) p->instance = bind(p->plan, p->bindings);
  apply_bound_rewrites(p.get(), rewrites);
  return p;
}

std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, bool bound_rewrites) {
  return prepare(std::move(source), std::move(bindings), typed, all_or_none(bound_rewrites));
}

std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, const RewriteChoice& rewrites) {
  auto p = bound_typed(std::move(source), std::move(bindings), typed);
  apply_bound_rewrites(p.get(), rewrites);
  return p;
}

std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, BoundRewrite rewrite) {
  auto p = bound_typed(std::move(source), std::move(bindings), typed);
  apply(p.get(), std::move(rewrite));
  return p;
}

bool carry_list_provenance(BoundRewrite& rewrite, const Plan& plan) {
  PushdownProgram& prog = rewrite.program;
  if (prog.stages.empty() || !prog.main_plan || plan.batched) return false;
  StageQuery& last = prog.stages.back();
  const Plan& main = *prog.main_plan;
  if (last.bitpack || last.segment || main.batched || main.lists.size() != plan.lists.size()) return false;
  // The stage's axes are the query's (their names and values: it runs the instance's ranges), so
  // its i and j are the query's; its lists are the query's, ranked by keys of the same types.
  for (AxisRole r : {AxisRole::Row, AxisRole::Col})
    if (main.axis(r).name != plan.axis(r).name) return false;
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    const ListOutput &x = plan.lists[l], &y = main.lists[l];
    if (x.name != y.name || x.mode != y.mode || x.per != y.per) return false;
    if (x.ranked() && (x.key == kNoExpr || y.key == kNoExpr || plan.expr(x.key).type != main.expr(y.key).type))
      return false;
  }
  last.list_provenance = true;
  return true;
}

Plan stage_plan(const StageQuery& stage, const Source& source, const TypeEnv& env) {
  Plan p = plan_with_rewrites(source, env);
  return stage.list_provenance ? with_list_provenance(p) : p;
}

std::string one_sided_key(const Instance& inst, F32Math f32_math) {
  std::string k = std::to_string(int(f32_math)) + "|" + std::to_string(inst.batch);
  for (const AxisRange& r : {inst.row, inst.col, inst.red})
    k += "|" + std::to_string(r.begin) + "," + std::to_string(r.end);
  for (const std::vector<int64_t>& shape : inst.dense_shapes) {
    k += "|";
    for (int64_t e : shape) k += std::to_string(e) + ",";
  }
  return k;
}

// Stages that are not queries allocate their output directly: check it first.
static void require_host_bytes(const std::string& what, int64_t bytes) {
  const HostMemory host = host_memory_recent();
  MemoryEstimate need;
  need.add(what, bytes);
  require_fits(need, host.available, "host memory", host.limited_by);
}

// Run the stage queries of a push-down program; each stage's outputs feed the later ones.
static Results execute_program(const Prepared& p, const RunOptions& options, RunReport& r) {
  std::map<std::string, NDArray> produced;
  Results last;
  double seconds = 0, compile_ms = 0;
  // On the GPU the segment-sum stages run a dedicated kernel: the masked-product form of the
  // stage query has too few blocks there; so do the bit-pack stages, which have no query form.
  // (Without a device, execute() below reports it.)
  Backend be = options.backend;
  if (be == Backend::Auto) be = cuda::gpu_available() ? Backend::Gpu : Backend::Cpu;
  [[maybe_unused]] const bool gpu_segments = be == Backend::Gpu && cuda::gpu_available();
  const size_t stages = p.program->stages.size();
  // A program on the caller's device inputs (the library's): its stage queries read those in
  // place and keep their outputs in device memory (`kept`, freed in stream order after the last
  // stage is enqueued). Bit-pack and segment-sum stages read the data on the host: the library
  // does not apply those rewrites to device inputs.
  const bool on_device = !p.instance.device_inputs.empty();
  std::map<std::string, Instance::DeviceInput> device;
  for (size_t o = 0; o < p.plan.operands.size(); ++o)
    if (p.instance.on_device(o)) device[p.plan.operands[o].name] = p.instance.device_inputs[o];
  std::vector<std::shared_ptr<cuda::DeviceBuffer>> kept;
  for (size_t s = 0; s < stages; ++s) {
    throw_if_cancelled(options.cancel);
    if (options.progress && s > 0) options.progress(double(s) / double(stages));
    const StageQuery& st = p.program->stages[s];
    if (st.bitpack) {  // no query: the CPU loop, or its GPU kernel
      const BitPack& bp = *st.bitpack;
      const NDArray& src = p.bindings.arrays.at(bp.source);
      require_host_bytes("output " + bp.output,
                         shape_bytes({bp.rows.end, bp.words()}, sizeof(int32_t)).value_or(INT64_MAX));
#if GAMUT_HAVE_CUDA
      if (gpu_segments) {
        cuda::BitPackStats bs;
        cuda::reset_device_bytes_peak();
        produced[bp.output] = cuda::bit_pack(src, bp, options.repeats, &bs);
        r.device_peak_bytes = std::max(r.device_peak_bytes, cuda::device_bytes_peak());
        std::vector<double> v = bs.runs_ms;
        std::sort(v.begin(), v.end());
        seconds += (v.empty() ? bs.kernel_ms : v[v.size() / 2]) / 1e3;
        compile_ms += bs.compile_ms;
        r.backend = "gpu";
        r.cache = bs.cache_hit;
        continue;
      }
#endif
      auto t0 = std::chrono::steady_clock::now();
      produced[bp.output] = bit_pack_cpu(src, bp);
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      r.backend = "cpu";
      continue;
    }
#if GAMUT_HAVE_CUDA
    if (gpu_segments && st.segment) {
      const SegmentSum& sg = *st.segment;
      cuda::SegmentSumShape shape{sg.src_k_minor, sg.group_rows, sg.groups, sg.group_range, sg.k_range};
      require_host_bytes(
          "output " + sg.output,
          shape_bytes({sg.groups, sg.k_range.end}, dtype_size(storage_type_of(sg.type))).value_or(INT64_MAX));
      cuda::SegmentSumStats ss;
      cuda::reset_device_bytes_peak();
      produced[sg.output] = cuda::segment_sum(p.bindings.arrays.at(sg.source), p.bindings.arrays.at(sg.index), shape,
                                              sg.type, options.repeats, &ss);
      r.device_peak_bytes = std::max(r.device_peak_bytes, cuda::device_bytes_peak());
      double ms = ss.kernel_ms;
      if (!ss.runs_ms.empty()) {
        std::vector<double> v = ss.runs_ms;
        std::sort(v.begin(), v.end());
        ms = v[v.size() / 2];
      }
      seconds += ms / 1e3;
      compile_ms += ss.compile_ms;
      r.backend = "gpu";
      r.cache = ss.cache_hit;
      continue;
    }
#endif
    // Intermediate results stay gamut's: on the host, or for a program on device inputs in
    // device memory that the next stages read in place; the last stage writes the caller's outputs.
    const bool last_stage = s + 1 == stages;
    RunOptions stage_options = options;
    if (!(on_device && last_stage)) {
      stage_options.dense_output = nullptr;
      stage_options.list_output = nullptr;
      stage_options.asynchronous = false;
    }
    stage_options.kernel_memo = nullptr;
    stage_options.compile_ahead = false;  // (the program's kernels are compiled ahead as a whole)
    // Several GPUs: the last stage (the M x N work) in parts; the others ((M + N) K or less)
    // on the current device, their outputs on the host for the parts to upload.
    if (!last_stage) stage_options.devices.clear();
    std::vector<std::shared_ptr<cuda::DeviceBuffer>> outs;
    if (on_device && !last_stage) {
      stage_options.asynchronous = true;
      stage_options.dense_output = [&outs](size_t d, size_t bytes) -> void* {
        if (outs.size() <= d) outs.resize(d + 1);
        outs[d] = std::make_shared<cuda::DeviceBuffer>(bytes);
        return outs[d]->get();
      };
    }
    Bindings b;
    for (const std::string& n : st.inputs) {
      if (auto it = p.bindings.arrays.find(n); it != p.bindings.arrays.end())
        b.arrays[n] = it->second;
      else
        b.scalars[n] = p.bindings.scalars.at(n);
    }
    for (const std::string& n : st.from_stages) b.arrays[n] = produced.at(n);
    for (const auto& [n, d] : st.dims) b.dims[n] = d;
    std::shared_ptr<StageMemo> memo;
    std::shared_ptr<const Plan> typed;
    Source stage_source{p.source.name + " [" + st.name + "]", st.text};
    if (options.stage_memo) {
      std::string key = st.text + (st.list_provenance ? "|list-provenance" : "");
      for (const auto& [n, a] : b.arrays) key += "|" + n + ":" + std::to_string(int(a.dtype));
      memo = options.stage_memo(key);
      stage_options.kernel_memo = &memo->kernel_memo;
      // Parsing and planning a stage cost more than its kernel (tenths of a millisecond on the
      // host against microseconds): once per stage and signature of input types.
      std::lock_guard<std::mutex> lock(memo->mu);
      if (!memo->plan) memo->plan = std::make_shared<const Plan>(stage_plan(st, stage_source, type_env(b)));
      typed = memo->plan;
    }
    if (!typed && st.list_provenance) typed = std::make_shared<const Plan>(stage_plan(st, stage_source, type_env(b)));
    // No bound rewrite of a stage reads device memory: on device inputs they stay off. Nor does
    // one rewrite a stage with list provenance, whose lists keep their hidden columns.
    const bool stage_rewrites = !on_device && !st.list_provenance;
    auto stage = typed ? prepare(std::move(stage_source), std::move(b), *typed, stage_rewrites)
                       : prepare(std::move(stage_source), std::move(b), stage_rewrites);
    if (on_device) {
      Instance& si = stage->instance;
      si.device_inputs.resize(stage->plan.operands.size());
      for (size_t o = 0; o < stage->plan.operands.size(); ++o)
        if (auto it = device.find(stage->plan.operands[o].name); it != device.end()) si.device_inputs[o] = it->second;
    }
    RunReport sr;
    if (options.progress)  // the stage's own progress is its share of the whole
      stage_options.progress = [&options, s, stages](double f) { options.progress((double(s) + f) / double(stages)); };
    last = execute(*stage, stage_options, &sr);
    seconds += sr.seconds;
    compile_ms += sr.compile_ms;
    r.backend = sr.backend;
    r.threads = sr.threads;
    r.tile = sr.tile;
    r.mainloop = sr.mainloop;
    r.kernel_choice = sr.kernel_choice;
    r.kernel_family = sr.kernel_family;
    r.cache = sr.cache;
    r.device_peak_bytes = std::max(r.device_peak_bytes, sr.device_peak_bytes);
    if (last_stage && !sr.devices.empty()) {
      r.devices = sr.devices;
      r.partition = sr.partition;
      r.merge = sr.merge;
      r.merge_seconds = sr.merge_seconds;
    }
    for (size_t d = 0; d < stage->plan.dense.size(); ++d) {
      const std::string& name = stage->plan.dense[d].name;
      if (on_device && !last_stage && d < outs.size() && outs[d]) {
        NDArray x;
        x.dtype = storage_type_of(stage->plan.dense[d].type);
        x.shape = stage->instance.dense_shapes[d];
        x.data = Bytes::view(outs[d]->get(), outs[d]->size());
        std::vector<int64_t> strides(x.shape.size(), 1);
        for (size_t k = x.shape.size(); k-- > 1;) strides[k - 1] = strides[k] * x.shape[k];
        device[name] = Instance::DeviceInput{outs[d]->get(), strides};
        kept.push_back(outs[d]);
        produced[name] = std::move(x);
      } else {
        produced[name] = last.dense[d];
      }
    }
  }
  if (options.progress) options.progress(1.0);
  r.seconds = seconds;
  r.compile_ms = compile_ms;
  return last;
}

std::string no_device_reason() {
  std::string why;
  if (cuda::gpu_available(&why)) return "";
  // The CUDA build's reason already starts with this; the build without CUDA's does not.
  const std::string lead = "no usable CUDA device";
  return why.rfind(lead, 0) == 0 ? why : lead + ": " + why;
}

Results execute(const Prepared& p, const RunOptions& options, RunReport* report) {
  if (!p.program) return execute(p.instance, options, report);
  const auto ahead = compile_kernels_ahead(&p, p.instance, options);
  cuda::StreamScope stream(options.stream);
  RunReport local;
  RunReport& r = report ? *report : local;
  auto t0 = std::chrono::steady_clock::now();
  Results res = execute_program(p, options, r);
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

cuda::GpuRunOptions gpu_run_options(const RunOptions& options) {
  cuda::GpuRunOptions go;
  if (!options.tile.empty()) go.tile = cuda::parse_tile(options.tile);
  if (!options.kernel_variant.empty()) {
    std::string why;
    go.variant = cuda::parse_kernel_variant(options.kernel_variant, &why);
    if (!go.variant) throw_usage_error(why);
  }
  go.use_tuned = options.use_tuned;
  go.kernel_memo = options.kernel_memo;
  go.f32_math = options.f32_math;
  go.cancel = options.cancel;
  go.record = options.launch_record;
  if (options.repeats > 0) {
    go.warmup = 1;
    go.repeats = options.repeats;
  }
  if (options.progress)
    go.progress = [&options](int64_t done, int64_t total) { options.progress(double(done) / double(total)); };
  return go;
}

// Several GPUs: the parts' engine time is the slowest part's (each part's median with
// repeats), the merge's wall time added.
static Results run_on_devices(const Instance& inst, const RunOptions& options, RunReport& r) {
  cuda::GpuRunOptions go = gpu_run_options(options);
  go.record = nullptr;  // (the parts' launches are not one launch)
  MultiRunReport m;
  cuda::reset_device_bytes_peak();
  Results res = run_on_gpus(inst, options.devices, go, MergePath::Auto, &m);
  // The first part's record (compilation, cache, tile, mainloop, seen tables: every part reads
  // the same vectors' values), with the slowest part's engine time and the rows of all parts.
  const size_t peak = std::max(r.device_peak_bytes, cuda::device_bytes_peak());
  const cuda::GpuRunStats& first = m.part_stats.front();
  r = first;
  r.device_peak_bytes = peak;
  double slowest = 0, slowest_kernel = 0;
  for (const cuda::GpuRunStats& st : m.part_stats) {
    slowest = std::max(slowest, st.seconds);
    slowest_kernel = std::max(slowest_kernel, st.kernel_seconds);
  }
  r.seconds = slowest + m.merge_seconds;
  r.kernel_seconds = slowest_kernel;
  r.list_rows_appended.assign(first.list_rows_appended.size(), 0);
  for (const cuda::GpuRunStats& st : m.part_stats)
    for (size_t l = 0; l < st.list_rows_appended.size() && l < r.list_rows_appended.size(); ++l)
      r.list_rows_appended[l] += st.list_rows_appended[l];
  r.devices = m.devices;
  r.partition = describe_devices(m.partition, m.devices);
  r.merge = m.merge + (m.merge_note.empty() ? "" : " (" + m.merge_note + ")");
  r.merge_seconds = m.merge_seconds;
  return res;
}

Results execute(const Instance& inst, const RunOptions& options, RunReport* report) {
  const auto ahead = compile_kernels_ahead(nullptr, inst, options);
  cuda::StreamScope stream(options.stream);
  RunReport local;
  RunReport& r = report ? *report : local;
  Backend be = options.backend;
  if (be == Backend::Auto) be = cuda::gpu_available() ? Backend::Gpu : Backend::Cpu;
  if (!options.devices.empty() && be != Backend::Gpu) throw_device_error("several devices: " + no_device_reason());
  auto t0 = std::chrono::steady_clock::now();
  Results res;
  // What the run will hold is checked before anything is allocated (bind/footprint.h). (A
  // library call on device arrays, asynchronous, holds no host copies of them: it skips the
  // /proc reads of host_memory().)
  if (be == Backend::Gpu) {
    if (!cuda::gpu_available()) throw_device_error("--backend gpu: " + no_device_reason());
    if (!options.asynchronous) {
      const HostMemory host = host_memory_recent();
      require_fits(gpu_host_memory(inst), host.available, "host memory", host.limited_by);
    }
    if (!options.devices.empty()) {
      res = run_on_devices(inst, options, r);
      r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      return res;
    }
    cuda::GpuRunOptions go = gpu_run_options(options);
    go.dense_output = options.dense_output;
    go.list_output = options.list_output;
    go.asynchronous = options.asynchronous && options.repeats == 0;
    cuda::GpuRunStats st;
    cuda::reset_device_bytes_peak();
    res = cuda::run_gpu(inst, go, &st);
    const size_t peak = std::max(r.device_peak_bytes, cuda::device_bytes_peak());
    r = std::move(static_cast<RunStats&>(st));  // the engine's record, handed on (its own details stay)
    r.device_peak_bytes = peak;
  } else {
    const HostMemory host = host_memory_recent();
    const int threads = cpu_thread_count(inst, options.threads, host.available);
    const MemoryEstimate need = cpu_host_memory(inst, threads);
    require_fits(need, host.available, "host memory", host.limited_by);
    // The lists, top/bottom ones too, are counted as they grow, in what the rest leaves.
    ListMemoryGuard lists_guard(host.available - need.total_fixed(), host.limited_by);
    std::function<void(int64_t, int64_t)> on_tile;
    if (options.progress)
      on_tile = [&options](int64_t done, int64_t total) { options.progress(double(done) / double(total)); };
    res = run_cpu(inst, threads, &lists_guard, on_tile, options.cancel);
    r.backend = "cpu";
    r.mainloop = "cpu";
    r.threads = threads;
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (r.backend == "cpu") r.seconds = r.wall_seconds;
  return res;
}

}  // namespace gamut
