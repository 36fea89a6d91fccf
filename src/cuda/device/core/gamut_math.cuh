// Scalar semantics of gamut (docs/semantics.md) for generated device code: wrapping integer
// arithmetic, division by zero giving 0, shifts modulo the width, saturating float->int casts,
// storage types and their widening loads. NVRTC-clean: no standard headers.
#pragma once

// Every helper is a device function (nvcc needs the annotation; NVRTC runs -default-device).
#define GM_DEV __device__ __forceinline__

namespace gm {

typedef long long i64;
typedef unsigned long long u64;

// ---- storage types (what arrays hold) -------------------------------------------------------
// bool, f16 and bf16 get distinct types so that overloads can widen them.
struct b8 { unsigned char x; };
struct f16 { unsigned short x; };
struct bf16 { unsigned short x; };

// Widening on load (compute_type_of): small integers -> int, f16/bf16 -> float, bool -> bool.
GM_DEV bool widen(b8 v) { return v.x != 0; }
GM_DEV int widen(unsigned char v) { return v; }
GM_DEV int widen(signed char v) { return v; }
GM_DEV int widen(short v) { return v; }
GM_DEV int widen(int v) { return v; }
GM_DEV i64 widen(i64 v) { return v; }
GM_DEV float widen(float v) { return v; }
GM_DEV double widen(double v) { return v; }
GM_DEV float widen(f16 v) {
  float r;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(v.x));
  return r;
}
GM_DEV float widen(bf16 v) { return __int_as_float(int(unsigned(v.x) << 16)); }

// Limits of the compute types (what -inf / inf mean for integers).
constexpr int kI32Min = -2147483647 - 1;
constexpr int kI32Max = 2147483647;
constexpr i64 kI64Min = -9223372036854775807LL - 1;
constexpr i64 kI64Max = 9223372036854775807LL;

