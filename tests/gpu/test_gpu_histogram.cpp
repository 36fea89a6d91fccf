// Computed output indices on the GPU (a shared-memory histogram per block, merged into global
// memory after the block's tile; the hash table and global atomics past the table): the cases
// of tests/histogram_cases.h against their loop reference, bit for bit, at sizes below, at and
// past a tile; out-of-range values as the same data error as the CPU engine's; the distance
// histogram on float data against the CPU engine; its expanded form on the tensor cores
// (bf16). --gtest_filter='GpuHistogram.*'.
#include <gtest/gtest.h>

#include <cmath>

#include "../histogram_cases.h"
#include "core/types.h"
#include "gpu_skip.h"

using namespace gamut;
using namespace gamut::histogram_test;

namespace {

Result run_on(const std::string& backend, const std::string& text, const Inputs& in) {
  Options o;
  o.backend = backend;
  return Query::compile(text).run(in, o);
}

TEST(GpuHistogram, EveryCaseMatchesTheLoops) {
  SKIP_WITHOUT_GPU();
  for (const auto& [M, N, K] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 1, 1}, {7, 5, 3}, {129, 257, 16}, {1000, 700, 9}}) {
    const Data d = make_data(M, N, K, uint64_t(M * 1000 + N));
    for (const Case& c : cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
      EXPECT_EQ(values(run_on("gpu", c.text, inputs(c, d))), reference(c, d));
    }
  }
}

// A batch axis (one histogram per instance) and f32 values summed per computed bin: the GPU
// against the CPU engine (integer-valued sums: exact in any order).
TEST(GpuHistogram, BatchedAndFloatSumsAgreeWithTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  const int64_t B = 3, M = 300, N = 517, K = 8;
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<int> v(-3, 3);
  std::vector<float> A(size_t(B * M * K)), X(size_t(B * K * N));
  for (float& x : A) x = float(v(rng));
  for (float& x : X) x = float(v(rng));
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {B, M, K}));
  in.array("X", ArrayRef::host(X.data(), DType::F32, {B, K, N}));
  in.extent("H", {B, 9});
  const char* text =
      "batch (bb) where (i, j) { s = 0; reduce (k) { s += A[bb, i, k] * X[bb, k, j]; }"
      " H[bb, clamp(i32(floor(s / 8)), -4, 4) + 4] += s; }";
  const Result a = run_on("cpu", text, in), b = run_on("gpu", text, in);
  ASSERT_EQ(a["H"].array.dtype, DType::F32);
  const auto* x = static_cast<const float*>(a["H"].array.data);
  const auto* y = static_cast<const float*>(b["H"].array.data);
  bool any = false;
  for (int64_t e = 0; e < B * 9; ++e) {
    EXPECT_EQ(x[e], y[e]) << "element " << e;
    any = any || x[e] != 0;
  }
  EXPECT_TRUE(any);
}

// The same error, word for word, on both engines: counts and value ranges are exact.
TEST(GpuHistogram, OutOfRangeIsTheCpuEnginesDataError) {
  SKIP_WITHOUT_GPU();
  const Data d = make_data(300, 200, 8, 5);
  for (const char* text : {"where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[s + 2] += 1; }",
                           "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } H[i % 4, s + 1] max= s; }"}) {
    SCOPED_TRACE(text);
    Inputs in;
    in.array("A", ArrayRef::host(d.A.data(), DType::I32, {d.M, d.K}));
    in.array("B", ArrayRef::host(d.B.data(), DType::I32, {d.K, d.N}));
    in.extent("H", std::string(text).find("i % 4") != std::string::npos ? std::vector<int64_t>{4, 5} : std::vector<int64_t>{5});
    std::string cpu, gpu;
    ExitCode code{};
    try {
      run_on("cpu", text, in);
    } catch (const Error& e) {
      cpu = e.what();
    }
    try {
      run_on("gpu", text, in);
    } catch (const Error& e) {
      gpu = e.what();
      code = e.code();
    }
    EXPECT_FALSE(cpu.empty());
    EXPECT_EQ(gpu, cpu);
    EXPECT_EQ(code, ExitCode::Data);
  }
}

