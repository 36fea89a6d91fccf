// The C++ library API on device arrays (skipped without a GPU): inputs read in place, outputs
// in device memory on the caller's stream, results equal to the CPU engine on the same data.
#include <gamut/gamut.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_skip.h"
#include "test_api_data.h"

#if GAMUT_HAVE_CUDA
#include <cuda_runtime_api.h>

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::Inputs;
using gamut::Options;
using gamut::Query;

using gamut::api_test::cpu;
using gamut::api_test::ints;
using gamut::api_test::kSgemm;

// Device memory holding `host`, freed at scope exit.
struct DeviceCopy {
  void* p = nullptr;
  template <class T>
  explicit DeviceCopy(const std::vector<T>& host) {
    EXPECT_EQ(cudaMalloc(&p, host.size() * sizeof(T) + 16), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(p, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(p); }
};

template <class T>
std::vector<T> to_host(const gamut::Array& a, cudaStream_t s = nullptr) {
  std::vector<T> v(size_t(a.size()));
  EXPECT_EQ(cudaMemcpyAsync(v.data(), a.data, v.size() * sizeof(T), cudaMemcpyDefault, s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  return v;
}

// GPU runs whose outputs go to memory poisoned with 0xff bytes (and 16 more past the end), so
// that whatever the engine does not write shows.
Options poisoned_gpu_outputs() {
  Options o;
  o.backend = "gpu";
  o.allocator = [](DType t, const std::vector<int64_t>& shape, gamut::Device) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const size_t bytes = size_t(n) * (t == DType::F64 || t == DType::I64                       ? 8
                                      : t == DType::BF16 || t == DType::F16 || t == DType::I16 ? 2
                                      : t == DType::F32 || t == DType::I32                     ? 4
                                                                                               : 1);
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes + 16), cudaSuccess);
    EXPECT_EQ(cudaMemset(p, 0xff, bytes + 16), cudaSuccess);
    // (cudaMemset may still run when this returns, and a run on a non-blocking stream is not
    // ordered after it: its own starting fill could land first and be overwritten.)
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    return gamut::Allocation{p, std::shared_ptr<void>(p, [](void* q) { cudaFree(q); })};
  };
  return o;
}

TEST(ApiDevice, DeviceInputsInPlaceOutputsOnTheDevice) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 131, N = 77, K = 45;
  auto A = ints(size_t(M * K), 1), B = ints(size_t(K * N), 2);
  DeviceCopy dA(A), dB(B);
  Query q = Query::compile(kSgemm);
  Inputs dev, host;
  dev.array("A", ArrayRef::cuda(dA.p, DType::F32, {M, K})).array("B", ArrayRef::cuda(dB.p, DType::F32, {K, N}));
  host.array("A", ArrayRef::host(A.data(), DType::F32, {M, K}))
      .array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Options o;
  o.backend = "gpu";
  o.stream = s;
  gamut::Result r = q.run(dev, o);
  EXPECT_TRUE(r.stats.copies.empty()) << r.stats.copies[0];
  const gamut::Array& C = r["C"].array;
  EXPECT_TRUE(C.device.is_gpu());
  const auto got = to_host<float>(C, s);
  const auto want = q.run(host, cpu())["C"].array;
  bool nonzero = false;
  for (int64_t e = 0; e < M * N; ++e) {
    ASSERT_EQ(got[size_t(e)], want.as<float>()[e]) << e;
    nonzero |= got[size_t(e)] != 0;
  }
  EXPECT_TRUE(nonzero);
  EXPECT_NE(q.explain(dev, o).find("A: f32 (131, 45) on cuda:0, used in place"), std::string::npos);
  cudaStreamDestroy(s);
}

