#include "cli/commands.h"

#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/progress.h"
#include "cli/show.h"
#include "core/error.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "data/npy.h"
#include "data/output_files.h"
#include "driver/kernel_sources.h"
#include "peak/peak.h"

namespace gamut::cli {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
  return t + (s.size() == 1 ? ",)" : ")");
}

Source load_query(const QueryArgs& q) {
  if (q.text) return Source{"<expr>", *q.text};
  if (q.file.empty()) throw_usage_error("give a QUERY file or -e 'TEXT'");
  return read_query_file(q.file);
}

// The bindings, read as the query says (a parameter takes a number, an array a file);
// query errors come first. `inputs` receives the files read.
static Bindings read_bindings(const QueryArgs& q, const Source& src, std::vector<std::string>* inputs = nullptr) {
  const Plan untyped = build_plan(src, {});
  if (inputs && !q.file.empty()) inputs->push_back(q.file);
  return parse_bindings(q.bindings, q.dims, &untyped, inputs);
}

static double spr(const Instance& inst, double seconds) {
  double work = double(inst.batch) * double(inst.row.size()) * double(inst.col.size()) * double(inst.red.size());
  return seconds > 0 ? work / (1e9 * seconds) : 0;
}

namespace {

// Output names in result order: dense outputs, then lists.
std::vector<std::string> output_names(const Plan& plan) {
  std::vector<std::string> names;
  for (const DenseOutput& d : plan.dense) names.push_back(d.name);
  for (const ListOutput& l : plan.lists) names.push_back(l.name);
  return names;
}

// Writes every output or none; returns their paths in output_names() order.
std::vector<std::string> write_outputs(OutputCommit& commit, const Plan& plan, const Results& res) {
  std::vector<std::string> paths;
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    commit.stage(plan.dense[d].name, res.dense[d]);
    paths.push_back(commit.final_path(plan.dense[d].name));
  }
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    commit.stage(plan.lists[l].name, res.lists[l]);
    paths.push_back(commit.final_path(plan.lists[l].name));
  }
  commit.commit();
  return paths;
}

nlohmann::json run_json(const Prepared& prep, const RunReport& rep, const Results& res,
                        const std::vector<std::string>& paths, const ShowLimits& limits, F32Math f32_math) {
  const Plan& plan = prep.plan;
  const Instance& inst = prep.instance;
  nlohmann::json j;
  j["query"] = prep.source.name;
  j["backend"] = rep.backend;
  j["M"] = inst.row.size();
  j["N"] = inst.col.size();
  j["K"] = inst.red.size();
  j["batch"] = inst.batch;
  j["time_ms"] = rep.seconds * 1e3;
  j["wall_ms"] = rep.wall_seconds * 1e3;
  j["spr"] = spr(inst, rep.seconds);
  j["rewrites"] = plan.rewrites;
  const MathChoice math = executed_math(plan, f32_math);
  j["math"] = math.math_name();
  j["mainloop"] = math.mainloop_name();
  if (rep.backend == "gpu") {
    j["compile_ms"] = rep.compile_ms;
    if (rep.kernel_seconds > 0) j["kernel_ms"] = rep.kernel_seconds * 1e3;
    j["cache"] = rep.cache_hit;
    j["tile"] = rep.tile;
    j["device_peak_bytes"] = rep.device_peak_bytes;
  } else {
    j["threads"] = rep.threads;
  }
  j["outputs"] = nlohmann::json::array();
  const bool written = !paths.empty();
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    nlohmann::json o = {{"name", plan.dense[d].name}, {"kind", "dense"},
                        {"dtype", std::string(dtype_name(res.dense[d].dtype))},
                        {"shape", res.dense[d].shape}, {"path", written ? paths[d] : ""}};
    if (!written && res.dense[d].size() <= limits.max_elements) o["values"] = dense_json(res.dense[d]);
    j["outputs"].push_back(o);
  }
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    nlohmann::json o = {{"name", plan.lists[l].name}, {"kind", "list"}, {"rows", res.lists[l].rows},
                        {"path", written ? paths[plan.dense.size() + l] : ""}};
    if (l < rep.list_rows_appended.size()) o["rows_appended"] = rep.list_rows_appended[l];
    if (!written) list_head_json(res.lists[l], limits, o);
    j["outputs"].push_back(o);
  }
  return j;
}

std::string run_summary(const Prepared& prep, const RunReport& rep) {
  const Instance& inst = prep.instance;
  std::ostringstream line;
  line << std::fixed << std::setprecision(3);
  line << prep.source.name << ": backend " << rep.backend;
  if (rep.backend == "cpu") line << " (" << rep.threads << " threads)";
  else line << " (tile " << rep.tile << ", kernel " << rep.cache_hit << ")";
  line << ", M=" << inst.row.size() << " N=" << inst.col.size() << " K=" << inst.red.size();
  if (prep.plan.batched) line << " batch=" << inst.batch;
  line << ", " << rep.seconds * 1e3 << " ms, SPR " << std::setprecision(2) << spr(inst, rep.seconds) << "\n";
  return line.str();
}

}  // namespace

