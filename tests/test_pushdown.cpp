// Aggregate push-down: the stage queries compute what the query as written computes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cpu/engine.h"
#include "driver/pipeline.h"

#include "integer_data.h"

using namespace gamut;

namespace {

const auto& ints = testdata::integer_valued;

Results run(const std::string& text, const Bindings& b, bool rewrites, bool* rewritten) {
  auto p = prepare(Source{"q.mmlt", text}, b, rewrites);
  *rewritten = p->program.has_value();
  RunOptions o;
  o.backend = Backend::Cpu;
  return execute(*p, o, nullptr);
}

}  // namespace

TEST(Pushdown, EveryOrientationMatchesTheQueryAsWritten) {
  // Integer-valued data: every sum is exact, so both paths must agree bit for bit.
  const int64_t M = 97, N = 83, K = 29;
  for (bool a_km : {false, true})
    for (bool b_km : {false, true})
      for (bool join : {false, true}) {
        std::string a = a_km ? "A[k, i]" : "A[i, k]", bb = b_km ? "B[k, j]" : "B[j, k]";
        std::string text = std::string("where (i, j)") + (join ? " when (g[i] == h[j])" : "") +
                           " { s = 0; reduce (k) { s += " + a + " * " + bb + "; } " +
                           (join ? "T[g[i]] += s; }" : "T[g[i], h[j]] += s; }");
        Bindings b;
        b.arrays["A"] = ints(DType::F32, a_km ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, -3, 3, 1);
        b.arrays["B"] = ints(DType::F32, b_km ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K}, -3, 3, 2);
        b.arrays["g"] = ints(DType::I32, {M}, 0, 6, 3);
        b.arrays["h"] = ints(DType::I32, {N}, 0, 4, 4);
        bool rw1, rw2;
        Results with = run(text, b, true, &rw1), without = run(text, b, false, &rw2);
        SCOPED_TRACE(text);
        EXPECT_TRUE(rw1) << "the rewrite applies";
        EXPECT_FALSE(rw2);
        ASSERT_EQ(with.dense[0].shape, without.dense[0].shape);
        EXPECT_EQ(with.dense[0].data, without.dense[0].data);
        bool nonzero = false;
        for (int64_t e = 0; e < without.dense[0].size(); ++e) nonzero |= without.dense[0].as<float>()[e] != 0;
        EXPECT_TRUE(nonzero);
      }
}

TEST(Pushdown, NotAppliedWhereItDoesNotPayOrDoesNotHold) {
  Bindings b;
  const int64_t M = 40, N = 30, K = 8;
  b.arrays["A"] = ints(DType::F32, {M, K}, -3, 3, 1);
  b.arrays["B"] = ints(DType::F32, {K, N}, -3, 3, 2);
  NDArray every = ints(DType::I32, {M}, 0, 0, 3);
  for (int64_t i = 0; i < M; ++i) every.as<int32_t>()[i] = int32_t(i);  // every row its own group
  NDArray every_col = ints(DType::I32, {N}, 0, 0, 4);
  for (int64_t j = 0; j < N; ++j) every_col.as<int32_t>()[j] = int32_t(j);
  b.arrays["g"] = every;
  b.arrays["h"] = every_col;
  bool rw;
  run("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }", b, true, &rw);
  EXPECT_FALSE(rw) << "every row and column its own group: the small product is the product";
  b.arrays["g"] = ints(DType::I32, {M}, 0, 2, 3);
  b.arrays["h"] = ints(DType::I32, {N}, 0, 2, 4);
  run("where (i, j) { s = 1; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }", b, true, &rw);
  EXPECT_FALSE(rw) << "a non-zero initial value is added once per pair";
  run("where (i, j) { s = 0; reduce (k) { s max= A[i, k] + B[k, j]; } T[g[i], h[j]] += s; }", b, true, &rw);
  EXPECT_FALSE(rw) << "not a sum of products";
}

TEST(Pushdown, NonFiniteValuesStayInTheirGroup) {
  const int64_t M = 60, N = 50, K = 7;
  Bindings b;
  b.arrays["A"] = ints(DType::F32, {M, K}, 1, 3, 1);   // positive: inf * b stays +inf, no inf - inf
  b.arrays["B"] = ints(DType::F32, {K, N}, 1, 3, 2);
  b.arrays["g"] = ints(DType::I32, {M}, 0, 3, 3);
  b.arrays["h"] = ints(DType::I32, {N}, 0, 2, 4);
  b.arrays["A"].as<float>()[5 * K + 2] = std::numeric_limits<float>::infinity();
  const int g5 = b.arrays["g"].as<int32_t>()[5];
  bool rw;
  const char* q = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }";
  Results with = run(q, b, true, &rw), without = run(q, b, false, &rw);
  ASSERT_EQ(with.dense[0].shape, without.dense[0].shape);
  const int64_t H = with.dense[0].shape[1];
  for (int64_t e = 0; e < with.dense[0].size(); ++e) {
    float x = with.dense[0].as<float>()[e], y = without.dense[0].as<float>()[e];
    EXPECT_EQ(std::isinf(x), e / H == g5) << "element " << e;
    EXPECT_EQ(x, y) << "element " << e;
  }
}