// ---- integer arithmetic: wraps (computed unsigned, where C++ defines overflow) --------------
GM_DEV int add(int a, int b) { return int(unsigned(a) + unsigned(b)); }
GM_DEV i64 add(i64 a, i64 b) { return i64(u64(a) + u64(b)); }
GM_DEV float add(float a, float b) { return a + b; }
GM_DEV double add(double a, double b) { return a + b; }
// The `+` of an integer tropical step (`acc max= x + y`, `acc min= x + y`; docs/language.md
// section 3): the limits are -inf and +inf. The semiring's zero (-inf in max-plus, +inf in
// min-plus) absorbs everything, the other infinity absorbs finite values, and a finite sum
// saturates at the limits instead of wrapping. The CPU engine's inf_sum is the same function.
template <bool MAX_PLUS, class T>
GM_DEV T inf_sum(T a, T b, T lo, T hi) {
  const T zero = MAX_PLUS ? lo : hi, other = MAX_PLUS ? hi : lo;
  const T w = add(a, b);  // wrapped: it overflowed where its sign differs from both operands'
  const bool over = ((a ^ w) & (b ^ w)) < 0;
  T s = over ? (a < 0 ? lo : hi) : w;
  s = (a == other || b == other) ? other : s;
  return (a == zero || b == zero) ? zero : s;
}
GM_DEV int inf_sum_max(int a, int b) { return inf_sum<true>(a, b, kI32Min, kI32Max); }
GM_DEV int inf_sum_min(int a, int b) { return inf_sum<false>(a, b, kI32Min, kI32Max); }
GM_DEV i64 inf_sum_max(i64 a, i64 b) { return inf_sum<true>(a, b, kI64Min, kI64Max); }
GM_DEV i64 inf_sum_min(i64 a, i64 b) { return inf_sum<false>(a, b, kI64Min, kI64Max); }
// Whether an operand value of a tropical step whose sum has type S lies within half of S's range
// (-2^30 <= x < 2^30 for int, -2^62 <= x < 2^62 for i64; after the operand's cast, then exact): the sum of
// two such values never reaches a limit or wraps, so inf_sum equals the plain +, which ptxas
// fuses with the max / min into one DPX instruction. NaN is outside (it casts to 0: exact too,
// but rare enough to take the general path). No overload for other types: a new fragment type
// fails to compile instead of passing unchecked.
template <class S> GM_DEV bool within_half_range(int x) {
  return sizeof(S) == 8 || unsigned(x) + 0x40000000u < 0x80000000u;
}
template <class S> GM_DEV bool within_half_range(i64 x) {
  return sizeof(S) == 8 ? u64(x) + (1ull << 62) < (1ull << 63) : u64(x) + (1ull << 30) < (1ull << 31);
}
template <class S> GM_DEV bool within_half_range(float x) {
  return fabsf(x) < (sizeof(S) == 8 ? 4611686018427387904.0f : 1073741824.0f);
}
template <class S> GM_DEV bool within_half_range(double x) {
  return fabs(x) < (sizeof(S) == 8 ? 4611686018427387904.0 : 1073741824.0);
}
template <class S> GM_DEV bool within_half_range(unsigned char) { return true; }  // bool: 0 or 1
// The same over a thread's fragment (TM rows or TN columns of a slice), without branches.
template <class S, class T, int N> GM_DEV bool within_half_range(const T (&v)[N]) {
  bool all = true;
#pragma unroll
  for (int q = 0; q < N; ++q) all &= within_half_range<S>(v[q]);
  return all;
}
GM_DEV int sub(int a, int b) { return int(unsigned(a) - unsigned(b)); }
GM_DEV i64 sub(i64 a, i64 b) { return i64(u64(a) - u64(b)); }
GM_DEV int mul(int a, int b) { return int(unsigned(a) * unsigned(b)); }
GM_DEV i64 mul(i64 a, i64 b) { return i64(u64(a) * u64(b)); }
// -a as ~a + 1 in inline PTX: ptxas (CUDA 13.0, -O1 and up) fuses min(min(x, -x), c) into one
// three-input VIMNMX3 and drops the negation when -x is a neg.s32, sub.s32 0, x or mul.lo.s32 by
// -1 (measured on an H100; tests/fuzz/cases/min_of_a_negation.json); not + add
// stays a register of its own.
GM_DEV int neg(int a) {
  int r;
  asm("{\n .reg .b32 t;\n not.b32 t, %1;\n add.s32 %0, t, 1;\n}" : "=r"(r) : "r"(a));
  return r;
}
GM_DEV i64 neg(i64 a) { return i64(0ull - u64(a)); }
GM_DEV int abs_(int a) { return a < 0 ? neg(a) : a; }      // abs(INT_MIN) == INT_MIN
GM_DEV i64 abs_(i64 a) { return a < 0 ? neg(a) : a; }
GM_DEV float abs_(float a) { return fabsf(a); }
GM_DEV double abs_(double a) { return fabs(a); }
// Division / remainder by zero give 0; MIN / -1 wraps to MIN (C leaves both undefined).
GM_DEV int div(int a, int b) { return b == 0 ? 0 : b == -1 ? neg(a) : a / b; }
GM_DEV i64 div(i64 a, i64 b) { return b == 0 ? 0 : b == -1 ? neg(a) : a / b; }
GM_DEV int mod(int a, int b) { return (b == 0 || b == -1) ? 0 : a % b; }
GM_DEV i64 mod(i64 a, i64 b) { return (b == 0 || b == -1) ? 0 : a % b; }
GM_DEV float mod(float a, float b) { return fmodf(a, b); }
GM_DEV double mod(double a, double b) { return fmod(a, b); }
// Shift counts are taken modulo the width; >> is arithmetic for signed types.
GM_DEV int shl(int a, int b) { return int(unsigned(a) << (unsigned(b) & 31u)); }
GM_DEV i64 shl(i64 a, i64 b) { return i64(u64(a) << (u64(b) & 63u)); }
GM_DEV int shr(int a, int b) { return a >> (unsigned(b) & 31u); }
GM_DEV i64 shr(i64 a, i64 b) { return a >> (u64(b) & 63u); }

