// The device side of `gamut peak`: the microbenchmark kernels as CUDA C++ text, and the table
// of semiring steps that both the text and the host's op counting are generated from, so the
// two cannot disagree about a kernel's name or how many steps an iteration does.
#include <string>

#include "peak/peak.h"

namespace gamut::peak {

namespace {

// Shape of the kernels. Registers: PEAK_CHAINS independent accumulator chains, PEAK_ROUNDS
// rounds of them per iteration. Shared memory: the engine's default thread tile (8x8 per
// thread, 16x16 threads, 8-deep k slices), so the loads per step are those of its mainloop.
constexpr int kChains = 16;
constexpr int kRounds = 8;
constexpr int kTM = 8, kTN = 8, kBK = 8;
constexpr int kThreadsM = 16, kThreadsN = 16;   // kThreadsM * kThreadsN == kBlockThreads
static_assert(kThreadsM * kThreadsN == kBlockThreads, "one thread per 8x8 tile of 128x128");
static_assert(kThreadsM * kTM == kThreadsN * kTN, "square block tile: one row length");

const char* const kDeviceText = R"CUDA(
// Every kernel: each thread runs `iters` iterations of an unrolled body of independent
// semiring steps, then folds its accumulators and stores the result, so no step is dead code.
// Operands come from `in`, a kernel argument, so nothing folds to a constant.
#define PEAK_DEV static __device__ __forceinline__
#define PEAK_ROW (PEAK_THREADS_M * PEAK_TM)     // elements in one k row of a shared tile

PEAK_DEV int wrap_add(int a, int b) { return int(unsigned(a) + unsigned(b)); }  // as the engine
PEAK_DEV int imax(int a, int b) { return a > b ? a : b; }
PEAK_DEV int imin(int a, int b) { return a < b ? a : b; }

// A step is c = c (+) (a (x) b), written as the engine's generated code writes it (fmaxf for
// floats: NaN-ignoring max); join is (+) alone, to fold a thread's accumulators at the end.
#define PEAK_STEP(NAME, TYPE, STEP, JOIN)            \
  struct NAME {                                      \
    typedef TYPE T;                                  \
    PEAK_DEV T step(T c, T a, T b) { return STEP; }  \
    PEAK_DEV T join(T c, T a) { return JOIN; }       \
  };
PEAK_STEP(FmaF32, float, fmaf(a, b, c), c + a)
PEAK_STEP(FmaF64, double, fma(a, b, c), c + a)
PEAK_STEP(AddMaxF32, float, fmaxf(c, a + b), fmaxf(c, a))
PEAK_STEP(AddMinF32, float, fminf(c, a + b), fminf(c, a))
PEAK_STEP(AddMaxF64, double, fmax(c, a + b), fmax(c, a))
PEAK_STEP(AddMinF64, double, fmin(c, a + b), fmin(c, a))
PEAK_STEP(AddMaxI32, int, imax(c, wrap_add(a, b)), imax(c, a))
PEAK_STEP(AddMinI32, int, imin(c, wrap_add(a, b)), imin(c, a))
PEAK_STEP(MaxMinF32, float, fmaxf(c, fminf(a, b)), fmaxf(c, a))
PEAK_STEP(MaxMinI32, int, imax(c, imin(a, b)), imax(c, a))
PEAK_STEP(OrAndB32, unsigned, c | (a & b), c | a)
#if __CUDA_ARCH__ >= 900
// DPX: add and min/max in one instruction (VIADDMNMX), 32-bit or two 16-bit lanes.
PEAK_STEP(AddMaxI32Dpx, int, __viaddmax_s32(a, b, c), imax(c, a))
PEAK_STEP(AddMinI32Dpx, int, __viaddmin_s32(a, b, c), imin(c, a))
PEAK_STEP(AddMaxI16x2Dpx, unsigned, __viaddmax_s16x2(a, b, c), __vmaxs2(c, a))
PEAK_STEP(AddMinI16x2Dpx, unsigned, __viaddmin_s16x2(a, b, c), __vmins2(c, a))
#else
// No DPX before sm_90 (the intrinsics would be emulated): the plain sequence instead.
PEAK_STEP(AddMaxI32Dpx, int, imax(c, wrap_add(a, b)), imax(c, a))
PEAK_STEP(AddMinI32Dpx, int, imin(c, wrap_add(a, b)), imin(c, a))
PEAK_STEP(AddMaxI16x2Dpx, unsigned, __vmaxs2(c, __vadd2(a, b)), __vmaxs2(c, a))
PEAK_STEP(AddMinI16x2Dpx, unsigned, __vmins2(c, __vadd2(a, b)), __vmins2(c, a))
#endif

template <class S, int N>
PEAK_DEV void store(const typename S::T (&c)[N], typename S::T* out) {
  typename S::T r = c[0];
#pragma unroll
  for (int i = 1; i < N; ++i) r = S::join(r, c[i]);
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}

// Operands in registers. Chain i takes chain i+1's value from the previous round as its b, so
// every step is new work (no (a (x) b) is loop-invariant) while the PEAK_CHAINS steps of a
// round stay independent of each other: latency is hidden within one warp.
template <class S>
PEAK_DEV void registers_body(const typename S::T* in, typename S::T* out, int iters) {
  typedef typename S::T T;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  T c[PEAK_CHAINS];
#pragma unroll
  for (int i = 0; i < PEAK_CHAINS; ++i) c[i] = in[(tid * PEAK_CHAINS + i) % PEAK_IN];
  const T a = in[tid % PEAK_IN];
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int r = 0; r < PEAK_ROUNDS; ++r) {
      T n[PEAK_CHAINS];
#pragma unroll
      for (int i = 0; i < PEAK_CHAINS; ++i) n[i] = S::step(c[i], a, c[(i + 1) % PEAK_CHAINS]);
#pragma unroll
      for (int i = 0; i < PEAK_CHAINS; ++i) c[i] = n[i];
    }
  }
  store<S>(c, out);
}

