// run_gpu: plan -> generated source -> NVRTC (cached) -> upload -> launch -> Results, as the
// named steps of one GpuRun (choose, compile, check memory, bind inputs, bind outputs, launch
// until the lists fit, repeat, collect).
#include "cuda/gpu_engine.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "bind/footprint.h"
#include "core/error.h"
#include "core/host_phases.h"
#include "core/sizes.h"
#include "cuda/codegen/choice_key.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/codegen/tile_choice.h"
#include "cuda/engine/input_args.h"
#include "cuda/engine/operand_copies.h"
#include "cuda/outputs/dense/host/dense_outputs.h"
#include "cuda/outputs/list/host/launch_lists.h"
#include "cuda/runtime.h"
#include "plan/math_choice.h"

namespace gamut::cuda {

bool gpu_available(std::string* why) { return device_available(why); }

namespace {

// Lists: room for 2^20 rows, or for what the tiles' top/bottom pre-selection is expected to
// keep; a list that overflows grows and the kernel runs again (rows are never dropped), once per
// kernel memo since the grown buffers are kept. A tile keeps up to N rows per group it touches,
// but only those that beat the group's threshold, which the tiles before it lowered: with the
// spread tile order (codegen/tiles.cpp) a group's T tiles run about C at a time (the concurrent
// blocks over the tiles of the other axis), so a group gets about N (C + ln(T / C) + 1) rows on
// data in random order (GpuLists.ReservoirsKeepAppendedRowsNearN measures ~100 per row for
// N = 10, T = 64). Twice that, at most N per group and tile (a quarter more for ties): every
// tile keeping N per group, as on data sorted against the key, overflows once.
int64_t initial_list_rows(const Instance& inst, const TileConfig& tile, int64_t tiles, int sm_count) {
  const Plan& P = *inst.plan;
  const int64_t rows = inst.row.size(), cols = inst.col.size();
  const int64_t pairs = size_mul_saturated(size_mul_saturated(rows, cols), inst.batch);
  const int64_t tiles_m = (rows + tile.bm - 1) / tile.bm, tiles_n = tiles_m ? tiles / tiles_m : 0;
  const int64_t concurrent = std::max<int64_t>(2 * int64_t(sm_count), 1);  // blocks resident at once, at most
  int64_t capacity = int64_t(1) << 20;
  for (size_t l = 0; l < P.lists.size(); ++l) {
    const ListOutput& spec = P.lists[l];
    if (spec.mode != ListMode::Top && spec.mode != ListMode::Bottom) continue;
    const int64_t n = inst.list_limits[l];
    const int64_t per_tile = spec.per == PerGroup::Row   ? size_mul_saturated(std::min<int64_t>(tile.bm, rows), n)
                             : spec.per == PerGroup::Col ? size_mul_saturated(std::min<int64_t>(tile.bn, cols), n)
                                                         : n;
    const int64_t every_tile =
        size_mul_saturated(size_mul_saturated(size_mul_saturated(tiles, inst.batch), per_tile) / 4, 5);
    // Groups, the tiles each group spans (T) and those of them running at once (C).
    const int64_t groups = spec.per == PerGroup::Row   ? size_mul_saturated(rows, inst.batch)
                           : spec.per == PerGroup::Col ? size_mul_saturated(cols, inst.batch)
                                                       : 1;
    const int64_t across = spec.per == PerGroup::Row   ? tiles_n
                           : spec.per == PerGroup::Col ? tiles_m
                                                       : size_mul_saturated(tiles, inst.batch);
    const int64_t lanes = spec.per == PerGroup::Row   ? size_mul_saturated(tiles_m, inst.batch)
                          : spec.per == PerGroup::Col ? size_mul_saturated(tiles_n, inst.batch)
                                                      : 1;
    const double T = double(std::max<int64_t>(across, 1));
    const double C = std::min(T, std::max(1.0, std::ceil(double(concurrent) / double(std::max<int64_t>(lanes, 1)))));
    const double per_group = double(n) * (C + std::log(T / C) + 1) * 2;
    const double expected = std::min(double(groups) * per_group, 0x1p62);
    capacity = std::max(capacity, std::min(every_tile, int64_t(expected)));
  }
  // At most 2^26 rows up front (about 2 GB of columns): beyond that, grow to the exact count.
  return std::min({pairs, capacity, int64_t(1) << 26});
}

// Loaded modules stay loaded for the process: a second run of a query pays a map lookup, not a
// module load.
Kernel& loaded_kernel(const CompiledModule& module) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Kernel>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  auto& k = loaded[module.key];
  if (!k) k = std::make_unique<Kernel>(module, kMainKernelName);
  return *k;
}

// What a run of one plan with one tile variant needs from code generation and the caches.
struct Compiled {
  KernelInfo info;
  Kernel* kernel = nullptr;
  std::string key;
};
struct KernelMemo {
  std::mutex mu;
  std::map<std::string, Compiled> by_variant;  // tile, code options, arch
  // The list buffers of the last run per variant; a run takes them out (a concurrent run of the
  // same plan makes its own) and puts them back when it is done. Parked while here
  // (park_device_bytes: a run's device peak counts only its own buffers).
  std::map<std::string, std::unique_ptr<DeviceLists>> idle_lists;
  // The kernel choices of the last runs, by what the choice read (choice_key), newest last.
  std::vector<std::pair<std::string, std::shared_ptr<const KernelSpec>>> specs;
  static constexpr size_t kSpecs = 16;
  // The last run kept at most kFewKept of its pairs in its lists (the next choice reads it:
  // KernelRequest::few_kept).
  std::atomic<bool> few_kept{false};
  std::unique_ptr<DeviceLists> take(const std::string& variant) {
    std::unique_ptr<DeviceLists> l;
    if (auto it = idle_lists.find(variant); it != idle_lists.end()) {
      l = std::move(it->second);
      idle_lists.erase(it);
      if (l) unpark_device_bytes(l->held_bytes());
    }
    return l;
  }
  void put(const std::string& variant, std::unique_ptr<DeviceLists> l) {
    std::unique_ptr<DeviceLists> old = take(variant);  // (a concurrent run's: freed)
    park_device_bytes(l->held_bytes());
    idle_lists[variant] = std::move(l);
  }
  ~KernelMemo() {
    for (auto& [variant, l] : idle_lists)
      if (l) unpark_device_bytes(l->held_bytes());
  }
};

// The median of timed repetitions (0 without any).
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// One call of run_gpu. Each step reads what the steps before it left in the members.
class GpuRun {
 public:
  GpuRun(const Instance& inst, const GpuRunOptions& options, GpuRunStats* stats)
      : inst_(inst), P_(*inst.plan), options_(options), stats_(stats), dev_(device()) {
    memo_ = options.kernel_memo ? static_cast<KernelMemo*>(options.kernel_memo->get()) : nullptr;
    steps_ = 2 + (options.repeats > 0 ? options.warmup + options.repeats : 0);
  }

