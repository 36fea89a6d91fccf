#include "cli/commands.h"

#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/roofline.h"
#include "cli/bindings.h"
#include "cli/progress.h"
#include "cli/show.h"
#include "core/error.h"
#include "cuda/runtime.h"
#include "data/output_files.h"
#include "partition/multi_device.h"
#include "peak/peak.h"

namespace gamut::cli {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t = "(";
  for (size_t k = 0; k < s.size(); ++k) t += (k ? ", " : "") + std::to_string(s[k]);
  return t + (s.size() == 1 ? ",)" : ")");
}

double steps_per_second(const RunStats& s) {
  const double work = double(s.batch) * double(s.m) * double(s.n) * double(s.k);
  return s.seconds > 0 ? work / (1e9 * s.seconds) : 0;
}

Query load_query(const QueryArgs& q) {
  if (q.text) return Query::compile(*q.text, "<expr>");
  if (q.file.empty()) throw_usage_error("give a QUERY file or -e 'TEXT'");
  return Query::load(q.file);
}

namespace {

// The outputs as the .npy writer and the terminal display take them: dense outputs are views
// of the Result's arrays, lists are copied into Tables (each column freed as it is copied).
struct RunOutputs {
  std::vector<std::string> dense_names, list_names;
  std::vector<NDArray> dense;
  std::vector<Table> lists;
};

RunOutputs outputs_of(Result& r) {
  RunOutputs o;
  for (Output& out : r.outputs) {
    if (!out.is_list) {
      NDArray a;
      a.dtype = out.array.dtype;
      a.shape = out.array.shape;
      a.data = Bytes::view(out.array.data, out.array.nbytes());
      o.dense_names.push_back(out.name);
      o.dense.push_back(std::move(a));
      continue;
    }
    Table t;
    t.rows = out.rows;
    for (auto& [name, col] : out.columns) {
      const auto* p = static_cast<const std::byte*>(col.data);
      t.columns.push_back(Column{name, col.dtype, std::vector<std::byte>(p, p + col.nbytes())});
      col = Array{};
    }
    o.list_names.push_back(out.name);
    o.lists.push_back(std::move(t));
  }
  return o;
}

// Writes every output or none; returns their paths, dense outputs first.
std::vector<std::string> write_outputs(OutputCommit& commit, const RunOutputs& o) {
  std::vector<std::string> paths;
  for (size_t d = 0; d < o.dense.size(); ++d) {
    commit.stage(o.dense_names[d], o.dense[d]);
    paths.push_back(commit.final_path(o.dense_names[d]));
  }
  for (size_t l = 0; l < o.lists.size(); ++l) {
    commit.stage(o.list_names[l], o.lists[l]);
    paths.push_back(commit.final_path(o.list_names[l]));
  }
  commit.commit();
  return paths;
}

// The command line's flag for an option of the library (RunStats::ignored_options).
std::string option_flag(const std::string& option) {
  if (option == "repeats") return "--repeat";
  if (option == "f32_math") return "--f32-math";
  if (option == "kernel_variant") return "--kernel-variant";
  return "--" + option;
}

nlohmann::json run_json(const std::string& query, const RunStats& st, const RunOutputs& res,
                        const std::vector<std::string>& paths, const ShowLimits& limits) {
  nlohmann::json j;
  j["query"] = query;
  j["backend"] = st.backend;
  j["M"] = st.m;
  j["N"] = st.n;
  j["K"] = st.k;
  j["batch"] = st.batch;
  j["time_ms"] = st.seconds * 1e3;
  j["wall_ms"] = st.wall_seconds * 1e3;
  j["spr"] = steps_per_second(st);
  j["rewrites"] = st.rewrites;
  j["math"] = st.math;
  j["mainloop"] = st.mainloop;
  if (!st.devices.empty()) {
    j["devices"] = st.devices;
    j["partition"] = st.partition.substr(0, st.partition.find('\n'));
    j["merge"] = st.merge;
    j["merge_ms"] = st.merge_seconds * 1e3;
  }
  if (st.backend == "gpu") {
    j["compile_ms"] = st.compile_ms;
    if (st.kernel_seconds > 0) j["kernel_ms"] = st.kernel_seconds * 1e3;
    j["cache"] = st.cache;
    j["tile"] = st.tile;
    j["kernel_choice"] = st.kernel_choice;
    j["kernel_family"] = st.kernel_family;
    j["device_peak_bytes"] = st.device_peak_bytes;
  } else {
    j["threads"] = st.threads;
  }
  if (!st.ignored_options.empty()) {
    std::vector<std::string> flags;
    for (const std::string& o : st.ignored_options) flags.push_back(option_flag(o));
    j["ignored"] = flags;
    j["engine_reason"] = st.engine_reason;
  }
  j["outputs"] = nlohmann::json::array();
  const bool written = !paths.empty();
  for (size_t d = 0; d < res.dense.size(); ++d) {
    nlohmann::json o = {{"name", res.dense_names[d]}, {"kind", "dense"},
                        {"dtype", std::string(dtype_name(res.dense[d].dtype))},
                        {"shape", res.dense[d].shape}, {"path", written ? paths[d] : ""}};
    if (!written && res.dense[d].size() <= limits.max_elements) o["values"] = dense_json(res.dense[d]);
    j["outputs"].push_back(o);
  }
  for (size_t l = 0; l < res.lists.size(); ++l) {
    nlohmann::json o = {{"name", res.list_names[l]}, {"kind", "list"}, {"rows", res.lists[l].rows},
                        {"path", written ? paths[res.dense.size() + l] : ""}};
    if (l < st.list_rows_appended.size()) o["rows_appended"] = st.list_rows_appended[l];
    if (l < st.list_seen_cells.size()) o["seen_cells"] = st.list_seen_cells[l];
    if (!written) list_head_json(res.lists[l], limits, o);
    j["outputs"].push_back(o);
  }
  return j;
}

std::string run_summary(const std::string& query, const RunStats& st) {
  std::ostringstream line;
  line << std::fixed << std::setprecision(3);
  line << query << ": backend " << st.backend;
  if (st.backend == "cpu") line << " (" << st.threads << " threads)";
  else line << " (tile " << st.tile << ", kernel " << st.cache << ", " << st.kernel_choice << ")";
  line << ", M=" << st.m << " N=" << st.n << " K=" << st.k;
  if (st.batched) line << " batch=" << st.batch;
  line << ", " << st.seconds * 1e3 << " ms, SPR " << std::setprecision(2) << steps_per_second(st) << "\n";
  if (!st.ignored_options.empty()) {
    line << "  ignored: ";
    for (size_t k = 0; k < st.ignored_options.size(); ++k) line << (k ? ", " : "") << option_flag(st.ignored_options[k]);
    line << " (" << (st.ignored_options.size() == 1 ? "it applies" : "they apply") << " to the GPU engine; the CPU engine ran: "
         << st.engine_reason << ")\n";
  }
  if (!st.partition.empty()) line << "  " << st.partition << "  merge: " << st.merge << ", " << st.merge_seconds * 1e3 << " ms\n";
  return line.str();
}

// --gpus checked against the GPUs visible before any file is read; the resolved list (or
// nothing, for one GPU) goes to the library.
void resolve_gpus(Options& opt) {
  if (opt.devices.count == 0 && opt.devices.ordinals.empty()) return;
  std::string why;
  const int visible = opt.backend == "cpu" || !gpu_available(&why) ? 0 : cuda::device_count();
  const std::vector<int> devices =
      resolve_devices(DeviceRequest{opt.devices.count, opt.devices.ordinals}, visible, opt.backend == "cpu", "--gpus", why);
  opt.devices = devices.empty() ? Devices{} : Devices::list(devices);
}

}  // namespace

