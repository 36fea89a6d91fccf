// GPU bit pack (see bit_pack.h): the kernel of device/stages/gamut_bit_pack.cuh, instantiated per
// input element type (codegen/stage_sources.h).
#include "cuda/stages/bit_pack.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "cuda/device/stages/gamut_stage_args.cuh"

namespace gamut::cuda {

namespace {

constexpr int kThreads = gm::kStageThreads;   // 8 warps

}  // namespace

NDArray bit_pack(const NDArray& src, const BitPack& st, int repeats, BitPackStats* stats) {
  BitPackStats local;
  BitPackStats& s = stats ? *stats : local;
  s = BitPackStats{};
  const int64_t W = st.words();
  if (src.shape.size() != 2 || st.rows.begin < 0 || st.k_range.begin < 0 || W > INT_MAX)
    throw_device_error("bit pack: unsupported operand shape or reduction length");
  NDArray out = NDArray::zeros(DType::I32, {st.rows.end, W});
  const std::string source = bit_pack_source(src.dtype);
  if (st.rows.size() <= 0 || W == 0) return out;

  const DeviceInfo& dev = device();
  CompileOptions co;
  co.arch = arch_for(dev.cc_major, dev.cc_minor);
  const CompiledModule module = compile_cached(source, co, kBitPackSchema);
  s.compile_ms = module.compile_ms;
  s.cache_hit = cache_hit_name(module.hit);
  Kernel kernel(module, "bit_pack_tiled");

  DeviceBuffer d_src(std::max<size_t>(src.nbytes(), 1)), d_out(out.nbytes());
  d_src.upload(src.data.data(), src.nbytes());
  gm::BitPackArgs a{};
  a.src = uint64_t(reinterpret_cast<uintptr_t>(d_src.get()));
  a.out = uint64_t(reinterpret_cast<uintptr_t>(d_out.get()));
  a.ld = src.shape[1];
  a.words = W;
  a.r_begin = st.rows.begin;
  a.r_end = st.rows.end;
  a.k_begin = st.k_range.begin;
  a.k_end = st.k_range.end;
  a.k_contig = st.src_k_minor ? 1 : 0;
  void* args[] = {&a};
  // About 8 blocks per SM in all; y is capped by the grid limit, the kernel loops over the rest.
  const int64_t row_tiles = (st.rows.size() + 31) / 32;
  const int64_t want_y = std::max<int64_t>(1, (int64_t(dev.sm_count) * 8 + W - 1) / W);
  const unsigned gx = unsigned(W), gy = unsigned(std::min<int64_t>({row_tiles, want_y, 65535}));

  auto run_once = [&] {
    EventTimer timer;
    timer.start();
    d_out.fill_bytes(0);  // rows below rows.begin stay 0
    kernel.launch(gx, gy, 1, kThreads, 1, 1, 0, args);
    return timer.stop_ms();
  };
  run_timed(run_once, repeats, s.kernel_ms, s.runs_ms);
  d_out.download(out.data.data(), out.nbytes());
  return out;
}

}  // namespace gamut::cuda
