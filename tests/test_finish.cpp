// Finishing steps (`finish { ... }`, docs/language.md section 9) through the library on the CPU
// engine: each finished output against loops written here over the same data (integer data
// exact, float data within 1e-5), through a rewritten program, with finish=false, and the data
// error of outputs whose extents disagree. The query errors are in test_finish_errors.cpp.
#include <gamut/gamut.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "test_api_data.h"

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::Inputs;
using gamut::Options;
using gamut::Query;
using gamut::api_test::cpu;

// Integers in [lo, hi] from a fixed sequence.
std::vector<int32_t> int_values(size_t n, int lo, int hi, unsigned seed) {
  std::vector<int32_t> v(n);
  for (auto& x : v) {
    seed = seed * 1103515245u + 12345u;
    x = lo + int32_t((seed >> 16) % unsigned(hi - lo + 1));
  }
  return v;
}

template <class T>
const T* data_of(const gamut::Result& r, const char* name, std::vector<int64_t> shape, DType t) {
  const gamut::Output& o = r[name];
  EXPECT_FALSE(o.is_list) << name;
  EXPECT_EQ(o.array.dtype, t) << name;
  EXPECT_EQ(o.array.shape, shape) << name;
  return o.array.as<T>();
}

// Group sums and counts of a row-sum product of i32 data, finished into means (integer and
// f64), shares of the total, the total and a scaled copy; compared exactly.
TEST(Finish, MeansSharesAndTotalsOfIntegerGroups) {
  const int64_t M = 53, N = 7, K = 5, G = 6;
  const auto A = int_values(size_t(M * K), -5, 5, 1), B = int_values(size_t(K * N), -3, 3, 2);
  auto g = int_values(size_t(M), 0, int(G) - 1, 3);
  g[0] = int32_t(G - 1);  // the extent is G
  const char* text =
      "where (i, j) { d = 0; reduce (k) { d += A[i, k] * B[k, j]; }\n"
      "  S[g[i]] += d; C[g[i]] += 1; total += d; }\n"
      "finish {\n"
      "  Q[x] = S[x] / max(C[x], 1);\n"
      "  Mean[x] = f64(S[x]) / max(C[x], 1);\n"
      "  Share[x] = f64(S[x]) / sum(S);\n"
      "  Count = sum(C);\n"
      "  Scaled[x] = S[x] * scale;\n"
      "  Twice[x] = Mean[x] * 2;\n"
      "  Total2 = total * 2;\n"
      "}\n";
  Query q = Query::compile(text);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::I32, {M, K}))
      .array("B", ArrayRef::host(B.data(), DType::I32, {K, N}))
      .array("g", ArrayRef::host(g.data(), DType::I32, {M}))
      .scalar("scale", 0.5);
  const gamut::Result r = q.run(in, cpu(2));
  // Dense outputs, then the steps in order.
  std::vector<std::string> names;
  for (const gamut::Output& o : r.outputs) names.push_back(o.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"S", "C", "total", "Q", "Mean", "Share", "Count", "Scaled", "Twice", "Total2"}));

  std::vector<int64_t> S(size_t(G), 0), C(size_t(G), 0);
  int64_t total = 0;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      int64_t d = 0;
      for (int64_t k = 0; k < K; ++k) d += int64_t(A[size_t(i * K + k)]) * B[size_t(k * N + j)];
      S[size_t(g[size_t(i)])] += d;
      C[size_t(g[size_t(i)])] += 1;
      total += d;
    }
  int64_t sum_s = 0, sum_c = 0;
  for (int64_t x = 0; x < G; ++x) sum_s += S[size_t(x)], sum_c += C[size_t(x)];
  ASSERT_NE(sum_s, 0);
  const auto* q_ = data_of<int64_t>(r, "Q", {G}, DType::I64);  // i32 sums by an i64 count
  const auto* mean = data_of<double>(r, "Mean", {G}, DType::F64);
  const auto* share = data_of<double>(r, "Share", {G}, DType::F64);
  const auto* scaled = data_of<double>(r, "Scaled", {G}, DType::F64);
  const auto* twice = data_of<double>(r, "Twice", {G}, DType::F64);
  bool negative_quotient = false;
  for (int64_t x = 0; x < G; ++x) {
    const int64_t c = std::max<int64_t>(C[size_t(x)], 1);
    EXPECT_EQ(q_[x], S[size_t(x)] / c) << x;  // C: truncation toward zero
    negative_quotient |= S[size_t(x)] < 0 && S[size_t(x)] % c != 0;
    EXPECT_EQ(mean[x], double(S[size_t(x)]) / double(c)) << x;
    EXPECT_EQ(share[x], double(S[size_t(x)]) / double(sum_s)) << x;
    EXPECT_EQ(scaled[x], double(S[size_t(x)]) * 0.5) << x;
    EXPECT_EQ(twice[x], mean[x] * 2) << x;
  }
  EXPECT_TRUE(negative_quotient) << "the data should have a negative sum that does not divide evenly";
  EXPECT_EQ(*data_of<int64_t>(r, "Count", {}, DType::I64), sum_c);
  EXPECT_EQ(sum_c, M * N);
  // total is i32 (d is), so is total * 2.
  EXPECT_EQ(*data_of<int32_t>(r, "Total2", {}, DType::I32), int32_t(total * 2));
  EXPECT_EQ(*data_of<int32_t>(r, "total", {}, DType::I32), int32_t(total));
}

