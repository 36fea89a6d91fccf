// Computed output indices on the CPU engine (the executable definition): every case of
// histogram_cases.h against its loop reference, at sizes that are one pair, odd, and several
// threads' tiles; out-of-range values as data errors (never a partial result); extents that
// must be given; the query errors; the distance-histogram example against a NumPy-style
// reference on integer coordinates. The GPU: tests/gpu/test_gpu_histogram.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "histogram_cases.h"

using namespace gamut;
using namespace gamut::histogram_test;

namespace {

Result run_cpu(const std::string& text, const Inputs& in, int threads = 0) {
  Options o;
  o.backend = "cpu";
  o.threads = threads;
  return Query::compile(text).run(in, o);
}

std::string error_of(const std::function<void()>& f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

TEST(Histogram, EveryCaseMatchesTheLoops) {
  for (const auto& [M, N, K, threads] : std::vector<std::tuple<int64_t, int64_t, int64_t, int>>{
           {1, 1, 1, 1}, {7, 5, 3, 1}, {33, 300, 16, 3}, {300, 9, 11, 4}}) {
    const Data d = make_data(M, N, K, uint64_t(M * 1000 + N));
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
      EXPECT_EQ(values(run_cpu(c.text, inputs(c, d), threads)), reference(c, d));
    }
  }
}

// A value outside the extent is a data error naming the output, how many pairs and which
// values; the same query with the index clamped or tested in the query runs.
TEST(Histogram, OutOfRangeIsADataError) {
  const Data d = make_data(20, 30, 8, 5);
  Inputs in;
  in.array("A", ArrayRef::host(d.A.data(), DType::I32, {d.M, d.K}));
  in.array("B", ArrayRef::host(d.B.data(), DType::I32, {d.K, d.N}));
  in.extent("H", {5});
  int64_t count = 0, lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t i = 0; i < d.M; ++i)
    for (int64_t j = 0; j < d.N; ++j) {
      const int64_t b = dot(d, i, j) + 2;
      if (b < 0 || b >= 5) ++count, lo = std::min(lo, b), hi = std::max(hi, b);
    }
  ASSERT_GT(count, 1);
  for (int threads : {1, 3}) {
    ExitCode code{};
    const std::string e = error_of(
        [&] { run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[s + 2] += 1; }", in, threads); },
        &code);
    EXPECT_EQ(code, ExitCode::Data);
    EXPECT_NE(e.find("H"), std::string::npos) << e;
    EXPECT_NE(e.find(std::to_string(count) + " pairs gave the computed index of H a value outside [0, 5) (from " +
                     std::to_string(lo) + " to " + std::to_string(hi) + ")"),
              std::string::npos)
        << e;
    EXPECT_NE(e.find("clamp("), std::string::npos) << e;
  }
  EXPECT_EQ(values(run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[clamp(s + 2, 0, 4)] += 1; }",
                           in))
                .size(),
            5u);
  const Out kept =
      values(run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; }"
                     " let b = s + 2; if (b >= 0 && b < 5) H[b] += 1; }",
                     in));
  int64_t total = 0;
  for (int64_t v : kept) total += v;
  EXPECT_EQ(total, d.M * d.N - count);
}

