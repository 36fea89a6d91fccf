// Integer max-plus and min-plus with the type's limits as infinities (docs/language.md section 5)
// on the CPU engine, against the reference of int_semiring_cases.h: a sentinel "no edge" never
// wraps into a large value, sums past the limits saturate, for i32 and i64, every operand order.
// The same cases on the GPU: tests/gpu/test_gpu_int_semirings.cpp.
#include <gtest/gtest.h>

#include "int_semiring_cases.h"

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
    EXPECT_EQ(run(c, A, B, M, N, K, "cpu"), want);
  }
}

TEST(IntSemirings, SentinelsAbsorbAndSumsSaturateI32) {
  check_all<int32_t>(1, 1, 1, 0.3, 1);
  check_all<int32_t>(7, 5, 3, 0.3, 2);
  check_all<int32_t>(33, 65, 19, 0.5, 3);
  check_all<int32_t>(40, 3, 200, 0.9, 4);  // sparse: most pairs have no path
}

TEST(IntSemirings, SentinelsAbsorbAndSumsSaturateI64) {
  check_all<int64_t>(1, 1, 1, 0.3, 5);
  check_all<int64_t>(17, 9, 31, 0.5, 6);
}

// The case: reachability over max-plus with INT32_MIN as "no edge". Wrapping made
// INT_MIN + INT_MIN = 0 and INT_MIN + (-w) a large positive value, so every pair looked reachable.
TEST(IntSemirings, ReachabilityCountsOnlyRealPaths) {
  const int64_t n = 60;
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> w(-9, 9);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<int32_t> W(size_t(n * n));
  for (int32_t& x : W) x = u(rng) < 0.04 ? w(rng) : std::numeric_limits<int32_t>::min();
  gamut::Query q = gamut::Query::compile(
      "where (i, j) { best: i32 = -inf; reduce (k) { best max= W[i, k] + V[k, j]; } Reach[i, j] = best > -inf; }");
  gamut::Inputs in;
  in.array("W", gamut::ArrayRef::host(W.data(), gamut::DType::I32, {n, n}));
  in.array("V", gamut::ArrayRef::host(W.data(), gamut::DType::I32, {n, n}));
  gamut::Options o;
  o.backend = "cpu";
  const gamut::Result r = q.run(in, o);
  const gamut::Output& reach = r["Reach"];
  ASSERT_EQ(reach.array.dtype, gamut::DType::Bool);
  const auto* got = static_cast<const uint8_t*>(reach.array.data);
  int64_t count = 0, want_count = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < n; ++j) {
      bool path = false;
      for (int64_t k = 0; k < n; ++k)
        path = path || (W[size_t(i * n + k)] != std::numeric_limits<int32_t>::min() &&
                        W[size_t(k * n + j)] != std::numeric_limits<int32_t>::min());
      EXPECT_EQ(got[i * n + j] != 0, path) << i << ", " << j;
      count += got[i * n + j] != 0;
      want_count += path;
    }
  EXPECT_EQ(count, want_count);
  EXPECT_GT(want_count, 0);
  EXPECT_LT(want_count, n * n);
}

// Outside the tropical step `+` still wraps (docs/semantics.md): only the step's sum is infinite.
TEST(IntSemirings, OtherSumsStillWrap) {
  const int32_t lo = std::numeric_limits<int32_t>::min();
  std::vector<int32_t> A = {lo}, B = {-1};
  gamut::Query q = gamut::Query::compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] + B[k, j]; } C[i, j] = a; }");
  gamut::Inputs in;
  in.array("A", gamut::ArrayRef::host(A.data(), gamut::DType::I32, {1, 1}));
  in.array("B", gamut::ArrayRef::host(B.data(), gamut::DType::I32, {1, 1}));
  gamut::Options o;
  o.backend = "cpu";
  const gamut::Result r = q.run(in, o);
  EXPECT_EQ(*static_cast<const int32_t*>(r["C"].array.data), std::numeric_limits<int32_t>::max());
}

}  // namespace
