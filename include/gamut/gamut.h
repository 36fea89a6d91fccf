// gamut as a C++ library (docs/language.md section 17, docs/python.md): compile a query once,
// run it many times on host or device arrays, on the CPU engine or the GPU.
//
//   gamut::Query q = gamut::Query::compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }");
//   gamut::Inputs in;
//   in.array("A", gamut::ArrayRef::host(a, gamut::DType::F32, {M, K}))
//     .array("B", gamut::ArrayRef::host(b, gamut::DType::F32, {K, N}));
//   gamut::Result r = q.run(in);                 // throws gamut::Error
//   const float* c = r["C"].array.as<float>();   // r (or a copy of the Array) owns the memory
//
// Errors are gamut::Error exceptions with the command line's categories (code(): the exit
// status of docs/language.md section 16) and messages. A Query is cheap to copy (copies share
// the compiled state) and may be run from several threads at once.
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gamut/error.h"
#include "gamut/export.h"
#include "gamut/types.h"

namespace gamut {

GAMUT_API const char* version();   // "0.1.0"

// Where an array lives, with DLPack's device codes. Cpu, CudaHost (pinned) and CudaManaged
// memory are read on the host; Cuda memory on its GPU.
enum class DeviceKind : int32_t { Cpu = 1, Cuda = 2, CudaHost = 3, CudaManaged = 13 };

struct Device {
  DeviceKind kind = DeviceKind::Cpu;
  int id = 0;
  bool is_gpu() const { return kind == DeviceKind::Cuda; }
  friend bool operator==(const Device& a, const Device& b) { return a.kind == b.kind && a.id == b.id; }
};

// An array the caller owns, described as DLPack describes one. gamut only reads it, during
// run(), and keeps no reference afterwards. Strides count elements (not bytes) and may be
// empty for C order; an array whose layout the engine cannot read is copied (explain says so).
struct ArrayRef {
  const void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  Device device;

  static ArrayRef host(const void* data, DType dtype, std::vector<int64_t> shape, std::vector<int64_t> strides = {}) {
    return ArrayRef{data, dtype, std::move(shape), std::move(strides), Device{}};
  }
  static ArrayRef cuda(const void* data, DType dtype, std::vector<int64_t> shape, int device_id = 0,
                       std::vector<int64_t> strides = {}) {
    return ArrayRef{data, dtype, std::move(shape), std::move(strides), Device{DeviceKind::Cuda, device_id}};
  }
};

// An array gamut produced, in C order. `owner` keeps its memory alive: gamut's own buffer, or
// what the caller's Allocator returned. Copies of an Array share the memory; it is freed with
// the last copy (or whenever the caller drops the owner it took).
struct Array {
  void* data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;     // elements
  Device device;
  std::shared_ptr<void> owner;

  int64_t size() const {            // elements (1 for a 0-d array)
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
  size_t nbytes() const { return size_t(size()) * dtype_size(dtype); }
  template <class T> T* as() const { return static_cast<T*>(data); }
};

// Output memory from the caller, e.g. a framework's caching allocator: memory for one C-order
// array of `shape` on `device`, and the handle that frees it when dropped. gamut writes the
// result into it (device memory: in stream order on Options::stream).
struct Allocation {
  void* data = nullptr;
  std::shared_ptr<void> owner;
};
using Allocator = std::function<Allocation(DType dtype, const std::vector<int64_t>& shape, Device device)>;

// A scalar parameter: an integer or a float (as `NAME=3` and `NAME=3.0` on the command line).
struct Number {
  bool integer = true;
  int64_t i = 0;
  double f = 0;
  // When not empty, the value as written on a command line (`NAME=VALUE`), read by the engine as
  // `gamut run` reads it (integer and f are then ignored; a bad text is a data error naming it).
  std::string text;
};

// What one run binds: arrays and scalars by name, and the extents of aggregate outputs.
struct Inputs {
  std::map<std::string, ArrayRef, std::less<>> arrays;
  std::map<std::string, Number, std::less<>> scalars;
  std::map<std::string, std::vector<int64_t>, std::less<>> extents;   // the CLI's --dim NAME=D1,D2

