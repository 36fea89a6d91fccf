// Vector memory access for small register arrays: N contiguous elements moved with the
// widest aligned accesses (4, 8 or 16 bytes), through 32-bit words. Elements are packed into
// and unpacked from the words with shifts, never by reinterpreting the array, so arrays of
// 1-, 2- and 8-byte types stay in registers (a reinterpreted bool[4] would go to local memory).
#pragma once
#include "gamut_math.cuh"

namespace gm {

// Element e of a word array, and its inverse (the word array must start zeroed).
template <class T> struct Bits;
#define GM_BITS_1(T, GET, PUT)                                                      \
  template <> struct Bits<T> {                                                     \
    static GM_DEV T get(const unsigned* w, int e) {                                \
      const unsigned x = (w[e >> 2] >> (8 * (e & 3))) & 0xffu;                     \
      return GET;                                                                  \
    }                                                                              \
    static GM_DEV void put(unsigned* w, int e, T v) { w[e >> 2] |= (PUT) << (8 * (e & 3)); } \
  };
GM_BITS_1(bool, x != 0u, unsigned(v ? 1u : 0u))
GM_BITS_1(b8, b8{(unsigned char)x}, unsigned(v.x))
GM_BITS_1(unsigned char, (unsigned char)x, unsigned(v))
GM_BITS_1(signed char, (signed char)(unsigned char)x, unsigned((unsigned char)v))
#undef GM_BITS_1
#define GM_BITS_2(T, GET, PUT)                                                      \
  template <> struct Bits<T> {                                                     \
    static GM_DEV T get(const unsigned* w, int e) {                                \
      const unsigned x = (w[e >> 1] >> (16 * (e & 1))) & 0xffffu;                  \
      return GET;                                                                  \
    }                                                                              \
    static GM_DEV void put(unsigned* w, int e, T v) { w[e >> 1] |= (PUT) << (16 * (e & 1)); } \
  };
GM_BITS_2(short, (short)(unsigned short)x, unsigned((unsigned short)v))
GM_BITS_2(f16, f16{(unsigned short)x}, unsigned(v.x))
GM_BITS_2(bf16, bf16{(unsigned short)x}, unsigned(v.x))
#undef GM_BITS_2
template <> struct Bits<int> {
  static GM_DEV int get(const unsigned* w, int e) { return int(w[e]); }
  static GM_DEV void put(unsigned* w, int e, int v) { w[e] = unsigned(v); }
};
template <> struct Bits<float> {
  static GM_DEV float get(const unsigned* w, int e) { return __uint_as_float(w[e]); }
  static GM_DEV void put(unsigned* w, int e, float v) { w[e] = __float_as_uint(v); }
};
template <> struct Bits<i64> {
  static GM_DEV i64 get(const unsigned* w, int e) { return i64(u64(w[2 * e]) | (u64(w[2 * e + 1]) << 32)); }
  static GM_DEV void put(unsigned* w, int e, i64 v) {
    w[2 * e] = unsigned(u64(v));
    w[2 * e + 1] = unsigned(u64(v) >> 32);
  }
};
template <> struct Bits<double> {
  static GM_DEV double get(const unsigned* w, int e) { return __hiloint2double(int(w[2 * e + 1]), int(w[2 * e])); }
  static GM_DEV void put(unsigned* w, int e, double v) {
    w[2 * e] = unsigned(__double2loint(v));
    w[2 * e + 1] = unsigned(__double2hiint(v));
  }
};

// W words at p (aligned to min(16, 4 W) bytes); NC: through the read-only path (global inputs).
template <int W, bool NC>
GM_DEV void words_ld(unsigned (&w)[W], const void* p) {
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int q = 0; q < W / 4; ++q) {
      const uint4* a = reinterpret_cast<const uint4*>(p) + q;
      const uint4 v = NC ? __ldg(a) : *a;
      w[4 * q] = v.x; w[4 * q + 1] = v.y; w[4 * q + 2] = v.z; w[4 * q + 3] = v.w;
    }
  } else if constexpr (W == 2) {
    const uint2* a = reinterpret_cast<const uint2*>(p);
    const uint2 v = NC ? __ldg(a) : *a;
    w[0] = v.x; w[1] = v.y;
  } else {
    static_assert(W == 1, "1, 2 or a multiple of 4 words");
    const unsigned* a = reinterpret_cast<const unsigned*>(p);
    w[0] = NC ? __ldg(a) : *a;
  }
}
template <int W>
GM_DEV void words_st(void* p, const unsigned (&w)[W]) {
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int q = 0; q < W / 4; ++q)
      reinterpret_cast<uint4*>(p)[q] = make_uint4(w[4 * q], w[4 * q + 1], w[4 * q + 2], w[4 * q + 3]);
  } else if constexpr (W == 2) {
    *reinterpret_cast<uint2*>(p) = make_uint2(w[0], w[1]);
  } else {
    static_assert(W == 1, "1, 2 or a multiple of 4 words");
    *reinterpret_cast<unsigned*>(p) = w[0];
  }
}

// Whether N elements of T move as whole words (else element by element).
template <class T, int N>
struct VecOk {
  static constexpr int kBytes = int(sizeof(T)) * N;
  static constexpr bool value = kBytes == 4 || kBytes == 8 || kBytes % 16 == 0;
  static constexpr int kWords = kBytes / 4;
};

// N elements of T from memory at src into registers. NC: read-only global data.
template <class T, int N, bool NC>
GM_DEV void vec_ld(T (&dst)[N], const T* src) {
  if constexpr (VecOk<T, N>::value) {
    unsigned w[VecOk<T, N>::kWords];
    words_ld<VecOk<T, N>::kWords, NC>(w, src);
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e] = Bits<T>::get(w, e);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e] = src[e];
  }
}
template <class T, int N>
GM_DEV void vec_st(T* dst, const T (&src)[N]) {
  if constexpr (VecOk<T, N>::value) {
    unsigned w[VecOk<T, N>::kWords];
#pragma unroll
    for (int q = 0; q < VecOk<T, N>::kWords; ++q) w[q] = 0u;
#pragma unroll
    for (int e = 0; e < N; ++e) Bits<T>::put(w, e, src[e]);
    words_st<VecOk<T, N>::kWords>(dst, w);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e] = src[e];
  }
}

}  // namespace gm