// Float distances (random 3-D points): a pair whose distance lies within 1e-3 of a bin edge
// (in units of the bin width) may fall on either side on either engine (f32 sums in another
// order); every other pair is in the same bin on both. So each bin may differ by at most the
// pairs near its two edges, and the totals by the pairs near the last edge.
TEST(GpuHistogram, DistanceHistogramOnFloatsAgreesWithTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  const int64_t M = 1500, N = 2300, K = 3, bins = 64;
  const double w = 1.6 / double(bins);
  std::vector<float> P(size_t(M * K)), X(size_t(N * K));
  for (float& x : P) x = u(rng);
  for (float& x : X) x = u(rng);
  std::vector<int64_t> near(size_t(bins + 1), 0);  // pairs within 1e-3 of edge e
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) {
        const double t = double(P[size_t(i * K + k)]) - double(X[size_t(j * K + k)]);
        s += t * t;
      }
      const double x = std::sqrt(s) / w, e = std::round(x);
      if (std::fabs(x - e) < 1e-3 && e <= double(bins)) ++near[size_t(e)];
    }
  Inputs in;
  in.array("P", ArrayRef::host(P.data(), DType::F32, {M, K}));
  in.array("X", ArrayRef::host(X.data(), DType::F32, {N, K}));
  in.scalar("w", w);
  in.scalar("bins", bins);
  in.extent("Hist", {bins});
  const Query q = Query::load(std::string(GAMUT_SOURCE_DIR) + "/examples/distance_histogram.mmlt");
  Options cpu, gpu;
  cpu.backend = "cpu";
  gpu.backend = "gpu";
  const Result a = q.run(in, cpu), b = q.run(in, gpu);
  const Out x = values_of(a, "Hist"), y = values_of(b, "Hist");
  int64_t tx = 0, ty = 0;
  for (int64_t e = 0; e < bins; ++e) {
    EXPECT_LE(std::llabs(x[size_t(e)] - y[size_t(e)]), near[size_t(e)] + near[size_t(e + 1)]) << "bin " << e;
    tx += x[size_t(e)], ty += y[size_t(e)];
  }
  EXPECT_LE(std::llabs(tx - ty), near[size_t(bins)]);
  EXPECT_GT(tx, M * N / 2);  // most pairs are counted: the test sees the histogram
}

// The expanded form |q|^2 + |x|^2 - 2 q.x on the tensor cores (bf16 operands holding small
// integers, so every dot product and norm is exact): bins equal the CPU engine's exactly.
TEST(GpuHistogram, ExpandedDistancesOnTensorCoresAreExact) {
  SKIP_WITHOUT_GPU();
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<int> v(-4, 4);
  const int64_t M = 1100, N = 900, K = 64, bins = 64;
  std::vector<uint16_t> Q(size_t(M * K)), X(size_t(N * K));
  std::vector<float> qn(size_t(M), 0.0f), xn(size_t(N), 0.0f);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k) {
      const float f = float(v(rng));
      Q[size_t(i * K + k)] = float_to_bf16(f);
      qn[size_t(i)] += f * f;
    }
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) {
      const float f = float(v(rng));
      X[size_t(j * K + k)] = float_to_bf16(f);
      xn[size_t(j)] += f * f;
    }
  Inputs in;
  in.array("Q", ArrayRef::host(Q.data(), DType::BF16, {M, K}));
  in.array("X", ArrayRef::host(X.data(), DType::BF16, {N, K}));
  in.array("qn", ArrayRef::host(qn.data(), DType::F32, {M}));
  in.array("xn", ArrayRef::host(xn.data(), DType::F32, {N}));
  // Squared distances are integers; w = 0.5 puts sqrt(d2) / w on an edge only where exact.
  in.scalar("w", 0.5);
  in.scalar("bins", bins);
  in.extent("Hist", {bins});
  const Query q = Query::load(std::string(GAMUT_SOURCE_DIR) + "/tests/golden/distance_histogram_expanded.mmlt");
  Options cpu, gpu;
  cpu.backend = "cpu";
  gpu.backend = "gpu";
  const Result a = q.run(in, cpu), b = q.run(in, gpu);
  EXPECT_NE(b.stats.mainloop, "simt");  // the tensor cores ran it
  EXPECT_EQ(values_of(a, "Hist"), values_of(b, "Hist"));
}

}  // namespace