  Results run() {
    host_phase("execute -> run_gpu");
    choose();
    host_phase("gpu: choose the kernel");
    compile();
    host_phase("gpu: kernel (memo)");
    check_memory();
    host_phase("gpu: check memory");
    bind_inputs();
    host_phase("gpu: bind inputs");
    bind_outputs();
    host_phase("gpu: list buffers");
    launch_until_fits();
    host_phase("gpu: launch's end");
    repeat();
    Results r = collect();
    host_phase("gpu: collect");
    return r;
  }

 private:
  void choose();
  void compile();
  void check_memory();
  void bind_inputs();
  void bind_outputs();
  void launch_until_fits();
  int64_t band_aligned_blocks(int64_t even) const;
  void repeat();
  Results collect();
  void launch();  // the operand copies and the kernel, in stream order
  void record_launch(int launches);
  void outputs_before_launch();

  const Instance& inst_;
  const Plan& P_;
  const GpuRunOptions& options_;
  GpuRunStats* stats_;
  const DeviceInfo& dev_;  // the current device
  KernelMemo* memo_ = nullptr;
  int64_t steps_ = 0;  // progress steps: the compilation, the result launch, each benchmark launch
  // choose
  std::vector<std::optional<SeenBox>> boxes_;  // per list: its seen table's box, if it has one
  std::shared_ptr<const KernelSpec> spec_;
  // compile
  Compiled own_;                      // a kernel compiled or found in the caches by this run
  const Compiled* compiled_ = &own_;  // own_, or the memo's entry (never removed)
  std::optional<JoinGroups> groups_;  // grouped joins: only the tiles of matching key groups run
  // check_memory
  int64_t tiles_m_ = 0, tiles_n_ = 0, list_rows_ = 0;
  std::unique_ptr<DeviceLists> lists_;  // the memo's kept buffers until bind_outputs
  // bind_inputs, bind_outputs
  std::vector<uint64_t> words_;  // the kernel's argument (ArgLayout)
  InputArgs inputs_;
  std::optional<DeviceDenseOutputs> dense_;
  std::vector<OutputBuffers*> outputs_;  // every kind's host side (outputs/output_kind.h): dense_, lists_
  // launch_until_fits
  int64_t blocks_ = 0;
};

// The kernel for this instance on this device (gpu_kernel_spec, as `explain --source` shows it).
// Distinct lists of vector lookups whose values lie in a small box run on seen tables
// (outputs/list/finish/seen.h); decided before the kernel, which takes wgmma when every distinct list has one.
void GpuRun::choose() {
  for (int64_t end : {inst_.row.end, inst_.col.end, inst_.red.end})
    if (end > INT_MAX) throw_device_error("an axis range end above 2^31-1 is not supported on the GPU");
  if (options_.seen_tables) boxes_ = seen_boxes(inst_, device_vector_range());
  // A choice the memo remembers for what this one reads: only where every input is in device
  // memory (the choice reads host inputs' values: packed 16-bit steps where they fit) and no
  // seen table's box (read from the data) takes part.
  bool all_on_device = !inst_.inputs.empty();
  for (size_t o = 0; o < inst_.inputs.size(); ++o) all_on_device = all_on_device && inst_.on_device(o);
  const bool remembered =
      memo_ && all_on_device && std::none_of(boxes_.begin(), boxes_.end(), [](const auto& b) { return b.has_value(); });
  const bool few = memo_ && memo_->few_kept.load(std::memory_order_relaxed);
  std::string key;
  if (remembered) {
    key = choice_key(inst_, options_, current_device());
    key += few ? "|few kept" : "";
    std::lock_guard<std::mutex> lock(memo_->mu);
    for (const auto& [k, spec] : memo_->specs)
      if (k == key) {
        spec_ = spec;
        return;
      }
  }
  spec_ = std::make_shared<const KernelSpec>(gpu_kernel_spec(inst_, options_, current_kernel_target(), boxes_, few));
  std::string why;
  if (!spec_->options.tensor_cores() && !tile_valid(spec_->tile, &why))
    throw_usage_error("--tile " + spec_->tile.str() + ": " + why);
  if (remembered) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    if (memo_->specs.size() >= KernelMemo::kSpecs) memo_->specs.erase(memo_->specs.begin());
    memo_->specs.emplace_back(std::move(key), spec_);
  }
}

