// Key-grouped joins on the GPU (src/cuda/codegen/join_groups.h) against the CPU engine and against the
// masked launch: exact on integer-valued data, for aggregates, project outputs (pairs that do
// not match keep the output's initial value), selects with a further mask, global top-N,
// skewed keys, keys without partners, one key, every row its own key, and empty joins.
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

NDArray keys(const std::vector<int32_t>& v) {
  NDArray a = NDArray::zeros(DType::I32, {int64_t(v.size())});
  for (size_t n = 0; n < v.size(); ++n) a.as<int32_t>()[n] = v[n];
  return a;
}
NDArray small_ints(int64_t r, int64_t c, std::mt19937& rng) {
  NDArray a = NDArray::zeros(DType::F32, {r, c});
  std::uniform_int_distribution<int> d(-3, 3);
  for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = float(d(rng));
  return a;
}

void expect_same(const Results& want, const Results& got, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(want.dense.size(), got.dense.size());
  for (size_t d = 0; d < want.dense.size(); ++d) {
    ASSERT_EQ(want.dense[d].shape, got.dense[d].shape);
    EXPECT_TRUE(want.dense[d].data == got.dense[d].data) << "dense output " << d << " differs";
  }
  ASSERT_EQ(want.lists.size(), got.lists.size());
  for (size_t l = 0; l < want.lists.size(); ++l) {
    ASSERT_EQ(want.lists[l].rows, got.lists[l].rows) << "list " << l;
    for (size_t c = 0; c < want.lists[l].columns.size(); ++c)
      EXPECT_TRUE(want.lists[l].columns[c].data == got.lists[l].columns[c].data) << "list " << l << " column " << c;
  }
}

// Runs q on the CPU, the GPU grouped and the GPU masked; all three must agree. Returns the
// grouped run's tile description.
std::string run_three(const std::string& q, const std::vector<int32_t>& g, const std::vector<int32_t>& h, int64_t k,
                      uint32_t seed, int64_t groups_dim = 0) {
  std::mt19937 rng(seed);
  Bindings b;
  b.arrays["g"] = keys(g);
  b.arrays["h"] = keys(h);
  b.arrays["A"] = small_ints(int64_t(g.size()), k, rng);
  b.arrays["B"] = small_ints(int64_t(h.size()), k, rng);
  if (groups_dim > 0) b.dims["T"] = {groups_dim};
  auto p = prepare(Source{"q.mmlt", q}, std::move(b), false);
  const Results cpu = run_cpu(p->instance);
  cuda::GpuRunStats st;
  const Results grouped = cuda::run_gpu(p->instance, {}, &st);
  cuda::GpuRunOptions masked;
  masked.masked_joins = true;
  const Results mask = cuda::run_gpu(p->instance, masked);
  expect_same(cpu, grouped, "grouped vs cpu");
  expect_same(cpu, mask, "masked vs cpu");
  bool nonzero = false;
  for (const NDArray& d : cpu.dense)
    for (std::byte x : d.data) nonzero = nonzero || x != std::byte{0};
  for (const Table& t : cpu.lists) nonzero = nonzero || t.rows > 0;
  // (1 x 1 cases may match nothing; the larger ones must produce something to compare.)
  EXPECT_TRUE(nonzero || g.size() * h.size() < 100) << "a test that cannot fail: all results empty";
  return st.tile;
}

const char* kAgg = "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } T[g[i]] += s; }";
const char* kProject = "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; } C[i, j] = s + 100; }";
const char* kSelect = "where (i, j) when (g[i] == h[j] && i != j) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; }"
                      " if (s > 0) emit S(i, j, s); }";
const char* kTop = "where (i, j) when (g[i] == h[j]) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; }"
                   " emit T(i, j, s) top 50 by s; }";

std::vector<int32_t> random_keys(int64_t n, int nkeys, bool skew, std::mt19937& rng) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = skew && rng() % 2 ? 0 : int32_t(rng() % unsigned(nkeys));
  return v;
}

}  // namespace

TEST(GpuJoin, GroupedMatchesCpuAndMask) {
  SKIP_WITHOUT_GPU();
  std::mt19937 rng(21);
  for (int nkeys : {1, 7, 300}) {
    for (auto [m, n, k] : std::vector<std::tuple<int, int, int>>{{1, 1, 1}, {130, 257, 33}, {700, 300, 64}, {1000, 999, 8}}) {
      for (bool skew : {false, true}) {
        SCOPED_TRACE(std::to_string(nkeys) + " keys, " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                     std::to_string(k) + (skew ? " skewed" : ""));
        const auto g = random_keys(m, nkeys, skew, rng), h = random_keys(n, nkeys, skew, rng);
        EXPECT_NE(run_three(kAgg, g, h, k, 1, nkeys).find("grouped-join"), std::string::npos);
        run_three(kProject, g, h, k, 2);
        run_three(kSelect, g, h, k, 3);
        run_three(kTop, g, h, k, 4);
      }
    }
  }
}

TEST(GpuJoin, EveryRowItsOwnKeyAndKeysWithoutPartners) {
  SKIP_WITHOUT_GPU();
  std::vector<int32_t> g(500), h(400);
  for (size_t n = 0; n < g.size(); ++n) g[n] = int32_t(n);            // every row its own key
  for (size_t n = 0; n < h.size(); ++n) h[n] = int32_t(2 * n + 1);    // odd keys only: half unmatched
  run_three(kAgg, g, h, 40, 7, 1000);
  run_three(kProject, g, h, 40, 8);
  // No key in common: nothing runs, outputs keep their initial values.
  std::vector<int32_t> even(300);
  for (size_t n = 0; n < even.size(); ++n) even[n] = int32_t(2 * n);
  std::mt19937 rng(1);
  Bindings b;
  b.arrays["g"] = keys(even);
  b.arrays["h"] = keys(h);
  b.arrays["A"] = small_ints(300, 16, rng);
  b.arrays["B"] = small_ints(400, 16, rng);
  auto p = prepare(Source{"q.mmlt", kProject}, std::move(b), false);
  expect_same(run_cpu(p->instance), cuda::run_gpu(p->instance), "empty join");
}