// min / max: floats ignore a NaN argument (fminf / fmaxf), integers compare. The hardware's
// FMNMX also orders -0.0 below +0.0 whatever the argument order (checked on sm_90), which is
// what the CPU engine does, so no fix-up is needed.
GM_DEV int min_(int a, int b) { return a < b ? a : b; }
GM_DEV i64 min_(i64 a, i64 b) { return a < b ? a : b; }
GM_DEV float min_(float a, float b) { return fminf(a, b); }
GM_DEV double min_(double a, double b) { return fmin(a, b); }
GM_DEV bool min_(bool a, bool b) { return a && b; }
GM_DEV int max_(int a, int b) { return a > b ? a : b; }
GM_DEV i64 max_(i64 a, i64 b) { return a > b ? a : b; }
GM_DEV float max_(float a, float b) { return fmaxf(a, b); }
GM_DEV double max_(double a, double b) { return fmax(a, b); }
GM_DEV bool max_(bool a, bool b) { return a || b; }
// clamp(x, lo, hi) = min(max(x, lo), hi), as the CPU engine evaluates it.
template <class T>
GM_DEV T clamp_(T x, T lo, T hi) { return min_(max_(x, lo), hi); }

// ---- conversions (explicit Cast nodes and stores) ------------------------------------------
// Float -> integer truncates toward zero, saturates and maps NaN to 0, as the CPU engine does.
// cvt.rzi saturates, but gives the smallest integer for NaN (measured on an H100, 32 and 64 bits:
// tests/fuzz/cases/float_specials_to_integers.json), so NaN is tested first, in inline PTX:
// written as a C++ select, a chain of such casts (i64(f64(i64(...))), 127 deep) made NVRTC's
// optimizer run for minutes.
GM_DEV bool to_bool(bool v) { return v; }
GM_DEV bool to_bool(int v) { return v != 0; }
GM_DEV bool to_bool(i64 v) { return v != 0; }
GM_DEV bool to_bool(float v) { return v != 0.0f; }     // NaN -> true, as C
GM_DEV bool to_bool(double v) { return v != 0.0; }
GM_DEV int to_i32(bool v) { return v ? 1 : 0; }
GM_DEV int to_i32(int v) { return v; }
GM_DEV int to_i32(i64 v) { return int(unsigned(u64(v))); }  // wraps
GM_DEV int to_i32(float v) {
  int r;
  asm("{\n .reg .pred nan;\n setp.nan.f32 nan, %1, %1;\n cvt.rzi.s32.f32 %0, %1;\n @nan mov.b32 %0, 0;\n}"
      : "=r"(r) : "f"(v));
  return r;
}
GM_DEV int to_i32(double v) {
  int r;
  asm("{\n .reg .pred nan;\n setp.nan.f64 nan, %1, %1;\n cvt.rzi.s32.f64 %0, %1;\n @nan mov.b32 %0, 0;\n}"
      : "=r"(r) : "d"(v));
  return r;
}
GM_DEV i64 to_i64(bool v) { return v ? 1 : 0; }
GM_DEV i64 to_i64(int v) { return v; }
GM_DEV i64 to_i64(i64 v) { return v; }
GM_DEV i64 to_i64(float v) {
  i64 r;
  asm("{\n .reg .pred nan;\n setp.nan.f32 nan, %1, %1;\n cvt.rzi.s64.f32 %0, %1;\n @nan mov.b64 %0, 0;\n}"
      : "=l"(r) : "f"(v));
  return r;
}
GM_DEV i64 to_i64(double v) {
  i64 r;
  asm("{\n .reg .pred nan;\n setp.nan.f64 nan, %1, %1;\n cvt.rzi.s64.f64 %0, %1;\n @nan mov.b64 %0, 0;\n}"
      : "=l"(r) : "d"(v));
  return r;
}
GM_DEV float to_f32(bool v) { return v ? 1.0f : 0.0f; }
GM_DEV float to_f32(int v) { return __int2float_rn(v); }
GM_DEV float to_f32(i64 v) { return __ll2float_rn(v); }
GM_DEV float to_f32(float v) { return v; }
GM_DEV float to_f32(double v) { return __double2float_rn(v); }
GM_DEV double to_f64(bool v) { return v ? 1.0 : 0.0; }
GM_DEV double to_f64(int v) { return __int2double_rn(v); }
GM_DEV double to_f64(i64 v) { return __ll2double_rn(v); }
GM_DEV double to_f64(float v) { return double(v); }
GM_DEV double to_f64(double v) { return v; }