int cmd_run(const QueryArgs& q, Options opt, const RunOutput& out) {
  resolve_gpus(opt);
  const Query query = load_query(q);
  CliInputs in = read_inputs(q, query);

  // Refused before the run: an output that would replace one of the run's own input files.
  std::optional<OutputCommit> commit;
  if (out.dir) {
    commit.emplace(*out.dir);
    commit->protect(in.files);
    for (const auto& [name, is_list] : query.info().outputs) commit->check_protected(name);
  }

  std::unique_ptr<ProgressBar> bar = terminal_progress(out.quiet);
  if (bar) opt.progress = [&bar](double fraction) { bar->update(fraction); };
  Result result = query.run(in.inputs, opt);
  bar.reset();   // erases the bar before anything else is printed
  const RunStats& st = result.stats;
  const RunOutputs res = outputs_of(result);

  std::vector<std::string> paths;
  if (commit) paths = write_outputs(*commit, res);

  const ShowLimits limits;
  const std::string& name = query.info().name;
  if (out.json) {
    std::cout << run_json(name, st, res, paths, limits).dump() << "\n";
    return 0;
  }
  std::cout << run_summary(name, st);
  for (size_t d = 0; d < res.dense.size(); ++d) {
    if (commit)
      std::cout << "  " << res.dense_names[d] << ": " << dtype_name(res.dense[d].dtype) << " "
                << shape_text(res.dense[d].shape) << " -> " << paths[d] << "\n";
    else
      std::cout << show_dense(res.dense_names[d], res.dense[d], limits);
  }
  for (size_t l = 0; l < res.lists.size(); ++l) {
    if (commit)
      std::cout << "  " << res.list_names[l] << ": " << res.lists[l].rows << " rows -> " << paths[res.dense.size() + l]
                << "\n";
    else
      std::cout << show_list(res.list_names[l], res.lists[l], limits);
  }
  return 0;
}