// The loaded kernel: from the caller's memo, else generated and compiled (or found in the
// in-process and disk caches).
void GpuRun::compile() {
  bool memo_hit = false;
  if (memo_) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    if (auto it = memo_->by_variant.find(spec_->variant); it != memo_->by_variant.end()) {
      compiled_ = &it->second;
      memo_hit = true;
    }
  }
  CompiledModule module;
  if (!memo_hit) {
    own_.info = kernel_info(P_, spec_->tile, spec_->options);
    if (own_.info.smem_bytes > dev_.smem_per_block_optin)
      throw_device_error("tile " + spec_->tile.str() + " needs " + std::to_string(own_.info.smem_bytes) +
                         " bytes of shared memory per block; the device has " +
                         std::to_string(dev_.smem_per_block_optin));
    CompileOptions co;
    co.arch = spec_->arch;
    module = compile_cached(generate_source(P_, spec_->tile, spec_->options), co, kCodegenSchema);
    own_.kernel = &loaded_kernel(module);
    own_.key = module.key;
    if (memo_) {
      std::lock_guard<std::mutex> lock(memo_->mu);
      compiled_ = &memo_->by_variant.emplace(spec_->variant, own_).first->second;
    }
  }
  if (spec_->options.grouped_join) groups_ = group_join(P_, inst_, spec_->tile.bm, spec_->tile.bn);
  if (stats_) {
    stats_->compile_ms = memo_hit ? 0 : module.compile_ms;
    stats_->backend = "gpu";
    stats_->cache = memo_hit ? "memory" : cache_hit_name(module.hit);
    stats_->cache_key = compiled_->key;
    stats_->tile = spec_->label;
    stats_->mainloop = spec_->mainloop;
    stats_->kernel_choice = spec_->choice;
    stats_->kernel_family = spec_->family;
  }
  if (options_.progress) options_.progress(1, steps_);
}