// Kernel arguments are 64-bit words (the fields of a kernel's Args); these read one as a compute
// type.
GM_DEV bool arg_bool(u64 s) { return s != 0; }
GM_DEV int arg_i32(u64 s) { return int(unsigned(s)); }
GM_DEV i64 arg_i64(u64 s) { return i64(s); }
GM_DEV float arg_f32(u64 s) { return __int_as_float(int(unsigned(s))); }
GM_DEV double arg_f64(u64 s) { return __longlong_as_double(i64(s)); }

// An empty asm the compiler must assume changes v. The passes read accumulators and marks
// through it, so that the compiler neither carries pass-1 results (a predicate or value per
// pair, TM x TN of them) into pass 2 nor hoists ranks out of the selection rounds: either
// needs more registers than the largest tiles have, and spills.
GM_DEV void opaque(float& v) { asm volatile("" : "+f"(v)); }
GM_DEV void opaque(double& v) { asm volatile("" : "+d"(v)); }
GM_DEV void opaque(int& v) { asm volatile("" : "+r"(v)); }
GM_DEV void opaque(unsigned& v) { asm volatile("" : "+r"(v)); }
GM_DEV void opaque(i64& v) { asm volatile("" : "+l"(v)); }
GM_DEV void opaque(bool& v) {
  unsigned u = v ? 1u : 0u;
  asm volatile("" : "+r"(u));
  v = u != 0u;
}
template <int W>
GM_DEV void opaque_bits(unsigned (&bits)[W]) {
#pragma unroll
  for (int w = 0; w < W; ++w) opaque(bits[w]);
}

// The sum of v over this lane and the lanes below it (every lane of the warp calls it).
GM_DEV unsigned warp_inclusive_sum(unsigned v) {
  const int lane = int(threadIdx.x & 31u);
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const unsigned t = __shfl_up_sync(0xffffffffu, v, d);
    if (lane >= d) v += t;
  }
  return v;
}

// ---- the tile's barriers ------------------------------------------------------------------------
// The threads that run a tile's outputs are the block's first THREADS (Shape::THREADS): all of
// them, or all but the producer warp of the TMA mainloop (gamut_tc_wgmma_tma.cuh), which has
// left by then. Output code synchronizes them with barrier 1 and their count, never with
// __syncthreads (it would wait for the producer).
//
// GM_TILE_GROUPS 2 (defined by a ping-pong kernel before its includes; gamut_tc_wgmma_tma.cuh's
// GROUPS): the block's first 2 THREADS threads are two groups, each running tiles of its own;
// a group synchronizes with barrier 1 + group, and its operators' static shared memory is
// indexed by tile_group. With one group both are the plain forms.
#ifndef GM_TILE_GROUPS
#define GM_TILE_GROUPS 1
#endif
template <int THREADS>
GM_DEV int tile_group() {
  return GM_TILE_GROUPS > 1 ? int(threadIdx.x) / THREADS : 0;
}
// The thread's index in its group.
template <int THREADS>
GM_DEV int tile_thread() {
  return GM_TILE_GROUPS > 1 ? int(threadIdx.x) % THREADS : int(threadIdx.x);
}
template <int THREADS>
GM_DEV void tile_sync() {
  if constexpr (GM_TILE_GROUPS > 1)
    asm volatile("bar.sync %0, %1;\n" ::"r"(1 + tile_group<THREADS>()), "n"(THREADS) : "memory");
  else
    asm volatile("bar.sync 1, %0;\n" ::"n"(THREADS) : "memory");
}
// tile_sync, returning how many of the threads passed p (as __syncthreads_count).
template <int THREADS>
GM_DEV int tile_sync_count(bool p) {
  int n;
  if constexpr (GM_TILE_GROUPS > 1)
    asm volatile("{\n.reg .pred q;\nsetp.ne.u32 q, %1, 0;\nbar.red.popc.u32 %0, %2, %3, q;\n}\n"
                 : "=r"(n)
                 : "r"(unsigned(p)), "r"(1 + tile_group<THREADS>()), "n"(THREADS)
                 : "memory");
  else
    asm volatile("{\n.reg .pred q;\nsetp.ne.u32 q, %1, 0;\nbar.red.popc.u32 %0, 1, %2, q;\n}\n"
                 : "=r"(n)
                 : "r"(unsigned(p)), "n"(THREADS)
                 : "memory");
  return n;
}

}  // namespace gm
