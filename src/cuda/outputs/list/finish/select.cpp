#include "cuda/outputs/list/finish/select.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "core/error.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "cuda/device/stages/gamut_stage_args.cuh"

namespace gamut::cuda {

namespace {

constexpr unsigned kThreads = gm::kStageThreads;

// The kernels of one (key type, direction, grouping), compiled once and kept loaded.
struct SelectKernels {
  std::unique_ptr<Kernel> hist, digit, keep, sort_rank;
  std::unique_ptr<Kernel> small;  // global lists only (gm_sel_small)
};

SelectKernels& kernels(DType key, bool top, PerGroup per) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<SelectKernels>> loaded;
  const std::string src = select_source(key, top, per);
  // (Keyed by the arch too: the devices of one host may differ.)
  const DeviceInfo& dev = device();
  CompileOptions co;
  co.arch = arch_for(dev.cc_major, dev.cc_minor);
  std::lock_guard<std::mutex> lock(mu);
  auto& k = loaded[co.arch + "\n" + src];
  if (!k) {
    const CompiledModule mod = compile_cached(src, co, kSelectSchema);
    auto s = std::make_unique<SelectKernels>();
    s->hist = std::make_unique<Kernel>(mod, "gm_sel_hist");
    s->digit = std::make_unique<Kernel>(mod, "gm_sel_digit");
    s->keep = std::make_unique<Kernel>(mod, "gm_sel_keep");
    s->sort_rank = std::make_unique<Kernel>(mod, "gm_sel_sort_rank");
    if (per == PerGroup::None && exact_sort_rank(key)) {
      s->small = std::make_unique<Kernel>(mod, "gm_sel_small");
      s->small->set_max_dynamic_smem(gm::kSelSmallSmem);
    }
    k = std::move(s);
  }
  return *k;
}

uint64_t ptr(const DeviceBuffer* b) { return b ? uint64_t(reinterpret_cast<uintptr_t>(b->get())) : 0; }

// Grid-stride kernels: enough blocks to fill the device, no more than the work needs.
unsigned blocks_for(uint64_t work) {
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((work + kThreads - 1) / kThreads, 8192)));
}

void launch(Kernel& k, gm::SelectArgs& a, uint64_t work) {
  void* args[] = {&a};
  k.launch(blocks_for(work), 1, 1, kThreads, 1, 1, 0, args);
}

}  // namespace

namespace {
// Digit width of the radix select: 8 bits (4 rounds) while the per-group histograms take at
// most 64 MiB, narrower digits (more rounds) for very many groups.
unsigned digit_bits(int64_t groups) {
  for (unsigned bits : {8u, 4u, 2u})
    if (uint64_t(groups) << (bits + 2) <= (uint64_t(64) << 20)) return bits;
  return 1;
}
}  // namespace

// The arguments every selection kernel reads from the input: the candidates and the groups.
gm::SelectArgs input_args(const SelectInput& in) {
  gm::SelectArgs a{};
  a.n = in.n;
  a.key = ptr(in.key);
  a.b = ptr(in.b);
  a.i = ptr(in.i);
  a.j = ptr(in.j);
  a.groups = uint64_t(in.groups);
  a.limit = uint64_t(in.limit);
  a.begin = uint64_t(in.begin);
  a.extent = uint64_t(in.extent);
  return a;
}

DeviceBuffer select_candidates(const SelectInput& in, uint64_t* kept) {
  if (in.n >= uint64_t(UINT32_MAX)) throw_device_error("a top/bottom list with 2^32-1 or more candidates");
  if (in.groups > int64_t(UINT32_MAX) * 4) throw_device_error("a top/bottom list with too many groups");
  SelectKernels& K = kernels(in.key_dtype, in.top, in.per);
  const unsigned bits = digit_bits(in.groups);
  DeviceBuffer thr(size_t(in.groups) * 4), below(size_t(in.groups) * 4), counter(8);
  DeviceBuffer hist(size_t(in.groups) * 4 << bits);
  DeviceBuffer idx(size_t(std::max<uint64_t>(in.n, 1)) * 4);
  gm::SelectArgs a = input_args(in);
  a.thr = ptr(&thr);
  a.below = ptr(&below);
  a.hist = ptr(&hist);
  a.idx = ptr(&idx);
  a.kept = ptr(&counter);
  a.bits = bits;
  thr.fill_bytes(0);
  below.fill_bytes(0);
  hist.fill_bytes(0);  // sel_digit zeroes the bins it reads, ready for the next round
  // Digits from the top: histogram the candidates still in play, then fix each group's digit.
  for (int shift = 32 - int(bits); shift >= 0; shift -= int(bits)) {
    a.shift = uint64_t(shift);
    launch(*K.hist, a, in.n);
    launch(*K.digit, a, uint64_t(in.groups) * 32);  // a warp per group
  }
  counter.fill_bytes(0);
  launch(*K.keep, a, in.n);
  synchronize();
  counter.download(kept, sizeof *kept);
  return idx;
}

// N of the one-block selection: where n <= N it holds every candidate as a sort entry.
constexpr int64_t kSmallSelectLimit = 2048;
static_assert(uint64_t(kSmallSelectLimit) <= gm::kSelSmallCap, "every candidate fits where n <= N");

bool small_selection_fits(const SelectInput& in) {
  return in.per == PerGroup::None && exact_sort_rank(in.key_dtype) && in.n > 0 && in.n <= gm::kSelSmallCandidates &&
         in.limit > 0 && in.limit <= kSmallSelectLimit;
}

bool select_small(const SelectInput& in, DeviceBuffer& idx, uint64_t* rows) {
  if (!small_selection_fits(in)) throw_device_error("internal error: a selection too large for one block");
  SelectKernels& K = kernels(in.key_dtype, in.top, in.per);
  const uint64_t m = std::min<uint64_t>(in.n, uint64_t(in.limit));
  if (idx.size() < m * 4) idx = DeviceBuffer(m * 4);
  gm::SelectArgs a = input_args(in);
  a.idx = ptr(&idx);
  a.thr = in.threshold && in.threshold->size() >= 4 ? ptr(in.threshold) : 0;
  DeviceBuffer kept(8);
  a.kept = ptr(&kept);
  void* args[] = {&a};
  K.small->launch(1, 1, 1, gm::kSelSmallThreads, 1, 1, gm::kSelSmallSmem, args);
  uint64_t status = 0;
  kept.download(&status, sizeof status);  // (waits for the stream)
  if (status == gm::kSelSmallOverflow) return false;
  if (status != m)
    throw_device_error("internal error: the one-block selection kept " + std::to_string(status) + " rows of " +
                       std::to_string(m));
  *rows = m;
  return true;
}

bool exact_sort_rank(DType key) { return key == DType::Bool || key == DType::I32 || key == DType::F32; }

void sort_ranks(const SelectInput& in, const DeviceBuffer& key, uint64_t m, DeviceBuffer& dst) {
  if (m == 0) return;
  if (!exact_sort_rank(in.key_dtype)) throw_device_error("internal error: no exact device rank for this key type");
  gm::GatherArgs a{ptr(&dst), ptr(&key), 0, m};
  void* args[] = {&a};
  kernels(in.key_dtype, in.top, in.per).sort_rank->launch(blocks_for(m), 1, 1, kThreads, 1, 1, 0, args);
}

}  // namespace gamut::cuda
