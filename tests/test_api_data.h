// Shared by the library API tests (test_api.cpp, test_api_device.cpp): the query and data.
#pragma once
#include <gamut/gamut.h>

#include <vector>

namespace gamut::api_test {

inline const char* const kSgemm = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";

// Integer values in [-3, 3] from a fixed sequence, not all zero: sums are exact in f32.
inline std::vector<float> ints(size_t n, unsigned seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1103515245u + 12345u;
    x = float(int((seed >> 16) % 7u) - 3);
  }
  return v;
}

inline Options cpu(int threads = 1) {
  Options o;
  o.backend = "cpu";
  o.threads = threads;
  return o;
}

}  // namespace gamut::api_test