// Before anything is allocated: does the run fit in the device's memory? (bind/footprint.h)
// A library call on device arrays with only dense outputs allocates nothing of its own, unless
// tensor-core operands are copied (encode_operand_maps, repitch_operands).
void GpuRun::check_memory() {
  const TileConfig& tile = spec_->tile;
  const CodegenOptions& cgo = spec_->options;
  tiles_m_ = (inst_.row.size() + tile.bm - 1) / tile.bm;
  tiles_n_ = (inst_.col.size() + tile.bn - 1) / tile.bn;
  list_rows_ =
      options_.list_rows > 0 ? options_.list_rows : initial_list_rows(inst_, tile, tiles_m_ * tiles_n_, dev_.sm_count);
  const bool may_copy =
      cgo.tensor_cores() && ((cgo.tma && wgmma_needs_tma(cgo.tensor_math)) || !tma_operands_fit(inst_, spec_->math));
  const bool own_nothing = options_.dense_output && P_.lists.empty();
  // The list buffers a memo kept from the last run of this variant, if they may serve here.
  if (memo_ && !P_.lists.empty()) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    lists_ = memo_->take(spec_->variant);
    if (lists_ && !lists_->usable_here()) lists_.reset();  // (another device or stream)
  }
  if (own_nothing && !may_copy) return;
  MemoryEstimate need = own_nothing ? MemoryEstimate{} : gpu_device_memory(inst_, list_rows_);
  if (may_copy) need.add("copies of tensor-core operands with 16-byte rows", operand_copies_bytes(inst_, spec_->math));
  // What the kept list buffers hold is part of what the estimate asks for; where they hold it
  // all, nothing is asked of the device (cudaMemGetInfo costs ~30 us a call).
  const size_t kept = lists_ ? lists_->held_bytes() : 0;
  if (need.total() > int64_t(kept)) {
    const DeviceMemory free_mem = device_memory();
    require_fits(need, int64_t(free_mem.free + kept), "device memory",
                 "free of " + bytes_text(int64_t(free_mem.total)) + " on the device");
  }
}

void GpuRun::bind_inputs() {
  words_.assign(size_t(compiled_->info.args.count), 0);
  cuda::bind_inputs(inst_, *spec_, compiled_->info, groups_ ? &*groups_ : nullptr, tiles_m_ * tiles_n_, words_,
                    inputs_);
}

// The dense outputs (gamut's memory or the caller's) and the list buffers (the memo's kept ones
// reused for this run, or new ones). Their words are written before each launch (a list that
// grew has new buffers).
void GpuRun::bind_outputs() {
  dense_.emplace(inst_, options_.dense_output ? &options_.dense_output : nullptr);
  host_phase("gpu: dense outputs (allocated)");
  if (lists_)
    lists_->reuse(inst_, list_rows_, spec_->tile, boxes_);
  else
    lists_ = std::make_unique<DeviceLists>(inst_, list_rows_, spec_->tile, boxes_);
  lists_->collect_into(options_.list_output ? &options_.list_output : nullptr);
  outputs_ = {&*dense_, lists_.get()};
}

// Every output kind's starting values and words, before a launch.
void GpuRun::outputs_before_launch() {
  for (OutputBuffers* o : outputs_) {
    o->before_launch();
    o->bind(compiled_->info.args, words_);
  }
}

void GpuRun::launch() {
  const KernelInfo& info = compiled_->info;
  void* args[] = {words_.data()};
  inputs_.copies.run();
  compiled_->kernel->launch(unsigned(blocks_), 1, 1, unsigned(info.threads), 1, 1, info.smem_bytes, args);
}

