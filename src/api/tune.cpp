// `gamut tune` (gamut.h, TuneOptions): reference queries per family on generated data, each
// kernel variant timed beside the heuristics' choice, the winners stored as this GPU's tuned
// table (cuda/codegen/tuned_table.h) in the kernel cache directory.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/types.h"
#include "cuda/codegen/tuned_table.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "gamut/gamut.h"

namespace gamut {

namespace {

// One reference query: the examples' text, its inputs' element type and f32 math.
struct Reference {
  const char* family;  // TuneOptions::families
  const char* name;
  const char* text;
  const char* dtype;  // "f32", "bf16" or "i32" (-1000..1000)
  const char* f32_math;
};

constexpr const char* kProduct = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";
constexpr const char* kQ3 =
    "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } Cnt[Pzip[i], Rzip[j]] += a > thres; }";
constexpr const char* kQ5 =
    "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > thres) emit Pairs(i, j, a); }";
constexpr const char* kQ7 =
    "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } emit Top(i, j, a) top 128 by a; }";
constexpr const char* kMaxPlus = "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }";
constexpr const char* kMinPlus = "where (i, j) { d = inf; reduce (k) { d min= A[i, k] + B[k, j]; } C[i, j] = d; }";
constexpr const char* kMinPlusBatched =
    "batch (b) where (i, j) { d = inf; reduce (k) { d min= A[b, i, k] + B[b, k, j]; } C[b, i, j] = d; }";
constexpr const char* kProductBatched =
    "batch (b) where (i, j) { a = 0; reduce (k) { a += A[b, i, k] * B[b, k, j]; } C[b, i, j] = a; }";

const Reference kReferences[] = {
    {"products", "sgemm", kProduct, "f32", "ieee"},
    {"products", "sgemm-tf32", kProduct, "f32", "tf32"},
    {"products", "product-bf16", kProduct, "bf16", "ieee"},
    {"lists", "q3-bf16", kQ3, "bf16", "ieee"},
    {"lists", "q5-bf16", kQ5, "bf16", "ieee"},
    {"lists", "q7-bf16", kQ7, "bf16", "ieee"},
    {"lists", "q5-tf32", kQ5, "f32", "tf32"},
    {"lists", "q7-tf32", kQ7, "f32", "tf32"},
    {"semirings", "maxplus", kMaxPlus, "i32", "ieee"},
    {"semirings", "minplus", kMinPlus, "f32", "ieee"},
    {"batched", "minplus-batched", kMinPlusBatched, "f32", "ieee"},
    {"batched", "product-batched-bf16", kProductBatched, "bf16", "ieee"},
};

// A variant must beat the heuristics by this much to replace them (timing noise is ~1 %).
constexpr double kMinGain = 0.02;

struct Data {
  std::vector<std::vector<uint8_t>> buffers;
  Inputs inputs;
};

// Uniform [0, 1) floats (as bf16 where asked), -1000..1000 integers, index vectors of 16 groups;
// thresholds keep Q3 / Q5 as selective at every K (gamut demo's `scaled:` values).
Data make_data(const Query& q, const Reference& r, int64_t size, int64_t k, int64_t batch) {
  Data d;
  std::mt19937_64 rng(0x7u);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::uniform_int_distribution<int32_t> ints(-1000, 1000), groups(0, 15);
  const QueryInfo& info = q.info();
  d.buffers.reserve(info.input_info.size());
  for (const BindingInfo& b : info.input_info) {
    std::vector<int64_t> shape;
    if (info.batched) shape.push_back(batch);
    if (b.rank == 1) {
      shape.push_back(size);
    } else {
      const bool rows = b.name == "A" || b.name == "P";  // A[i, k], B[k, j]
      shape.push_back(rows ? size : k);
      shape.push_back(rows ? k : size);
    }
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    const std::string t = b.index ? "index" : r.dtype;
    DType dt = t == "bf16" ? DType::BF16 : t == "f32" ? DType::F32 : DType::I32;
    std::vector<uint8_t>& buf = d.buffers.emplace_back(size_t(n) * dtype_size(dt));
    for (int64_t e = 0; e < n; ++e) {
      if (t == "index")
        reinterpret_cast<int32_t*>(buf.data())[e] = groups(rng);
      else if (t == "i32")
        reinterpret_cast<int32_t*>(buf.data())[e] = ints(rng);
      else if (t == "bf16")
        reinterpret_cast<uint16_t*>(buf.data())[e] = float_to_bf16(unit(rng));
      else
        reinterpret_cast<float*>(buf.data())[e] = unit(rng);
    }
    d.inputs.array(b.name, ArrayRef::host(buf.data(), dt, shape));
  }
  for (const std::string& p : info.params)
    if (p == "thres")  // (uniform [0, 1) products: mean K / 4, deviation ~ sqrt(K) / 4)
      d.inputs.scalar(p,
                      0.25 * double(k) + (std::string(r.name).rfind("q5", 0) == 0 ? 0.55 : 0.0) * std::sqrt(double(k)));
  return d;
}

// Whether a variant's outputs agree with the heuristics' (a guard against a variant that runs
// but computes something else): integers exactly, floats within 1e-3 of the largest value
// (the sums' order may differ), list row counts within 0.1 % for float keys (pairs at a
// threshold may fall either side).
bool same_outputs(const Result& a, const Result& b, std::string* why) {
  if (a.outputs.size() != b.outputs.size()) return *why = "another number of outputs", false;
  for (size_t o = 0; o < a.outputs.size(); ++o) {
    const Output &x = a.outputs[o], &y = b.outputs[o];
    if (x.is_list) {
      const bool exact = std::all_of(x.columns.begin(), x.columns.end(), [](const auto& c) {
        return c.second.dtype != DType::F32 && c.second.dtype != DType::F64;
      });
      const int64_t slack = exact ? 0 : std::max<int64_t>(1, x.rows / 1000);
      if (std::abs(x.rows - y.rows) > slack)
        return *why = x.name + ": " + std::to_string(y.rows) + " rows, not " + std::to_string(x.rows), false;
      continue;
    }
    const Array &p = x.array, &q = y.array;
    if (p.nbytes() != q.nbytes() || p.dtype != q.dtype) return *why = x.name + ": another shape", false;
    if (p.dtype == DType::F32) {
      const float *u = p.as<float>(), *v = q.as<float>();
      float scale = 0, worst = 0;
      for (int64_t e = 0; e < p.size(); ++e) scale = std::max(scale, std::abs(u[e]));
      for (int64_t e = 0; e < p.size(); ++e)
        if (!(u[e] == v[e])) worst = std::max(worst, std::isnan(u[e] - v[e]) ? INFINITY : std::abs(u[e] - v[e]));
      if (worst > 1e-3f * std::max(scale, 1e-30f)) return *why = x.name + ": values differ", false;
    } else if (std::memcmp(p.data, q.data, p.nbytes()) != 0) {
      return *why = x.name + ": values differ", false;
    }
  }
  return true;
}

struct Clock {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
};

}  // namespace

std::vector<std::string> tune_families() { return {"products", "lists", "semirings", "batched"}; }

std::vector<std::pair<int64_t, int64_t>> tune_default_sizes() { return {{16384, 256}, {16384, 1024}}; }

TuneReport tune(const TuneOptions& opt) {
  Clock clock;
  std::string why;
  if (!gpu_available(&why)) throw Error(ExitCode::Device, "device error: gamut tune needs a GPU: " + why);
  for (const std::string& f : opt.families) {
    const std::vector<std::string> known = tune_families();
    if (std::find(known.begin(), known.end(), f) == known.end())
      throw_usage_error("--family " + f + ": use products, lists, semirings or batched");
  }
  if (!(opt.seconds > 0)) throw_usage_error("--seconds must be positive");
  if (opt.repeats < 1) throw_usage_error("repeats must be 1 or more");
  const auto sizes = opt.sizes.empty() ? tune_default_sizes() : opt.sizes;
  for (const auto& [s, k] : sizes)
    if (s < 2 || k < 1 || s > (int64_t(1) << 17) || k > (int64_t(1) << 16))
      throw_usage_error("--sizes " + std::to_string(s) + "x" + std::to_string(k) +
                        ": M = N from 2 to 131072, K from 1 to 65536");

  struct Task {
    const Reference* ref;
    int64_t size, k;
  };
  std::vector<Task> tasks;
  for (const Reference& r : kReferences)
    if (opt.families.empty() || std::count(opt.families.begin(), opt.families.end(), r.family))
      for (const auto& [s, k] : sizes) tasks.push_back({&r, s, k});

  TuneReport rep;
  cuda::TunedTable table;
  table.device = cuda::current_tuned_device();
  const std::string path = cuda::tuned_table_path(cuda::cache_dir(), table.device);
  if (std::ifstream in{path}) {  // the families not searched now keep their entries
    std::ostringstream text;
    text << in.rdbuf();
    if (std::optional<cuda::TunedTable> old = cuda::parse_tuned_table(text.str()); old && old->device == table.device)
      table = *old;
  }
  nlohmann::json searched = nlohmann::json::array();
  auto report = [&](double fraction, const std::string& what) {
    if (opt.progress) opt.progress(std::min(1.0, std::max(fraction, clock.seconds() / opt.seconds)), what);
  };
  double last_task = 0;  // seconds the last query took to set up and run once
  for (size_t t = 0; t < tasks.size() && !rep.stopped; ++t) {
    if (clock.seconds() + last_task > opt.seconds) {
      rep.stopped = true;
      break;
    }
    const Task& task = tasks[t];
    const Reference& r = *task.ref;
    const bool batched = std::string(r.text).rfind("batch", 0) == 0;
    const int64_t batch = batched ? 4 : 1, size = batched ? std::max<int64_t>(2, task.size / 2) : task.size;
    const std::string what =
        std::string(r.family) + ": " + r.name + " " + std::to_string(size) + "x" + std::to_string(task.k);
    const Query q = Query::compile(r.text, r.name);
    const Data data = make_data(q, r, size, task.k, batch);
    Options base;
    base.backend = "gpu";
    base.f32_math = r.f32_math;
    base.repeats = opt.repeats;
    base.tuned = false;
    base.cancel = opt.cancel;
    const std::vector<std::string> variants = q.kernel_variants(data.inputs, base);
    if (variants.size() < 2) {
      rep.lines.push_back(what + ": nothing to search (" + (variants.empty() ? "no variants" : "one variant") + ")");
      continue;
    }
    nlohmann::json record = {{"family", r.family},
                             {"query", r.name},
                             {"m", size},
                             {"n", size},
                             {"k", task.k},
                             {"batch", batch},
                             {"results", nlohmann::json::array()}};
    report(double(t) / double(tasks.size()), what);
    const double task_start = clock.seconds();
    {
      // Every variant's kernels compiled at once on the other cores first (NVRTC, ~0.3-1.5 s each,
      // is most of a variant's cost), none while a variant is timed.
      std::vector<Options> runs(variants.size(), base);
      for (size_t v = 1; v < variants.size(); ++v) runs[v].kernel_variant = variants[v];
      q.compile_ahead(data.inputs, runs, std::max(1, int(std::thread::hardware_concurrency()) - 1));
    }
    const double run_start = clock.seconds();
    Result heuristic = q.run(data.inputs, base);
    last_task = clock.seconds() - task_start;
    const std::string family = heuristic.stats.kernel_family;
    double heuristic_ms = heuristic.stats.seconds * 1e3, best_ms = heuristic_ms;
    std::string best = variants[0];
    double slowest = clock.seconds() - run_start;  // a variant's run, its kernels compiled
    record["heuristic"] = variants[0];
    record["kernel_family"] = family;
    record["results"].push_back({{"variant", variants[0]}, {"ms", heuristic_ms}, {"status", "heuristic"}});
    size_t v = 1;
    for (; v < variants.size(); ++v) {
      if (clock.seconds() + 2 * slowest > opt.seconds) {
        rep.stopped = true;
        break;
      }
      report((double(t) + double(v) / double(variants.size())) / double(tasks.size()),
             what + " (" + std::to_string(v + 1) + "/" + std::to_string(variants.size()) + ")");
      const double start = clock.seconds();
      Options o = base;
      o.kernel_variant = variants[v];
      nlohmann::json res = {{"variant", variants[v]}};
      try {
        const Result got = q.run(data.inputs, o);
        std::string diff;
        res["ms"] = got.stats.seconds * 1e3;
        if (!same_outputs(heuristic, got, &diff)) {
          res["status"] = "wrong: " + diff;
        } else {
          res["status"] = "ok";
          if (got.stats.seconds * 1e3 < best_ms) best_ms = got.stats.seconds * 1e3, best = variants[v];
        }
      } catch (const Cancelled&) {
        throw;
      } catch (const Error& e) {
        const std::string m = e.what();
        res["status"] = "failed: " + m.substr(0, m.find('\n'));
      }
      record["results"].push_back(res);
      slowest = std::max(slowest, clock.seconds() - start);
    }
    if (v == 1) {
      rep.lines.push_back(what + ": the budget ran out before its variants");
      break;
    }
    // The heuristics again, last: the table compares with the faster of their two times.
    heuristic_ms = std::min(heuristic_ms, q.run(data.inputs, base).stats.seconds * 1e3);
    record["heuristic_ms"] = heuristic_ms;
    if (best != variants[0] && best_ms > heuristic_ms * (1 - kMinGain)) best = variants[0], best_ms = heuristic_ms;
    if (best == variants[0]) best_ms = heuristic_ms;
    record["winner"] = best;
    searched.push_back(record);
    cuda::TunedEntry e{family, r.name, size, size, task.k, batch, best, best_ms, variants[0], heuristic_ms};
    table.put(e);
    std::ostringstream line;
    line.precision(3);
    line << std::fixed << what << " [" << family
         << "]: " << (best == variants[0] ? "heuristic kept (" + variants[0] + ")" : best + " over " + variants[0])
         << ", " << best_ms << " ms vs " << heuristic_ms << " ms, " << v << " of " << variants.size()
         << " variants timed";
    rep.lines.push_back(line.str());
  }
  rep.json = cuda::tuned_table_text(table, searched.dump());
  namespace fs = std::filesystem;
  auto write = [](const std::string& p, const std::string& text) {
    std::error_code ec;
    fs::create_directories(fs::path(p).parent_path(), ec);
    const std::string tmp = p + ".tmp";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << text;
      if (!out) throw_device_error("cannot write the tuned table " + p);
    }
    fs::rename(tmp, p, ec);
    if (ec) throw_device_error("cannot write the tuned table " + p + ": " + ec.message());
  };
  write(path, rep.json);
  rep.table_path = path;
  if (!opt.out_dir.empty()) {
    rep.out_path = (fs::path(opt.out_dir) / fs::path(path).filename()).string();
    write(rep.out_path, rep.json);
  }
  cuda::forget_tuned_tables();  // the next kernel choice reads the new table
  if (opt.progress) opt.progress(1.0, "done");
  rep.seconds = clock.seconds();
  return rep;
}

}  // namespace gamut
