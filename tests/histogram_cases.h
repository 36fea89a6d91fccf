// Computed output indices (docs/language.md section 9): queries whose aggregate outputs are
// indexed by an integer expression of the pair's values, on integer data, with a reference
// written out as loops here (independent of both engines). tests/test_histogram.cpp runs them
// on the CPU engine; tests/gpu/test_gpu_histogram.cpp on the GPU and against the CPU engine.
#pragma once
#include <gamut/gamut.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace gamut::histogram_test {

// A[i, k] and B[k, j] hold small integers, g[i] group ids in [0, 3): every dot product is exact.
struct Data {
  int64_t M, N, K;
  std::vector<int32_t> A, B, g;
};

inline Data make_data(int64_t M, int64_t N, int64_t K, uint64_t seed) {
  Data d{M, N, K, {}, {}, {}};
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> v(-3, 3), grp(0, 2);
  d.A.resize(size_t(M * K));
  d.B.resize(size_t(K * N));
  d.g.resize(size_t(M));
  for (int32_t& x : d.A) x = v(rng);
  for (int32_t& x : d.B) x = v(rng);
  for (int32_t& x : d.g) x = grp(rng);
  return d;
}

inline int64_t dot(const Data& d, int64_t i, int64_t j) {
  int64_t s = 0;
  for (int64_t k = 0; k < d.K; ++k) s += int64_t(d.A[size_t(i * d.K + k)]) * d.B[size_t(k * d.N + j)];
  return s;
}

using Out = std::vector<int64_t>;
// One query: its text (output `H`), the output's extents for the data, the initial value
// of its elements, and what pair (i, j) with dot product s does to the expected output.
struct Case {
  const char* name;
  const char* text;
  std::function<std::vector<int64_t>(const Data&)> dims;
  int64_t identity;
  std::function<void(const Data&, int64_t i, int64_t j, int64_t s, Out& out)> visit;
};

inline std::vector<Case> cases() {
  using D = const Data&;
  const int64_t lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
  auto fixed = [](std::vector<int64_t> v) { return [v](D) { return v; }; };
  return {
      {"count_dropped_by_if",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; }"
       " let b = dot + 20; if (b >= 0 && b < 41) H[b] += 1; }",
       fixed({41}), 0,
       [](D, int64_t, int64_t, int64_t s, Out& o) {
         if (s + 20 >= 0 && s + 20 < 41) o[size_t(s + 20)] += 1;
       }},
      {"clamped_sum_of_values",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } H[clamp(dot / 4, -3, 3) + 3] += dot; }",
       fixed({7}), 0,
       // C division truncates toward zero, as the query's `/` does.
       [](D, int64_t, int64_t, int64_t s, Out& o) { o[size_t(std::clamp<int64_t>(s / 4, -3, 3) + 3)] += s; }},
      {"max_by_axes",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } H[(i + 2 * j) % 5] max= dot; }",
       fixed({5}), lo,
       [](D, int64_t i, int64_t j, int64_t s, Out& o) {
         int64_t& e = o[size_t((i + 2 * j) % 5)];
         e = std::max(e, s);
       }},
      {"min_by_column",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } H[j % 3] min= dot * (i % 2 + 1); }",
       fixed({3}), hi,
       [](D, int64_t i, int64_t j, int64_t s, Out& o) {
         int64_t& e = o[size_t(j % 3)];
         e = std::min(e, s * (i % 2 + 1));
       }},
      {"or_of_bits",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } if (dot > 0) H[dot % 4] |= 1 << (i % 8); }",
       fixed({4}), 0,
       [](D, int64_t i, int64_t, int64_t s, Out& o) {
         if (s > 0) o[size_t(s % 4)] |= int64_t(1) << (i % 8);
       }},
      {"per_group_and_bin",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; }"
       " let b = dot + 10; if (b >= 0 && b < 21) H[g[i], b] += 1; }",
       fixed({3, 21}), 0,
       [](D d, int64_t i, int64_t, int64_t s, Out& o) {
         if (s + 10 >= 0 && s + 10 < 21) o[size_t(d.g[size_t(i)] * 21 + s + 10)] += 1;
       }},
      {"per_row_histogram",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } H[i, (dot % 6 + 6) % 6] += 1; }",
       [](D d) { return std::vector<int64_t>{d.M, 6}; }, 0,
       [](D, int64_t i, int64_t, int64_t s, Out& o) { o[size_t(i * 6 + (s % 6 + 6) % 6)] += 1; }},
      {"two_computed_indices",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; }"
       " if (dot >= -8 && dot < 8) H[(dot + 8) / 4, j % 4] += 1; }",
       fixed({4, 4}), 0,
       [](D, int64_t, int64_t j, int64_t s, Out& o) {
         if (s >= -8 && s < 8) o[size_t((s + 8) / 4 * 4 + j % 4)] += 1;
       }},
      // More bins than a block's shared table holds (the GPU's hash table, then global atomics).
      {"many_bins",
       "where (i, j) { dot = 0; reduce (k) { dot += A[i, k] * B[k, j]; } H[(dot + 150) * 20 + j % 20] += 1; }",
       fixed({6020}), 0,
       [](D, int64_t, int64_t j, int64_t s, Out& o) { o[size_t((s + 150) * 20 + j % 20)] += 1; }},
  };
}

// The expected output of case c on d (K <= 16 keeps |dot| <= 144, inside every case's extents).
inline Out reference(const Case& c, const Data& d) {
  const std::vector<int64_t> dims = c.dims(d);
  int64_t n = 1;
  for (int64_t x : dims) n *= x;
  Out out(size_t(n), c.identity);
  for (int64_t i = 0; i < d.M; ++i)
    for (int64_t j = 0; j < d.N; ++j) c.visit(d, i, j, dot(d, i, j), out);
  return out;
}

inline Inputs inputs(const Case& c, const Data& d) {
  Inputs in;
  in.array("A", ArrayRef::host(d.A.data(), DType::I32, {d.M, d.K}));
  in.array("B", ArrayRef::host(d.B.data(), DType::I32, {d.K, d.N}));
  if (std::string(c.text).find("g[i]") != std::string::npos)
    in.array("g", ArrayRef::host(d.g.data(), DType::I32, {d.M}));
  in.extent("H", c.dims(d));
  return in;
}

// An integer output of a run (i32, or i64: counts of `+= 1`) as int64 per element.
inline Out values_of(const Result& r, const char* name) {
  const Output& o = r[name];
  Out v(size_t(o.array.size()));
  for (size_t e = 0; e < v.size(); ++e)
    v[e] = o.array.dtype == DType::I64 ? static_cast<const int64_t*>(o.array.data)[e]
                                       : static_cast<const int32_t*>(o.array.data)[e];
  return v;
}
inline Out values(const Result& r) { return values_of(r, "H"); }

}  // namespace gamut::histogram_test