TEST(ApiDevice, RowOffsetViewsInPlaceTransposesCopied) {
  SKIP_WITHOUT_GPU();
  // A is rows 3.. and columns 5.. of a (40, 50) array: row stride 50, unaligned start.
  const int64_t M = 30, N = 21, K = 33;
  auto big = ints(40 * 50, 3), Bt = ints(size_t(N * K), 4);
  DeviceCopy dbig(big), dBt(Bt);
  const float* a0 = static_cast<const float*>(dbig.p) + 3 * 50 + 5;
  Query q = Query::compile(kSgemm);
  Inputs dev;
  dev.array("A", ArrayRef::cuda(a0, DType::F32, {M, K}, 0, {50, 1}))
      .array("B", ArrayRef::cuda(dBt.p, DType::F32, {K, N}, 0, {1, K}));  // B = Bt^T: not row-major
  Options o;
  o.backend = "gpu";
  gamut::Result r = q.run(dev, o);
  ASSERT_EQ(r.stats.copies.size(), 1u);
  EXPECT_EQ(r.stats.copies[0].rfind("B: in device memory", 0), 0u) << r.stats.copies[0];
  const auto got = to_host<float>(r["C"].array);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += double(big[size_t((3 + i) * 50 + 5 + k)]) * Bt[size_t(j * K + k)];
      ASSERT_EQ(got[size_t(i * N + j)], float(want)) << i << "," << j;
    }
}

TEST(ApiDevice, ListsAndIndexVectors) {
  SKIP_WITHOUT_GPU();
  // Q2's aggregate (index vectors read to the host for their checks) and a kNN list.
  const int64_t M = 50, N = 40, K = 8;
  auto P = ints(size_t(M * K), 5), R = ints(size_t(K * N), 6);
  std::vector<int32_t> g(static_cast<size_t>(M)), h(static_cast<size_t>(N));
  for (int64_t i = 0; i < M; ++i) g[size_t(i)] = int32_t(i % 7);
  for (int64_t j = 0; j < N; ++j) h[size_t(j)] = int32_t(j % 3);
  DeviceCopy dP(P), dR(R), dg(g), dh(h);
  Query agg = Query::compile("where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; }");
  Inputs dev, host;
  dev.array("P", ArrayRef::cuda(dP.p, DType::F32, {M, K})).array("R", ArrayRef::cuda(dR.p, DType::F32, {K, N}));
  dev.array("g", ArrayRef::cuda(dg.p, DType::I32, {M})).array("h", ArrayRef::cuda(dh.p, DType::I32, {N}));
  host.array("P", ArrayRef::host(P.data(), DType::F32, {M, K}))
      .array("R", ArrayRef::host(R.data(), DType::F32, {K, N}));
  host.array("g", ArrayRef::host(g.data(), DType::I32, {M})).array("h", ArrayRef::host(h.data(), DType::I32, {N}));
  Options o;
  o.backend = "gpu";
  gamut::Result r = agg.run(dev, o);
  EXPECT_EQ(r.stats.copies.size(), 2u);        // g and h, nothing else
  for (const std::string& c : r.stats.copies)  // read to the host for bind, not uploaded again
    EXPECT_NE(c.find("(an index vector: bind checks its values there; the kernel reads it in place)"),
              std::string::npos)
        << c;
  const auto got = to_host<float>(r["C"].array);
  const gamut::Array want = agg.run(host, cpu())["C"].array;
  ASSERT_EQ(r["C"].array.shape, want.shape);
  for (int64_t e = 0; e < want.size(); ++e) ASSERT_EQ(got[size_t(e)], want.as<float>()[e]);

  Query knn = Query::compile(
      "where (i, j) { d = 0; reduce (k) { let t = Q[i, k] - X[j, k]; d += t * t; } "
      "emit L(i, j, d) bottom 3 by d per i; }");
  Inputs kd, kh;
  kd.array("Q", ArrayRef::cuda(dP.p, DType::F32, {M, K})).array("X", ArrayRef::cuda(dP.p, DType::F32, {M, K}));
  kh.array("Q", ArrayRef::host(P.data(), DType::F32, {M, K})).array("X", ArrayRef::host(P.data(), DType::F32, {M, K}));
  gamut::Result lr = knn.run(kd, o);
  const gamut::Output& L = lr["L"];
  const gamut::Result wr = knn.run(kh, cpu());  // (kept: W refers into it)
  const gamut::Output& W = wr["L"];
  ASSERT_EQ(L.rows, W.rows);
  ASSERT_GT(L.rows, 0);
  for (size_t c = 0; c < 3; ++c) {
    EXPECT_TRUE(L.columns[c].second.device.is_gpu());
    const auto gc = to_host<int32_t>(L.columns[c].second);  // i, j (i32) and d (f32): compare bits
    for (int64_t e = 0; e < L.rows; ++e)
      ASSERT_EQ(gc[size_t(e)], W.columns[c].second.as<int32_t>()[e]) << c << " " << e;
  }
}

