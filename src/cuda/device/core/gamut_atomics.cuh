// Aggregate operators (StoreOp) on device: their identities, the binary combine, and atomic
// application to global or shared memory for every output type (i32, i64, f32, f64).
#pragma once
#include "gamut_constants.cuh"
#include "gamut_math.cuh"

namespace gm {

// Lowest / highest value of a compute type (float: -inf / inf).
template <class T> struct Lim;
template <> struct Lim<bool> {
  static GM_DEV bool lowest() { return false; }
  static GM_DEV bool highest() { return true; }
};
template <> struct Lim<int> {
  static GM_DEV int lowest() { return kI32Min; }
  static GM_DEV int highest() { return kI32Max; }
};
template <> struct Lim<i64> {
  static GM_DEV i64 lowest() { return kI64Min; }
  static GM_DEV i64 highest() { return kI64Max; }
};
template <> struct Lim<float> {
  static GM_DEV float lowest() { return __int_as_float(int(0xff800000u)); }
  static GM_DEV float highest() { return __int_as_float(0x7f800000); }
};
template <> struct Lim<double> {
  static GM_DEV double lowest() { return __longlong_as_double(i64(0xfff0000000000000ull)); }
  static GM_DEV double highest() { return __longlong_as_double(0x7ff0000000000000ll); }
};

// The identity an output of operator OP starts at (spec section 6).
template <int OP, class T>
GM_DEV T identity() {
  if constexpr (OP == kMax) return Lim<T>::lowest();
  else if constexpr (OP == kMin) return Lim<T>::highest();
  else if constexpr (OP == kAnd) return T(~T(0));
  else return T(0);
}

// a OP b for the aggregate operator OP.
template <int OP, class T>
GM_DEV T combine(T a, T b) {
  if constexpr (OP == kAdd) return add(a, b);
  else if constexpr (OP == kMax) return max_(a, b);
  else if constexpr (OP == kMin) return min_(a, b);
  else if constexpr (OP == kOr) return T(a | b);
  else return T(a & b);
}

// Float max/min by compare-and-swap, with fmaxf/fminf semantics (NaN ignored), so the result
// is what the CPU engine's sequential fmax gives whatever the order.
template <bool IS_MAX>
GM_DEV void atomic_minmax(float* p, float v) {
  int* ip = reinterpret_cast<int*>(p);
  int old = *reinterpret_cast<volatile int*>(ip);
  while (true) {
    const float cur = __int_as_float(old);
    const int want = __float_as_int(IS_MAX ? fmaxf(cur, v) : fminf(cur, v));
    if (want == old) return;                 // no change: no atomic needed
    const int prev = atomicCAS(ip, old, want);
    if (prev == old) return;
    old = prev;
  }
}
template <bool IS_MAX>
GM_DEV void atomic_minmax(double* p, double v) {
  u64* ip = reinterpret_cast<u64*>(p);
  u64 old = *reinterpret_cast<volatile u64*>(ip);
  while (true) {
    const double cur = __longlong_as_double(i64(old));
    const u64 want = u64(__double_as_longlong(IS_MAX ? fmax(cur, v) : fmin(cur, v)));
    if (want == old) return;
    const u64 prev = atomicCAS(ip, old, want);
    if (prev == old) return;
    old = prev;
  }
}

// *p = *p OP v, atomically; p is global or shared (generic addressing).
template <int OP>
GM_DEV void atomic_apply(int* p, int v) {
  if constexpr (OP == kAdd) atomicAdd(p, v);
  else if constexpr (OP == kMax) atomicMax(p, v);
  else if constexpr (OP == kMin) atomicMin(p, v);
  else if constexpr (OP == kOr) atomicOr(p, v);
  else atomicAnd(p, v);
}
template <int OP>
GM_DEV void atomic_apply(i64* p, i64 v) {
  if constexpr (OP == kAdd) atomicAdd(reinterpret_cast<u64*>(p), u64(v));   // wraps as i64
  else if constexpr (OP == kMax) atomicMax(p, v);
  else if constexpr (OP == kMin) atomicMin(p, v);
  else if constexpr (OP == kOr) atomicOr(reinterpret_cast<u64*>(p), u64(v));
  else atomicAnd(reinterpret_cast<u64*>(p), u64(v));
}
template <int OP>
GM_DEV void atomic_apply(float* p, float v) {
  static_assert(OP == kAdd || OP == kMax || OP == kMin, "|= &= need an integer output");
  if constexpr (OP == kAdd) atomicAdd(p, v);
  else atomic_minmax<OP == kMax>(p, v);
}
template <int OP>
GM_DEV void atomic_apply(double* p, double v) {
  static_assert(OP == kAdd || OP == kMax || OP == kMin, "|= &= need an integer output");
  if constexpr (OP == kAdd) atomicAdd(p, v);
  else atomic_minmax<OP == kMax>(p, v);
}

}  // namespace gm