int cmd_run(QueryArgs q, RunOptions opt, const RunOutput& out) {
  Source src = load_query(q);
  std::vector<std::string> inputs;
  Bindings b = read_bindings(q, src, &inputs);
  auto prep = prepare(std::move(src), std::move(b), q.rewrites);
  const Plan& plan = prep->plan;

  // Refused before the run: an output that would replace one of the run's own input files.
  std::optional<OutputCommit> commit;
  if (out.dir) {
    commit.emplace(*out.dir);
    commit->protect(inputs);
    for (const std::string& name : output_names(plan)) commit->check_protected(name);
  }

  std::unique_ptr<ProgressBar> bar = terminal_progress(out.quiet);
  if (bar) opt.progress = [&bar](double fraction) { bar->update(fraction); };
  RunReport rep;
  Results res = execute(*prep, opt, &rep);
  bar.reset();   // erases the bar before anything else is printed

  std::vector<std::string> paths;
  if (commit) paths = write_outputs(*commit, plan, res);

  const ShowLimits limits;
  if (out.json) {
    std::cout << run_json(*prep, rep, res, paths, limits, opt.f32_math).dump() << "\n";
    return 0;
  }
  std::cout << run_summary(*prep, rep);
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    if (commit)
      std::cout << "  " << plan.dense[d].name << ": " << dtype_name(res.dense[d].dtype) << " "
                << shape_text(res.dense[d].shape) << " -> " << paths[d] << "\n";
    else
      std::cout << show_dense(plan.dense[d].name, res.dense[d], limits);
  }
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    if (commit)
      std::cout << "  " << plan.lists[l].name << ": " << res.lists[l].rows << " rows -> " << paths[plan.dense.size() + l]
                << "\n";
    else
      std::cout << show_list(plan.lists[l].name, res.lists[l], limits);
  }
  return 0;
}

int cmd_explain(QueryArgs q, const RunOptions& opt, bool print_source) {
  Source src = load_query(q);
  if (q.bindings.empty() && q.dims.empty()) {
    if (print_source) throw_usage_error("'explain --source' needs the inputs bound (their types shape the kernel)");
    Plan plan = plan_with_rewrites(src, {});
    std::cout << print_plan(plan);
    return 0;
  }
  Bindings b = read_bindings(q, src);
  auto prep = prepare(std::move(src), std::move(b), q.rewrites);
  std::cout << print_plan(prep->plan);
  const Instance& inst = prep->instance;
  std::cout << "bound: M=" << inst.row.size() << " N=" << inst.col.size() << " K=" << inst.red.size();
  if (prep->plan.batched) std::cout << " batch=" << inst.batch;
  std::cout << "\n";
  for (size_t d = 0; d < prep->plan.dense.size(); ++d)
    std::cout << "  " << prep->plan.dense[d].name << " shape " << shape_text(inst.dense_shapes[d]) << "\n";
  if (prep->program) {
    std::cout << "rewrite " << (prep->plan.rewrites.empty() ? "?" : prep->plan.rewrites.back()) << ": "
              << prep->program->original_work << " inner steps become " << prep->program->rewritten_work
              << "; runs as " << prep->program->stages.size() << " stages:\n";
    for (const auto& st : prep->program->stages) std::cout << "# " << st.name << "\n" << st.text;
  }
  std::cout << roofline(*prep);
  std::cout << explain_math(prep->plan, opt.f32_math);
  std::string why;
  if (cuda::gpu_available(&why)) {
    const auto& dev = cuda::device();
    std::optional<cuda::TileConfig> forced;
    if (!opt.tile.empty()) forced = cuda::parse_tile(opt.tile);
    // The tile run picks for the bound sizes.
    const cuda::TileConfig t = cuda::choose_kernel(inst, dev.sm_count, dev.smem_per_block_optin, forced).tile;
    std::cout << "gpu: " << dev.name << ", tile " << t.str() << "\n";
  } else {
    std::cout << "gpu: none (" << why << "); the CPU engine would run this\n";
  }
  if (print_source) {
    // Without a device, the tile an H100/H200 (132 SMs, 227 KiB of shared memory) would get.
    const bool have = cuda::gpu_available(nullptr);
    const int sms = have ? cuda::device().sm_count : 132;
    const size_t smem = have ? cuda::device().smem_per_block_optin : 227 * 1024;
    // Every kernel that runs: a rewritten program's stages, the selection after a top/bottom list.
    for (const KernelSource& k : kernel_sources(*prep, sms, smem, opt.tile)) std::cout << k.title << "\n" << k.source;
  }
  return 0;
}

int cmd_check(QueryArgs q) {
  Source src = load_query(q);
  Plan plan = build_plan(src, {});
  std::cout << src.name << ": ok (" << plan.operands.size() << " inputs, " << plan.params.size() << " parameters, "
            << plan.dense.size() + plan.lists.size() << " outputs)\n";
  return 0;
}

int cmd_cache(const std::string& action) {
  if (action == "clear") {
    size_t n = cuda::cache_clear();
    std::cout << "removed " << n << " cached kernels from " << cuda::cache_dir() << "\n";
    return 0;
  }
  auto entries = cuda::cache_list();
  std::cout << entries.size() << " cached kernels in " << cuda::cache_dir() << "\n";
  for (const auto& e : entries)
    std::cout << "  " << e.key << "  " << e.cubin_bytes << " bytes" << (e.valid ? "" : "  (corrupt: rebuilt on next use)")
              << "  " << e.source_path << "\n";
  return 0;
}

int cmd_peak(const std::string& json_path, int repeats) {
  peak::Report r = peak::measure(repeats);
  std::cout << peak::table(r);
  save_peak_report(peak::to_json(r));
  std::cout << "saved for `gamut explain`: " << peak_report_path() << "\n";
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << peak::to_json(r) << "\n";
    if (!f) throw_device_error("cannot write " + json_path);
  }
  return 0;
}

int cmd_device() {
  if (!cuda::gpu_available()) throw_device_error(no_device_reason());
  const auto& d = cuda::device();
  std::cout << d.name << ": compute capability " << d.cc_major << "." << d.cc_minor << ", " << d.sm_count
            << " multiprocessors, " << d.smem_per_block_optin / 1024 << " KiB shared memory per block, "
            << d.total_mem / (1u << 20) << " MiB, NVRTC arch " << cuda::arch_for(d.cc_major, d.cc_minor) << "\n";
  return 0;
}

}  // namespace gamut::cli