// List outputs of device inputs: the engine orders them on the device and copies them into the
// caller's memory (poisoned here), keeping its list buffers between runs of one Query; sizes
// that shrink and grow between runs, ties at the N-th row (values in [-3, 3]), a list with
// 64-bit keys (ordered on the host, then placed on the device). Each run equals the CPU engine
// row for row, bit for bit.
TEST(ApiDevice, ListsOrderedOnTheDeviceAcrossRuns) {
  SKIP_WITHOUT_GPU();
  const Options o = poisoned_gpu_outputs();
  struct Case {
    const char* what;
    const char* text;
    DType type;
  };
  const Case cases[] = {
      {"select", "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } if (a > 2) emit L(i, j, a); }",
       DType::F32},
      {"distinct", "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit L(a) distinct; }", DType::F32},
      {"top 7", "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit L(i, j, a) top 7 by a; }",
       DType::F32},
      {"bottom 3 per i",
       "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit L(i, j, a) bottom 3 by a per i; }",
       DType::F32},
      {"top 2 per j",
       "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit L(j, a, i) top 2 by a per j; }", DType::F32},
      {"top 4 per i, i64 key",
       "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit L(i, j, a) top 4 by a per i; }", DType::I64},
  };
  const int64_t sizes[][3] = {{50, 40, 8}, {131, 77, 45}, {7, 3, 2}, {131, 77, 45}, {300, 260, 16}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Query q = Query::compile(c.text);
    for (const auto& sz : sizes) {
      const int64_t M = sz[0], N = sz[1], K = sz[2];
      SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" + std::to_string(K));
      const auto Af = ints(size_t(M * K), unsigned(M + 1)), Bf = ints(size_t(K * N), unsigned(N + 2));
      std::vector<int64_t> Ai(Af.begin(), Af.end()), Bi(Bf.begin(), Bf.end());
      const bool wide = c.type == DType::I64;
      const void* a_host = wide ? static_cast<const void*>(Ai.data()) : Af.data();
      const void* b_host = wide ? static_cast<const void*>(Bi.data()) : Bf.data();
      std::unique_ptr<DeviceCopy> dA = wide ? std::make_unique<DeviceCopy>(Ai) : std::make_unique<DeviceCopy>(Af);
      std::unique_ptr<DeviceCopy> dB = wide ? std::make_unique<DeviceCopy>(Bi) : std::make_unique<DeviceCopy>(Bf);
      Inputs dev, host;
      dev.array("A", ArrayRef::cuda(dA->p, c.type, {M, K})).array("B", ArrayRef::cuda(dB->p, c.type, {K, N}));
      host.array("A", ArrayRef::host(a_host, c.type, {M, K})).array("B", ArrayRef::host(b_host, c.type, {K, N}));
      const gamut::Result r = q.run(dev, o);
      const gamut::Result w = q.run(host, cpu());
      const gamut::Output& got = r["L"];
      const gamut::Output& want = w["L"];
      ASSERT_EQ(got.rows, want.rows);
      ASSERT_GT(want.rows, 0);
      ASSERT_EQ(got.columns.size(), want.columns.size());
      for (size_t col = 0; col < want.columns.size(); ++col) {
        const gamut::Array& g = got.columns[col].second;
        const gamut::Array& h = want.columns[col].second;
        EXPECT_TRUE(g.device.is_gpu());
        ASSERT_EQ(g.dtype, h.dtype);
        const size_t bytes = size_t(h.size()) * (h.dtype == DType::I64 || h.dtype == DType::F64 ? 8 : 4);
        std::vector<unsigned char> gb(bytes);
        ASSERT_EQ(cudaMemcpy(gb.data(), g.data, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
        ASSERT_EQ(std::memcmp(gb.data(), h.data, bytes), 0) << "column " << got.columns[col].first;
      }
    }
  }
  // On streams of the caller's, each destroyed after its run (the engine keeps no buffers on
  // them): the same rows.
  Query q = Query::compile(cases[0].text);
  const int64_t M = 131, N = 77, K = 45;
  const auto A = ints(size_t(M * K), 3), B = ints(size_t(K * N), 4);
  DeviceCopy dA(A), dB(B);
  Inputs dev, host;
  dev.array("A", ArrayRef::cuda(dA.p, DType::F32, {M, K})).array("B", ArrayRef::cuda(dB.p, DType::F32, {K, N}));
  host.array("A", ArrayRef::host(A.data(), DType::F32, {M, K}))
      .array("B", ArrayRef::host(B.data(), DType::F32, {K, N}));
  const gamut::Result w = q.run(host, cpu());
  for (int run = 0; run < 2; ++run) {
    cudaStream_t s = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
    Options os;  // (gamut's allocations, in order on s: the poisoning allocator's memset is not)
    os.backend = "gpu";
    os.stream = s;
    const gamut::Result r = q.run(dev, os);
    ASSERT_EQ(r["L"].rows, w["L"].rows);
    const auto got = to_host<int32_t>(r["L"].columns[1].second, s);  // j
    for (int64_t e = 0; e < w["L"].rows; ++e) ASSERT_EQ(got[size_t(e)], w["L"].columns[1].second.as<int32_t>()[e]) << e;
    ASSERT_EQ(cudaStreamDestroy(s), cudaSuccess);
  }
}

// Output memory poisoned with 0xff bytes: what the GPU engine does not write shows. Projections
// stored at every element skip the identity fill (src/cuda/engine/gpu_engine.cpp); every other
// output keeps it. Each case equals the CPU engine element for element.
TEST(ApiDevice, PoisonedOutputMemoryEqualsTheCpu) {
  SKIP_WITHOUT_GPU();
  const Options o = poisoned_gpu_outputs();
  const int64_t M = 131, N = 77, K = 45, B = 3;
  auto A = ints(size_t(B * M * K), 7), Bm = ints(size_t(B * K * N), 8);
  DeviceCopy dA(A), dB(Bm);
  struct Case {
    const char* what;
    const char* text;
    std::vector<int64_t> a_shape, b_shape;
  };
  const Case cases[] = {
      {"product (written everywhere)", kSgemm, {M, K}, {K, N}},
      {"rows from 2 (rows 0 and 1 keep the identity)",
       "where (i in [2, M), j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }",
       {M, K},
       {K, N}},
      {"a conditional store",
       "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } if (a > 0) { C[i, j] = a; } }",
       {M, K},
       {K, N}},
      {"batched",
       "batch (b) where (i, j) { a = 0; reduce (k) { a += A[b, i, k] * B[b, k, j]; } C[b, i, j] = a; }",
       {B, M, K},
       {B, K, N}},
      {"an aggregate", "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i] += a; }", {M, K}, {K, N}},
      {"no reduction steps (K = 0)", kSgemm, {M, 0}, {0, N}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    Query q = Query::compile(c.text);
    Inputs dev, host;
    dev.array("A", ArrayRef::cuda(dA.p, DType::F32, c.a_shape)).array("B", ArrayRef::cuda(dB.p, DType::F32, c.b_shape));
    host.array("A", ArrayRef::host(A.data(), DType::F32, c.a_shape))
        .array("B", ArrayRef::host(Bm.data(), DType::F32, c.b_shape));
    if (std::string(c.text).find(" M)") != std::string::npos) {
      dev.scalar("M", M);
      host.scalar("M", M);
    }
    gamut::Result r = q.run(dev, o);
    const auto got = to_host<float>(r["C"].array);
    const gamut::Result w = q.run(host, cpu());
    const gamut::Array& want = w["C"].array;
    ASSERT_EQ(r["C"].array.shape, want.shape);
    bool nonzero = false;
    for (int64_t e = 0; e < want.size(); ++e) {
      ASSERT_EQ(got[size_t(e)], want.as<float>()[e]) << e;
      nonzero |= got[size_t(e)] != 0;
    }
    EXPECT_EQ(nonzero, c.a_shape.back() != 0);  // (K = 0: every element is the identity, 0)
  }
}

// A repeated call with the same signature launches the recorded kernel on its own pointers
// (RunStats::cache "record", src/api/launch_records.h): into new, poisoned memory, with new
// inputs; aggregates start from their identities again; a change of a shape, a scalar, an option
// or an input's alignment takes the whole path (and is recorded in turn); lists never replay.
TEST(ApiDevice, RepeatedCallsReplayTheRecordedLaunch) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 131, N = 77, K = 45;
  Query q = Query::compile(
      "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s * t; R[i] += s; hi max= s; "
      "Col[j] min= s; }");
  const Options o = poisoned_gpu_outputs();
  // Runs on fresh device copies of data `seed` (A offset by `shift` elements) and checks every
  // output against the CPU engine; returns the run's cache.
  auto run = [&](unsigned seed, double t, int64_t m, int64_t shift, const Options& opt) {
    auto A = ints(size_t(m * K + shift), seed), B = ints(size_t(K * N), seed + 1);
    DeviceCopy dA(A), dB(B);
    Inputs dev, host;
    dev.array("A", ArrayRef::cuda(static_cast<const float*>(dA.p) + shift, DType::F32, {m, K}))
        .array("B", ArrayRef::cuda(dB.p, DType::F32, {K, N}))
        .scalar("t", t);
    host.array("A", ArrayRef::host(A.data() + shift, DType::F32, {m, K}))
        .array("B", ArrayRef::host(B.data(), DType::F32, {K, N}))
        .scalar("t", t);
    const gamut::Result r = q.run(dev, opt);
    const gamut::Result want = q.run(host, cpu());
    for (const char* name : {"C", "R", "hi", "Col"}) {
      const gamut::Array& w = want[name].array;
      const auto got = to_host<float>(r[name].array);
      EXPECT_EQ(r[name].array.shape, w.shape) << name;
      bool nonzero = false;
      for (int64_t e = 0; e < w.size(); ++e) {
        EXPECT_EQ(got[size_t(e)], w.as<float>()[e]) << name << " " << e << " (" << r.stats.cache << ")";
        nonzero |= got[size_t(e)] != 0;
      }
      EXPECT_TRUE(nonzero) << name;
    }
    return r.stats.cache;
  };
  EXPECT_NE(run(1, 2.0, M, 0, o), "record");
  EXPECT_EQ(run(3, 2.0, M, 0, o), "record");  // new inputs, new outputs
  EXPECT_EQ(run(5, 2.0, M, 0, o), "record");
  EXPECT_NE(run(7, 3.0, M, 0, o), "record");  // a scalar
  EXPECT_EQ(run(9, 3.0, M, 0, o), "record");
  EXPECT_NE(run(11, 3.0, M - 4, 0, o), "record");  // a shape
  EXPECT_NE(run(13, 3.0, M, 1, o), "record");      // A off 16 bytes: another signature
  EXPECT_EQ(run(15, 3.0, M, 1, o), "record");
  Options tf32 = o;
  tf32.f32_math = "tf32";
  EXPECT_NE(run(17, 3.0, M, 0, tf32), "record");  // an option
  EXPECT_EQ(run(19, 2.0, M, 0, o), "record");     // (the first signature is still kept)

  // Output memory off 16 bytes in a replay: scalar stores, the same results.
  int calls = 0;
  Options shifted = o;
  shifted.allocator = [&calls, poisoned = o.allocator](DType t, const std::vector<int64_t>& shape, gamut::Device d) {
    std::vector<int64_t> one_more = shape;
    if (!one_more.empty()) one_more[0] += 1;
    gamut::Allocation a = poisoned(t, one_more.empty() ? std::vector<int64_t>{2} : one_more, d);
    if (calls++ % 2) a.data = static_cast<char*>(a.data) + 4;
    return a;
  };
  for (int n = 0; n < 4; ++n) run(21 + n, 2.0, M, 0, shifted);

  // A list: the whole path every time.
  Query top =
      Query::compile("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(i, j, s) top 4 by s; }");
  auto A = ints(size_t(M * K), 31), B = ints(size_t(K * N), 32);
  DeviceCopy dA(A), dB(B);
  Inputs dev;
  dev.array("A", ArrayRef::cuda(dA.p, DType::F32, {M, K})).array("B", ArrayRef::cuda(dB.p, DType::F32, {K, N}));
  for (int n = 0; n < 3; ++n) EXPECT_NE(top.run(dev, o).stats.cache, "record");
}

}  // namespace

#endif