  Inputs& array(std::string name, ArrayRef a) { arrays[std::move(name)] = std::move(a); return *this; }
  Inputs& scalar(std::string name, int64_t v) { scalars[std::move(name)] = Number{true, v, double(v), {}}; return *this; }
  Inputs& scalar(std::string name, int v) { return scalar(std::move(name), int64_t(v)); }
  Inputs& scalar(std::string name, double v) { scalars[std::move(name)] = Number{false, 0, v, {}}; return *this; }
  // A scalar as command-line text ("3", "2.5", "inf"): Number::text.
  Inputs& scalar_text(std::string name, std::string text) {
    scalars[std::move(name)] = Number{true, 0, 0, std::move(text)};
    return *this;
  }
  Inputs& extent(std::string output, std::vector<int64_t> dims) { extents[std::move(output)] = std::move(dims); return *this; }
  bool empty() const { return arrays.empty() && scalars.empty() && extents.empty(); }
};

// Which GPUs run a query (docs/multi-gpu.md). Not asked (the default): the current GPU. Several:
// the query is split into one part per GPU, the parts run at once (a thread each) and merge into
// the one result a single run gives. An ordinal may repeat ({0, 0}): those parts share the GPU.
struct Devices {
  int count = 0;               // N: GPUs 0 to N-1 (1: the normal run); -1: every visible GPU
  std::vector<int> ordinals;   // these GPUs instead, when not empty
  static Devices first(int n) { return Devices{n, {}}; }
  static Devices all() { return Devices{-1, {}}; }
  static Devices list(std::vector<int> ordinals) { return Devices{0, std::move(ordinals)}; }
};

struct Options {
  std::string backend = "auto";     // auto (the GPU when one is usable) | cpu | gpu
  std::string f32_math = "ieee";    // sums of f32 products (docs/language.md section 14)
  int threads = 0;                  // CPU engine threads (0: one per hardware thread)
  // The CUDA stream (cudaStream_t) the GPU work and the device outputs are ordered on;
  // nullptr: the legacy default stream.
  void* stream = nullptr;
  // Output memory; empty: gamut's own (host: plain memory, device: cudaMalloc'd).
  Allocator allocator;
  // Wait for the run's device work on `stream` before returning: for a consumer of device
  // outputs that is not ordered on that stream (the Python package sets it for JAX arrays).
  bool synchronize = false;
  bool rewrites = true;             // bound rewrites (aggregate push-down, bit packing, one-sided sums)
  // Keep the arithmetic as written: no hoisting of one-sided sums and no expansion of squared
  // differences (hoist-one-sided / expand-squares; docs/tensor-cores.md, "Distances").
  bool as_written = false;
  std::string tile;                 // benchmarks: GPU tile "BMxBNxBK[/TMxTN]" ("" = chosen)
  // Benchmarks and `gamut tune`: a GPU kernel variant as Query::kernel_variants names them
  // ("wgmma 64x128 s3 b2"; "" = chosen). A variant that does not apply is a usage error.
  std::string kernel_variant;
  // Whether the GPU kernel may be the winner `gamut tune` stored for this device (false: the
  // heuristics' choice; RunStats::kernel_choice says which chose).
  bool tuned = true;
  int repeats = 0;                  // benchmarks: time this many launches after a warm-up
  // Called with the fraction of the run done (0..1): CPU row tiles, GPU launches, rewritten
  // programs' stages. The CPU engine calls it from its worker threads at once: it must be
  // thread-safe and cheap (the CLI's progress bar checks the clock and returns).
  std::function<void(double fraction)> progress;
  // Stopping a run before it finishes (a Ctrl-C). Set *cancel, from any thread, and run() throws
  // gamut::Cancelled soon after: the CPU engine reads it before each tile of pairs and each block
  // of columns and of k values (well under 100 ms of work apart), the GPU engine before each
  // kernel launch (a launch in flight runs to its end). nullptr: never.
  const std::atomic<bool>* cancel = nullptr;
  // For a caller that can only look from its own thread (Python runs its signal handlers on the
  // main thread): when set, run() calls interrupted() on the calling thread every interrupt_ms
  // milliseconds while the engine works on a helper thread (kept for the process, on the calling
  // thread's current GPU), and true stops the run as `cancel` does. Small runs (about 2^24
  // pair-steps or fewer, a few milliseconds of a product) and runs with an `allocator` (which
  // may depend on the calling thread) stay on the calling thread and are not polled.
  std::function<bool()> interrupted;
  int interrupt_ms = 50;
  // Several GPUs (the CLI's --gpus). More than visible is a device error naming the count; a
  // list on the CPU engine is a usage error. Inputs are read on the host (device arrays are
  // copied there first) and the outputs go where a single run's would.
  Devices devices;
  // Top/bottom lists also return their hidden provenance columns __key, __b, __i, __j (the key
  // and the pair of each row, which decide ties): for merging the results of blocks of one query
  // run elsewhere (docs/scale-out.md). The bound rewrites that read the data stay off for such
  // queries; the one-sided rewrite applies, its last stage returning the hidden columns (__key
  // the key as it computes it, __b, __i, __j the query's own).
  bool list_provenance = false;
  // Run the query's finishing steps (`finish { ... }`, docs/language.md section 9, "Finishing
  // steps") and return their outputs after the dense ones. false: only the run's own outputs
  // (blocks whose results merge elsewhere and are finished there, as gamut.dask does).
  bool finish = true;
};

// How a run went (the CLI's --json fields).
struct RunStats {
  std::string backend;              // "cpu" | "gpu"
  double seconds = 0;               // engine time (GPU: kernel and device list work)
  double kernel_seconds = 0;        // GPU with repeats: the main kernel alone (median)
  double wall_seconds = 0;          // the whole run() call
  double compile_ms = 0;            // GPU: NVRTC time when the kernel was compiled
  // GPU: where the kernel came from: compiled | disk | memory; or "record": the launch an earlier
  // call of the query with the same signature recorded, replayed (docs/python.md, "Repeated calls")
  std::string cache;
  std::string tile;                 // GPU: the tile and kernel variant
  int threads = 0;                  // CPU: engine threads
  size_t device_peak_bytes = 0;     // GPU: most device memory gamut held at once
  int64_t m = 0, n = 0, k = 0, batch = 1;       // axis extents
  bool batched = false;                         // the query has a batch axis
  std::string math;                             // the math that ran (docs/language.md section 14): "ieee", "bf16", "i8", ...
  std::string mainloop;                         // "wgmma+tma", "wgmma", "mma.sync" or "simt" on the GPU, "cpu" on the CPU
  // GPU: who chose the kernel: "heuristic", "tuned" (the table `gamut tune` wrote for this
  // device) or "forced" (Options::kernel_variant); and the family a tuned table files it under.
  std::string kernel_choice, kernel_family;
  std::vector<std::string> rewrites;            // rewrites applied, in order
  std::vector<uint64_t> list_rows_appended;     // GPU: per list output, rows the kernel appended
  std::vector<int64_t> list_seen_cells;         // GPU: per list output, the cells of its seen table
                                                // (a distinct list of vector lookups; 0: none)
  std::vector<std::string> copies;              // inputs gamut had to copy, and why
  // Options given that do not apply to the engine that ran ("tile", "repeats", "f32_math" on the
  // CPU engine), and why that engine ran ("backend cpu asked", "no NVIDIA GPU found"): the CLI's
  // summary and Python's stats name them, each in its own spelling.
  std::vector<std::string> ignored_options;
  std::string engine_reason;
  // Several GPUs: each part's GPU, the partition ("partition: 2 parts along i (0..512, 512..1024)
  // on GPUs 0,1"), how the parts merged ("nccl", or "host" and why) and the merge's share of
  // `seconds` (which is the slowest part's engine time plus the merge).
  std::vector<int> devices;
  std::string partition, merge;
  double merge_seconds = 0;
  // Where the call's host time went, phase by phase, in microseconds: recorded only where the
  // environment has GAMUT_HOST_PHASES=1 (bench/python_overhead.py), else empty.
  std::vector<std::pair<std::string, double>> host_phases;
};

// One output: a dense array, or a list (`emit`) as columns of `rows` elements each.
struct Output {
  std::string name;
  bool is_list = false;
  Array array;                                          // dense
  std::vector<std::pair<std::string, Array>> columns;   // list, in the emit's column order
  int64_t rows = 0;                                     // list
};

struct Result {
  // Dense outputs first (the finishing steps' after the others), then lists, each in query order.
  std::vector<Output> outputs;
  RunStats stats;
  const Output* find(std::string_view name) const {
    for (const Output& o : outputs)
      if (o.name == name) return &o;
    return nullptr;
  }
  // Throws a usage error when the query has no output `name`.
  const Output& operator[](std::string_view name) const {
    if (const Output* o = find(name)) return *o;
    throw Error(ExitCode::Usage, "usage error: the query has no output '" + std::string(name) + "'");
  }
};

// One input or parameter of a query, as the query uses it (what a command line checks its
// bindings against before reading any file).
struct BindingInfo {
  std::string name;
  std::string location;        // "FILE:LINE:COL" of its first use
  int rank = 0;                // inputs: indices of its first access (a batch axis not counted)
  bool index = false;          // inputs: an index vector (g in A[g[i]], a `when` key)
  bool output_index = false;   // inputs: indexes an output (C[g[i]]), so it must hold integers
};

// Names of a query's inputs, parameters and outputs (`gamut check`).
struct QueryInfo {
  std::string name;
  std::vector<std::string> inputs, params;
  std::vector<std::pair<std::string, bool>> outputs;   // (name, is_list): dense first, then lists
  bool batched = false;                                // `batch (b) ...`: arrays have a batch axis first
  std::vector<BindingInfo> input_info, param_info;     // in `inputs` / `params` order
};

class GAMUT_API Query {
 public:
  // Parse and check the query (a query error names `name`:LINE:COL). The typed plan for each
  // signature of input element types is built on first use and kept.
  static Query compile(const std::string& text, const std::string& name = "<query>");
  // Read the query from a file (usage error when unreadable), then compile() it.
  static Query load(const std::string& path);