// Of two computed indices, the message names which one.
TEST(Histogram, OutOfRangeNamesWhichIndex) {
  const Data d = make_data(4, 4, 2, 9);
  Inputs in;
  in.array("A", ArrayRef::host(d.A.data(), DType::I32, {d.M, d.K}));
  in.array("B", ArrayRef::host(d.B.data(), DType::I32, {d.K, d.N}));
  in.extent("H", {4, 3});
  const std::string e =
      error_of([&] { run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[i, j] += s; H[0, 5] += 1; }", in); });
  // (H[i, j] with axes and H[0, 5] with computed indices are indexed differently: a query error.)
  EXPECT_NE(e.find("indexed differently"), std::string::npos) << e;
  const std::string e2 = error_of([&] { run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[i % 4, j + 1] += s; }", in); });
  // j + 1 is 3 or 4 for j = 2, 3: 4 rows x 2 columns.
  EXPECT_NE(e2.find("8 pairs gave computed index 2 of H a value outside [0, 3) (from 3 to 4)"), std::string::npos) << e2;
}

TEST(Histogram, ExtentMustBeGiven) {
  const Data d = make_data(4, 4, 2, 9);
  Inputs in;
  in.array("A", ArrayRef::host(d.A.data(), DType::I32, {d.M, d.K}));
  in.array("B", ArrayRef::host(d.B.data(), DType::I32, {d.K, d.N}));
  ExitCode code{};
  const std::string e = error_of(
      [&] { run_cpu("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Counts[s % 3 + 2] += 1; }", in); }, &code);
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_NE(e.find("Counts"), std::string::npos) << e;
  EXPECT_NE(e.find("--dim Counts=D"), std::string::npos) << e;
  EXPECT_NE(e.find("dims={\"Counts\": [D]}"), std::string::npos) << e;
}

TEST(Histogram, QueryErrors) {
  auto check_error = [](const std::string& text, const std::string& want) {
    SCOPED_TRACE(text);
    ExitCode code{};
    Inputs in;
    std::vector<float> a(4, 1.0f);
    in.array("A", ArrayRef::host(a.data(), DType::F32, {2, 2}));
    in.array("B", ArrayRef::host(a.data(), DType::F32, {2, 2}));
    in.extent("H", {4});
    const std::string e = error_of([&] { run_cpu(text, in); }, &code);
    EXPECT_EQ(code, ExitCode::Query) << e;
    EXPECT_NE(e.find(want), std::string::npos) << e;
  };
  check_error("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[s] += 1; }",
              "a computed index of output 'H' must be an integer, but this is f32; convert it, as i32(floor(x))");
  check_error("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[i32(s)] = 1; }", "'=' stores need both");
  check_error("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[k] += 1; }",
              "reduction axis 'k' cannot index an output");
}

// The example's distance histogram on integer coordinates: squared distances are exact, and
// with w = 2.5 no distance lies within 1e-3 of a bin edge unless it is one exactly (d / w is
// then exact too), so the bins equal a double-precision reference's.
TEST(Histogram, DistanceHistogramExample) {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> v(0, 6);
  const int64_t M = 77, N = 131, K = 3, bins = 9;
  std::vector<float> P(size_t(M * K)), X(size_t(N * K));
  for (float& x : P) x = float(v(rng));
  for (float& x : X) x = float(v(rng));
  std::vector<int64_t> want(size_t(bins), 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(P[size_t(i * K + k)] - X[size_t(j * K + k)]) * (P[size_t(i * K + k)] - X[size_t(j * K + k)]);
      const int64_t b = int64_t(std::floor(std::sqrt(s) / 2.5));
      if (b < bins) ++want[size_t(b)];
    }
  Inputs in;
  in.array("P", ArrayRef::host(P.data(), DType::F32, {M, K}));
  in.array("X", ArrayRef::host(X.data(), DType::F32, {N, K}));
  in.scalar("w", 2.5);
  in.scalar("bins", bins);
  in.extent("Hist", {bins});
  Options o;
  o.backend = "cpu";
  const Result r = Query::load(std::string(GAMUT_SOURCE_DIR) + "/examples/distance_histogram.mmlt").run(in, o);
  ASSERT_EQ(r["Hist"].array.dtype, DType::I64);  // counts of `+= 1`: an integer literal is i64
  EXPECT_EQ(values_of(r, "Hist"), want);
}

// With a batch axis the output starts with it; --dim may leave the batch extent out.
TEST(Histogram, BatchedOneHistogramPerInstance) {
  const int64_t B = 3, M = 9, N = 14, K = 4;
  std::mt19937_64 rng(21);
  std::uniform_int_distribution<int> v(-3, 3);
  std::vector<int32_t> A(size_t(B * M * K)), X(size_t(B * K * N));
  for (int32_t& x : A) x = v(rng);
  for (int32_t& x : X) x = v(rng);
  std::vector<int64_t> want(size_t(B * 7), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += int64_t(A[size_t((b * M + i) * K + k)]) * X[size_t((b * K + k) * N + j)];
        want[size_t(b * 7 + s % 4 + 3)] += 1;
      }
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{7}, std::vector<int64_t>{B, 7}}) {
    Inputs in;
    in.array("A", ArrayRef::host(A.data(), DType::I32, {B, M, K}));
    in.array("X", ArrayRef::host(X.data(), DType::I32, {B, K, N}));
    in.extent("H", dims);
    const Result r = run_cpu(
        "batch (bb) where (i, j) { s = 0; reduce (k) { s += A[bb, i, k] * X[bb, k, j]; } H[bb, s % 4 + 3] += 1; }", in);
    EXPECT_EQ(r["H"].array.shape, (std::vector<int64_t>{B, 7}));
    EXPECT_EQ(values(r), want);
  }
}

// `explain` names the output's kind and prints the computed index.
TEST(Histogram, ExplainShowsTheComputedIndex) {
  const Query q = Query::compile("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } let b = s % 4; H[b] += 1; }");
  Inputs in;
  std::vector<int32_t> a(4, 1);
  in.array("A", ArrayRef::host(a.data(), DType::I32, {2, 2}));
  in.array("B", ArrayRef::host(a.data(), DType::I32, {2, 2}));
  in.extent("H", {4});
  Options o;
  o.backend = "cpu";
  const std::string e = q.explain(in, o);
  EXPECT_NE(e.find("H[b] += 1"), std::string::npos) << e;
  EXPECT_NE(e.find("computed index"), std::string::npos) << e;
}

}  // namespace
