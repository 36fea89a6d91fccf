// The C++ library API (include/gamut/gamut.h) on the CPU engine, through the public header
// only: results against loops written here, inputs bound in place or copied, errors with the
// CLI's categories and messages, caller-owned outputs.
#include <gtest/gtest.h>

#include <gamut/gamut.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>
#include <tuple>

#include "test_api_data.h"

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::ExitCode;
using gamut::Inputs;
using gamut::Options;
using gamut::Query;

using gamut::api_test::cpu;
using gamut::api_test::ints;
using gamut::api_test::kSgemm;

// C = A B by three loops; A (M,K) and B (K,N) read through element strides.
std::vector<double> product(const float* A, int64_t sa0, int64_t sa1, const float* B, int64_t sb0, int64_t sb1,
                            int64_t M, int64_t N, int64_t K) {
  std::vector<double> C(size_t(M * N), 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k) C[size_t(i * N + j)] += double(A[i * sa0 + k * sa1]) * double(B[k * sb0 + j * sb1]);
  return C;
}

ExitCode code_of(const std::function<void()>& f, std::string* what = nullptr) {
  try {
    f();
  } catch (const gamut::Error& e) {
    if (what) *what = e.what();
    return e.code();
  }
  return ExitCode::Ok;
}

TEST(Api, SgemmOnHostArraysInPlace) {
  const int64_t M = 37, N = 21, K = 19;
  auto A = ints(size_t(M * K), 1), B = ints(size_t(K * N), 2);
  Query q = Query::compile(kSgemm);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {M, K})).array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
  gamut::Result r = q.run(in, cpu());
  const gamut::Output& C = r["C"];
  ASSERT_FALSE(C.is_list);
  ASSERT_EQ(C.array.dtype, DType::F32);
  ASSERT_EQ(C.array.shape, (std::vector<int64_t>{M, N}));
  ASSERT_EQ(C.array.strides, (std::vector<int64_t>{N, 1}));
  EXPECT_EQ(C.array.device.kind, gamut::DeviceKind::Cpu);
  const auto want = product(A.data(), K, 1, B.data(), N, 1, M, N, K);
  bool nonzero = false;
  for (int64_t e = 0; e < M * N; ++e) {
    ASSERT_EQ(C.array.as<float>()[e], float(want[size_t(e)])) << e;
    nonzero |= want[size_t(e)] != 0;
  }
  EXPECT_TRUE(nonzero);
  EXPECT_TRUE(r.stats.copies.empty()) << r.stats.copies[0];
  EXPECT_EQ(r.stats.backend, "cpu");
  EXPECT_EQ(r.stats.m, M);
  EXPECT_EQ(r.stats.n, N);
  EXPECT_EQ(r.stats.k, K);
}

TEST(Api, StridedInputsAreCopiedToCOrderAndSaySo) {
  const int64_t M = 9, N = 11, K = 6;
  // A given as the transpose of a (K, M) array, B as every other column of a (K, 2N) array.
  auto At = ints(size_t(K * M), 3), B2 = ints(size_t(K * 2 * N), 4);
  Query q = Query::compile(kSgemm);
  Inputs in;
  in.array("A", ArrayRef::host(At.data(), DType::F32, {M, K}, {1, M}))
      .array("B", ArrayRef::host(B2.data(), DType::F32, {K, N}, {2 * N, 2}));
  gamut::Result r = q.run(in, cpu());
  const auto want = product(At.data(), 1, M, B2.data(), 2 * N, 2, M, N, K);
  for (int64_t e = 0; e < M * N; ++e) ASSERT_EQ(r["C"].array.as<float>()[e], float(want[size_t(e)])) << e;
  ASSERT_EQ(r.stats.copies.size(), 2u);
  EXPECT_NE(r.stats.copies[0].find("A: strides (1, 9) are not C order"), std::string::npos) << r.stats.copies[0];
  const std::string text = q.explain(in, cpu());
  EXPECT_NE(text.find("A: f32 (9, 6) on host, strides (1, 9) are not C order: copied to C order"), std::string::npos) << text;
  // A size-1 dimension with any stride is still C order: no copy.
  auto row = ints(size_t(K), 5);
  Inputs one;
  one.array("A", ArrayRef::host(row.data(), DType::F32, {1, K}, {12345, 1})).array("B", ArrayRef::host(B2.data(), DType::F32, {K, 2 * N}));
  EXPECT_TRUE(q.run(one, cpu()).stats.copies.empty());
}

