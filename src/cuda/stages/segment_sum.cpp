// GPU segment sum (see segment_sum.h): one fixed kernel source per input element type.
#include "cuda/stages/segment_sum.h"

#include <algorithm>
#include <climits>

#include "core/error.h"
#include "cuda/runtime.h"
#include "cuda/stages/stage_types.h"

namespace gamut::cuda {

namespace {

constexpr int kThreads = 256;         // 8 warps
constexpr int kTile = 32;             // rows x columns staged per step
constexpr size_t kSmemLimit = 48 * 1024;  // no opt-in needed below this

// Defined before this text: SRC_T (storage type), acc_t (accumulator), WIDEN(x) (load widening).
// Integer accumulators are unsigned so that every add wraps as the i32/i64 query arithmetic does.
const char* const kKernelBody = R"(
__device__ __forceinline__ float gamut_h2f(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ float gamut_bf2f(unsigned short h) { return __uint_as_float((unsigned)h << 16); }

// Grid: x = tiles of 32 columns k, y = chunks of chunk_rows rows i. Each step stages a 32 x 32
// tile in shared memory (loads coalesced along whichever axis of src is contiguous); then lane c
// of every warp adds column c of its rows into the warp's copy of sums[g][c]. All lanes of a warp
// share one row, hence one g: no bank conflicts, and warps with their own copy never contend.
// At the end every block adds each non-zero sums[g][c] once into out with a global atomic.
extern "C" __global__ void __launch_bounds__(256) segment_sum_tiled(
    const SRC_T* __restrict__ src, const int* __restrict__ index, acc_t* __restrict__ out,
    long long src_is, long long src_ks, long long out_gs, long long out_ks,
    long long i_begin, long long i_end, long long k_begin, long long k_end,
    int groups, int copies, long long chunk_rows, int k_contig) {
  extern __shared__ __align__(16) unsigned char smem[];
  acc_t* tile = (acc_t*)smem;                          // [32][33]: padded against bank conflicts
  acc_t* sums = tile + 32 * 33;                        // [copies][groups][32]
  int* gidx = (int*)(sums + (long long)copies * groups * 32);  // [32]: group of each staged row
  const int t = threadIdx.x, c = t & 31, w = t >> 5;
  const long long k0 = k_begin + (long long)blockIdx.x * 32;
  const long long r_begin = i_begin + (long long)blockIdx.y * chunk_rows;
  const long long r_end = r_begin + chunk_rows < i_end ? r_begin + chunk_rows : i_end;
  for (int e = t; e < copies * groups * 32; e += 256) sums[e] = 0;
  acc_t* mine = sums + (long long)(w % copies) * groups * 32;
  for (long long i0 = r_begin; i0 < r_end; i0 += 32) {
    __syncthreads();  // the previous tile is consumed (first pass: sums are zeroed)
    if (t < 32) gidx[t] = i0 + t < r_end ? index[i0 + t] : -1;
    for (int q = 0; q < 4; ++q) {
      const int e = t + 256 * q;
      const int r = k_contig ? (e >> 5) : (e & 31);
      const int cc = k_contig ? (e & 31) : (e >> 5);
      const long long i = i0 + r, k = k0 + cc;
      acc_t v = 0;
      if (i < r_end && k < k_end) v = WIDEN(src[i * src_is + k * src_ks]);
      tile[r * 33 + cc] = v;
    }
    __syncthreads();
    for (int r = w; r < 32; r += 8) {
      const int g = gidx[r];
      if (g >= 0) atomicAdd(&mine[g * 32 + c], tile[r * 33 + c]);
    }
  }
  __syncthreads();
  for (int e = t; e < groups * 32; e += 256) {
    const int g = e >> 5, cc = e & 31;
    const long long k = k0 + cc;
    if (k >= k_end) continue;
    acc_t s = 0;
    for (int cp = 0; cp < copies; ++cp) s += sums[((long long)cp * groups + g) * 32 + cc];
    // out starts at +0 and sums never produce -0 from +0, so skipping zeros changes nothing.
    if (s != 0 || s != s) atomicAdd(&out[g * out_gs + k * out_ks], s);
  }
}

// Too many groups for shared memory: one global atomic per element, in src memory order.
extern "C" __global__ void __launch_bounds__(256) segment_sum_direct(
    const SRC_T* __restrict__ src, const int* __restrict__ index, acc_t* __restrict__ out,
    long long src_is, long long src_ks, long long out_gs, long long out_ks,
    long long i_begin, long long i_end, long long k_begin, long long k_end, int k_contig) {
  const long long rows = i_end - i_begin, cols = k_end - k_begin, n = rows * cols;
  for (long long e = (long long)blockIdx.x * 256 + threadIdx.x; e < n; e += (long long)gridDim.x * 256) {
    const long long i = i_begin + (k_contig ? e / cols : e % rows);
    const long long k = k_begin + (k_contig ? e % cols : e / rows);
    atomicAdd(&out[(long long)index[i] * out_gs + k * out_ks], WIDEN(src[i * src_is + k * src_ks]));
  }
}
)";

const char* widen_expr(DType t) {
  switch (t) {
    case DType::Bool: return "((acc_t)((x) != 0))";
    case DType::U8: case DType::I8: case DType::I16: case DType::I32: return "((acc_t)(int)(x))";
    case DType::I64: return "((acc_t)(x))";
    case DType::F16: return "gamut_h2f(x)";
    case DType::BF16: return "gamut_bf2f(x)";
    case DType::F32: case DType::F64: return "(x)";
  }
  return "(x)";
}

const char* acc_c_type(CType t) {
  switch (t) {
    case CType::I32: return "unsigned int";
    case CType::I64: return "unsigned long long";
    case CType::F64: return "double";
    default: return "float";
  }
}

std::vector<int32_t> index_i32(const NDArray& index, const AxisRange& rows) {
  std::vector<int32_t> v(size_t(std::max<int64_t>(rows.end, 1)), 0);
  for (int64_t i = rows.begin; i < rows.end; ++i) v[size_t(i)] = int32_t(index.get_i64(i));
  return v;
}

}  // namespace

CType segment_sum_acc_type(DType t) {
  CType c = compute_type_of(t);
  return c == CType::Bool ? CType::I32 : c;
}

std::string segment_sum_source(DType t) {
  std::string s = "// gamut segment sum\n#define SRC_T ";
  s += plain_c_type(t);
  s += "\ntypedef ";
  s += acc_c_type(segment_sum_acc_type(t));
  s += " acc_t;\n#define WIDEN(x) ";
  s += widen_expr(t);
  s += "\n";
  s += kKernelBody;
  return s;
}

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
    st.path = "empty";
    return out;
  }

  const DeviceInfo& dev = device();
  CompileOptions co;
  co.arch = arch_for(dev.cc_major, dev.cc_minor);
  const CompiledModule module = compile_cached(segment_sum_source(src.dtype), co, "segment-sum v1");
  st.compile_ms = module.compile_ms;
  st.cache_hit = module.hit == CacheHit::Compiled ? "compiled" : module.hit == CacheHit::Disk ? "disk" : "memory";

  // Strides in elements: src is (rows-axis, k-axis) or (k-axis, rows-axis) in C order.
  const long long ld = src.shape[1];
  long long src_is = sh.src_k_minor ? ld : 1, src_ks = sh.src_k_minor ? 1 : ld;
  long long out_gs = sh.group_rows ? K : 1, out_ks = sh.group_rows ? 1 : G;
  long long i_begin = sh.rows.begin, i_end = sh.rows.end, k_begin = sh.k.begin, k_end = sh.k.end;
  int k_contig = sh.src_k_minor ? 1 : 0;

  DeviceBuffer d_src(src.nbytes()), d_out(out.nbytes());
  d_src.upload(src.data.data(), src.nbytes());
  const std::vector<int32_t> idx = index_i32(index, sh.rows);
  DeviceBuffer d_idx(idx.size() * sizeof(int32_t));
  d_idx.upload(idx.data(), idx.size() * sizeof(int32_t));
  const void* p_src = d_src.get();
  const void* p_idx = d_idx.get();
  void* p_out = d_out.get();

  // Shared-memory sums: as many per-warp copies (1..8) as fit; none fit -> global atomics.
  const size_t acc_bytes = dtype_size(out.dtype);
  const size_t fixed = size_t(kTile) * (kTile + 1) * acc_bytes + kTile * sizeof(int32_t);
  const size_t per_copy = size_t(G) * kTile * acc_bytes;
  int copies = fixed + per_copy <= kSmemLimit ? int(std::min<size_t>(8, (kSmemLimit - fixed) / per_copy)) : 0;

  std::unique_ptr<Kernel> kernel;
  unsigned gx = 1, gy = 1;
  size_t smem = 0;
  int groups = int(G);
  long long chunk_rows = 0;
  std::vector<void*> args = {&p_src, &p_idx, &p_out, &src_is, &src_ks, &out_gs, &out_ks,
                             &i_begin, &i_end, &k_begin, &k_end};
  if (copies > 0) {
    st.path = "tiled";
    kernel = std::make_unique<Kernel>(module, "segment_sum_tiled");
    smem = fixed + size_t(copies) * per_copy;
    // About 8 blocks per SM in all; a chunk has at least as many rows as groups so that the
    // per-block flush (groups x 32 atomics) stays below the block's own input.
    const int64_t ktiles = (cols + kTile - 1) / kTile;
    const int64_t want_y = std::max<int64_t>(1, (int64_t(dev.sm_count) * 8 + ktiles - 1) / ktiles);
    const auto up32 = [](int64_t x) { return (x + kTile - 1) / kTile * kTile; };
    chunk_rows = std::max({up32((rows + want_y - 1) / want_y), up32(G), int64_t(kTile)});
    while ((rows + chunk_rows - 1) / chunk_rows > 65535) chunk_rows *= 2;
    if (ktiles > INT_MAX) throw_device_error("segment sum: too many columns");
    gx = unsigned(ktiles);
    gy = unsigned((rows + chunk_rows - 1) / chunk_rows);
    args.insert(args.end(), {&groups, &copies, &chunk_rows, &k_contig});
  } else {
    st.path = "direct";
    kernel = std::make_unique<Kernel>(module, "segment_sum_direct");
    const int64_t blocks = std::min<int64_t>((rows * cols + kThreads - 1) / kThreads, int64_t(dev.sm_count) * 16);
    gx = unsigned(std::max<int64_t>(blocks, 1));
    args.push_back(&k_contig);
  }

  auto run_once = [&] {
    EventTimer timer;
    timer.start();
    d_out.fill_bytes(0);
    kernel->launch(gx, gy, 1, kThreads, 1, 1, smem, args.data());
    return timer.stop_ms();
  };
  run_timed(run_once, repeats, st.kernel_ms, st.runs_ms);
  d_out.download(out.data.data(), out.nbytes());
  return out;
}

}  // namespace gamut::cuda
