// `gamut peak`: microbenchmarks that measure the throughput ceilings the engine's kernels are
// built against, before any kernel is judged against them: the semiring step of every
// (operation, type) the engine emits, with operands in registers or streamed from shared memory
// the way a tiled GEMM's inner loop reads them, and device-to-device copy bandwidth.
#pragma once
#include <string>
#include <vector>

namespace gamut::peak {

// One measured ceiling. gops: 1e9 element-steps * ops_per_element per second, where an
// element-step is one c = c (+) (a (x) b) on one 32- or 64-bit register (add+max counts as 2
// ops, an i16x2 word as 2 lanes x 2, an or-and word as 32 lanes x 2 bit operations).
struct Entry {
  std::string op;           // "fma" | "add-max" | "add-min" | "max-min" | "or-and"
  std::string type;         // "f32" | "f64" | "i32" | "i16x2" | "b32"
  std::string operands;     // "registers" | "one smem" | "both smem" | "copy"
  double gops = 0;
  double ops_per_element = 0;
  std::string instruction;  // SASS of the step, e.g. "FFMA", "VIADDMNMX (DPX)"
};

struct Report {
  std::string device;
  std::vector<Entry> entries;
  double copy_gbps = 0;     // device-to-device copy, bytes read + written per second / 1e9
};

// Compiles kernel_source() for the current device and times every microbenchmark: a warm-up
// launch, a timed probe that sets the loop count (about 10 ms a launch), then the median of
// `repeats` launches. Throws Error(ExitCode::Device) without a device.
Report measure(int repeats = 5);

std::string table(const Report& r);           // human-readable, one line per entry
std::string to_json(const Report& r);
// Reads to_json's text; a malformed report throws Error(ExitCode::Data) ("peak report").
Report from_json(const std::string& text);

// The highest rate among the entries with this op, type and operands (the DPX and the plain
// integer sequence are both entries: the ceiling is the better one); 0 when none matches.
double ceiling_gops(const Report& r, const std::string& op, const std::string& type,
                    const std::string& operands = "registers");

// One semiring step of the microbenchmarks; each gets three kernels in kernel_source(),
// "peak_<id>_reg", "peak_<id>_smem1" and "peak_<id>_smem2" (see kernel_name).
struct Step {
  std::string id;                    // "fma_f32"
  std::string device_struct;         // the step's struct in the kernel source
  std::string op, type;
  double ops_per_element;
  std::string instruction;           // SASS on sm_90a (read with nvdisasm)
  std::string instruction_pre_sm90;  // where it differs without DPX ("" = same)
};
const std::vector<Step>& steps();
extern const char* const kOperandKinds[3];    // "registers", "one smem", "both smem"
std::string kernel_name(const Step& s, int operand_kind);   // operand_kind: 0, 1, 2
// Element-steps one thread does per loop iteration, for each operand kind.
int steps_per_iteration(int operand_kind);
constexpr int kBlockThreads = 256;
constexpr int kInputElements = 4096;      // elements of every kernel's `in` argument
constexpr const char* kCopyKernel = "peak_copy";

// The CUDA C++ of all microbenchmarks (extern "C" kernels; NVRTC, no includes).
std::string kernel_source();

}  // namespace gamut::peak
