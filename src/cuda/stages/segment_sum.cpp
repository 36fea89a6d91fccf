// GPU segment sum (see segment_sum.h): the kernels of device/stages/gamut_segment_sum.cuh,
// instantiated per input element type (codegen/stage_sources.h).
#include "cuda/stages/segment_sum.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "cuda/device/stages/gamut_stage_args.cuh"
#include "cuda/runtime.h"

namespace gamut::cuda {

namespace {

constexpr int kThreads = gm::kStageThreads;   // 8 warps
constexpr int kTile = gm::kStageTile;         // rows x columns staged per step
constexpr size_t kSmemLimit = 48 * 1024;      // no opt-in needed below this

std::vector<int32_t> index_i32(const NDArray& index, const AxisRange& rows) {
  std::vector<int32_t> v(size_t(std::max<int64_t>(rows.end, 1)), 0);
  for (int64_t i = rows.begin; i < rows.end; ++i) v[size_t(i)] = int32_t(index.get_i64(i));
  return v;
}

}  // namespace

NDArray segment_sum(const NDArray& src, const NDArray& index, const SegmentSumShape& sh, CType acc_type,
                    int repeats, SegmentSumStats* stats) {
  if (acc_type != segment_sum_acc_type(src.dtype))
    throw_device_error("segment sum: accumulator " + std::string(ctype_name(acc_type)) + " does not match input " +
                       std::string(dtype_name(src.dtype)));
  if (src.shape.size() != 2 || sh.groups < 0 || sh.groups > INT_MAX || sh.rows.begin < 0 || sh.k.begin < 0)
    throw_device_error("segment sum: unsupported operand shape or group count");
  const int64_t K = sh.k.end, G = sh.groups;
  NDArray out = NDArray::zeros(storage_type_of(acc_type), sh.group_rows ? std::vector<int64_t>{G, K}
                                                                         : std::vector<int64_t>{K, G});
  SegmentSumStats local;
  SegmentSumStats& st = stats ? *stats : local;
  st = SegmentSumStats{};
  const int64_t rows = sh.rows.size(), cols = sh.k.size();
  if (rows <= 0 || cols <= 0 || G == 0) {
    st.path = SegmentSumPath::Empty;
    return out;
  }

  const DeviceInfo& dev = device();
  CompileOptions co;
  co.arch = arch_for(dev.cc_major, dev.cc_minor);
  const CompiledModule module = compile_cached(segment_sum_source(src.dtype), co, kSegmentSumSchema);
  st.compile_ms = module.compile_ms;
  st.cache_hit = cache_hit_name(module.hit);

  // Strides in elements: src is (rows-axis, k-axis) or (k-axis, rows-axis) in C order.
  const long long ld = src.shape[1];
  gm::SegmentSumArgs a{};
  a.src_is = sh.src_k_minor ? ld : 1;
  a.src_ks = sh.src_k_minor ? 1 : ld;
  a.out_gs = sh.group_rows ? K : 1;
  a.out_ks = sh.group_rows ? 1 : G;
  a.i_begin = sh.rows.begin;
  a.i_end = sh.rows.end;
  a.k_begin = sh.k.begin;
  a.k_end = sh.k.end;
  a.groups = G;
  a.k_contig = sh.src_k_minor ? 1 : 0;

  DeviceBuffer d_src(src.nbytes()), d_out(out.nbytes());
  d_src.upload(src.data.data(), src.nbytes());
  const std::vector<int32_t> idx = index_i32(index, sh.rows);
  DeviceBuffer d_idx(idx.size() * sizeof(int32_t));
  d_idx.upload(idx.data(), idx.size() * sizeof(int32_t));
  a.src = uint64_t(reinterpret_cast<uintptr_t>(d_src.get()));
  a.index = uint64_t(reinterpret_cast<uintptr_t>(d_idx.get()));
  a.out = uint64_t(reinterpret_cast<uintptr_t>(d_out.get()));

  // Shared-memory sums: as many per-warp copies (1..8) as fit; none fit -> global atomics.
  const size_t acc_bytes = dtype_size(out.dtype);
  const size_t fixed = size_t(kTile) * (kTile + 1) * acc_bytes + kTile * sizeof(int32_t);
  const size_t per_copy = size_t(G) * kTile * acc_bytes;
  int copies = fixed + per_copy <= kSmemLimit ? int(std::min<size_t>(8, (kSmemLimit - fixed) / per_copy)) : 0;

  std::unique_ptr<Kernel> kernel;
  unsigned gx = 1, gy = 1;
  size_t smem = 0;
  if (copies > 0) {
    st.path = SegmentSumPath::Tiled;
    kernel = std::make_unique<Kernel>(module, "segment_sum_tiled");
    smem = fixed + size_t(copies) * per_copy;
    // About 8 blocks per SM in all; a chunk has at least as many rows as groups so that the
    // per-block flush (groups x 32 atomics) stays below the block's own input.
    const int64_t ktiles = (cols + kTile - 1) / kTile;
    const int64_t want_y = std::max<int64_t>(1, (int64_t(dev.sm_count) * 8 + ktiles - 1) / ktiles);
    const auto up32 = [](int64_t x) { return (x + kTile - 1) / kTile * kTile; };
    int64_t chunk_rows = std::max({up32((rows + want_y - 1) / want_y), up32(G), int64_t(kTile)});
    while ((rows + chunk_rows - 1) / chunk_rows > 65535) chunk_rows *= 2;
    if (ktiles > INT_MAX) throw_device_error("segment sum: too many columns");
    gx = unsigned(ktiles);
    gy = unsigned((rows + chunk_rows - 1) / chunk_rows);
    a.copies = copies;
    a.chunk_rows = chunk_rows;
  } else {
    st.path = SegmentSumPath::Direct;
    kernel = std::make_unique<Kernel>(module, "segment_sum_direct");
    const int64_t blocks = std::min<int64_t>((rows * cols + kThreads - 1) / kThreads, int64_t(dev.sm_count) * 16);
    gx = unsigned(std::max<int64_t>(blocks, 1));
  }

  auto run_once = [&] {
    EventTimer timer;
    timer.start();
    d_out.fill_bytes(0);
    void* args[] = {&a};
    kernel->launch(gx, gy, 1, kThreads, 1, 1, smem, args);
    return timer.stop_ms();
  };
  run_timed(run_once, repeats, st.kernel_ms, st.runs_ms);
  d_out.download(out.data.data(), out.nbytes());
  return out;
}

}  // namespace gamut::cuda
