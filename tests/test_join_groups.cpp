// Key grouping of joins for the GPU (src/cuda/codegen/join_groups.h), without a GPU: the tiles cover
// exactly the matching (i, j) pairs, each once, whatever the keys (skewed, several keys, axis
// ranges), only integer keys group, and gather_along permutes operands as the kernel expects.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "bind/bind.h"
#include "cuda/gpu_engine.h"
#include "cuda/codegen/join_groups.h"
#include "cuda/codegen/tile_choice.h"
#include "driver/pipeline.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;
using namespace gamut::cuda;

namespace {

NDArray vec_i32(const std::vector<int32_t>& v) {
  NDArray a = NDArray::zeros(DType::I32, {int64_t(v.size())});
  for (size_t n = 0; n < v.size(); ++n) a.as<int32_t>()[n] = v[n];
  return a;
}
NDArray vec_f32(const std::vector<float>& v) {
  NDArray a = NDArray::zeros(DType::F32, {int64_t(v.size())});
  for (size_t n = 0; n < v.size(); ++n) a.as<float>()[n] = v[n];
  return a;
}
NDArray ones(int64_t r, int64_t c) {
  NDArray a = NDArray::zeros(DType::F32, {r, c});
  for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = 1.0f;
  return a;
}

// Every tile's pairs, checked to match, counted; then compared with the brute-force match set.
void expect_exact_cover(const Prepared& p, const JoinGroups& g, int bm, int bn,
                        const std::function<bool(int64_t, int64_t)>& match) {
  std::set<std::pair<int64_t, int64_t>> seen;
  for (int64_t t = 0; t < g.tile_count(); ++t) {
    const int32_t* x = g.tiles.data() + 4 * t;
    ASSERT_LT(x[0], x[1]);
    ASSERT_LT(x[2], x[3]);
    EXPECT_EQ(x[0] % 4, 0);   // 4-element loader chunks stay aligned
    EXPECT_EQ(x[2] % 4, 0);
    ASSERT_LE(x[1] - x[0], bm);
    ASSERT_LE(x[3] - x[2], bn);
    for (int32_t a = x[0]; a < x[1]; ++a)
      for (int32_t b = x[2]; b < x[3]; ++b) {
        const int64_t i = g.row_perm[size_t(a)], j = g.col_perm[size_t(b)];
        EXPECT_TRUE(match(i, j)) << i << "," << j;
        EXPECT_TRUE(seen.insert({i, j}).second) << "pair covered twice: " << i << "," << j;
      }
  }
  int64_t want = 0;
  for (int64_t i = p.instance.row.begin; i < p.instance.row.end; ++i)
    for (int64_t j = p.instance.col.begin; j < p.instance.col.end; ++j) want += match(i, j) ? 1 : 0;
  EXPECT_EQ(int64_t(seen.size()), want);
  EXPECT_EQ(g.pairs, want);
}

const char* kJoin =
    "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } T[g[i]] += s; }";

}  // namespace

TEST(JoinGroups, TilesCoverExactlyTheMatchingPairs) {
  std::mt19937 rng(3);
  for (int keys : {1, 3, 50, 1000}) {
    for (auto [m, n] : std::vector<std::pair<int, int>>{{1, 1}, {37, 300}, {700, 65}, {1000, 1000}}) {
      SCOPED_TRACE(std::to_string(keys) + " keys " + std::to_string(m) + "x" + std::to_string(n));
      std::vector<int32_t> g(static_cast<size_t>(m)), h(static_cast<size_t>(n));
      // Skewed: key 0 takes about half of the rows.
      for (auto& v : g) v = rng() % 2 ? 0 : int32_t(rng() % unsigned(keys));
      for (auto& v : h) v = int32_t(rng() % unsigned(keys));
      Bindings b;
      b.arrays["g"] = vec_i32(g);
      b.arrays["h"] = vec_i32(h);
      b.arrays["A"] = ones(m, 4);
      b.arrays["B"] = ones(n, 4);
      b.dims["T"] = {keys};
      auto p = prepare(Source{"q.mmlt", kJoin}, std::move(b), false);
      ASSERT_TRUE(join_grouping_form(p->plan));
      const JoinGroups jg = group_join(p->plan, p->instance, 64, 128);
      expect_exact_cover(*p, jg, 64, 128, [&](int64_t i, int64_t j) { return g[size_t(i)] == h[size_t(j)]; });
    }
  }
}

TEST(JoinGroups, FloatKeysStayAMask) {
  // Only integer index vectors are join keys (sema); float ones are a mask, never grouped.
  Bindings b;
  b.arrays["g"] = vec_f32({0.0f, -0.0f, 1.5f});
  b.arrays["h"] = vec_f32({-0.0f, 1.5f});
  b.arrays["A"] = ones(3, 3);
  b.arrays["B"] = ones(2, 3);
  const char* q = "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } C[i, j] = s; }";
  auto p = prepare(Source{"q.mmlt", q}, std::move(b), false);
  EXPECT_TRUE(p->plan.when.keys.empty());
  EXPECT_FALSE(join_grouping_form(p->plan));
}