// Four consecutive shared elements (16-byte aligned) by 128-bit loads.
PEAK_DEV void load4(float (&v)[4], const float* p) {
  const float4 x = *reinterpret_cast<const float4*>(p);
  v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}
PEAK_DEV void load4(int (&v)[4], const int* p) {
  const int4 x = *reinterpret_cast<const int4*>(p);
  v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}
PEAK_DEV void load4(unsigned (&v)[4], const unsigned* p) {
  const uint4 x = *reinterpret_cast<const uint4*>(p);
  v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
}
PEAK_DEV void load4(double (&v)[4], const double* p) {
  const double2 x = reinterpret_cast<const double2*>(p)[0];
  const double2 y = reinterpret_cast<const double2*>(p)[1];
  v[0] = x.x, v[1] = x.y, v[2] = y.x, v[3] = y.y;
}

// A thread's 8 values of one k row, laid out as the engine's mainloop lays them: runs of 4,
// PEAK_THREADS_M * 4 apart; the lanes of a warp that share t read the same address (broadcast).
template <class T>
PEAK_DEV void load_frag(T (&f)[PEAK_TM], const T* row, int t) {
#pragma unroll
  for (int h = 0; h < PEAK_TM / 4; ++h) {
    T v[4];
    load4(v, row + h * PEAK_THREADS_M * 4 + t * 4);
#pragma unroll
    for (int e = 0; e < 4; ++e) f[h * 4 + e] = v[e];
  }
}

// Operands from shared memory, as a tiled GEMM's inner loop: per k, the thread's a fragment
// (and with B_SMEM its b fragment) is loaded, then PEAK_TM x PEAK_TN steps use them.
template <class S, bool B_SMEM>
PEAK_DEV void smem_body(const typename S::T* in, typename S::T* out, int iters) {
  typedef typename S::T T;
  // Two copies of a k slice, as a double-buffered mainloop has.
  __shared__ __align__(16) T sa[2 * PEAK_BK * PEAK_ROW];
  __shared__ __align__(16) T sb[2 * PEAK_BK * PEAK_ROW];
  for (int e = threadIdx.x; e < 2 * PEAK_BK * PEAK_ROW; e += blockDim.x) {
    sa[e] = in[e % PEAK_IN];
    sb[e] = in[(e + PEAK_IN / 2) % PEAK_IN];
  }
  __syncthreads();
  // The engine's warp shape: a warp covers 4 x 8 threads of the 16 x 16 thread grid.
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tm = (warp / (PEAK_THREADS_N / 8)) * 4 + lane / 8;
  const int tn = (warp % (PEAK_THREADS_N / 8)) * 8 + lane % 8;
  const int tid = blockIdx.x * blockDim.x + threadIdx.x;
  T c[PEAK_TM * PEAK_TN], b[PEAK_TN];
#pragma unroll
  for (int i = 0; i < PEAK_TM * PEAK_TN; ++i) c[i] = in[(tid + i) % PEAK_IN];
#pragma unroll
  for (int j = 0; j < PEAK_TN; ++j) b[j] = in[(tid * 3 + j) % PEAK_IN];
#pragma unroll 1
  for (int it = 0; it < iters; ++it) {
    // The slice copy alternates, so the loads' addresses change every iteration: they cannot
    // be hoisted out of the loop into registers.
    const int buf = (it & 1) * PEAK_BK * PEAK_ROW;
#pragma unroll
    for (int k = 0; k < PEAK_BK; ++k) {
      T a[PEAK_TM], bk[PEAK_TN];
      load_frag(a, sa + buf + k * PEAK_ROW, tm);
      if (B_SMEM) {
        load_frag(bk, sb + buf + k * PEAK_ROW, tn);
      } else {
#pragma unroll
        for (int j = 0; j < PEAK_TN; ++j) bk[j] = b[j];
      }
#pragma unroll
      for (int i = 0; i < PEAK_TM; ++i)
#pragma unroll
        for (int j = 0; j < PEAK_TN; ++j)
          c[i * PEAK_TN + j] = S::step(c[i * PEAK_TN + j], a[i], bk[j]);
    }
  }
  store<S>(c, out);
}