// Resident thresholds (KernelInfo::resident_top): block q runs the contiguous tiles [q T / G,
// (q + 1) T / G), and a block whose range crosses from one band (the tiles of a row tile, per i;
// of a column tile, per j) into the next starts its groups' selection afresh there: a band cut in
// two keeps ~2 N (1 + ln(n / 2N)) candidates per group instead of N (1 + ln(n / N)), and each
// start's first tiles pass nearly every pair. So where whole bands, or bands cut into s equal
// parts, give a block at most kBandSlack more tiles than the even split, the grid is bands * s
// (q T / G then falls on the parts' edges). bench/NOTES.md, session 38. GAMUT_EXPERIMENT_WHOLE_BANDS=0:
// the even split (an A/B switch, read per launch).
int64_t GpuRun::band_aligned_blocks(int64_t even) const {
  constexpr double kBandSlack = 1.06;
  if (const char* e = std::getenv("GAMUT_EXPERIMENT_WHOLE_BANDS"); e && std::string(e) == "0") return even;
  const int list = resident_top_form(P_);
  if (list < 0) return even;
  const bool per_col = P_.lists[size_t(list)].per == PerGroup::Col;
  const int64_t batch = std::max<int64_t>(inst_.batch, 1);
  const int64_t bands = size_mul_saturated(per_col ? tiles_n_ : tiles_m_, batch);
  const int64_t length = per_col ? tiles_m_ : tiles_n_;  // tiles a band
  if (even <= 0 || bands <= 0 || length <= 0 || bands > even) return even;
  const int64_t parts = std::min(even / bands, length);  // a band's parts, >= 1 here
  const int64_t aligned_tiles = (length + parts - 1) / parts;
  const int64_t even_tiles = (size_mul_saturated(bands, length) + even - 1) / even;
  return double(aligned_tiles) <= kBandSlack * double(even_tiles) ? bands * parts : even;
}

// The result launch: again, with room for every row, while a list outgrew its buffers (rows are
// never dropped). Outputs start from their identities and lists from empty each time.
void GpuRun::launch_until_fits() {
  const KernelInfo& info = compiled_->info;
  // Clusters of two blocks run row tiles in pairs (KernelInfo::cluster): ceil(tiles_m / 2) pairs.
  const int64_t tiles = tiles_m_ * tiles_n_;
  const int64_t grid_tiles = info.cluster == 2 ? 2 * ((tiles_m_ + 1) / 2) * tiles_n_ : tiles;
  const int64_t tile_blocks = groups_ ? groups_->tile_count() : size_mul_saturated(grid_tiles, inst_.batch);
  if (tile_blocks > INT_MAX)
    throw_device_error("the problem needs " + std::to_string(tile_blocks) + " thread blocks (at most 2^31-1)");
  // A persistent kernel: one block per SM (or the caller's count), never more than the tiles, a
  // whole number of clusters; with resident thresholds, blocks aligned with the bands.
  const int64_t resident = options_.resident_blocks > 0 ? options_.resident_blocks : dev_.sm_count;
  blocks_ = info.persistent ? std::max<int64_t>(std::min<int64_t>(tile_blocks, resident) / info.cluster * info.cluster,
                                                std::min<int64_t>(tile_blocks, info.cluster))
                            : tile_blocks;
  if (info.resident_top && info.cluster == 1 && !groups_ && options_.resident_blocks <= 0)
    blocks_ = band_aligned_blocks(blocks_);
  double ms = 0;
  int launches = 0;
  while (true) {
    throw_if_cancelled(options_.cancel);
    launches += blocks_ > 0;
    outputs_before_launch();
    host_phase("gpu: outputs before launch");
    if (blocks_ > 0 && options_.asynchronous) {  // in stream order, nothing waits
      launch();
      host_phase("gpu: kernel launch");
      for (OutputBuffers* o : outputs_) o->after_launch();  // (the overflow check below waits once for both)
    } else if (blocks_ > 0) {
      EventTimer timer;
      timer.start();
      launch();
      timer.stop();
      for (OutputBuffers* o : outputs_) o->after_launch();  // (in stream order behind the kernel: one wait for both)
      ms += timer.elapsed_ms();
      synchronize();
    }
    bool grew = false;
    for (OutputBuffers* o : outputs_) grew = o->grow_if_overflowed() || grew;
    if (!grew) break;
  }
  record_launch(launches);
  const DeviceLists& lists = *lists_;
  // The share of pairs this run kept in its lists, for the next run's kernel choice.
  if (memo_ && blocks_ > 0 && !P_.lists.empty()) {
    int64_t kept = 0;
    for (size_t l = 0; l < P_.lists.size(); ++l) kept = std::max(kept, int64_t(lists.count(l)));
    const double pairs =
        double(inst_.row.size()) * double(inst_.col.size()) * double(std::max<int64_t>(inst_.batch, 1));
    memo_->few_kept.store(pairs > 0 && double(kept) <= kFewKept * pairs, std::memory_order_relaxed);
  }
  if (options_.progress) options_.progress(2, steps_);
  if (!stats_) return;
  stats_->kernel_ms = ms;
  stats_->seconds = ms / 1e3;
  stats_->result_launches = launches;
  stats_->launch_blocks = blocks_;
  stats_->persistent = info.persistent;
  stats_->resident_top = info.resident_top;
  stats_->lists_finished_with_kernel = lists.finished_with_kernel();
  stats_->list_rows_appended.clear();
  for (size_t l = 0; l < P_.lists.size(); ++l) stats_->list_rows_appended.push_back(blocks_ > 0 ? lists.count(l) : 0);
  stats_->list_seen_cells.clear();
  for (size_t l = 0; l < P_.lists.size(); ++l) stats_->list_seen_cells.push_back(lists.seen_cells(l));
}