TEST(Api, ScalarsListsAndThreads) {
  const int64_t M = 23, N = 17, K = 5;
  auto P = ints(size_t(M * K), 7), R = ints(size_t(K * N), 8);
  Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > thres) emit Pairs(i, j, a); }",
                           "q5.mmlt");
  const auto acc = product(P.data(), K, 1, R.data(), N, 1, M, N, K);
  for (double thres : {1.5, 0.0, -2.5}) {
    Inputs in;
    in.array("P", ArrayRef::host(P.data(), DType::F32, {M, K})).array("R", ArrayRef::host(R.data(), DType::F32, {K, N}));
    in.scalar("thres", thres);
    gamut::Result r = q.run(in, cpu(3));
    const gamut::Output& pairs = r["Pairs"];
    ASSERT_TRUE(pairs.is_list);
    ASSERT_EQ(pairs.columns.size(), 3u);
    EXPECT_EQ(pairs.columns[0].first, "i");
    EXPECT_EQ(pairs.columns[2].first, "a");
    std::vector<std::tuple<int64_t, int64_t, float>> want, got;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        if (acc[size_t(i * N + j)] > thres) want.emplace_back(i, j, float(acc[size_t(i * N + j)]));
    ASSERT_GT(want.size(), 0u);
    ASSERT_EQ(pairs.rows, int64_t(want.size()));
    for (int64_t r0 = 0; r0 < pairs.rows; ++r0) {
      ASSERT_EQ(pairs.columns[0].second.dtype, DType::I32);
      got.emplace_back(pairs.columns[0].second.as<int32_t>()[r0], pairs.columns[1].second.as<int32_t>()[r0],
                       pairs.columns[2].second.as<float>()[r0]);
    }
    EXPECT_EQ(got, want);
  }
}

TEST(Api, OneQueryManySignaturesAndThreads) {
  const int64_t M = 8, N = 5, K = 4;
  auto A = ints(size_t(M * K), 9), B = ints(size_t(K * N), 10);
  std::vector<double> A64(A.begin(), A.end());
  std::vector<int32_t> B32(B.begin(), B.end());
  const auto want = product(A.data(), K, 1, B.data(), N, 1, M, N, K);
  Query q = Query::compile(kSgemm);
  Query copy = q;   // copies share the compiled state
  Inputs in;
  in.array("A", ArrayRef::host(A64.data(), DType::F64, {M, K})).array("B", ArrayRef::host(B32.data(), DType::I32, {K, N}));
  gamut::Result r = copy.run(in, cpu());
  ASSERT_EQ(r["C"].array.dtype, DType::F64);
  for (int64_t e = 0; e < M * N; ++e) ASSERT_EQ(r["C"].array.as<double>()[e], want[size_t(e)]);
  // Concurrent runs of one Query, two signatures interleaved.
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int n = 0; n < 20; ++n) {
        Inputs x;
        if (t % 2) x.array("A", ArrayRef::host(A.data(), DType::F32, {M, K})).array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
        else x = in;
        gamut::Result y = q.run(x, cpu());
        const gamut::Array& c = y["C"].array;
        for (int64_t e = 0; e < M * N; ++e)
          if ((c.dtype == DType::F64 ? c.as<double>()[e] : double(c.as<float>()[e])) != want[size_t(e)]) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Api, CallerAllocatorOwnsOutputs) {
  const int64_t M = 6, N = 7, K = 3;
  auto A = ints(size_t(M * K), 11), B = ints(size_t(K * N), 12);
  Query q = Query::compile(kSgemm);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {M, K})).array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
  Options o = cpu();
  std::vector<std::vector<int64_t>> asked;
  auto freed = std::make_shared<int>(0);
  o.allocator = [&](DType t, const std::vector<int64_t>& shape, gamut::Device d) {
    EXPECT_EQ(t, DType::F32);
    EXPECT_EQ(d.kind, gamut::DeviceKind::Cpu);
    asked.push_back(shape);
    auto* mem = new float[size_t(M * N)];
    std::fill(mem, mem + M * N, -777.f);   // poison
    return gamut::Allocation{mem, std::shared_ptr<void>(mem, [freed](void* p) { delete[] static_cast<float*>(p); ++*freed; })};
  };
  const auto want = product(A.data(), K, 1, B.data(), N, 1, M, N, K);
  {
    gamut::Array C = q.run(in, o)["C"].array;   // the Array outlives the Result
    ASSERT_EQ(asked.size(), 1u);
    EXPECT_EQ(asked[0], (std::vector<int64_t>{M, N}));
    for (int64_t e = 0; e < M * N; ++e) ASSERT_EQ(C.as<float>()[e], float(want[size_t(e)]));
    EXPECT_EQ(*freed, 0);
  }
  EXPECT_EQ(*freed, 1);
}

