// The whole path from query text and bindings to results, shared by the CLI, tests and benches.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bind/bind.h"
#include "gamut/gamut.h"
#include "lang/diagnostics.h"
#include "plan/math_choice.h"
#include "plan/plan.h"
#include "rewrite/aggregate_pushdown.h"

namespace gamut {

namespace cuda {
struct GpuRunOptions;
struct LaunchRecord;
}  // namespace cuda

enum class Backend { Auto, Cpu, Gpu };

// What a repeated call keeps of one stage query (RunOptions::stage_memo): its plan for the
// input types (made on first use, under `mu`) and the GPU engine's kernel memo.
struct StageMemo {
  std::mutex mu;
  std::shared_ptr<const Plan> plan;
  std::shared_ptr<void> kernel_memo;
};

struct RunOptions {
  Backend backend = Backend::Auto;
  int threads = 0;   // CPU engine threads (0: all)
  std::string tile;  // GPU tile override, "" = chosen per query
  // GPU kernel variant forced (cuda/codegen/kernel_variants.h text; "" = chosen), and whether
  // the choice may take a tuned table's winner (`gamut tune`).
  std::string kernel_variant;
  bool use_tuned = true;
  int repeats = 0;  // GPU: time this many launches after one warm-up (median)
  // The library's callers: the CUDA stream (cudaStream_t) every GPU operation goes to (nullptr:
  // the legacy default stream); dense and list outputs in the caller's device memory and no
  // waiting (cuda::GpuRunOptions::dense_output, list_output, asynchronous).
  void* stream = nullptr;
  std::function<void*(size_t d, size_t bytes)> dense_output;
  std::function<std::vector<void*>(size_t l, int64_t rows)> list_output;
  bool asynchronous = false;
  std::shared_ptr<void>* kernel_memo = nullptr;  // cuda::GpuRunOptions::kernel_memo, for this plan only
  // A rewritten program's stage queries: the memo of one stage by a key naming its plan (its
  // text and input types); the library keeps them per query so that a repeated call neither
  // plans the stage again nor generates code. Empty: none.
  std::function<std::shared_ptr<StageMemo>(const std::string& key)> stage_memo;
  // Called with the fraction of the run done (0..1): CPU row tiles, GPU launches, push-down
  // stages. The CPU engine calls it from its worker threads, concurrently: it must be
  // thread-safe and cheap (a progress bar checks the clock and returns).
  std::function<void(double fraction)> progress;
  // Set from any thread to stop the run with gamut::Cancelled: the CPU engine reads it before
  // each tile of pairs and each block of columns and of k values, the GPU engine before each
  // kernel launch, a rewritten program before each stage.
  const std::atomic<bool>* cancel = nullptr;
  F32Math f32_math = F32Math::Ieee;  // sums of products of f32 inputs (spec section 10)
  // Several GPUs (partition/multi_device.h): one part per ordinal, resolved (resolve_devices);
  // empty: the normal run on the current device. A program of a bound rewrite runs its first
  // stages on the current device and splits its last stage (the M x N work) over these.
  std::vector<int> devices;
  // A run that was one launch a repeated call can replay: filled (cuda::GpuRunOptions::record).
  cuda::LaunchRecord* launch_record = nullptr;
  // A GPU run of several kernels compiles them on helper threads meanwhile (driver/kernels_ahead.h):
  // for a first call. The library turns it off where its memos hold the kernels already.
  bool compile_ahead = true;
};

// How a run went: the public record (gamut::RunStats) itself, filled by the engines and the
// pipeline and handed to the caller as it is. execute() fills the run's fields (backend, times,
// cache, tile, mainloop, threads, device memory, list counts, devices); the library adds the
// instance's extents, the math, rewrites and copies.
using RunReport = RunStats;

// A query compiled against bindings: owns the source, plan and data the Instance points into.
struct Prepared {
  Source source;
  Bindings bindings;
  Plan plan;
  Instance instance;
  // Set when a bound rewrite replaced the query by a sequence of stage queries (push-down).
  std::optional<PushdownProgram> program;
};

// Read a query file (usage error, exit 2, when missing, unreadable or a directory).
// Query files are read up to this many bytes (a query is text a person writes).
inline constexpr size_t kMaxQueryBytes = size_t(1) << 22;
Source read_query_file(const std::string& path);
// Parse `NAME=VALUE` texts and `--dim NAME=D1[,D2]` texts without a query (tools and tests):
// numbers bind scalars and anything else is a .npy path. (The CLI reads its bindings as the query
// says: src/cli/bindings.cpp.)
Bindings parse_bindings(const std::vector<std::string>& args, const std::vector<std::string>& dims);
// The command-line syntax both readers share: whether VALUE binds a scalar (a number, `inf`,
// `-inf`), and the extents of `--dim NAME=TEXT` (usage errors name the option).
bool looks_numeric(const std::string& value);
std::vector<int64_t> parse_dim_extents(const std::string& name, const std::string& text);
// Which bound rewrites may apply.
struct RewriteChoice {
  bool data = true;                  // aggregate push-down, bit packing: they read the data on the host
  bool one_sided = true;             // hoist-one-sided / expand-squares (rewrite/one_sided_sums.h): types only
  F32Math f32_math = F32Math::Ieee;  // the run's math, which expand-squares depends on
};
// Typed plan from source + bindings, with the rewrite passes applied; then bind. A bool is
// every bound rewrite (under f32_math ieee) or none.
std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, bool bound_rewrites = true);
std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const RewriteChoice& rewrites);
// prepare() for a plan already typed for these bindings' element types (plan_with_rewrites of
// type_env(bindings)): the library builds that once per signature of input types and binds it
// for every call.
std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, bool bound_rewrites = true);
std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, const RewriteChoice& rewrites);
// The bound rewrite (aggregate push-down, then bit packing, then one-sided sums) of a plan bound
// to data, if one applies; prepare() records it in Prepared::program.
struct BoundRewrite {
  PushdownProgram program;
  std::string name;
};
std::optional<BoundRewrite> bound_rewrite(const Plan& plan, const Instance& inst, const Source& source,
                                          const Bindings& b, const RewriteChoice& rewrites = {});
