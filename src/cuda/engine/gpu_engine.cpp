// run_gpu: plan -> generated source -> NVRTC (cached) -> upload -> launch -> Results.
#include "cuda/gpu_engine.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include "bind/footprint.h"
#include "core/error.h"
#include "core/sizes.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/codegen/tile_choice.h"
#include "cuda/engine/dense_outputs.h"
#include "cuda/engine/launch_lists.h"
#include "cuda/engine/operand_copies.h"
#include "cuda/runtime.h"

namespace gamut::cuda {

bool gpu_available(std::string* why) { return device_available(why); }

namespace {

// The generated source holds everything that shapes the kernel (types, plan, tile), so the cache
// key hashes it and this tag alone: nothing is printed per call to form a key.
constexpr const char* kCodegenSchema = "gamut-cuda-codegen-2";

uint64_t ptr_word(const DeviceBuffer& b) { return uint64_t(reinterpret_cast<uintptr_t>(b.get())); }

// A scalar parameter as the kernel reads it: the bits of its value in compute type t.
uint64_t param_word(const Scalar& s, CType t) {
  const Scalar v = convert_scalar(s, t);
  switch (t) {
    case CType::Bool: return v.i != 0 ? 1 : 0;
    case CType::I32: return uint64_t(uint32_t(int32_t(v.i)));
    case CType::I64: return uint64_t(v.i);
    case CType::F32: {
      const float f = float(v.f);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      return bits;
    }
    case CType::F64: {
      uint64_t bits;
      std::memcpy(&bits, &v.f, 8);
      return bits;
    }
    case CType::Unknown: break;
  }
  throw_device_error("internal error: a parameter of unknown type");
}

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

int64_t product(const std::vector<int64_t>& v, size_t from = 0) {
  int64_t p = 1;
  for (size_t n = from; n < v.size(); ++n) p *= v[n];
  return p;
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

}  // namespace

std::shared_ptr<void> new_kernel_memo() { return std::make_shared<KernelMemo>(); }

Results run_gpu(const Instance& inst, const GpuRunOptions& options, GpuRunStats* stats) {
  if (!inst.plan) throw_device_error("internal error: run_gpu without a plan");
  const Plan& P = *inst.plan;
  const DeviceInfo& dev = device();  // throws a device error when there is none
  const int64_t rows = inst.row.size(), cols = inst.col.size(), batch = inst.batch;
  for (int64_t end : {inst.row.end, inst.col.end, inst.red.end})
    if (end > INT_MAX) throw_device_error("an axis range end above 2^31-1 is not supported on the GPU");

  // Distinct lists of vector lookups whose values lie in a small box run on seen tables
  // (lists/seen.h); decided before the kernel, which takes wgmma when every distinct list has one.
  const std::vector<std::optional<SeenBox>> boxes =
      options.seen_tables ? seen_boxes(inst, device_vector_range()) : std::vector<std::optional<SeenBox>>{};
  const KernelChoice choice =
      choose_kernel(inst, dev.sm_count, dev.smem_per_block_optin, options.tile, options.masked_joins, options.f32_math,
                    tensor_isa(dev.cc_major, dev.cc_minor), every_distinct_seen(P, boxes));
  const TileConfig tile = choice.tile;
  std::string why;
  if (!choice.options.tensor_cores() && !tile_valid(tile, &why)) throw_usage_error("--tile " + tile.str() + ": " + why);
  // Compile (or find in the caches: the caller's memo, then the in-process and disk caches).
  const CodegenOptions& cgo = choice.options;
  CompileOptions co;
  co.arch = options.arch.empty() ? arch_for(dev.cc_major, dev.cc_minor) : options.arch;
  // (The math is part of the variant: tf32 and tf32x3 kernels of one plan share the tile.)
  const char* const math = cgo.tensor_math == InnerMath::F16    ? "f16"
                           : cgo.tensor_math == InnerMath::BF16 ? "bf16"
                           : cgo.tensor_math == InnerMath::Int8 ? "8-bit"
                           : cgo.tensor_math == InnerMath::Tf32 ? "tf32"
                                                                : "tf32x3";
  const std::string mainloop = !cgo.tensor_cores()                       ? "simt"
                               : cgo.tma                                 ? "wgmma+tma"
                               : tc_tile_of(tile, cgo.tensor_math).wgmma ? "wgmma"
                                                                         : "mma.sync";
  // (Resident B shapes the kernel and holds for k ranges of at most its slices, resident
  // thresholds hold for N <= 32: part of the variant, so that a memo never hands such a kernel
  // to a longer k range or a larger N of the same query.)
  const std::string tc = cgo.tensor_cores() ? " " + mainloop + " " + math + (cgo.resident_b ? " resident-b" : "") +
                                                  (cgo.resident_top ? " resident-top" : "") +
                                                  (cgo.epilogue_warpgroups ? " epilogue-wg" : "")
                                            : "";
  const std::string variant =
      tile.str() + (cgo.packed16 ? " packed16" : "") + (cgo.grouped_join ? " grouped-join" : "") + tc + " " + co.arch;
  KernelMemo* memo = options.kernel_memo ? static_cast<KernelMemo*>(options.kernel_memo->get()) : nullptr;
  Compiled compiled;
  bool memo_hit = false;
  if (memo) {
    std::lock_guard<std::mutex> lock(memo->mu);
    if (auto it = memo->by_variant.find(variant); it != memo->by_variant.end()) {
      compiled = it->second;
      memo_hit = true;
    }
  }
  CompiledModule module;
  if (!memo_hit) {
    compiled.info = kernel_info(P, tile, cgo);
    if (compiled.info.smem_bytes > dev.smem_per_block_optin)
      throw_device_error("tile " + tile.str() + " needs " + std::to_string(compiled.info.smem_bytes) +
                         " bytes of shared memory per block; the device has " +
                         std::to_string(dev.smem_per_block_optin));
    module = compile_cached(generate_source(P, tile, cgo), co, kCodegenSchema);
    compiled.kernel = &loaded_kernel(module);
    compiled.key = module.key;
    if (memo) {
      std::lock_guard<std::mutex> lock(memo->mu);
      memo->by_variant.emplace(variant, compiled);
    }
  }
  const KernelInfo& info = compiled.info;
  // Joins: only the tiles of matching key groups run (codegen/join_groups.h).
  std::optional<JoinGroups> groups;
  if (cgo.grouped_join) groups = group_join(P, inst, tile.bm, tile.bn);
  if (stats) {
    stats->compile_ms = memo_hit ? 0 : module.compile_ms;
    stats->cache_hit = memo_hit ? "memory" : cache_hit_name(module.hit);
    stats->cache_key = compiled.key;
    stats->tile = tile.str() + (cgo.packed16 ? " packed16" : "") + (groups ? " grouped-join" : "") + tc;
    stats->mainloop = mainloop;
  }
  Kernel& kernel = *compiled.kernel;
  const int64_t steps = 2 + (options.repeats > 0 ? options.warmup + options.repeats : 0);
  if (options.progress) options.progress(1, steps);

  // Before anything is allocated: does the run fit in the device's memory? (bind/footprint.h)
  // (A library call on device arrays with only dense outputs allocates nothing of its own,
  // unless tensor-core operands are copied: encode_operand_maps, repitch_operands.)
  const int64_t tiles_m = (rows + tile.bm - 1) / tile.bm, tiles_n = (cols + tile.bn - 1) / tile.bn;
  const int64_t tiles = tiles_m * tiles_n;
  const int64_t list_rows =
      options.list_rows > 0 ? options.list_rows : initial_list_rows(inst, tile, tiles, dev.sm_count);
  const bool may_copy =
      cgo.tensor_cores() && ((cgo.tma && wgmma_needs_tma(cgo.tensor_math)) || !tma_operands_fit(inst, choice.math));
  const bool own_nothing = options.dense_output && P.lists.empty();
  // The list buffers a memo kept from the last run of this variant, if they may serve here.
  std::unique_ptr<DeviceLists> kept_lists;
  if (memo && !P.lists.empty()) {
    std::lock_guard<std::mutex> lock(memo->mu);
    kept_lists = memo->take(variant);
    if (kept_lists && !kept_lists->usable_here()) kept_lists.reset();  // (another device or stream)
  }
  if (!own_nothing || may_copy) {
    MemoryEstimate need = own_nothing ? MemoryEstimate{} : gpu_device_memory(inst, list_rows);
    if (may_copy) need.add("copies of tensor-core operands with 16-byte rows", operand_copies_bytes(inst, choice.math));
    // What the kept list buffers hold is part of what the estimate asks for; where they hold it
    // all, nothing is asked of the device (cudaMemGetInfo costs ~30 us a call).
    const size_t kept = kept_lists ? kept_lists->held_bytes() : 0;
    if (need.total() > int64_t(kept)) {
      const DeviceMemory free_mem = device_memory();
      require_fits(need, int64_t(free_mem.free + kept), "device memory",
                   "free of " + bytes_text(int64_t(free_mem.total)) + " on the device");
    }
  }

  const ArgLayout& L = info.args;
  std::vector<uint64_t> w(size_t(L.count), 0);
  w[ArgLayout::kRowBegin] = uint64_t(inst.row.begin);
  w[ArgLayout::kRowEnd] = uint64_t(inst.row.end);
  w[ArgLayout::kColBegin] = uint64_t(inst.col.begin);
  w[ArgLayout::kColEnd] = uint64_t(inst.col.end);
  w[ArgLayout::kRedBegin] = uint64_t(inst.red.begin);
  w[ArgLayout::kRedEnd] = uint64_t(inst.red.end);
  w[ArgLayout::kBatch] = uint64_t(batch);

  // Inputs, and how each access addresses its operand. Matrix rows are padded on the device to
  // whole 4-element and 16-byte chunks (input_pitch; a pitched copy costs nothing over a plain
  // one), so the tile loaders can use 16-byte loads whatever the extents: 4097 columns load
  // like 4100 (4104 for 16-bit data, which TMA then reads too).
  const size_t lead = P.batched ? 1 : 0;
  std::vector<DeviceBuffer> inputs;
  std::vector<int64_t> pitch(P.operands.size(), 0);
  // (A grouped join reads its matrices only as key-ordered copies: the originals stay home.)
  auto gathered_only = [&](size_t o) {
    if (!groups) return false;
    for (int a : P.operands[o].accesses)
      if (pattern_rank(P.accesses[size_t(a)].pattern) != 2 || P.accesses[size_t(a)].pattern == Pattern::RowCol ||
          P.accesses[size_t(a)].pattern == Pattern::ColRow)
        return false;
    return true;
  };
  for (size_t o = 0; o < P.operands.size(); ++o) {
    const NDArray* x = inst.inputs[o];
    if (!x || gathered_only(o) || inst.on_device(o)) {  // (device inputs are read in place)
      inputs.emplace_back(0);
      continue;
    }
    const bool two_d = x->shape.size() == lead + 2;
    if (!two_d) {
      inputs.emplace_back(x->nbytes());
      inputs.back().upload(x->data.data(), x->nbytes());
      continue;
    }
    const int64_t cols_x = x->shape.back(), rows_x = cols_x ? product(x->shape) / cols_x : 0;
    pitch[o] = input_pitch(cols_x, x->dtype);
    const size_t e = dtype_size(x->dtype);
    inputs.emplace_back(size_t(size_mul_or_throw(size_mul_or_throw(rows_x, pitch[o], "input " + P.operands[o].name),
                                                 int64_t(e), "input " + P.operands[o].name)));
    inputs.back().upload_rows(x->data.data(), size_t(rows_x), size_t(cols_x) * e, size_t(pitch[o]) * e);
  }
  for (size_t a = 0; a < P.accesses.size(); ++a) {
    const Access& acc = P.accesses[a];
    const NDArray* x = inst.inputs[size_t(acc.operand)];
    const auto& s = L.access[a];
    if (!x) continue;
    const bool two_d = pattern_rank(acc.pattern) == 2;
    if (x->shape.size() != lead + (two_d ? 2 : 1))
      throw_device_error("internal error: operand " + P.operands[size_t(acc.operand)].name + " has the wrong rank");
    int64_t ld = two_d ? pitch[size_t(acc.operand)] : 1;
    int64_t bstride = !P.batched ? 0 : two_d ? x->shape[lead] * ld : product(x->shape, 1);
    uint64_t ptr = ptr_word(inputs[size_t(acc.operand)]);
    if (inst.on_device(size_t(acc.operand))) {  // the caller's device array, in place
      const Instance::DeviceInput& d = inst.device_inputs[size_t(acc.operand)];
      if (d.strides.size() != x->shape.size() || (!d.strides.empty() && d.strides.back() != 1 && x->shape.back() > 1))
        throw_device_error("internal error: device input " + P.operands[size_t(acc.operand)].name +
                           " is not row-major");
      ptr = uint64_t(reinterpret_cast<uintptr_t>(d.data));
      ld = two_d ? d.strides[lead] : 1;
      bstride = P.batched ? d.strides[0] : 0;
    }
    if (ld > INT_MAX) throw_device_error("a matrix row of more than 2^31-1 elements is not supported on the GPU");
    // (A slot of -1: a word the kernel does not read, kernel_args.h read_layout.)
    if (s.ptr >= 0) w[size_t(s.ptr)] = ptr;
    if (s.ld >= 0) w[size_t(s.ld)] = uint64_t(ld);
    if (s.bstride >= 0) w[size_t(s.bstride)] = uint64_t(bstride);
    // 4-element chunks of the tile loaders are aligned when every offset part is a multiple of 4
    // (and the array starts 16-byte aligned, which gamut's own buffers always do).
    if (s.vec >= 0)
      w[size_t(s.vec)] = two_d && ld % 4 == 0 && bstride % 4 == 0 && contiguous_begin(inst, acc.pattern) % 4 == 0 &&
                         (ptr % 16 == 0 || ptr == 0);
  }
  for (const auto& p : L.params) w[size_t(p.slot)] = param_word(inst.params[size_t(p.param)], p.type);
  OperandCopies copies;
  if (cgo.tensor_cores() && tiles * batch > 0) repitch_operands(inst, choice.math, cgo.tma, L, w, copies);
  if (cgo.tma && tiles * batch > 0) encode_operand_maps(inst, choice.math, tile, L, w, copies, info.cluster);

  // Grouped joins: the mainloop's tile operands gathered into key order (positions from 0), the
  // position -> index maps and the tile table.
  std::vector<DeviceBuffer> join_buffers;
  if (groups) {
    for (size_t a = 0; a < P.accesses.size(); ++a) {
      const Pattern pat = P.accesses[a].pattern;
      const bool row = pat == Pattern::RowRed || pat == Pattern::RedRow;
      if (!row && pat != Pattern::ColRed && pat != Pattern::RedCol) continue;
      const NDArray* x = inst.inputs[size_t(P.accesses[a].operand)];
      if (!x) continue;
      const bool p_first = pat == Pattern::RowRed || pat == Pattern::ColRed;
      const NDArray g = gather_along(*x, p_first, row ? groups->row_perm : groups->col_perm);
      const int64_t cols_g = g.shape[1], pitch_g = (cols_g + 3) / 4 * 4;
      const size_t e = dtype_size(g.dtype);
      join_buffers.emplace_back(std::max<size_t>(1, size_t(g.shape[0] * pitch_g) * e));
      if (g.nbytes() > 0)
        join_buffers.back().upload_rows(g.data.data(), size_t(g.shape[0]), size_t(cols_g) * e, size_t(pitch_g) * e);
      const auto& sl = L.access[a];
      if (sl.ptr >= 0) w[size_t(sl.ptr)] = ptr_word(join_buffers.back());
      if (sl.ld >= 0) w[size_t(sl.ld)] = uint64_t(pitch_g);
      if (sl.bstride >= 0) w[size_t(sl.bstride)] = 0;
      if (sl.vec >= 0) w[size_t(sl.vec)] = !p_first || inst.red.begin % 4 == 0;  // positions start at 0
    }
    auto upload_ints = [&](const std::vector<int32_t>& v) {
      join_buffers.emplace_back(std::max<size_t>(1, v.size()) * sizeof(int32_t));
      if (!v.empty()) join_buffers.back().upload(v.data(), v.size() * sizeof(int32_t));
      return ptr_word(join_buffers.back());
    };
    w[size_t(L.join_tiles)] = upload_ints(groups->tiles);
    w[size_t(L.join_rows)] = upload_ints(groups->row_perm);
    w[size_t(L.join_cols)] = upload_ints(groups->col_perm);
  }

  // Dense outputs; matrices padded like the inputs so that row stores can be 16 bytes wide, or
  // the caller's C-order memory (options.dense_output).
  std::vector<DeviceBuffer> outputs;
  std::vector<void*> out_ptr(P.dense.size(), nullptr);
  std::vector<int64_t> out_pitch(P.dense.size(), 0), out_rows(P.dense.size(), 0);
  for (size_t d = 0; d < P.dense.size(); ++d) {
    const std::vector<int64_t>& shape = inst.dense_shapes[d];
    const DType dt = storage_type_of(P.dense[d].type);
    const auto& s = L.dense[d];
    if (shape.size() != s.stride.size())
      throw_device_error("internal error: output " + P.dense[d].name + " has the wrong rank");
    const int64_t last = shape.empty() ? 1 : shape.back();
    out_pitch[d] = shape.size() >= 2 && !options.dense_output ? (last + 3) / 4 * 4 : last;
    out_rows[d] = last ? product(shape) / last : 0;
    const size_t out_bytes =
        size_t(size_mul_or_throw(size_mul_or_throw(out_rows[d], out_pitch[d], "output " + P.dense[d].name),
                                 int64_t(dtype_size(dt)), "output " + P.dense[d].name));
    outputs.emplace_back(options.dense_output ? 0 : out_bytes);
    out_ptr[d] = options.dense_output ? options.dense_output(d, out_bytes) : outputs.back().get();
    if (!out_ptr[d] && out_bytes) throw_device_error("no device memory for output " + P.dense[d].name);
    if (s.ptr >= 0) w[size_t(s.ptr)] = uint64_t(reinterpret_cast<uintptr_t>(out_ptr[d]));
    bool aligned = inst.col.begin % 4 == 0 && reinterpret_cast<uintptr_t>(out_ptr[d]) % 16 == 0;
    for (size_t p = 0; p < shape.size(); ++p) {
      int64_t stride = 1;
      if (p + 1 < shape.size())
        stride = out_pitch[d] * product(std::vector<int64_t>(shape.begin() + int64_t(p) + 1, shape.end() - 1));
      if (s.stride[p] >= 0) w[size_t(s.stride[p])] = uint64_t(stride);
      if (p + 1 < shape.size()) aligned = aligned && stride % 4 == 0;
    }
    if (s.vec >= 0) w[size_t(s.vec)] = aligned && output_runs_along_j(P, int(d));
    if (s.elems >= 0) w[size_t(s.elems)] = uint64_t(out_rows[d] * out_pitch[d]);
  }
  std::vector<bool> needs_fill(P.dense.size());
  for (size_t d = 0; d < P.dense.size(); ++d) needs_fill[d] = !written_everywhere(inst, d);
  auto init_outputs = [&] {
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (needs_fill[d]) fill_identity(out_ptr[d], P.dense[d].op, P.dense[d].type, out_rows[d] * out_pitch[d]);
  };

  if (kept_lists)
    kept_lists->bind(inst, list_rows, tile, boxes);
  else
    kept_lists = std::make_unique<DeviceLists>(inst, list_rows, tile, boxes);
  DeviceLists& lists = *kept_lists;

  // Clusters of two blocks run row tiles in pairs (KernelInfo::cluster): ceil(tiles_m / 2) pairs.
  const int64_t grid_tiles = info.cluster == 2 ? 2 * ((tiles_m + 1) / 2) * tiles_n : tiles;
  const int64_t tile_blocks = groups ? groups->tile_count() : size_mul_saturated(grid_tiles, batch);
  if (tile_blocks > INT_MAX)
    throw_device_error("the problem needs " + std::to_string(tile_blocks) + " thread blocks (at most 2^31-1)");
  // A persistent kernel: one block per SM (or the caller's count), never more than the tiles, a
  // whole number of clusters.
  const int64_t resident = options.resident_blocks > 0 ? options.resident_blocks : dev.sm_count;
  const int64_t blocks = info.persistent
                             ? std::max<int64_t>(std::min<int64_t>(tile_blocks, resident) / info.cluster * info.cluster,
                                                 std::min<int64_t>(tile_blocks, info.cluster))
                             : tile_blocks;
  double ms = 0;
  int launches = 0;
  while (true) {
    throw_if_cancelled(options.cancel);
    launches += blocks > 0;
    init_outputs();
    lists.reset();
    lists.fill_args(L, w);
    if (blocks > 0 && options.asynchronous) {  // in stream order, nothing waits
      void* args[] = {w.data()};
      copies.run();
      kernel.launch(unsigned(blocks), 1, 1, unsigned(info.threads), 1, 1, info.smem_bytes, args);
      lists.select_before_count();  // (the overflow check below waits once for both)
    } else if (blocks > 0) {
      void* args[] = {w.data()};
      EventTimer timer;
      timer.start();
      copies.run();
      kernel.launch(unsigned(blocks), 1, 1, unsigned(info.threads), 1, 1, info.smem_bytes, args);
      timer.stop();
      lists.select_before_count();  // (in stream order behind the kernel: one wait for both)
      ms += timer.elapsed_ms();
      synchronize();
    }
    if (!lists.grow_if_overflowed()) break;
  }
  if (options.progress) options.progress(2, steps);
  if (stats) {
    stats->kernel_ms = ms;
    stats->result_launches = launches;
    stats->launch_blocks = blocks;
    stats->persistent = info.persistent;
    stats->resident_top = info.resident_top;
    stats->lists_finished_with_kernel = lists.finished_with_kernel();
    stats->list_rows_appended.clear();
    for (size_t l = 0; l < P.lists.size(); ++l) stats->list_rows_appended.push_back(blocks > 0 ? lists.count(l) : 0);
    stats->list_seen_cells.clear();
    for (size_t l = 0; l < P.lists.size(); ++l) stats->list_seen_cells.push_back(lists.seen_cells(l));
  }
  // Benchmark repetitions: each starts from the identities again; timed are the launch and the
  // device side of the lists (ordering, distinct, top/bottom selection), not the downloads.
  if (blocks > 0 && options.repeats > 0) {
    if (stats) stats->runs_ms.clear();
    for (int r = 0; r < options.warmup + options.repeats; ++r) {
      throw_if_cancelled(options.cancel);
      init_outputs();
      lists.reset();
      lists.fill_args(L, w);
      void* args[] = {w.data()};
      EventTimer timer;
      timer.start();
      copies.run();
      kernel.launch(unsigned(blocks), 1, 1, unsigned(info.threads), 1, 1, info.smem_bytes, args);
      const double tk = timer.stop_ms();  // the kernel (and operand copies) alone (this waits for it)
      timer.start();
      lists.finalize_on_device();
      const double t = tk + timer.stop_ms();
      if (r >= options.warmup && stats) {
        stats->runs_ms.push_back(t);
        stats->runs_kernel_ms.push_back(tk);
      }
      if (options.progress) options.progress(3 + r, steps);
    }
    synchronize();
  }

  Results res;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    if (options.dense_output) {  // stays where the caller wanted it
      NDArray a;
      a.dtype = storage_type_of(P.dense[d].type);
      a.shape = inst.dense_shapes[d];
      a.data = Bytes::view(out_ptr[d], size_t(a.size()) * dtype_size(a.dtype));
      res.dense.push_back(std::move(a));
      continue;
    }
    NDArray a = NDArray::zeros(storage_type_of(P.dense[d].type), inst.dense_shapes[d]);
    const size_t e = dtype_size(a.dtype);
    if (a.nbytes() > 0) {
      const int64_t last = a.shape.empty() ? 1 : a.shape.back();
      outputs[d].download_rows(a.data.data(), size_t(out_rows[d]), size_t(last) * e, size_t(out_pitch[d]) * e);
    }
    res.dense.push_back(std::move(a));
  }
  const ListOutputFn* list_out = options.list_output ? &options.list_output : nullptr;
  res.lists = lists.results(list_out);
  // Kept for the next run where it is small enough (the copies into the caller's memory are in
  // stream order before any later run's launch on this stream), and only on the legacy default
  // stream: the buffers are freed in order on their stream, and a caller's own stream may be
  // destroyed before the memo is.
  if (memo && !P.lists.empty() && lists.held_bytes() <= kKeptListBytes && current_stream() == nullptr) {
    std::lock_guard<std::mutex> lock(memo->mu);
    memo->put(variant, std::move(kept_lists));
  }
  return res;
}

}  // namespace gamut::cuda
