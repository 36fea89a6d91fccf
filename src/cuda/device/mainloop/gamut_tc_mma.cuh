// Tensor-core instructions for the mma.sync mainloop (gamut_tc_mainloop.cuh): the warp-level
// matrix multiply-accumulate of each math, ldmatrix, and the TF32 conversions.
//
// Inline PTX: libcu++'s cuda::ptx has no mma.sync or ldmatrix (it covers TMA, mbarriers and
// sm_100's tcgen05), and including it costs ~220 ms of NVRTC time per kernel, <cuda/pipeline>
// ~1.4 s (docs/tensor-cores.md). The storage types are gamut's own (gamut_math.cuh), so no
// cuda_fp16.h / cuda_bf16.h either.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k*"), lane = 4 * g + t:
//   C/D (m16n8, 4 x 32-bit): c[2h + e] is (row g + 8h, col 2t + e).
//   A of m16n8k16 (16-bit):  a[r] holds 2 k-consecutive values of row g + 8 (r & 1) at k 2t + 8 (r >> 1).
//   B of m16n8k16:           b[r] holds 2 k-consecutive values of col g at k 2t + 8r.
//   A of m16n8k32 (8-bit):   a[r] holds 4 k-consecutive values of row g + 8 (r & 1) at k 4t + 16 (r >> 1).
//   B of m16n8k32:           b[r] holds 4 values of col g at k 4t + 16r.
//   A of m16n8k8 (tf32):     a[r] is (row g + 8 (r & 1), k t + 4 (r >> 1)); B: b[r] is (k t + 4r, col g).
// In every case a k-step of the instruction spans 32 bytes of k per row, and register r of A
// (B) covers rows (columns) 8 (r & 1) ... and k bytes 16 (r >> 1) ...: the same ldmatrix
// addressing serves all element sizes when k is contiguous in shared memory.
#pragma once
#include "gamut_math.cuh"

namespace gm {
namespace tc {

// ---- ldmatrix: four 8x8 matrices of 16-byte rows; lane l gives the row address of matrix l / 8.
GM_DEV void ldmatrix_x4(unsigned (&r)[4], unsigned saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr));
}
// The same, each 8x8 matrix of 16-bit elements transposed (16-bit operands stored k-major... of
// the other axis: X[k, i] and Y[k, j] tiles).
GM_DEV void ldmatrix_x4_trans(unsigned (&r)[4], unsigned saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(saddr));
}
GM_DEV unsigned lds32(unsigned saddr) {
  unsigned v;
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(saddr));
  return v;
}
GM_DEV void sts32(unsigned saddr, unsigned v) { asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(saddr), "r"(v)); }
GM_DEV void sts16(unsigned saddr, unsigned v) {
  asm volatile("st.shared.b16 [%0], %1;\n" ::"r"(saddr), "h"((unsigned short)v));
}
GM_DEV void sts8(unsigned saddr, unsigned v) { asm volatile("st.shared.b8 [%0], %1;\n" ::"r"(saddr), "r"(v)); }

// ---- cp.async of 16 or 4 bytes, the bytes past `bytes` zero-filled (0: nothing is read).
GM_DEV void cp_async16_zfill(unsigned sdst, const void* g, int bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sdst), "l"(g), "r"(bytes) : "memory");
}
GM_DEV void cp_async4_zfill(unsigned sdst, const void* g, int bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(sdst), "l"(g), "r"(bytes) : "memory");
}
GM_DEV unsigned smem_addr(const void* p) { return unsigned(__cvta_generic_to_shared(p)); }

// ---- TF32: round to nearest (ties away from zero), the low 13 bits cleared.
GM_DEV unsigned to_tf32(unsigned f32_bits) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(__uint_as_float(f32_bits)));
  return r;
}

