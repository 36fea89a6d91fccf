// `explain`'s roofline: the query's work and bytes against the ceilings `gamut peak` measured.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/roofline.h"
#include "core/error.h"
#include "cuda/runtime.h"
#include "peak/peak.h"
#include "plan/semiring.h"

namespace gamut::api {

std::string peak_report_path() { return cuda::cache_dir() + "/peak.json"; }

void save_peak_report(const std::string& json) {
  std::error_code ec;
  std::filesystem::create_directories(cuda::cache_dir(), ec);
  std::string tmp = peak_report_path() + ".tmp";
  std::ofstream(tmp) << json << "\n";
  std::filesystem::rename(tmp, peak_report_path(), ec);
}

std::string roofline(const Plan& plan, const Instance& inst) {
  std::ifstream f(peak_report_path());
  if (!f) return "roofline: no measured ceilings yet (run `gamut peak` on the GPU; it saves them to " + peak_report_path() + ")\n";
  std::stringstream ss;
  ss << f.rdbuf();
  peak::Report rep;
  try {
    rep = peak::from_json(ss.str());
  } catch (const Error& e) {
    return std::string("roofline: saved peak report unreadable: ") + e.what() + "\n";
  }
  double steps = double(inst.batch) * double(inst.row.size()) * double(inst.col.size()) * double(inst.red.size());
  SemiringForm form = semiring_form(plan);
  double ops = steps * ops_per_step(plan);
  // The ceiling of the step as a tiled kernel runs it: both operands from shared memory.
  std::string type(ctype_name(form.type));
  double gops = 0;
  std::string what;
  if (form.recognised() && form.op == "or-and") {
    gops = peak::ceiling_gops(rep, "or-and", "b32", "both smem") / 32;  // one element per word, unpacked
    what = "or-and on 32-bit words, one element per word";
  } else if (form.recognised()) {
    std::string op = form.op == "min-max" ? "max-min" : form.op;
    gops = peak::ceiling_gops(rep, op, type, "both smem");
    what = form.op + " " + type;
  }
  if (gops <= 0) {
    // Anything else: its operator count at the FFMA instruction rate (FFMA counts 2 ops).
    gops = peak::ceiling_gops(rep, "fma", "f32", "both smem") / 2;
    what = "general inner step (" + std::to_string(int(ops_per_step(plan))) + " operations, at the FFMA instruction rate)";
  }
  double bytes = 0;
  for (const NDArray* a : inst.inputs) bytes += double(a->nbytes());
  for (size_t d = 0; d < inst.dense_shapes.size(); ++d) {
    double n = 1;
    for (int64_t x : inst.dense_shapes[d]) n *= double(x);
    bytes += n * double(dtype_size(storage_type_of(plan.dense[d].type)));
  }
  double t_compute = gops > 0 ? ops / (gops * 1e9) * 1e3 : 0;
  double t_memory = rep.copy_gbps > 0 ? bytes / (rep.copy_gbps * 1e9) * 1e3 : 0;
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "roofline (ceilings measured on %s):\n  step: %s\n  compute: %.3g ops at %.0f GOPS -> %.4f ms\n"
                "  memory: %.3g bytes at %.0f GB/s -> %.4f ms\n  bound by %s; best time about %.4f ms%s\n",
                rep.device.c_str(), what.c_str(), ops, gops, t_compute, bytes, rep.copy_gbps, t_memory,
                t_compute >= t_memory ? "compute" : "memory", std::max(t_compute, t_memory),
                plan.when.keys.empty() ? "" : " (upper bound: a join does work only for matching pairs)");
  return buf;
}

}  // namespace gamut::api
