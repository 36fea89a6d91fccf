// Queries for the partition tests (tests/test_partition.cpp on the CPU engine,
// tests/gpu/test_gpu_partition.cpp on the GPU engine): one per output operator, odd sizes.
#pragma once
#include <string>
#include <vector>

#include "bind/bind.h"
#include "core/array.h"
#include "integer_data.h"

namespace gamut::partition_cases {

using testdata::integer_valued;

struct Case {
  const char* name;
  const char* text;
  int64_t m, n, k;
  bool groups = false;   // binds index vectors g (M) and h (N) with values in [0, 5)
  bool batched = false;  // operands get a leading batch axis of 3
};

inline const Case kCases[] = {
    {"project", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }", 37, 29, 11},
    {"project_transposed", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[j, i] = s; }", 19, 41, 5},
    {"project_by_row_only_wide",
     "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; R[i] max= s; }", 6, 97, 4},
    {"aggregate_groups", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }", 33, 27,
     7, true},
    {"aggregate_scalar_and_minmax",
     "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } total += s; lo min= s; hi max= s; }", 25, 26, 3},
    {"join", "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Area[g[i]] += s; }", 31,
     30, 6, true},
    {"select", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 3) emit L(i, j, s); }", 23, 34, 5},
    {"top_global_ties", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(j, s) top 17 by s; }", 40,
     21, 2},
    {"bottom_per_i",
     "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(i, j, s) bottom 3 by s per i; }", 29, 33, 3},
    {"top_per_j_no_axis_columns",
     "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(s) top 4 by s per j; }", 35, 12, 2},
    {"distinct", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit D(g[i], h[j], s > 0) distinct; }",
     38, 22, 3, true},
    {"batched_minplus",
     "batch (b) where (i, j) { d = inf; reduce (k) { d min= A[b, i, k] + B[b, k, j]; } O[b, i, j] = d; }", 17, 23, 9,
     false, true},
    {"batched_top",
     "batch (b) where (i, j) { s = 0; reduce (k) { s += A[b, i, k] * B[b, k, j]; } emit L(b, s) top 5 by s; }", 21, 18,
     4, false, true},
    // Per-group lists whose groups a split keeps whole (merged by concatenation, no sort): per i
    // along i, batched (the parts' rows interleave by b), and per j of a wide query (split along j).
    {"batched_bottom_per_i",
     "batch (b) where (i, j) { s = 0; reduce (k) { s += A[b, i, k] * B[b, k, j]; } emit L(b, j, s) bottom 2 by s per "
     "i; }",
     19, 15, 3, false, true},
    {"top_per_j_wide", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(i, s) top 3 by s per j; }",
     7, 45, 2},
};

inline Bindings bindings(const Case& c) {
  Bindings b;
  std::vector<int64_t> a = {c.m, c.k}, bb = {c.k, c.n};
  if (c.batched) {
    a.insert(a.begin(), 3);
    bb.insert(bb.begin(), 3);
  }
  b.arrays["A"] = integer_valued(DType::F32, a, -3, 3, 11);
  b.arrays["B"] = integer_valued(DType::F32, bb, -2, 4, 23);
  if (c.groups) {
    b.arrays["g"] = integer_valued(DType::I32, {c.m}, 0, 4, 5);
    b.arrays["h"] = integer_valued(DType::I32, {c.n}, 0, 4, 7);
  }
  return b;
}

}  // namespace gamut::partition_cases
