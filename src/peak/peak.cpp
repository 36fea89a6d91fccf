// `gamut peak` on the host: launch and time the microbenchmarks of kernel_source(), and the
// report's table and JSON. Uses only cuda/runtime.h, so it builds without CUDA (measure then
// throws the stub's device error).
#include "peak/peak.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "cuda/runtime.h"

namespace gamut::peak {

namespace {

constexpr int kProbeIters = 2;             // the warm-up and calibration launches
constexpr double kTargetMs = 10.0;         // timed launches last about this long
constexpr int kMaxIters = 1 << 24;

// The `in` argument's contents for a step's type. Values stay small so the float chains stay
// finite for the lengths run (not that it matters to the ALUs; it keeps the results readable).
std::vector<unsigned char> input_image(const std::string& type) {
  std::vector<unsigned char> bytes;
  auto put = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    bytes.insert(bytes.end(), b, b + n);
  };
  uint32_t lcg = 12345;
  for (int e = 0; e < kInputElements; ++e) {
    lcg = lcg * 1664525u + 1013904223u;
    if (type == "f32") {
      const float v = 1e-3f * float(1 + e % 13);
      put(&v, sizeof v);
    } else if (type == "f64") {
      const double v = 1e-3 * double(1 + e % 13);
      put(&v, sizeof v);
    } else if (type == "i32") {
      const int32_t v = e % 61 - 30;
      put(&v, sizeof v);
    } else {  // i16x2, b32: arbitrary bits
      put(&lcg, sizeof lcg);
    }
  }
  return bytes;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One wave: as many blocks as can be resident at once, so every SM has the same work.
unsigned full_wave(const cuda::Kernel& k, int sm_count) {
  const int per_sm = k.max_active_blocks_per_sm(kBlockThreads, 0);
  if (per_sm < 1) throw_device_error("gamut peak: a microbenchmark kernel cannot be resident");
  return unsigned(per_sm) * unsigned(sm_count);
}

double time_ms(cuda::EventTimer& timer, cuda::Kernel& k, unsigned blocks, void** args) {
  timer.start();
  k.launch(blocks, 1, 1, kBlockThreads, 1, 1, 0, args);
  return timer.stop_ms();
}

// Rate of one ALU microbenchmark in 1e9 element-steps per second.
double measure_steps(const cuda::CompiledModule& mod, const std::string& name, int operand_kind,
                     void* in, void* out, int sm_count, int repeats, cuda::EventTimer& timer) {
  cuda::Kernel k(mod, name);
  const unsigned blocks = full_wave(k, sm_count);
  int iters = kProbeIters;
  void* args[] = {&in, &out, &iters};
  k.launch(blocks, 1, 1, kBlockThreads, 1, 1, 0, args);   // warm-up: module load, clocks
  cuda::synchronize();
  // Calibrate the loop count so each timed launch runs about kTargetMs.
  const double probe = std::max(time_ms(timer, k, blocks, args), 1e-3);
  iters = int(std::clamp(kProbeIters * kTargetMs / probe, double(kProbeIters), double(kMaxIters)));
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) ms.push_back(time_ms(timer, k, blocks, args));
  const double steps = double(blocks) * kBlockThreads * double(iters) *
                       double(steps_per_iteration(operand_kind));
  return steps / (median(ms) * 1e-3) / 1e9;
}

// Device-to-device copy through peak_copy: GB/s of bytes read plus bytes written.
double measure_copy(const cuda::CompiledModule& mod, const cuda::DeviceInfo& dev, int repeats,
                    cuda::EventTimer& timer) {
  // Far beyond L2 (tens of MB), and a small part of device memory.
  size_t bytes = std::min<size_t>(size_t(1) << 30, dev.total_mem / 8);
  bytes -= bytes % 16;
  cuda::DeviceBuffer src(bytes), dst(bytes);
  src.fill_bytes(1);
  cuda::Kernel k(mod, kCopyKernel);
  void* s = src.get();
  void* d = dst.get();
  unsigned long long n = bytes / 16;
  const unsigned blocks = unsigned((n + kBlockThreads - 1) / kBlockThreads);
  void* args[] = {&s, &d, &n};
  k.launch(blocks, 1, 1, kBlockThreads, 1, 1, 0, args);
  cuda::synchronize();
  std::vector<double> ms;
  for (int r = 0; r < repeats; ++r) ms.push_back(time_ms(timer, k, blocks, args));
  return 2.0 * double(bytes) / (median(ms) * 1e-3) / 1e9;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string lpad(const std::string& s, size_t width) {
  return s.size() < width ? std::string(width - s.size(), ' ') + s : s;
}

}  // namespace

Report measure(int repeats) {
  std::string why;
  if (!cuda::device_available(&why)) throw_device_error("gamut peak needs a GPU: " + why);
  repeats = std::max(repeats, 1);
  const cuda::DeviceInfo& dev = cuda::device();
  cuda::CompileOptions options;
  options.arch = cuda::arch_for(dev.cc_major, dev.cc_minor);
  const cuda::CompiledModule mod = cuda::compile_cached(kernel_source(), options, "gamut peak");

  Report rep;
  rep.device = dev.name + " (" + options.arch + ", " + std::to_string(dev.sm_count) + " SMs)";
  const bool dpx = dev.cc_major >= 9;
  // At most 32 resident blocks per SM on any arch: one value per thread of a full wave.
  cuda::DeviceBuffer in(size_t(kInputElements) * 8);
  cuda::DeviceBuffer out(size_t(dev.sm_count) * 32 * kBlockThreads * 8);
  cuda::EventTimer timer;
  for (const Step& s : steps()) {
    const std::vector<unsigned char> image = input_image(s.type);
    in.upload(image.data(), image.size());
    for (int kind = 0; kind < 3; ++kind) {
      Entry e;
      e.op = s.op;
      e.type = s.type;
      e.operands = kOperandKinds[kind];
      e.ops_per_element = s.ops_per_element;
      e.instruction = (dpx || s.instruction_pre_sm90.empty()) ? s.instruction : s.instruction_pre_sm90;
      e.gops = s.ops_per_element * measure_steps(mod, kernel_name(s, kind), kind, in.get(),
                                                 out.get(), dev.sm_count, repeats, timer);
      rep.entries.push_back(e);
    }
  }
  rep.copy_gbps = measure_copy(mod, dev, repeats, timer);
  rep.entries.push_back({"copy", "bytes", "copy", rep.copy_gbps, 1, "LDG.E.128+STG.E.128"});
  return rep;
}

std::string table(const Report& r) {
  std::string t = "gamut peak: " + r.device + "\n";
  t += pad("op", 9) + pad("type", 7) + pad("operands", 11) + lpad("GOPS", 11) +
       lpad("ops/step", 10) + "  instruction\n";
  for (const Entry& e : r.entries) {
    if (e.operands == "copy") continue;   // its own line below
    t += pad(e.op, 9) + pad(e.type, 7) + pad(e.operands, 11) + lpad(fixed(e.gops, 1), 11) +
         lpad(fixed(e.ops_per_element, 0), 10) + "  " + e.instruction + "\n";
  }
  t += "copy bandwidth: " + fixed(r.copy_gbps, 1) + " GB/s (bytes read + written)\n";
  t += "GOPS: 1e9 element-steps x ops/step per second (add+max = 2 ops; i16x2: 2 lanes x 2; "
       "or-and: 32 bits x 2)\n";
  return t;
}

std::string to_json(const Report& r) {
  nlohmann::json j;
  j["device"] = r.device;
  j["copy_gbps"] = r.copy_gbps;
  j["entries"] = nlohmann::json::array();
  for (const Entry& e : r.entries)
    j["entries"].push_back({{"op", e.op},
                            {"type", e.type},
                            {"operands", e.operands},
                            {"gops", e.gops},
                            {"ops_per_element", e.ops_per_element},
                            {"instruction", e.instruction}});
  return j.dump(2) + "\n";
}

Report from_json(const std::string& text) {
  Report r;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    r.device = j.at("device").get<std::string>();
    r.copy_gbps = j.at("copy_gbps").get<double>();
    for (const auto& x : j.at("entries")) {
      Entry e;
      e.op = x.at("op").get<std::string>();
      e.type = x.at("type").get<std::string>();
      e.operands = x.at("operands").get<std::string>();
      e.gops = x.at("gops").get<double>();
      e.ops_per_element = x.at("ops_per_element").get<double>();
      e.instruction = x.at("instruction").get<std::string>();
      r.entries.push_back(e);
    }
  } catch (const nlohmann::json::exception& ex) {
    // nlohmann's messages are one line: "[json.exception.out_of_range.403] key 'op' not found".
    throw_data_error("peak report", ex.what());
  }
  return r;
}

double ceiling_gops(const Report& r, const std::string& op, const std::string& type,
                    const std::string& operands) {
  double best = 0;
  for (const Entry& e : r.entries)
    if (e.op == op && e.type == type && e.operands == operands) best = std::max(best, e.gops);
  return best;
}

}  // namespace gamut::peak
