// GPU bit pack (see bit_pack.h): one fixed kernel source per input element type.
#include "cuda/stages/bit_pack.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/stages/stage_types.h"

namespace gamut::cuda {

namespace {

constexpr int kThreads = 256;  // 8 warps

// Defined before this text: SRC_T (storage type). Grid: x = words, y = chunks of 32 rows
// (looping while rows remain). Each step stages a 32 rows x 32 k tile of 0/1 bytes, loaded
// coalesced along whichever axis of src is contiguous; then warp v ballots rows v, v + 8, ...:
// lane b votes for bit b, k = k_begin + 32 w + b.
const char* const kKernelBody = R"(
extern "C" __global__ void __launch_bounds__(256) bit_pack_tiled(
    const SRC_T* __restrict__ src, unsigned* __restrict__ out, long long ld, long long words,
    long long r_begin, long long r_end, long long k_begin, long long k_end, int k_contig) {
  __shared__ unsigned char tile[32][33];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long long w = blockIdx.x;
  const long long k0 = k_begin + w * 32;
  for (long long r0 = r_begin + (long long)blockIdx.y * 32; r0 < r_end; r0 += (long long)gridDim.y * 32) {
    __syncthreads();  // the previous tile is consumed
    for (int q = 0; q < 4; ++q) {
      const int e = t + 256 * q;
      const int rr = k_contig ? (e >> 5) : (e & 31);
      const int kk = k_contig ? (e & 31) : (e >> 5);
      const long long r = r0 + rr, k = k0 + kk;
      unsigned char bit = 0;
      if (r < r_end && k < k_end) bit = src[k_contig ? r * ld + k : k * ld + r] != 0;
      tile[rr][kk] = bit;
    }
    __syncthreads();
    for (int rr = warp; rr < 32; rr += 8) {
      const unsigned word = __ballot_sync(0xffffffffu, tile[rr][lane] != 0);
      if (lane == 0 && r0 + rr < r_end) out[(r0 + rr) * words + w] = word;
    }
  }
}
)";

}  // namespace

std::string bit_pack_source(DType t) {
  if (is_float(t)) throw_device_error("bit pack: element type " + std::string(dtype_name(t)) + " is not an integer or bool type");
  return std::string("// gamut bit pack\n#define SRC_T ") + plain_c_type(t) + "\n" + kKernelBody;
}

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
  const CompiledModule module = compile_cached(source, co, "bit-pack v1");
  s.compile_ms = module.compile_ms;
  s.cache_hit = module.hit == CacheHit::Compiled ? "compiled" : module.hit == CacheHit::Disk ? "disk" : "memory";
  Kernel kernel(module, "bit_pack_tiled");

  DeviceBuffer d_src(std::max<size_t>(src.nbytes(), 1)), d_out(out.nbytes());
  d_src.upload(src.data.data(), src.nbytes());
  const void* p_src = d_src.get();
  void* p_out = d_out.get();
  long long ld = src.shape[1], words = W, r_begin = st.rows.begin, r_end = st.rows.end;
  long long k_begin = st.k_range.begin, k_end = st.k_range.end;
  int k_contig = st.src_k_minor ? 1 : 0;
  void* args[] = {&p_src, &p_out, &ld, &words, &r_begin, &r_end, &k_begin, &k_end, &k_contig};
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
