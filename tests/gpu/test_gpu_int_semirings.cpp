// Integer max-plus and min-plus with the type's limits as infinities (docs/language.md section 5)
// on the GPU engine: the cases of tests/int_semiring_cases.h (sentinels, the other infinity, sums
// past the limits; i32 and i64; every operand order) against its reference, bit for bit, at sizes
// below, at and past a tile. Also the packed 16-bit DPX path (i16 inputs), whose lanes never meet
// the i32 limits. --gtest_filter='GpuIntSemirings.*'.
#include <gtest/gtest.h>

#include "../int_semiring_cases.h"
#include "gpu_skip.h"

namespace {

using namespace gamut::int_semiring_test;

template <class T>
void check_all(int64_t M, int64_t N, int64_t K, double absent, uint64_t seed) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + (sizeof(T) == 4 ? " i32 " : " i64 ") + std::to_string(M) + "x" +
                 std::to_string(N) + "x" + std::to_string(K));
    std::mt19937_64 rng(seed);
    const auto A = weights<T>(size_t(M * K), c.max_plus, absent, rng);
    const auto B = weights<T>(size_t(K * N), c.max_plus, absent, rng);
    const auto want = reference(c, A, B, M, N, K);
    EXPECT_EQ(run(c, A, B, M, N, K, "gpu"), want);
  }
}

TEST(GpuIntSemirings, SentinelsAbsorbAndSumsSaturateI32) {
  SKIP_WITHOUT_GPU();
  check_all<int32_t>(1, 1, 1, 0.3, 1);
  check_all<int32_t>(7, 5, 3, 0.3, 2);
  check_all<int32_t>(129, 257, 67, 0.5, 3);
  check_all<int32_t>(300, 5, 700, 0.95, 4);
}

TEST(GpuIntSemirings, SentinelsAbsorbAndSumsSaturateI64) {
  SKIP_WITHOUT_GPU();
  check_all<int64_t>(1, 1, 1, 0.3, 5);
  check_all<int64_t>(65, 130, 33, 0.5, 6);
}

// The SIMT step takes the plain + (DPX) where a block's operand values of a k slice are all within
// half the sum type's range (the mainloop's vote), and the sum of infinities elsewhere: here most
// values sit at the guard's edges (-2^30, 2^30 - 1 for i32; their sums reach the limits exactly)
// and the specials (sentinels, values past the edge, near the limits) only in a band of rows of A
// and two k of B, so the two paths run side by side in one kernel (the band's blocks exact
// throughout, the others exact in the slice of those k only), in both operand orders.
template <class T>
void check_both_paths(int64_t M, int64_t N, int64_t K, uint64_t seed) {
  const T half = T(T(1) << (sizeof(T) * 8 - 2));  // 2^30 or 2^62
  for (const Case& c : kCases) {
    SCOPED_TRACE(std::string(c.name) + (sizeof(T) == 4 ? " i32 " : " i64 ") + std::to_string(M) + "x" +
                 std::to_string(N) + "x" + std::to_string(K));
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<int> pick(0, 15);
    const auto edge = [&]() -> T {
      switch (pick(rng)) {
        case 0: return T(-half);
        case 1: return T(half - 1);
        case 2: return T(-half + 1);
        case 3: return T(half - 2);
        default: return T(pick(rng) - 7);
      }
    };
    std::vector<T> A(size_t(M * K)), B(size_t(K * N));
    for (T& x : A) x = edge();
    for (T& x : B) x = edge();
    const auto specials = weights<T>(size_t(M * K + K * N), c.max_plus, 0.3, rng);
    for (int64_t i = M / 3; i < M / 3 + 5 && i < M; ++i)
      for (int64_t k = 0; k < K; ++k) A[size_t(i * K + k)] = specials[size_t(i * K + k)];
    for (int64_t k = K / 2; k < K / 2 + 2 && k < K; ++k)
      for (int64_t j = 0; j < N; ++j) {
        const size_t at = c.b_jk ? size_t(j * K + k) : size_t(k * N + j);
        B[at] = j % 3 == 0 ? specials[size_t(M * K) + at] : T(half);  // 2^30: just past the edge
      }
    const auto want = reference(c, A, B, M, N, K);
    EXPECT_EQ(run(c, A, B, M, N, K, "gpu"), want);
  }
}

TEST(GpuIntSemirings, PlainSumsWithinHalfTheRangeAndInfinitiesElsewhere) {
  SKIP_WITHOUT_GPU();
  check_both_paths<int32_t>(200, 300, 70, 9);
  check_both_paths<int32_t>(257, 129, 33, 10);
  check_both_paths<int64_t>(130, 70, 40, 11);
}

// i16 inputs compute in i32: their own limits are ordinary values, and the packed 16-bit DPX
// steps (chosen where no sum leaves the 16-bit range) give the CPU engine's result.
TEST(GpuIntSemirings, SmallIntegerInputsKeepOrdinarySums) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 96, N = 128, K = 40;
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<int> d(-300, 300);
  std::vector<int16_t> A(size_t(M * K)), B(size_t(K * N));
  for (int16_t& x : A) x = int16_t(d(rng));
  for (int16_t& x : B) x = int16_t(d(rng));
  gamut::Query q = gamut::Query::compile(kCases[0].text);
  // Small sums (packed DPX steps), then the i16 minimum, an ordinary value in i32 (no packed steps).
  for (const int16_t first : {int16_t(7), std::numeric_limits<int16_t>::min()})
    for (const char* backend : {"cpu", "gpu"}) {
      SCOPED_TRACE(std::string(backend) + " A[0, 0] = " + std::to_string(first));
      A[0] = first;
      gamut::Inputs in;
      in.array("A", gamut::ArrayRef::host(A.data(), gamut::DType::I16, {M, K}));
      in.array("B", gamut::ArrayRef::host(B.data(), gamut::DType::I16, {K, N}));
      gamut::Options o;
      o.backend = backend;
      const gamut::Result r = q.run(in, o);
      const auto* C = static_cast<const int32_t*>(r["C"].array.data);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          int32_t want = std::numeric_limits<int32_t>::min();
          for (int64_t k = 0; k < K; ++k)
            want = std::max(want, int32_t(A[size_t(i * K + k)]) + int32_t(B[size_t(k * N + j)]));
          ASSERT_EQ(C[i * N + j], want) << i << ", " << j;
        }
    }
}

}  // namespace