TEST(JoinGroups, TwoKeysAndRanges) {
  std::mt19937 rng(8);
  const int m = 300, n = 200;
  std::vector<int32_t> g1(m), g2(m), h1(n), h2(n);
  for (auto* v : {&g1, &g2}) for (auto& x : *v) x = int32_t(rng() % 4);
  for (auto* v : {&h1, &h2}) for (auto& x : *v) x = int32_t(rng() % 4);
  Bindings b;
  b.arrays["g"] = vec_i32(g1);
  b.arrays["u"] = vec_i32(g2);
  b.arrays["h"] = vec_i32(h1);
  b.arrays["v"] = vec_i32(h2);
  b.arrays["A"] = ones(m, 3);
  b.arrays["B"] = ones(n, 3);
  const char* q = "where (i in [17, 290), j in [3, 150)) when (g[i] == h[j] && u[i] == v[j]) "
                  "{ s = 0; reduce (k) { s += A[i, k] * B[j, k]; } C[i, j] = s; }";
  auto p = prepare(Source{"q.mmlt", q}, std::move(b), false);
  ASSERT_EQ(p->plan.when.keys.size(), 2u);
  const JoinGroups jg = group_join(p->plan, p->instance, 32, 32);
  expect_exact_cover(*p, jg, 32, 32, [&](int64_t i, int64_t j) {
    return i >= 17 && i < 290 && j >= 3 && j < 150 && g1[size_t(i)] == h1[size_t(j)] && g2[size_t(i)] == h2[size_t(j)];
  });
}

TEST(JoinGroups, FormNeedsIndexVectorKeysAndNoAxisReads) {
  Bindings b;
  b.arrays["g"] = vec_i32({1, 2});
  b.arrays["h"] = vec_i32({2, 1});
  b.arrays["A"] = ones(2, 3);
  b.arrays["B"] = ones(2, 3);
  const char* axis = "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k] + f32(i); } C[i, j] = s; }";
  auto p = prepare(Source{"q.mmlt", axis}, b, false);
  EXPECT_EQ(p->plan.when.keys.size(), 1u);
  EXPECT_FALSE(join_grouping_form(p->plan));
  Bindings m;
  m.arrays["A"] = ones(2, 3);
  m.arrays["B"] = ones(2, 3);
  const char* mask = "where (i, j) when (i < j) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } C[i, j] = s; }";
  p = prepare(Source{"q.mmlt", mask}, std::move(m), false);
  EXPECT_FALSE(join_grouping_form(p->plan));
}

TEST(JoinGroups, GatherAlongEitherDimension) {
  NDArray x = NDArray::zeros(DType::I32, {3, 4});
  for (int e = 0; e < 12; ++e) x.as<int32_t>()[e] = e;
  const std::vector<int32_t> perm = {2, 0};
  const NDArray r = gather_along(x, true, perm);
  ASSERT_EQ(r.shape, (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(r.as<int32_t>()[0], 8);
  EXPECT_EQ(r.as<int32_t>()[4], 0);
  const std::vector<int32_t> cperm = {3, 1, -1};
  const NDArray c = gather_along(x, false, cperm);
  ASSERT_EQ(c.shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(c.as<int32_t>()[0], 3);
  EXPECT_EQ(c.as<int32_t>()[1], 1);
  EXPECT_EQ(c.as<int32_t>()[2], 0);   // a gap
  EXPECT_EQ(c.as<int32_t>()[4], 5);
}

TEST(JoinGroups, GroupedKernelsCompileWithNvrtc) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  const char* queries[] = {
      kJoin,
      "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } C[i, j] = s; }",
      "where (i, j) when (g[i] == h[j] && i < j) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; }"
      " if (s > 1) emit S(i, j, s); }",
      "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } emit T(i, j, s) top 5 by s; }",
  };
  for (const char* q : queries) {
    SCOPED_TRACE(q);
    Bindings b;
    b.arrays["g"] = vec_i32({0, 1, 2});
    b.arrays["h"] = vec_i32({2, 1});
    b.arrays["A"] = ones(3, 4);
    b.arrays["B"] = ones(2, 4);
    if (std::string(q).find("T[") != std::string::npos) b.dims["T"] = {3};
    auto p = prepare(Source{"q.mmlt", q}, std::move(b), false);
    ASSERT_TRUE(join_grouping_form(p->plan));
    CodegenOptions o;
    o.grouped_join = true;
    for (const char* tile : {"128x256x16/8x16", "64x64x8/4x4"}) {
      const std::string src = generate_source(p->plan, parse_tile(tile), o);
      EXPECT_NE(src.find("jrow"), std::string::npos);
      CompileOptions co;
      co.arch = "sm_90a";
      std::string log;
      EXPECT_NO_THROW(nvrtc_compile(src, co, &log)) << log << src;
    }
  }
#endif
}
