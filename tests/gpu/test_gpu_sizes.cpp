// Hostile sizes and device memory on the GPU (issue 11, items 1 and 3): the out-of-memory message
// reports what is really free, a run that cannot fit fails before it allocates, and sizes from
// user input (index values, top N) neither fault nor wrap on the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "cpu/engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gpu_skip.h"
#include "table_compare.h"

using namespace gamut;

namespace {

NDArray ints(DType t, std::vector<int64_t> shape, int64_t modulo, int64_t offset = 0) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  for (int64_t e = 0; e < a.size(); ++e) {
    const int64_t v = (e * 7 + 3) % modulo + offset;
    if (t == DType::F32) a.as<float>()[e] = float(v);
    else if (t == DType::I64) a.as<int64_t>()[e] = v;
    else a.as<int32_t>()[e] = int32_t(v);
  }
  return a;
}

std::unique_ptr<Prepared> prepared(const std::string& text, Bindings b) {
  return prepare(Source{"q.mmlt", text}, std::move(b), false);
}

// "N bytes free" in a device error.
int64_t free_in(const std::string& what) {
  const size_t at = what.find(" bytes free");
  if (at == std::string::npos) return -1;
  size_t from = what.rfind(' ', at - 1);
  return std::atoll(what.c_str() + from + 1);
}

}  // namespace

TEST(GpuSizes, OutOfMemoryReportsWhatIsReallyFree) {
  SKIP_WITHOUT_GPU();
  const size_t total = cuda::device().total_mem;
  // More than the device has (the 149 GiB request on a 140 GiB H200 said 0.01 GiB were free), and
  // a little more than is free, so that the pool really tries and fails.
  const size_t above_free = std::min(total, cuda::device_memory().free + (size_t(256) << 20));
  for (size_t ask : {total + (size_t(8) << 30), above_free}) {
    try {
      cuda::DeviceBuffer b(ask);
      FAIL() << "allocated " << ask << " bytes of " << total;
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.code(), ExitCode::Device) << what;
      const int64_t reported = free_in(what);
      EXPECT_GT(reported, int64_t(total / 2)) << "an idle device has most of its memory free: " << what;
      EXPECT_NE(what.find(std::to_string(total)), std::string::npos) << what;
    }
    EXPECT_GT(cuda::device_memory().free, total / 2) << "the failed request left memory held";
  }
  cuda::DeviceBuffer small(1 << 20);
  EXPECT_NE(small.get(), nullptr);
}

TEST(GpuSizes, OutputsBeyondDeviceMemoryFailBeforeAnythingIsAllocated) {
  SKIP_WITHOUT_GPU();
  const int64_t total = int64_t(cuda::device().total_mem);
  // C: f32 rows by g[i], 1.2 times the device's memory (the host never allocates it: run_gpu
  // checks the device before it uploads anything, and the host copy is made after the kernel).
  const int64_t rows = total / 4 / 10 * 12;
  Bindings b;
  b.arrays["A"] = ints(DType::F32, {16, 8}, 5, 1);
  b.arrays["B"] = ints(DType::F32, {8, 16}, 3, 1);
  b.arrays["g"] = ints(DType::I64, {16}, 4);
  b.dims["C"] = {rows};
  auto p = prepared("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[g[i]] += a; }", std::move(b));
  cuda::reset_device_bytes_peak();
  const size_t held = cuda::device_bytes_peak();   // what earlier tests' caches still hold
  try {
    cuda::run_gpu(p->instance, {}, nullptr);
    FAIL() << "ran with an output of " << rows * 4 << " bytes on a device of " << total;
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::Device) << what;
    EXPECT_EQ(what.rfind("resource error: not enough device memory: output C needs ", 0), 0u) << what;
    EXPECT_NE(what.find("free of"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  EXPECT_EQ(cuda::device_bytes_peak(), held) << "nothing may be allocated before the check";
}

TEST(GpuSizes, HugeIndexValueIsADataErrorAndTheDeviceStaysUsable) {
  SKIP_WITHOUT_GPU();
  // An index vector holding 2^62 once ended in an illegal-address fault inside the kernel.
  const char* q = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[g[i], j] += a; }";
  auto bindings = [](int64_t last) {
    Bindings b;
    b.arrays["A"] = ints(DType::F32, {33, 9}, 5, 1);
    b.arrays["B"] = ints(DType::F32, {9, 17}, 3, 1);
    NDArray g = ints(DType::I64, {33}, 6);
    g.as<int64_t>()[32] = last;
    b.arrays["g"] = g;
    return b;
  };
  try {
    auto bad = prepared(q, bindings(int64_t(1) << 62));
    RunOptions o;
    o.backend = Backend::Gpu;
    execute(*bad, o, nullptr);
    FAIL() << "ran with an output of 2^62 rows";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Data) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("data error: C: output shape (4611686018427387905, 17) of f32", 0), 0u) << e.what();
  }
  auto good = prepared(q, bindings(40));
  const Results cpu = run_cpu(good->instance, 2);
  const Results gpu = cuda::run_gpu(good->instance, {}, nullptr);
  ASSERT_EQ(gpu.dense[0].shape, (std::vector<int64_t>{41, 17}));
  EXPECT_EQ(gpu.dense[0].data, cpu.dense[0].data) << "integer-valued data: exact";
  EXPECT_GT(cpu.dense[0].get_f64(40 * 17), 0);
}

TEST(GpuSizes, TopNFarBeyondThePairsMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  // N = 2^62 overflowed the reservoir and capacity arithmetic (N x tile rows, groups x N).
  const char* q = "where (i, j) { d = 0; reduce (k) { d += A[i, k] * B[k, j]; } emit L(i, j, d) top n by d per i; }";
  for (const char* n : {"4611686018427387904", "9223372036854775807", "3"}) {
    Bindings b;
    b.arrays["A"] = ints(DType::F32, {70, 12}, 7, -3);
    b.arrays["B"] = ints(DType::F32, {12, 45}, 5, -2);
    b.scalars["n"] = n;
    auto p = prepared(q, std::move(b));
    const Results cpu = run_cpu(p->instance, 2);
    const Results gpu = cuda::run_gpu(p->instance, {}, nullptr);
    EXPECT_EQ(cpu.lists[0].rows, std::string(n) == "3" ? 70 * 3 : 70 * 45) << n;
    EXPECT_TRUE(test::same_table_bits(cpu.lists[0], gpu.lists[0], false)) << "n = " << n;
  }
}
