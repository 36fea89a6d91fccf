// `gamut demo`: every example query on generated data. Data specs come from each example's
// `# demo:` comment (NAME=f32, f32:LO..HI, i32:LO..HI, u8:LO..HI, bernoulli:P, index:G,
// batch=B, a number for a scalar, or scaled:A,B for A*K + B*sqrt(K); OUTPUT=extent:D1[,D2] for an
// aggregate's extents, as --dim); unnamed inputs are f32 in [-1, 1), index vectors index:16.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "cli/bindings.h"
#include "core/error.h"
#include "driver/pipeline.h"  // parse_dim_extents: the --dim syntax

namespace gamut::cli {

namespace {

std::map<std::string, std::string> demo_specs(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find("# demo:");
    if (p == std::string::npos) continue;
    std::istringstream words(line.substr(p + 7));
    std::string w;
    while (words >> w) {
      auto eq = w.find('=');
      if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
    }
  }
  return out;
}

// "LO..HI" -> (lo, hi)
std::pair<double, double> range_of(const std::string& spec, double lo, double hi) {
  auto c = spec.find(':');
  if (c == std::string::npos) return {lo, hi};
  std::string r = spec.substr(c + 1);
  auto dots = r.find("..");
  if (dots == std::string::npos) return {std::stod(r), std::stod(r)};
  return {std::stod(r.substr(0, dots)), std::stod(r.substr(dots + 2))};
}

template <class T> void fill(NDArray& a, std::mt19937_64& rng, double lo, double hi, bool integer) {
  T* p = a.as<T>();
  if (integer) {
    std::uniform_int_distribution<int64_t> d{int64_t(lo), int64_t(hi)};
    for (int64_t e = 0; e < a.size(); ++e) p[e] = T(d(rng));
  } else {
    std::uniform_real_distribution<double> d(lo, hi);
    for (int64_t e = 0; e < a.size(); ++e) p[e] = T(d(rng));
  }
}

NDArray make_input(const QueryInfo& info, const BindingInfo& o, const std::string& spec, int64_t size, int64_t batch,
                   std::mt19937_64& rng) {
  std::vector<int64_t> shape;
  if (info.batched) shape.push_back(batch);
  for (int d = 0; d < o.rank; ++d) shape.push_back(size);
  std::string kind = spec.substr(0, spec.find(':'));
  if (kind.empty()) kind = o.index ? "index" : "f32";
  NDArray a;
  if (kind == "index") {
    a = NDArray::zeros(DType::I32, shape);
    double groups = spec.find(':') == std::string::npos ? 16 : std::stod(spec.substr(spec.find(':') + 1));
    fill<int32_t>(a, rng, 0, groups - 1, true);
  } else if (kind == "bernoulli") {
    a = NDArray::zeros(DType::U8, shape);
    double p = std::stod(spec.substr(spec.find(':') + 1));
    std::bernoulli_distribution d(p);
    for (int64_t e = 0; e < a.size(); ++e) a.as<uint8_t>()[e] = d(rng);
  } else if (kind == "i32" || kind == "u8" || kind == "i16") {
    auto [lo, hi] = range_of(spec, 0, 100);
    DType t = kind == "i32" ? DType::I32 : kind == "u8" ? DType::U8 : DType::I16;
    a = NDArray::zeros(t, shape);
    if (t == DType::I32) fill<int32_t>(a, rng, lo, hi, true);
    else if (t == DType::U8) fill<uint8_t>(a, rng, lo, hi, true);
    else fill<int16_t>(a, rng, lo, hi, true);
  } else if (kind == "f32" || kind == "f64") {
    auto [lo, hi] = range_of(spec, -1, 1);
    a = NDArray::zeros(kind == "f32" ? DType::F32 : DType::F64, shape);
    if (kind == "f32") fill<float>(a, rng, lo, hi, false);
    else fill<double>(a, rng, lo, hi, false);
  } else {
    throw_usage_error("demo spec '" + spec + "' for " + o.name + " is not understood");
  }
  return a;
}

}  // namespace

int cmd_demo(const Options& opt, int size, const std::string& examples_dir, bool json) {
  namespace fs = std::filesystem;
  std::string dir = examples_dir.empty() ? std::string(GAMUT_EXAMPLES_DIR) : examples_dir;
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".mmlt") files.push_back(e.path());
  if (ec || files.empty()) throw_usage_error("no .mmlt examples in '" + dir + "'");
  // Said once, not once per example.
  std::string why;
  if (opt.backend == "gpu" && !gpu_available(&why)) throw_device_error("--backend gpu: " + why);
  std::sort(files.begin(), files.end());
  int failures = 0;
  for (const fs::path& f : files) {
    std::string name = f.filename().string();
    try {
      const Query query = Query::load(f.string());
      const QueryInfo& info = query.info();
      auto specs = demo_specs(query.text());
      int64_t batch = specs.count("batch") ? std::stoll(specs["batch"]) : 4;
      std::mt19937_64 rng(0x9a3c7u + files.size());
      std::map<std::string, NDArray> data;
      Inputs in;
      for (const BindingInfo& o : info.input_info) {
        data[o.name] = make_input(info, o, specs.count(o.name) ? specs[o.name] : "", size, batch, rng);
        in.array(o.name, host_view(data[o.name]));
      }
      for (const std::string& p : info.params) {
        if (!specs.count(p)) continue;
        std::string v = specs[p];
        // `scaled:A,B` is A*K + B*sqrt(K): thresholds that stay equally selective at every size.
        if (v.rfind("scaled:", 0) == 0) {
          double a = std::stod(v.substr(7)), c = std::stod(v.substr(v.find(',') + 1));
          v = std::to_string(a * double(size) + c * std::sqrt(double(size)));
        }
        in.scalar_text(p, v);
      }
      for (const auto& [out, is_list] : info.outputs)
        if (!is_list && specs.count(out) && specs[out].rfind("extent:", 0) == 0)
          in.extent(out, parse_dim_extents(out, specs[out].substr(7)));
      const Result res = query.run(in, opt);
      const RunStats& st = res.stats;
      std::ostringstream outs;
      for (const Output& o : res.outputs) {
        if (outs.tellp() > 0) outs << ", ";
        if (o.is_list) outs << o.name << " " << o.rows << " rows";
        else outs << o.name << " " << dtype_name(o.array.dtype) << shape_text(o.array.shape);
      }
      const double spr = double(st.batch) * double(st.m) * double(st.n) * double(st.k) / (1e9 * st.seconds);
      if (json) {
        nlohmann::json j = {{"query", name}, {"backend", st.backend}, {"M", st.m}, {"N", st.n}, {"K", st.k},
                            {"batch", st.batch}, {"time_ms", st.seconds * 1e3}, {"spr", spr}, {"outputs", outs.str()}};
        std::cout << j.dump() << "\n";
      } else {
        std::cout << std::left << std::setw(24) << name << " " << st.backend << "  M=N=K=" << size
                  << (st.batched ? " batch=" + std::to_string(st.batch) : "") << "  " << std::right << std::fixed
                  << std::setprecision(2) << std::setw(9) << st.seconds * 1e3 << " ms  SPR " << std::setw(7) << spr
                  << "  -> " << outs.str() << "\n";
      }
    } catch (const Error& e) {
      ++failures;
      const std::string line = std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
      if (json) std::cout << nlohmann::json{{"query", name}, {"failed", line}}.dump() << "\n";
      else std::cout << name << ": FAILED: " << line << "\n";
    }
  }
  return failures ? 1 : 0;
}

}  // namespace gamut::cli