int cmd_explain(const QueryArgs& q, const Options& opt, bool print_source) {
  const bool bound = !q.bindings.empty() || !q.dims.empty();
  if (print_source && !bound) throw_usage_error("'explain --source' needs the inputs bound (their types shape the kernel)");
  const Query query = load_query(q);
  if (!bound) {
    std::cout << query.explain(Inputs{}, opt);
    return 0;
  }
  const CliInputs in = read_inputs(q, query);
  std::cout << query.explain(in.inputs, opt);
  // Every kernel that runs: a rewritten program's stages, the selection after a top/bottom list.
  if (print_source) std::cout << query.kernel_source(in.inputs, opt);
  return 0;
}

int cmd_check(const QueryArgs& q) {
  const Query query = load_query(q);
  const QueryInfo& info = query.info();
  std::cout << info.name << ": ok (" << info.inputs.size() << " inputs, " << info.params.size() << " parameters, "
            << info.outputs.size() << " outputs)\n";
  return 0;
}

int cmd_cache(const std::string& action) {
  if (action == "clear") {
    size_t n = clear_kernel_cache();
    std::cout << "removed " << n << " cached kernels from " << kernel_cache_dir() << "\n";
    return 0;
  }
  const std::vector<CacheEntry> entries = kernel_cache_entries();
  std::cout << entries.size() << " cached kernels in " << kernel_cache_dir() << "\n";
  for (const CacheEntry& e : entries)
    std::cout << "  " << e.key << "  " << e.cubin_bytes << " bytes" << (e.valid ? "" : "  (corrupt: rebuilt on next use)")
              << "  " << e.source_path << "\n";
  return 0;
}

// `peak` and `device` are about the GPU, not a query: they use the backend directly.
int cmd_peak(const std::string& json_path, int repeats) {
  peak::Report r = peak::measure(repeats);
  std::cout << peak::table(r);
  api::save_peak_report(peak::to_json(r));
  std::cout << "saved for `gamut explain`: " << api::peak_report_path() << "\n";
  if (!json_path.empty()) {
    std::ofstream f(json_path);
    f << peak::to_json(r) << "\n";
    if (!f) throw_device_error("cannot write " + json_path);
  }
  return 0;
}

int cmd_device() {
  std::string why;
  if (!gpu_available(&why)) throw_device_error(why);
  const auto& d = cuda::device();
  std::cout << d.name << ": compute capability " << d.cc_major << "." << d.cc_minor << ", " << d.sm_count
            << " multiprocessors, " << d.smem_per_block_optin / 1024 << " KiB shared memory per block, "
            << d.total_mem / (1u << 20) << " MiB, NVRTC arch " << cuda::arch_for(d.cc_major, d.cc_minor) << "\n";
  return 0;
}

}  // namespace gamut::cli