  Result run(const Inputs& inputs, const Options& options = {}) const;
  // The plan as `gamut explain` prints it: without inputs the untyped plan; with inputs the
  // typed plan, extents, output shapes, rewrites, the GPU tile, and which inputs would be copied.
  std::string explain(const Inputs& inputs = {}, const Options& options = {}) const;
  // The CUDA C++ the GPU backend compiles for these inputs (`explain --source`; needs no GPU):
  // every kernel the run launches, in order (the main kernel, a top/bottom selection after it,
  // a rewritten program's stage kernels), each after a `// kernel source ...` title line.
  std::string kernel_source(const Inputs& inputs, const Options& options = {}) const;

  // The GPU kernel variants `gamut tune` searches for these inputs on the current GPU (an H100
  // without one), as Options::kernel_variant takes them: the heuristics' choice first. Empty
  // where there is nothing to search (a rewritten program, mma.sync kernels, a forced tile).
  std::vector<std::string> kernel_variants(const Inputs& inputs, const Options& options = {}) const;
  // Compiles (or finds in the kernel cache) the GPU kernels of several runs of these inputs,
  // one Options each (a kernel_variant apiece in `gamut tune`), on `threads` threads at once, so
  // that the runs then start without compiling; returns when all are done. Errors are left to
  // the runs, which report them.
  void compile_ahead(const Inputs& inputs, const std::vector<Options>& runs, int threads) const;

