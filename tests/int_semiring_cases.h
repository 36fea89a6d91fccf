// Integer tropical steps with the type's limits as infinities (docs/language.md section 5): the
// queries, data with "no edge" sentinels and sums past the limits, and a reference written here
// from the table in the docs (wide arithmetic, then the infinities), independent of the engines.
// Shared by tests/test_int_semirings.cpp (CPU engine) and tests/gpu/test_gpu_int_semirings.cpp.
#pragma once
#include <gamut/gamut.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gamut::int_semiring_test {

struct Case {
  const char* name;
  const char* text;
  bool max_plus;  // max= (else min=)
  bool b_jk;      // B[j, k] (else B[k, j])
};

inline const Case kCases[] = {
    {"maxplus", "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }", true, false},
    {"minplus", "where (i, j) { a = inf; reduce (k) { a min= A[i, k] + B[k, j]; } C[i, j] = a; }", false, false},
    {"maxplus_general", "where (i, j) { a = -inf; reduce (k) { a = max(a, A[i, k] + B[j, k]); } C[i, j] = a; }", true,
     true},
    {"minplus_jk", "where (i, j) { a = inf; reduce (k) { a min= B[j, k] + A[i, k]; } C[i, j] = a; }", false, true},
};

template <class T>
struct Limits {
  static constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
};

// x + y of the step, as the docs' table says: the semiring's zero absorbs, then the other
// infinity, then the sum saturates (computed in __int128, so it cannot wrap here).
template <class T>
T tropical_sum(T x, T y, bool max_plus) {
  const T zero = max_plus ? Limits<T>::lo : Limits<T>::hi, other = max_plus ? Limits<T>::hi : Limits<T>::lo;
  if (x == zero || y == zero) return zero;
  if (x == other || y == other) return other;
  const __int128 s = __int128(x) + __int128(y);
  if (s < __int128(Limits<T>::lo)) return Limits<T>::lo;
  if (s > __int128(Limits<T>::hi)) return Limits<T>::hi;
  return T(s);
}

// C (M, N) of a case; A (M, K) row-major, B (K, N) or (N, K).
template <class T>
std::vector<T> reference(const Case& c, const std::vector<T>& A, const std::vector<T>& B, int64_t M, int64_t N,
                         int64_t K) {
  std::vector<T> C(size_t(M * N), c.max_plus ? Limits<T>::lo : Limits<T>::hi);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      T& acc = C[size_t(i * N + j)];
      for (int64_t k = 0; k < K; ++k) {
        const T b = c.b_jk ? B[size_t(j * K + k)] : B[size_t(k * N + j)];
        const T s = tropical_sum(A[size_t(i * K + k)], b, c.max_plus);
        acc = c.max_plus ? std::max(acc, s) : std::min(acc, s);
      }
    }
  return C;
}

// Weights with both sentinels, values near the limits (sums that would wrap), and small ones
// of both signs; `absent` of the entries are the semiring's zero ("no edge").
template <class T>
std::vector<T> weights(size_t n, bool max_plus, double absent, std::mt19937_64& rng) {
  std::vector<T> v(n);
  std::uniform_real_distribution<double> u(0, 1);
  std::uniform_int_distribution<int> small(-50, 50);
  for (T& x : v) {
    const double r = u(rng);
    if (r < absent)
      x = max_plus ? Limits<T>::lo : Limits<T>::hi;
    else if (r < absent + 0.03)
      x = max_plus ? Limits<T>::hi : Limits<T>::lo;  // the other infinity
    else if (r < absent + 0.10)
      x = T(Limits<T>::hi - T(small(rng) + 60));  // near the top
    else if (r < absent + 0.17)
      x = T(Limits<T>::lo + T(small(rng) + 60));  // near the bottom
    else
      x = T(small(rng));
  }
  return v;
}

template <class T>
constexpr DType dtype_of() {
  return sizeof(T) == 4 ? DType::I32 : DType::I64;
}

// The case run through the library on `backend`; its output as a vector.
template <class T>
std::vector<T> run(const Case& c, const std::vector<T>& A, const std::vector<T>& B, int64_t M, int64_t N, int64_t K,
                   const std::string& backend) {
  Query q = Query::compile(c.text);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), dtype_of<T>(), {M, K}));
  in.array("B",
           ArrayRef::host(B.data(), dtype_of<T>(), c.b_jk ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}));
  Options o;
  o.backend = backend;
  const Result r = q.run(in, o);
  const Output& C = r["C"];
  const T* p = static_cast<const T*>(C.array.data);
  return std::vector<T>(p, p + M * N);
}

}  // namespace gamut::int_semiring_test