#define PEAK_KERNELS(ID, S)                                                              \
  extern "C" __global__ void __launch_bounds__(PEAK_THREADS)                             \
      peak_##ID##_reg(const S::T* in, S::T* out, int iters) {                            \
    registers_body<S>(in, out, iters);                                                   \
  }                                                                                      \
  extern "C" __global__ void __launch_bounds__(PEAK_THREADS)                             \
      peak_##ID##_smem1(const S::T* in, S::T* out, int iters) {                          \
    smem_body<S, false>(in, out, iters);                                                 \
  }                                                                                      \
  extern "C" __global__ void __launch_bounds__(PEAK_THREADS)                             \
      peak_##ID##_smem2(const S::T* in, S::T* out, int iters) {                          \
    smem_body<S, true>(in, out, iters);                                                  \
  }

// Copy bandwidth: one 16-byte element per thread. On an H200 this plain form matched
// cudaMemcpy (4.2 TB/s); grid-stride loops, with or without 4 loads in flight, gave 3.8-3.96.
extern "C" __global__ void peak_copy(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                     unsigned long long n) {
  const unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = src[i];
}
)CUDA";

}  // namespace

const char* const kOperandKinds[3] = {"registers", "one smem", "both smem"};

const std::vector<Step>& steps() {
  // instruction: the step's SASS as nvdisasm shows it for sm_90a, and for sm_80 where that
  // differs. ptxas fuses the plain i32 add+max into VIADDMNMX itself on sm_90; fmax on f64 has
  // no single instruction (DSETP + selects keep its NaN rule).
  static const std::vector<Step> all = {
      {"fma_f32", "FmaF32", "fma", "f32", 2, "FFMA", ""},
      {"fma_f64", "FmaF64", "fma", "f64", 2, "DFMA", ""},
      {"addmax_f32", "AddMaxF32", "add-max", "f32", 2, "FADD+FMNMX", ""},
      {"addmin_f32", "AddMinF32", "add-min", "f32", 2, "FADD+FMNMX", ""},
      {"addmax_f64", "AddMaxF64", "add-max", "f64", 2, "DADD+DSETP+SEL+FSEL+LOP3 (fmax)", ""},
      {"addmin_f64", "AddMinF64", "add-min", "f64", 2, "DADD+DSETP+SEL+FSEL+LOP3 (fmin)", ""},
      {"addmax_i32_dpx", "AddMaxI32Dpx", "add-max", "i32", 2, "VIADDMNMX (DPX)", "IADD+IMNMX"},
      {"addmin_i32_dpx", "AddMinI32Dpx", "add-min", "i32", 2, "VIADDMNMX (DPX)", "IADD+IMNMX"},
      {"addmax_i32", "AddMaxI32", "add-max", "i32", 2, "VIADDMNMX (plain, fused by ptxas)",
       "IADD+IMNMX"},
      {"addmin_i32", "AddMinI32", "add-min", "i32", 2, "VIADDMNMX (plain, fused by ptxas)",
       "IADD+IMNMX"},
      {"addmax_i16x2_dpx", "AddMaxI16x2Dpx", "add-max", "i16x2", 4, "VIADDMNMX.S16x2 (DPX)",
       "__vadd2+__vmaxs2 (emulated, ~9 instructions)"},
      {"addmin_i16x2_dpx", "AddMinI16x2Dpx", "add-min", "i16x2", 4, "VIADDMNMX.S16x2 (DPX)",
       "__vadd2+__vmins2 (emulated, ~9 instructions)"},
      {"maxmin_f32", "MaxMinF32", "max-min", "f32", 2, "FMNMX+FMNMX", ""},
      {"maxmin_i32", "MaxMinI32", "max-min", "i32", 2, "VIMNMX+VIMNMX", "IMNMX+IMNMX"},
      {"orand_b32", "OrAndB32", "or-and", "b32", 64, "LOP3", ""},
  };
  return all;
}

std::string kernel_name(const Step& s, int operand_kind) {
  static const char* const suffix[3] = {"_reg", "_smem1", "_smem2"};
  return "peak_" + s.id + suffix[operand_kind];
}

int steps_per_iteration(int operand_kind) {
  return operand_kind == 0 ? kChains * kRounds : kBK * kTM * kTN;
}

std::string kernel_source() {
  std::string src = "// gamut peak microbenchmarks (generated by gamut::peak::kernel_source)\n";
  auto define = [&](const char* name, int v) {
    src += "#define " + std::string(name) + " " + std::to_string(v) + "\n";
  };
  define("PEAK_THREADS", kBlockThreads);
  define("PEAK_CHAINS", kChains);
  define("PEAK_ROUNDS", kRounds);
  define("PEAK_TM", kTM);
  define("PEAK_TN", kTN);
  define("PEAK_BK", kBK);
  define("PEAK_THREADS_M", kThreadsM);
  define("PEAK_THREADS_N", kThreadsN);
  define("PEAK_IN", kInputElements);
  src += kDeviceText;
  for (const Step& s : steps()) src += "PEAK_KERNELS(" + s.id + ", " + s.device_struct + ")\n";
  return src;
}

}  // namespace gamut::peak