// Rows of a float product normalised by their sums, its transpose and its diagonal (one index
// used twice), against loops in double (relative 1e-5).
TEST(Finish, RowNormalisationTransposeAndDiagonalOfFloats) {
  const int64_t M = 37, N = 37, K = 19;
  auto A = gamut::api_test::ints(size_t(M * K), 4), B = gamut::api_test::ints(size_t(K * N), 5);
  for (auto& v : A) v = std::abs(v) + 0.25f;  // positive rows: no sum near 0
  for (auto& v : B) v = std::abs(v) + 0.5f;
  const char* text =
      "where (i, j) { d = 0; reduce (k) { d += A[i, k] * B[k, j]; } P[i, j] = d; R[i] += d; }\n"
      "finish { Norm[r, c] = P[r, c] / R[r]; T[c, r] = P[r, c]; Diag[x] = P[x, x]; Frac = sum(R) / (sum(P) * 2); }";
  Query q = Query::compile(text);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {M, K})).array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
  const gamut::Result r = q.run(in, cpu());
  const auto* P = data_of<float>(r, "P", {M, N}, DType::F32);
  const auto* R = data_of<float>(r, "R", {M}, DType::F32);
  const auto* norm = data_of<float>(r, "Norm", {M, N}, DType::F32);
  const auto* t = data_of<float>(r, "T", {N, M}, DType::F32);
  const auto* diag = data_of<float>(r, "Diag", {M}, DType::F32);
  for (int64_t i = 0; i < M; ++i) {
    double row = 0;
    std::vector<double> p(static_cast<size_t>(N), 0.0);
    for (int64_t j = 0; j < N; ++j) {
      for (int64_t k = 0; k < K; ++k) p[size_t(j)] += double(A[size_t(i * K + k)]) * double(B[size_t(k * N + j)]);
      row += p[size_t(j)];
    }
    EXPECT_NEAR(R[i], row, 1e-5 * row);
    for (int64_t j = 0; j < N; ++j) {
      EXPECT_NEAR(norm[i * N + j], p[size_t(j)] / row, 1e-5 * p[size_t(j)] / row) << i << "," << j;
      EXPECT_EQ(t[j * M + i], P[i * N + j]);
    }
    EXPECT_EQ(diag[i], P[i * N + i]);
  }
  // sum() adds in f64 and rounds once: R's sum is P's, so the fraction is one half.
  EXPECT_NEAR(*data_of<float>(r, "Frac", {}, DType::F32), 0.5f, 1e-5);
}

// A batched query: outputs lead with b, and so do the steps.
TEST(Finish, BatchedMeans) {
  const int64_t Bt = 3, M = 11, N = 4, K = 3;
  const auto A = int_values(size_t(Bt * M * K), -4, 4, 7), B = int_values(size_t(Bt * K * N), -2, 2, 8);
  const char* text =
      "batch (b) where (i, j) { d = 0; reduce (k) { d += A[b, i, k] * B[b, k, j]; } S[b, i] += d; }\n"
      "finish { Mean[b, x] = f64(S[b, x]) / 4; }";
  Query q = Query::compile(text);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::I32, {Bt, M, K}))
      .array("B", ArrayRef::host(B.data(), DType::I32, {Bt, K, N}));
  const gamut::Result r = q.run(in, cpu());
  const auto* mean = data_of<double>(r, "Mean", {Bt, M}, DType::F64);
  for (int64_t b = 0; b < Bt; ++b)
    for (int64_t i = 0; i < M; ++i) {
      int64_t s = 0;
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k) s += int64_t(A[size_t((b * M + i) * K + k)]) * B[size_t((b * K + k) * N + j)];
      EXPECT_EQ(mean[b * M + i], double(s) / 4) << b << "," << i;
    }
}