// ---- The maths. Each names its storage types (A, B), accumulator type, the instruction's k
// (elements), and mma(d, a, b): d += a * b on one m16n8 tile, with a[4] / b[2] the fragments
// as ldmatrix delivers them (raw storage bits). kPasses: instructions per tile and k-step.
struct MathF16 {
  typedef f16 A;
  typedef f16 B;
  typedef float Acc;
  static constexpr int kK = 16, kPasses = 1;
  static constexpr const char* kName = "f16";
  static GM_DEV void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                         const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

struct MathBF16 {
  typedef bf16 A;
  typedef bf16 B;
  typedef float Acc;
  static constexpr int kK = 16, kPasses = 1;
  static constexpr const char* kName = "bf16";
  static GM_DEV void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                         const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
};

// 8-bit integers, i32 accumulation that wraps like the CPU engine's (no .satfinite).
// SA / SB: signed char (i8) or unsigned char (u8), in any combination.
template <class SA, class SB>
struct MathI8 {
  typedef SA A;
  typedef SB B;
  typedef int Acc;
  static constexpr int kK = 32, kPasses = 1;
  static constexpr bool kSignedA = SA(-1) < SA(0), kSignedB = SB(-1) < SB(0);
  static constexpr const char* kName = kSignedA ? (kSignedB ? "i8" : "i8xu8") : (kSignedB ? "u8xi8" : "u8");
  static GM_DEV void mma(int& d0, int& d1, int& d2, int& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
#define GM_IMMA(TA, TB)                                                                                   \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32." TA "." TB ".s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
               "{%8, %9}, {%0, %1, %2, %3};\n"                                                           \
               : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
    if constexpr (kSignedA && kSignedB) GM_IMMA("s8", "s8");
    else if constexpr (kSignedA) GM_IMMA("s8", "u8");
    else if constexpr (kSignedB) GM_IMMA("u8", "s8");
    else GM_IMMA("u8", "u8");
#undef GM_IMMA
  }
};

GM_DEV void mma_tf32(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// f32 operands rounded to TF32 (10-bit mantissa), like PyTorch's allow_tf32.
struct MathTf32 {
  typedef float A;
  typedef float B;
  typedef float Acc;
  static constexpr int kK = 8, kPasses = 1;
  static constexpr const char* kName = "tf32";
  static GM_DEV void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                         const unsigned (&b)[2]) {
    mma_tf32(d0, d1, d2, d3, a, b);
  }
};

// f32 operands split x = big + small, both TF32 (big = tf32(x), small = tf32(x - big)); the
// product is big*big + big*small + small*big (small*small, ~2^-22 relative, is dropped), the
// small terms first so that they are not lost against the large one (Mainloop::mma_step).
struct MathTf32x3 {
  typedef float A;
  typedef float B;
  typedef float Acc;
  static constexpr int kK = 8, kPasses = 3;
  static constexpr const char* kName = "tf32x3";
  static GM_DEV void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                         const unsigned (&b)[2]) {
    mma_tf32(d0, d1, d2, d3, a, b);
  }
};

// Fragments of f32 bits -> the TF32 operands of the math: rounded in place (tf32), or split
// into big and small parts (tf32x3); other maths use the bits as loaded.
template <int N>
GM_DEV void round_tf32(unsigned (&x)[N]) {
#pragma unroll
  for (int r = 0; r < N; ++r) x[r] = to_tf32(x[r]);
}
template <int N>
GM_DEV void split_tf32(unsigned (&x)[N], unsigned (&small)[N]) {
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const unsigned big = to_tf32(x[r]);
    small[r] = to_tf32(__float_as_uint(__uint_as_float(x[r]) - __uint_as_float(big)));
    x[r] = big;
  }
}

// tf32x3 on wgmma: the big part is x's own f32 bits, which the instruction reads as TF32 by
// dropping the low 13 bits (truncation); small = tf32(x - trunc(x)) (the difference is exact;
// rounded to nearest, ties away, as cvt.rna, by integer add: it is finite and far from the
// top of the range), 0 where x is infinite or NaN (its big part carries it). Two integer and
// one float operation a value, and the big part needs no store.
template <int N>
GM_DEV void small_tf32_of_truncated(const unsigned (&x)[N], unsigned (&small)[N]) {
#pragma unroll
  for (int r = 0; r < N; ++r) {
    const float f = __uint_as_float(x[r]), d = f - __uint_as_float(x[r] & 0xffffe000u);
    small[r] = fabsf(f) < __int_as_float(0x7f800000) ? (__float_as_uint(d) + 0x1000u) & 0xffffe000u : 0u;
  }
}

}  // namespace tc
}  // namespace gm