  const QueryInfo& info() const;
  const std::string& text() const;

  struct Impl;

 private:
  explicit Query(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<Impl> impl_;
};

// `gamut tune` (docs/cli.md): per family of kernels, reference queries at a few sizes, every
// kernel variant of Query::kernel_variants timed (CUDA events, the median of `repeats` after a
// warm-up) beside the heuristics' choice in the same run; each variant's outputs checked
// against the heuristics'. The winners (the heuristics' own where no variant beat them by 2 %)
// go to the table of this GPU in the cache directory, which the kernel choice reads from then on.
struct TuneOptions {
  std::vector<std::string> families;   // of tune_families(); empty: all
  double seconds = 540;                // the whole search's budget: it stops cleanly when spent
  // (M = N, K) of the reference queries (batched ones: M = N halved, batch 4); empty: the defaults.
  std::vector<std::pair<int64_t, int64_t>> sizes;
  std::string out_dir;                 // also write the table (with every time) here; "" none
  int repeats = 5;
  // Called with the fraction done and what is being timed.
  std::function<void(double fraction, const std::string& what)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set to stop (gamut::Cancelled)
};
struct TuneReport {
  std::string table_path;              // the table written (the cache directory's)
  std::string out_path;                // its copy in out_dir ("" none)
  std::string json;                    // the table's text: entries and every timed variant
  std::vector<std::string> lines;      // one per query and size: what won, or why nothing
  bool stopped = false;                // the budget ran out before the search's end
  double seconds = 0;                  // the search's wall time, compiles included
};
// The families tune() knows ("products", "lists", "semirings", "batched").
GAMUT_API std::vector<std::string> tune_families();
// The default sizes (M = N, K).
GAMUT_API std::vector<std::pair<int64_t, int64_t>> tune_default_sizes();
// Throws a device error without a GPU, a usage error for an unknown family or a bad size.
GAMUT_API TuneReport tune(const TuneOptions& options = {});

// True when the GPU backend can run here; `why` gets the reason when not
// ("no usable CUDA device: ...").
GAMUT_API bool gpu_available(std::string* why = nullptr);
// The compiled-kernel cache shared with the CLI ($GAMUT_CACHE_DIR, else ~/.cache/gamut).
GAMUT_API std::string kernel_cache_dir();
GAMUT_API size_t clear_kernel_cache();     // entries removed
struct CacheEntry {
  std::string key;
  size_t cubin_bytes = 0;
  bool valid = true;                       // false: corrupt, rebuilt on next use
  std::string source_path;                 // the kernel's CUDA source beside it
};
GAMUT_API std::vector<CacheEntry> kernel_cache_entries();

}  // namespace gamut