// The run as a launch record (GpuRunOptions::record), where one launch of the kernel was all of
// it and a repeated call needs nothing but new pointers in the words: every input the caller's
// device array in place (no uploads or operand copies, which hold addresses of their
// own; tensor maps are made again from the new addresses), dense outputs in the caller's memory,
// no lists and no computed output indices (whose misses collect() reads back).
void GpuRun::record_launch(int launches) {
  if (!options_.record || !options_.asynchronous || !options_.dense_output || options_.repeats > 0) return;
  const KernelInfo& info = compiled_->info;
  const ArgLayout& L = info.args;
  if (launches != 1 || blocks_ <= 0 || !P_.lists.empty() || groups_ || dense_->counts_key_misses()) return;
  if (!inputs_.copies.sources.empty() || !inputs_.copies.buffers.empty() || !inputs_.join_buffers.empty()) return;
  for (const DeviceBuffer& u : inputs_.uploads)
    if (u.get()) return;
  LaunchRecord r;
  for (size_t a = 0; a < P_.accesses.size(); ++a) {
    const size_t o = size_t(P_.accesses[a].operand);
    const int slot = L.access[a].ptr;
    if (slot < 0 || !inst_.inputs[o]) continue;
    if (!inst_.on_device(o)) return;
    const auto data = int64_t(reinterpret_cast<uintptr_t>(inst_.device_inputs[o].data));
    r.inputs.push_back({int(o), slot, int64_t(words_[size_t(slot)]) - data});
  }
  // A tensor map holds its operand's address (that of the access the mainloop's math names).
  for (const bool row : {true, false}) {
    const int map = row ? L.tma_a : L.tma_b, a = row ? spec_->math.row_access : spec_->math.col_access;
    if (map < 0) continue;
    if (a < 0 || L.access[size_t(a)].ptr < 0) return;
    const size_t o = size_t(P_.accesses[size_t(a)].operand);
    if (!inst_.on_device(o)) return;
    const auto data = int64_t(reinterpret_cast<uintptr_t>(inst_.device_inputs[o].data));
    r.maps.push_back({int(o), map, int64_t(words_[size_t(L.access[size_t(a)].ptr)]) - data});
  }
  for (size_t d = 0; d < P_.dense.size(); ++d) {
    LaunchRecord::OutputSlot s;
    s.ptr = L.dense[d].ptr;
    s.vec = L.dense[d].vec;
    s.fill = dense_->needs_fill(d);
    s.op = P_.dense[d].op;
    s.type = P_.dense[d].type;
    s.elements = dense_->elements(d);
    r.outputs.push_back(s);
  }
  r.kernel = compiled_->kernel;
  r.blocks = unsigned(blocks_);
  r.threads = unsigned(info.threads);
  r.smem_bytes = info.smem_bytes;
  r.words = words_;
  *options_.record = std::move(r);
}