// Aggregate push-down replaces the query by a program of stages; the steps finish what the
// program produced, as they finish the plain run.
TEST(Finish, AfterARewrittenProgram) {
  const int64_t M = 96, N = 80, K = 24, G = 3, H = 4;
  const auto A = gamut::api_test::ints(size_t(M * K), 9), B = gamut::api_test::ints(size_t(K * N), 10);
  auto g = int_values(size_t(M), 0, int(G) - 1, 11), h = int_values(size_t(N), 0, int(H) - 1, 12);
  g[0] = int32_t(G - 1);
  h[0] = int32_t(H - 1);
  Query q = Query::compile(
      "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[g[i], h[j]] += a; }\n"
      "finish { Scaled[x, y] = C[x, y] / sum(C) + C[x, y]; }");
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {M, K}))
      .array("B", ArrayRef::host(B.data(), DType::F32, {K, N}))
      .array("g", ArrayRef::host(g.data(), DType::I32, {M}))
      .array("h", ArrayRef::host(h.data(), DType::I32, {N}));
  Options plain = cpu();
  plain.rewrites = false;
  const gamut::Result rewritten = q.run(in, cpu()), direct = q.run(in, plain);
  EXPECT_FALSE(rewritten.stats.rewrites.empty()) << "aggregate push-down should apply here";
  EXPECT_TRUE(direct.stats.rewrites.empty());
  // Integer-valued f32 sums are exact in any order: both runs agree bit for bit.
  const auto* c = data_of<float>(rewritten, "C", {G, H}, DType::F32);
  const auto* s1 = data_of<float>(rewritten, "Scaled", {G, H}, DType::F32);
  const auto* s2 = data_of<float>(direct, "Scaled", {G, H}, DType::F32);
  double total = 0;
  for (int64_t e = 0; e < G * H; ++e) total += c[e];
  for (int64_t e = 0; e < G * H; ++e) {
    EXPECT_EQ(s1[e], s2[e]) << e;
    EXPECT_EQ(s1[e], float(c[e] / float(total)) + c[e]) << e;
  }
}

// finish=false: the run's own outputs only (blocks merged elsewhere are finished there).
TEST(Finish, OptionOffReturnsOnlyTheRunsOutputs) {
  Query q = Query::compile(
      "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } S[i] += a; } finish { F[x] = S[x] + 1; }");
  std::vector<float> A = {1, 2, 3, 4}, B = {1, 1, 1, 1};
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {2, 2})).array("B", ArrayRef::host(B.data(), DType::F32, {2, 2}));
  Options o = cpu();
  o.finish = false;
  EXPECT_EQ(q.run(in, o).find("F"), nullptr);
  const gamut::Result r = q.run(in, cpu());
  ASSERT_NE(r.find("F"), nullptr);
  EXPECT_EQ(r["F"].array.as<float>()[1], 2 * (3 + 4) + 1);  // j runs over 2 columns
  // The query's outputs name the step; explain shows it.
  const auto& outs = q.info().outputs;
  ASSERT_EQ(outs.size(), 2u);
  EXPECT_EQ(outs[1].first, "F");
  EXPECT_NE(q.explain().find("finish (per element, on the host once every output is final):\n  F[x]: "),
            std::string::npos)
      << q.explain();
}

// Outputs an index runs over must agree in extent: a data error naming the step and its place.
TEST(Finish, ExtentsThatDisagreeAreADataError) {
  Query q = Query::compile(
      "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } S[g[i]] += a; T[h[j]] += a; }\n"
      "finish { D[x] = S[x] - T[x]; }",
      "q.mmlt");
  std::vector<float> A(6, 1.0f), B(6, 1.0f);
  std::vector<int32_t> g = {0, 1, 2}, h = {0, 1, 0};
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {3, 2}))
      .array("B", ArrayRef::host(B.data(), DType::F32, {2, 3}))
      .array("g", ArrayRef::host(g.data(), DType::I32, {3}))
      .array("h", ArrayRef::host(h.data(), DType::I32, {3}));
  try {
    q.run(in, cpu());
    FAIL() << "expected a data error";
  } catch (const gamut::Error& e) {
    EXPECT_EQ(e.code(), gamut::ExitCode::Data);
    EXPECT_STREQ(e.what(),
                 "data error: D: q.mmlt:2:24: index 'x' runs over S (dimension 0, extent 3) and T (dimension 0, "
                 "extent 2); give the outputs one extent (--dim / dims=)");
  }
  // With one extent given, the step runs.
  in.extent("T", {3});
  const gamut::Result r = q.run(in, cpu());
  EXPECT_EQ(r["D"].array.shape, (std::vector<int64_t>{3}));
}

}  // namespace