// prepare() of a typed plan whose bound rewrite the caller already made (bound_rewrite of the
// same plan and bindings; a library call keeps the one-sided rewrite per shape, query.cpp).
std::unique_ptr<Prepared> prepare(Source source, Bindings bindings, const Plan& typed, BoundRewrite rewrite);
// Marks the last stage of `rewrite` (a bound rewrite of the typed plan `plan`) to run with list
// provenance (Options::list_provenance: a block of a partitioned run), so that its top/bottom
// lists carry the hidden columns: the key as that stage computes it and its (b, i, j), which
// are `plan`'s where the stage keeps `plan`'s axes and lists. Only the one-sided rewrite's last
// stage does; for any other rewrite nothing is marked and the result is false.
bool carry_list_provenance(BoundRewrite& rewrite, const Plan& plan);
// A stage query's typed plan for these input types: plan_with_rewrites, with list provenance
// where the stage asks for it (StageQuery::list_provenance).
Plan stage_plan(const StageQuery& stage, const Source& source, const TypeEnv& env);
// What the one-sided rewrite of a bound plan depends on besides the plan's input types: the
// math and the instance's ranges and output extents (its stage texts name them).
std::string one_sided_key(const Instance& inst, F32Math f32_math);
// Plan with the rewrite passes applied (also used by `explain` without data).
Plan plan_with_rewrites(const Source& source, const TypeEnv& env);
// Why no GPU can be used, as "no usable CUDA device: REASON" (said once); "" when one can.
std::string no_device_reason();
// The GPU engine's options for a run: tile, kernel memo, math, repeats, progress (the same for
// one GPU and for each part on several; `explain --source` shows the kernel they choose). Its
// progress calls options.progress: `options` must outlive it.
cuda::GpuRunOptions gpu_run_options(const RunOptions& options);
// Run on the chosen backend.
Results execute(const Prepared& p, const RunOptions& options, RunReport* report);
// The same for a bound instance without a rewrite program (the library binds its cached typed
// plan per call, without copying it into a Prepared).
Results execute(const Instance& inst, const RunOptions& options, RunReport* report);

}  // namespace gamut