// Benchmark repetitions: each starts from the identities again; timed are the launch and the
// device side of the lists (ordering, distinct, top/bottom selection), not the downloads.
void GpuRun::repeat() {
  if (blocks_ <= 0 || options_.repeats <= 0) return;
  if (stats_) stats_->runs_ms.clear();
  for (int r = 0; r < options_.warmup + options_.repeats; ++r) {
    throw_if_cancelled(options_.cancel);
    outputs_before_launch();
    EventTimer timer;
    timer.start();
    launch();
    const double tk = timer.stop_ms();  // the kernel (and operand copies) alone (this waits for it)
    timer.start();
    for (OutputBuffers* o : outputs_) o->finish_on_device();
    const double t = tk + timer.stop_ms();
    if (r >= options_.warmup && stats_) {
      stats_->runs_ms.push_back(t);
      stats_->runs_kernel_ms.push_back(tk);
    }
    if (options_.progress) options_.progress(3 + r, steps_);
  }
  synchronize();
  if (stats_ && !stats_->runs_ms.empty()) {
    stats_->seconds = median(stats_->runs_ms) / 1e3;
    stats_->kernel_seconds = median(stats_->runs_kernel_ms) / 1e3;
  }
}

// The outputs: dense ones downloaded (or views of the caller's memory), lists finished and
// brought to the host or the caller's memory. The list buffers go back to the memo for the next
// run where they are small enough (the copies into the caller's memory are in stream order
// before any later run's launch on this stream), and only on the legacy default stream: the
// buffers are freed in order on their stream, and a caller's own stream may be destroyed
// before the memo is.
Results GpuRun::collect() {
  Results res;
  for (OutputBuffers* o : outputs_) o->collect(res);
  outputs_.clear();  // (lists_ may go to the memo)
  if (memo_ && !P_.lists.empty() && lists_->held_bytes() <= kKeptListBytes && current_stream() == nullptr) {
    std::lock_guard<std::mutex> lock(memo_->mu);
    memo_->put(spec_->variant, std::move(lists_));
  }
  return res;
}

}  // namespace

std::shared_ptr<void> new_kernel_memo() { return std::make_shared<KernelMemo>(); }

void replay_launch(const LaunchRecord& r, const std::vector<const void*>& operands, const std::vector<void*>& outputs,
                   void* stream) {
  if (!r.kernel || outputs.size() != r.outputs.size())
    throw_device_error("internal error: an incomplete launch record");
  StreamScope on(stream);
  std::vector<uint64_t> words = r.words;
  for (const LaunchRecord::InputSlot& s : r.inputs)
    words[size_t(s.slot)] = uint64_t(reinterpret_cast<uintptr_t>(operands.at(size_t(s.operand)))) + uint64_t(s.delta);
  for (const LaunchRecord::InputSlot& s : r.maps)
    replace_tile_map_address(&words[size_t(s.slot)],
                             uint64_t(reinterpret_cast<uintptr_t>(operands.at(size_t(s.operand)))) + uint64_t(s.delta));
  for (size_t d = 0; d < outputs.size(); ++d) {
    const LaunchRecord::OutputSlot& s = r.outputs[d];
    if (s.ptr >= 0) words[size_t(s.ptr)] = uint64_t(reinterpret_cast<uintptr_t>(outputs[d]));
    // (Vector stores were on for 16-byte aligned memory: memory off 16 bytes takes scalar ones.)
    if (s.vec >= 0 && reinterpret_cast<uintptr_t>(outputs[d]) % 16 != 0) words[size_t(s.vec)] = 0;
    if (s.fill) fill_identity(outputs[d], s.op, s.type, s.elements);
  }
  void* args[] = {words.data()};
  auto* kernel = const_cast<Kernel*>(static_cast<const Kernel*>(r.kernel));
  kernel->launch(r.blocks, 1, 1, r.threads, 1, 1, r.smem_bytes, args);
}

TunedDevice current_tuned_device() {
  const DeviceInfo& d = device();
  return TunedDevice{d.name, d.sm_count, d.driver_version, GAMUT_VERSION, kCodegenSchema};
}

KernelTarget current_kernel_target() {
  const DeviceInfo& d = device();
  KernelTarget t = kernel_target(d.sm_count, d.smem_per_block_optin, d.cc_major, d.cc_minor);
  t.tuned = tuned_table_for(cache_dir(), current_tuned_device());
  return t;
}

Results run_gpu(const Instance& inst, const GpuRunOptions& options, GpuRunStats* stats) {
  if (!inst.plan) throw_device_error("internal error: run_gpu without a plan");
  return GpuRun(inst, options, stats).run();  // (device() throws a device error when there is none)
}

}  // namespace gamut::cuda
