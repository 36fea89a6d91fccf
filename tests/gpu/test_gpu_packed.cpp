// Packed 16-bit tropical steps on the GPU (CodegenOptions::packed16) against the CPU engine:
// exact on integers, at the ends of the 16-bit range, at every remainder of the tile, and the
// fall-back to i32 steps when the data could leave 16 bits.
#include <gtest/gtest.h>

#include "gpu_skip.h"

#include <cstring>
#include <random>

#include "bind/bind.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"

using namespace gamut;

namespace {

NDArray random_matrix(DType t, int64_t r, int64_t c, int lo, int hi, std::mt19937& rng) {
  NDArray a = NDArray::zeros(t, {r, c});
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t e = 0; e < a.size(); ++e) {
    const int v = d(rng);
    if (t == DType::I8) a.as<int8_t>()[e] = int8_t(v);
    else if (t == DType::U8) a.as<uint8_t>()[e] = uint8_t(v);
    else a.as<int16_t>()[e] = int16_t(v);
  }
  return a;
}

// Runs `text` on both engines; returns the GPU's tile description (with " packed16" when used).
std::string run_both(const std::string& text, NDArray A, NDArray B) {
  Bindings b;
  b.arrays["A"] = std::move(A);
  b.arrays["B"] = std::move(B);
  auto p = prepare(Source{"q.mmlt", text}, std::move(b));
  const Results cpu = run_cpu(p->instance);
  cuda::GpuRunStats stats;
  const Results gpu = cuda::run_gpu(p->instance, {}, &stats);
  EXPECT_EQ(cpu.dense.size(), 1u);
  EXPECT_EQ(gpu.dense.size(), 1u);
  if (cpu.dense.size() != 1 || gpu.dense.size() != 1) return stats.tile;
  const NDArray& x = cpu.dense[0];
  const NDArray& y = gpu.dense[0];
  EXPECT_EQ(x.shape, y.shape);
  EXPECT_EQ(x.dtype, y.dtype);
  if (x.nbytes() == y.nbytes() && x.nbytes() > 0) {
    int64_t bad = 0, first = -1;
    const size_t e = dtype_size(x.dtype);
    for (int64_t n = 0; n < x.size(); ++n)
      if (std::memcmp(x.data.data() + size_t(n) * e, y.data.data() + size_t(n) * e, e) != 0) {
        if (first < 0) first = n;
        ++bad;
      }
    EXPECT_EQ(bad, 0) << "first mismatch at element " << first;
  }
  return stats.tile;
}

const char* kMaxPlus = "where (i, j) { accum = -inf; reduce (k) { accum max= A[i, k] + B[k, j]; } C[i, j] = accum; }";
const char* kMinPlusT = "where (i, j) { d = 7; reduce (k) { d min= B[j, k] + A[k, i]; } C[i, j] = d; }";
// An initial value outside 16 bits: it must win over every lane.
const char* kMaxPlusInit = "where (i, j) { a: i32 = 40000; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }";
// An i64 accumulator over i32 sums: the update widens (a cast), which is not the packed form.
const char* kMaxPlusI64 = "where (i, j) { a: i64 = -5; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }";

bool packed(const std::string& tile) { return tile.find("packed16") != std::string::npos; }

}  // namespace

TEST(GpuPacked16, MaxPlusMatchesCpuAtEverySize) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(11);
  const int64_t shapes[][3] = {{1, 1, 1}, {1, 2, 3}, {33, 65, 17}, {130, 257, 100}, {257, 511, 1000}, {300, 260, 4}};
  for (const auto& s : shapes) {
    SCOPED_TRACE(std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]));
    const std::string tile = run_both(kMaxPlus, random_matrix(DType::I16, s[0], s[2], -1000, 1000, rng),
                                      random_matrix(DType::I16, s[2], s[1], -1000, 1000, rng));
    EXPECT_TRUE(packed(tile)) << tile;
  }
}

TEST(GpuPacked16, EndsOfTheRangeAndIdentities) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(5);
  // Sums reach exactly -32768 and 32767: still packed, still exact.
  for (const char* text : {kMaxPlus, kMinPlusT}) {
    SCOPED_TRACE(text);
    const bool t = text == kMinPlusT;
    NDArray A = random_matrix(DType::I16, t ? 96 : 130, t ? 130 : 96, -16384, 16383, rng);
    NDArray B = random_matrix(DType::I16, t ? 140 : 96, t ? 96 : 140, -16384, 16384, rng);
    A.as<int16_t>()[0] = -16384;
    B.as<int16_t>()[0] = -16384;
    A.as<int16_t>()[1] = 16383;
    B.as<int16_t>()[1] = 16384;
    EXPECT_TRUE(packed(run_both(text, std::move(A), std::move(B))));
  }
  EXPECT_TRUE(packed(run_both(kMaxPlusInit, random_matrix(DType::I16, 70, 50, -300, 300, rng),
                              random_matrix(DType::I16, 50, 90, -300, 300, rng))));
  EXPECT_FALSE(packed(run_both(kMaxPlusI64, random_matrix(DType::I16, 70, 50, -300, 300, rng),
                               random_matrix(DType::I16, 50, 90, -300, 300, rng))));
  // 8-bit inputs always fit.
  EXPECT_TRUE(packed(run_both(kMinPlusT, random_matrix(DType::I8, 77, 66, -128, 127, rng),
                              random_matrix(DType::U8, 99, 77, 0, 255, rng))));
}

TEST(GpuPacked16, FallsBackWhenSumsCouldOverflow) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(9);
  NDArray A = random_matrix(DType::I16, 64, 40, -32768, 32767, rng);
  NDArray B = random_matrix(DType::I16, 40, 72, -32768, 32767, rng);
  A.as<int16_t>()[0] = 32767;
  B.as<int16_t>()[0] = 32767;   // 65534 needs i32 arithmetic
  EXPECT_FALSE(packed(run_both(kMaxPlus, std::move(A), std::move(B))));
}
