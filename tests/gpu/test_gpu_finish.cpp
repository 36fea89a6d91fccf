// Finishing steps (docs/language.md section 9) after a GPU run: the GPU engine's outputs
// finished on the host equal the CPU engine's (integer-valued data: bit for bit), with host
// inputs, and with device inputs whose outputs (the finished ones too) stay in device memory
// from the caller's allocator on its stream. --gtest_filter='GpuFinish.*'.
#include <gamut/gamut.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "../test_api_data.h"
#include "gpu_skip.h"

#if GAMUT_HAVE_CUDA
#include <cuda_runtime_api.h>

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::Inputs;
using gamut::Options;
using gamut::Query;

// Sums and counts per group, rows and their sums, finished into means, shares and normalised
// rows (a GPU-sized product: several tiles each way).
const char* const kQuery =
    "where (i, j) { d = 0; reduce (k) { d += A[i, k] * B[k, j]; }\n"
    "  S[g[i]] += d; C[g[i]] += 1; P[i, j] = d; R[i] += d; }\n"
    "finish { Mean[x] = S[x] / max(C[x], 1); Share[x] = f64(S[x]) / sum(S); Norm[r, c] = P[r, c] / (R[r] + 1e6); }";

std::vector<uint8_t> bytes_of(const gamut::Array& a) {
  std::vector<uint8_t> v(a.nbytes());
  if (a.device.is_gpu())
    EXPECT_EQ(cudaMemcpy(v.data(), a.data, v.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  else if (!v.empty())
    std::memcpy(v.data(), a.data, v.size());
  return v;
}

void expect_same_outputs(const gamut::Result& got, const gamut::Result& want) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size());
  for (size_t o = 0; o < want.outputs.size(); ++o) {
    SCOPED_TRACE(want.outputs[o].name);
    EXPECT_EQ(got.outputs[o].name, want.outputs[o].name);
    EXPECT_EQ(got.outputs[o].array.shape, want.outputs[o].array.shape);
    EXPECT_EQ(got.outputs[o].array.dtype, want.outputs[o].array.dtype);
    EXPECT_EQ(bytes_of(got.outputs[o].array), bytes_of(want.outputs[o].array));
  }
}

struct Data {
  int64_t M = 300, N = 260, K = 40, G = 7;
  std::vector<float> A = gamut::api_test::ints(size_t(M * K), 21), B = gamut::api_test::ints(size_t(K * N), 22);
  std::vector<int32_t> g;
  Data() {
    for (int64_t i = 0; i < M; ++i) g.push_back(int32_t((i * 5) % G));
  }
};

TEST(GpuFinish, HostInputsEqualTheCpuEngine) {
  SKIP_WITHOUT_GPU();
  Data d;
  Query q = Query::compile(kQuery);
  Inputs in;
  in.array("A", ArrayRef::host(d.A.data(), DType::F32, {d.M, d.K}))
      .array("B", ArrayRef::host(d.B.data(), DType::F32, {d.K, d.N}))
      .array("g", ArrayRef::host(d.g.data(), DType::I32, {d.M}));
  Options gpu;
  gpu.backend = "gpu";
  const gamut::Result g = q.run(in, gpu), c = q.run(in, gamut::api_test::cpu());
  EXPECT_EQ(g.stats.backend, "gpu");
  ASSERT_NE(g.find("Norm"), nullptr);
  expect_same_outputs(g, c);
}

TEST(GpuFinish, DeviceInputsFinishedOutputsOnTheDevice) {
  SKIP_WITHOUT_GPU();
  Data d;
  Query q = Query::compile(kQuery);
  void *dA = nullptr, *dB = nullptr;
  ASSERT_EQ(cudaMalloc(&dA, d.A.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dB, d.B.size() * 4), cudaSuccess);
  std::shared_ptr<void> free_a(dA, [](void*p) { cudaFree(p); }), free_b(dB, [](void*p) { cudaFree(p); });
  ASSERT_EQ(cudaMemcpy(dA, d.A.data(), d.A.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(dB, d.B.data(), d.B.size() * 4, cudaMemcpyHostToDevice), cudaSuccess);
  Inputs dev, host;
  // (g stays on the host: index vectors of outputs are checked there.)
  dev.array("A", ArrayRef::cuda(dA, DType::F32, {d.M, d.K}))
      .array("B", ArrayRef::cuda(dB, DType::F32, {d.K, d.N}))
      .array("g", ArrayRef::host(d.g.data(), DType::I32, {d.M}));
  host.array("A", ArrayRef::host(d.A.data(), DType::F32, {d.M, d.K}))
      .array("B", ArrayRef::host(d.B.data(), DType::F32, {d.K, d.N}))
      .array("g", ArrayRef::host(d.g.data(), DType::I32, {d.M}));
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  Options o;
  o.backend = "gpu";
  o.stream = s;
  int allocated = 0;
  o.allocator = [&allocated, s](DType t, const std::vector<int64_t>& shape, gamut::Device) {
    int64_t n = 1;
    for (int64_t x : shape) n *= x;
    const size_t bytes = size_t(n) * gamut::dtype_size(t);
    void* p = nullptr;
    EXPECT_EQ(cudaMalloc(&p, bytes + 16), cudaSuccess);
    // What is not written shows. On the run's stream: a cudaMemset on the legacy stream is not
    // ordered before the run's own starting fill on a non-blocking stream, and could land after it.
    EXPECT_EQ(cudaMemsetAsync(p, 0xff, bytes + 16, s), cudaSuccess);
    ++allocated;
    return gamut::Allocation{p, std::shared_ptr<void>(p, [](void* q) { cudaFree(q); })};
  };
  const gamut::Result g = q.run(dev, o);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  for (const gamut::Output& out : g.outputs) EXPECT_TRUE(out.array.device.is_gpu()) << out.name;
  EXPECT_EQ(allocated, 7);  // S, C, P, R and the three finished outputs
  expect_same_outputs(g, q.run(host, gamut::api_test::cpu()));
  cudaStreamDestroy(s);
}

}  // namespace

#endif