TEST(Api, ErrorsCarryTheCliCategoriesAndMessages) {
  std::string what;
  // Query errors: FILE:LINE:COL, the source line and a caret.
  EXPECT_EQ(code_of([] { Query::compile("where (i, j) {\n  a = 0;\n  reduce (k) { a += A[i, j]; }\n  C[i, j] = a;\n}", "bad.mmlt"); }, &what),
            ExitCode::Query);
  EXPECT_EQ(what.rfind("bad.mmlt:3:", 0), 0u) << what;
  EXPECT_NE(what.find("^"), std::string::npos) << what;
  EXPECT_EQ(code_of([] { Query::load("/nonexistent/q.mmlt"); }, &what), ExitCode::Usage);
  EXPECT_NE(what.find("cannot read query file"), std::string::npos) << what;

  Query q = Query::compile(kSgemm);
  auto A = ints(12, 13);
  auto run = [&](Inputs in, Options o) { return [q, in, o] { q.run(in, o); }; };
  Inputs ok;
  ok.array("A", ArrayRef::host(A.data(), DType::F32, {3, 4})).array("B", ArrayRef::host(A.data(), DType::F32, {4, 3}));
  // Data errors name the binding.
  Inputs missing;
  missing.array("A", ArrayRef::host(A.data(), DType::F32, {3, 4}));
  EXPECT_EQ(code_of(run(missing, cpu()), &what), ExitCode::Data);
  EXPECT_EQ(what.rfind("data error: B: input array is not bound", 0), 0u) << what;
  Inputs rank = ok;
  rank.array("B", ArrayRef::host(A.data(), DType::F32, {12}));
  EXPECT_EQ(code_of(run(rank, cpu()), &what), ExitCode::Data);
  EXPECT_EQ(what.rfind("data error: B: expected 2 dimensions", 0), 0u) << what;
  Inputs negative = ok;
  negative.array("B", ArrayRef::host(A.data(), DType::F32, {4, -3}));
  EXPECT_EQ(code_of(run(negative, cpu()), &what), ExitCode::Data);
  EXPECT_EQ(what.rfind("data error: B: negative extent", 0), 0u) << what;
  Inputs huge = ok;
  huge.array("B", ArrayRef::host(A.data(), DType::F32, {int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_EQ(code_of(run(huge, cpu()), &what), ExitCode::Data);
  Inputs null = ok;
  null.array("B", ArrayRef::host(nullptr, DType::F32, {4, 3}));
  EXPECT_EQ(code_of(run(null, cpu()), &what), ExitCode::Data);
  Inputs strides = ok;
  strides.array("B", ArrayRef::host(A.data(), DType::F32, {4, 3}, {3}));
  EXPECT_EQ(code_of(run(strides, cpu()), &what), ExitCode::Data);
  // Usage errors: names the query lacks, bad options, a name bound twice.
  Inputs extra = ok;
  extra.scalar("Z", 1);
  EXPECT_EQ(code_of(run(extra, cpu()), &what), ExitCode::Usage);
  EXPECT_NE(what.find("'Z' matches no input"), std::string::npos) << what;
  Inputs twice = ok;
  twice.scalar("A", 2.0);
  EXPECT_EQ(code_of(run(twice, cpu()), &what), ExitCode::Usage);
  Options bad = cpu();
  bad.backend = "tpu";
  EXPECT_EQ(code_of(run(ok, bad), &what), ExitCode::Usage);
  bad = cpu();
  bad.f32_math = "fast";
  EXPECT_EQ(code_of(run(ok, bad), &what), ExitCode::Usage);
  EXPECT_EQ(code_of([&] { (void)q.run(ok, cpu())["D"]; }, &what), ExitCode::Usage);
  // Device errors: the GPU backend where there is none.
  if (!gamut::gpu_available()) {
    Options gpu;
    gpu.backend = "gpu";
    EXPECT_EQ(code_of(run(ok, gpu), &what), ExitCode::Device);
    EXPECT_NE(what.find("no usable CUDA device"), std::string::npos) << what;
    Inputs dev = ok;
    dev.array("B", ArrayRef::cuda(A.data(), DType::F32, {4, 3}));
    EXPECT_EQ(code_of(run(dev, cpu()), &what), ExitCode::Device);
  }
}

TEST(Api, AggregateIndexChecksAndExtents) {
  // Q2's form: C[g[i], h[j]] += (P R)[i, j]; an index value out of range is a data error.
  Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; }");
  const int64_t M = 10, N = 7, K = 3;
  auto P = ints(size_t(M * K), 14), R = ints(size_t(K * N), 15);
  std::vector<int32_t> g = {0, 2, 1, 2, 0, 3, 3, 1, 0, 2};
  std::vector<int64_t> h = {1, 0, 1, 1, 0, 0, 1};
  Inputs in;
  in.array("P", ArrayRef::host(P.data(), DType::F32, {M, K})).array("R", ArrayRef::host(R.data(), DType::F32, {K, N}));
  in.array("g", ArrayRef::host(g.data(), DType::I32, {M})).array("h", ArrayRef::host(h.data(), DType::I64, {N}));
  const auto acc = product(P.data(), K, 1, R.data(), N, 1, M, N, K);
  std::vector<double> want(4 * 2, 0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) want[size_t(g[size_t(i)] * 2 + h[size_t(j)])] += acc[size_t(i * N + j)];
  gamut::Result r = q.run(in, cpu());
  ASSERT_EQ(r["C"].array.shape, (std::vector<int64_t>{4, 2}));
  for (size_t e = 0; e < want.size(); ++e) EXPECT_EQ(r["C"].array.as<float>()[e], float(want[e]));
  in.extent("C", {5, 3});
  EXPECT_EQ(q.run(in, cpu())["C"].array.shape, (std::vector<int64_t>{5, 3}));
  in.extent("C", {3, 3});
  std::string what;
  EXPECT_EQ(code_of([&] { q.run(in, cpu()); }, &what), ExitCode::Data);
  EXPECT_EQ(what.rfind("data error: g: index value 3", 0), 0u) << what;
}

TEST(Api, BoolValuesAreReadAsZeroOrOne) {
  // A u8 buffer viewed as bool: 2 and 255 mean true.
  Query q = Query::compile("where (i, j) { r: i32 = 0; reduce (k) { r |= X[i, k] & Y[k, j]; } C[i, j] = r; }");
  std::vector<uint8_t> X = {2, 0, 0, 255}, Y = {1, 0, 0, 1};
  Inputs in;
  in.array("X", ArrayRef::host(X.data(), DType::Bool, {2, 2})).array("Y", ArrayRef::host(Y.data(), DType::Bool, {2, 2}));
  gamut::Result r = q.run(in, cpu());
  const int32_t* c = r["C"].array.as<int32_t>();
  EXPECT_EQ(std::vector<int32_t>(c, c + 4), (std::vector<int32_t>{1, 0, 0, 1}));
  ASSERT_EQ(r.stats.copies.size(), 1u);
  EXPECT_NE(r.stats.copies[0].find("X: bool values"), std::string::npos);
}

TEST(Api, ExplainAndInfo) {
  Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } if (a > t) emit L(i, j, a); }", "sel");
  EXPECT_EQ(q.info().inputs, (std::vector<std::string>{"P", "R"}));
  EXPECT_EQ(q.info().params, (std::vector<std::string>{"t"}));
  ASSERT_EQ(q.info().outputs.size(), 1u);
  EXPECT_TRUE(q.info().outputs[0].second);
  EXPECT_NE(q.explain().find("L"), std::string::npos);
  auto P = ints(8, 16);
  Inputs in;
  in.array("P", ArrayRef::host(P.data(), DType::F32, {2, 4})).array("R", ArrayRef::host(P.data(), DType::F32, {4, 2})).scalar("t", 0);
  const std::string text = q.explain(in, cpu());
  EXPECT_NE(text.find("bound: M=2 N=2 K=4"), std::string::npos) << text;
  EXPECT_NE(text.find("P: f32 (2, 4) on host, used in place"), std::string::npos) << text;
  EXPECT_NE(q.kernel_source(in).find("extern \"C\""), std::string::npos);
  EXPECT_STREQ(gamut::version(), GAMUT_VERSION);
}

TEST(Api, NumberTextRoundTrips) {
  // Scalars reach the engine exactly: a float that prints like an integer stays a float.
  Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * s; }");
  std::vector<double> one = {1.0};
  Inputs in;
  in.array("A", ArrayRef::host(one.data(), DType::F64, {1, 1})).array("B", ArrayRef::host(one.data(), DType::F64, {1, 1}));
  for (double s : {0.1, 3.0, -1e-300, 1.7976931348623157e308, 2.5e-7}) {
    in.scalar("s", s);
    EXPECT_EQ(q.run(in, cpu())["C"].array.as<double>()[0], s);
  }
  in.scalar("s", int64_t(-9007199254740993));
  EXPECT_EQ(q.run(in, cpu())["C"].array.as<double>()[0], double(int64_t(-9007199254740993)));
}

}  // namespace
