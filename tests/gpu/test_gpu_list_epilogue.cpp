// The list epilogue of the GPU kernel (gamut_list.cuh: BlockAppend, TileSelect with global
// thresholds) against run_cpu on the same Instance, row for row: top/bottom global and per
// i / per j for N from 1 to beyond the candidates, heavy ties, NaN keys, select at ~0%, ~1%
// and 100%, lists that outgrow their first buffers, batch, `when` and `if`, several lists
// in one query, odd sizes and tiles. Data are integers, so every sum is exact.
#include <gtest/gtest.h>

#include "gpu_skip.h"
#include "table_compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "../integer_data.h"
#include "../list_plans.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"

using namespace gamut;
namespace tp = gamut::testplans;

namespace {

struct Case {
  Plan plan;
  std::vector<NDArray> arrays;
  Instance inst;
};

struct Sizes {
  AxisRange row{0, 1}, col{0, 1};
  int64_t k = 16, batch = 1;
};

// Inputs of integers in [lo, hi] (index-like vectors of `when` plans in [-3, 3]); every list
// gets `limit`, every parameter `param`.
std::unique_ptr<Case> make_case(Plan plan, const Sizes& z, int64_t limit, int lo = -3, int hi = 3, double param = 2,
                                unsigned seed = 11) {
  auto c = std::make_unique<Case>();
  c->plan = std::move(plan);
  const Plan& P = c->plan;
  const int64_t m = z.row.end, n = z.col.end, k = z.k;
  for (size_t o = 0; o < P.operands.size(); ++o) {
    std::vector<int64_t> shape;
    switch (P.accesses[size_t(P.operands[o].accesses[0])].pattern) {
      case Pattern::RowRed: shape = {m, k}; break;
      case Pattern::RedRow: shape = {k, m}; break;
      case Pattern::RedCol: shape = {k, n}; break;
      case Pattern::ColRed: shape = {n, k}; break;
      case Pattern::RowVec: shape = {m}; break;
      case Pattern::ColVec: shape = {n}; break;
      case Pattern::RedVec: shape = {k}; break;
      case Pattern::RowCol: shape = {m, n}; break;
      case Pattern::ColRow: shape = {n, m}; break;
    }
    if (P.batched) shape.insert(shape.begin(), z.batch);
    const bool vec = shape.size() == size_t(P.batched ? 2 : 1);
    c->arrays.push_back(testdata::integer_valued(*P.operands[o].dtype, shape, vec ? -3 : lo, vec ? 3 : hi,
                                                 seed + unsigned(o) * 977u));
  }
  Instance& I = c->inst;
  I.plan = &c->plan;
  I.row = z.row;
  I.col = z.col;
  I.red = {0, k};
  I.batch = P.batched ? z.batch : 1;
  for (const NDArray& a : c->arrays) I.inputs.push_back(&a);
  for (size_t p = 0; p < P.params.size(); ++p) I.params.push_back(Scalar::of_float(CType::F64, param));
  for (const DenseOutput& d : P.dense) {
    std::vector<int64_t> shape;
    for (const OutIndex& x : d.index)
      shape.push_back(x.axis == AxisRole::Row ? m : x.axis == AxisRole::Col ? n : z.batch);
    I.dense_shapes.push_back(shape);
  }
  for (size_t l = 0; l < P.lists.size(); ++l) I.list_limits.push_back(limit);
  return c;
}

Sizes square(int64_t m, int64_t n, int64_t k = 16, int64_t batch = 1) {
  Sizes z;
  z.row = {0, m};
  z.col = {0, n};
  z.k = k;
  z.batch = batch;
  return z;
}

// Bit-exact, except that any NaN equals any NaN (sign and payload are not semantics).
::testing::AssertionResult same_table(const Table& cpu, const Table& gpu) {
  return test::same_table_bits(cpu, gpu, true);
}

const std::vector<std::string> kTiles = {"", "32x32x8/4x4", "64x32x4/4x2", "128x128x16/8x8"};

// Every list (and dense output) of the GPU run equals the CPU's, for each tile ("" = chosen).
// Returns the CPU results for further checks.
Results check(const Case& c, const std::vector<std::string>& tiles = kTiles, const cuda::GpuRunOptions& base = {}) {
  Results cpu = run_cpu(c.inst);
  for (const std::string& t : tiles) {
    SCOPED_TRACE("tile " + (t.empty() ? std::string("chosen") : t));
    cuda::GpuRunOptions o = base;
    if (!t.empty()) o.tile = cuda::parse_tile(t);
    const Results gpu = cuda::run_gpu(c.inst, o, nullptr);
    EXPECT_EQ(cpu.lists.size(), gpu.lists.size());
    for (size_t l = 0; l < cpu.lists.size() && l < gpu.lists.size(); ++l)
      EXPECT_TRUE(same_table(cpu.lists[l], gpu.lists[l])) << "list " << c.plan.lists[l].name;
    EXPECT_EQ(cpu.dense.size(), gpu.dense.size());
    for (size_t d = 0; d < cpu.dense.size() && d < gpu.dense.size(); ++d)
      EXPECT_TRUE(cpu.dense[d].data == gpu.dense[d].data) << "dense output " << c.plan.dense[d].name;
  }
  return cpu;
}

tp::ListQuery query(ListMode mode, PerGroup per) {
  tp::ListQuery q;
  q.mode = mode;
  q.per = per;
  return q;
}

std::string name_of(ListMode mode, PerGroup g) {
  return std::string(mode == ListMode::Top ? "top" : "bottom") +
         (g == PerGroup::Row ? " per i" : g == PerGroup::Col ? " per j" : " global");
}

// Rows a top/bottom list must have: N per group, or all the group's pairs when fewer.
int64_t expected_rows(PerGroup g, int64_t n, int64_t m, int64_t cols, int64_t batch = 1) {
  if (g == PerGroup::Row) return batch * m * std::min(n, cols);
  if (g == PerGroup::Col) return batch * cols * std::min(n, m);
  return std::min(n, batch * m * cols);
}

}  // namespace

// N = 1, 10, 128, 4096 and more than there are candidates; few ties (wide data) and many ties.
// One test per grouping and direction (a test process each under compute-sanitizer, whose
// racecheck takes minutes over all six).
class GpuListEpilogueLimits : public ::testing::TestWithParam<std::tuple<PerGroup, ListMode>> {};

TEST_P(GpuListEpilogueLimits, TopBottomEveryLimit) {
  SKIP_WITHOUT_GPU();
  const auto [g, mode] = GetParam();
  const int64_t M = 257, N = 1000;
  for (int wide : {0, 1})
    for (int64_t n : {int64_t(1), int64_t(10), int64_t(128), int64_t(4096), int64_t(300000)}) {
      SCOPED_TRACE(name_of(mode, g) + " N " + std::to_string(n) + (wide ? " wide data" : " data in [-3, 3]"));
      auto c = make_case(tp::list_query(query(mode, g)), square(M, N), n, wide ? -1000 : -3, wide ? 1000 : 3);
      const Results cpu = check(*c);
      EXPECT_EQ(cpu.lists[0].rows, expected_rows(g, n, M, N));
    }
}

INSTANTIATE_TEST_SUITE_P(EveryGrouping, GpuListEpilogueLimits,
                         ::testing::Combine(::testing::Values(PerGroup::None, PerGroup::Row, PerGroup::Col),
                                            ::testing::Values(ListMode::Top, ListMode::Bottom)),
                         [](const ::testing::TestParamInfo<std::tuple<PerGroup, ListMode>>& info) {
                           const PerGroup g = std::get<0>(info.param);
                           return std::string(std::get<1>(info.param) == ListMode::Top ? "top" : "bottom") +
                                  (g == PerGroup::Row ? "_per_i" : g == PerGroup::Col ? "_per_j" : "_global");
                         });

// Groups with more candidates than N = 4096 (per i over 5000 columns, per j over 5000 rows).
TEST(GpuListEpilogue, LargeNPerGroup) {
  SKIP_WITHOUT_GPU();
  for (int wide : {0, 1}) {
    auto r = make_case(tp::list_query(query(ListMode::Top, PerGroup::Row)), square(33, 5000), 4096, wide ? -1000 : -3,
                       wide ? 1000 : 3);
    EXPECT_EQ(check(*r).lists[0].rows, 33 * 4096);
    auto c = make_case(tp::list_query(query(ListMode::Bottom, PerGroup::Col)), square(5000, 33), 4096,
                       wide ? -1000 : -3, wide ? 1000 : 3);
    EXPECT_EQ(check(*c).lists[0].rows, 33 * 4096);
  }
}

// Keys of every type: f64, i64 (from i32 data), i32, and bool (nearly every key ties).
TEST(GpuListEpilogue, KeyTypes) {
  SKIP_WITHOUT_GPU();
  struct K { CType key; DType in; };
  for (const K& k : {K{CType::F64, DType::F32}, K{CType::I64, DType::I32}, K{CType::Unknown, DType::I32},
                     K{CType::Bool, DType::F32}})
    for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
      for (int64_t n : {1, 7, 200}) {
        SCOPED_TRACE("key " + std::to_string(int(k.key)) + " per " + std::to_string(int(g)) + " N " +
                     std::to_string(n));
        tp::ListQuery q = query(ListMode::Top, g);
        q.key = k.key;
        q.input = k.in;
        auto c = make_case(tp::list_query(q), square(300, 222), n, -50, 50);
        EXPECT_EQ(check(*c, {"", "64x32x4/4x2"}).lists[0].rows, expected_rows(g, n, 300, 222));
      }
}

// NaN keys come last in both directions; rows with NaN columns must still be emitted.
TEST(GpuListEpilogue, NaNKeys) {
  SKIP_WITHOUT_GPU();
  auto poison = [](Case& c) {
    float* p = c.arrays[0].as<float>();   // P[i, k]
    float* r = c.arrays[1].as<float>();   // R[k, j]
    const int64_t m = c.inst.row.end, n = c.inst.col.end, k = c.inst.red.end;
    for (int64_t i = 0; i < m; i += 7) p[i * k + 3] = std::numeric_limits<float>::quiet_NaN();
    for (int64_t j = 0; j < n; j += 5) r[1 * n + j] = std::numeric_limits<float>::quiet_NaN();
  };
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (ListMode mode : {ListMode::Top, ListMode::Bottom})
      for (int64_t n : {3, 150, 100000}) {
        SCOPED_TRACE(name_of(mode, g) + " N " + std::to_string(n));
        auto c = make_case(tp::list_query(query(mode, g)), square(140, 95), n);
        poison(*c);
        EXPECT_EQ(check(*c).lists[0].rows, expected_rows(g, n, 140, 95));
      }
  // Plain lists: every pair (NaN rows too), and `if (accum > thres)` (NaN never passes).
  for (bool under_if : {false, true}) {
    tp::ListQuery q;
    q.under_if = under_if;
    auto c = make_case(tp::list_query(q), square(140, 95), 0, -3, 3, 0);
    poison(*c);
    const Results cpu = check(*c);
    if (!under_if) EXPECT_EQ(cpu.lists[0].rows, 140 * 95);
    else EXPECT_GT(cpu.lists[0].rows, 0);
  }
}

// Keys at the edges of f32 (+-0, +-inf, +-3e38, NaN, tiny normals) with many ties: the gate
// (TileSelect::gate, rank_within) compares keys with the thresholds decoded to numbers, so its
// thresholds at -0 / 0, at infinity and at "all" must keep what select keeps. K = 1: each key
// is one exact product P[i] * R[j].
TEST(GpuListEpilogue, SpecialKeysThroughTheGate) {
  SKIP_WITHOUT_GPU();
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const float pv[] = {-0.0f, 0.0f, inf, -inf, 3e38f, -3e38f, 1.0f, -1.0f, 1e-30f, -1e-30f, nan, 2.0f, 0.0f};
  const float rv[] = {1.0f, -1.0f, 2.0f, 0.5f, -0.0f, 1.0f, 4.0f};
  const int64_t M = 300, N = 290;
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (ListMode mode : {ListMode::Top, ListMode::Bottom})
      for (int64_t n : {int64_t(1), int64_t(40), int64_t(2000)}) {
        SCOPED_TRACE(name_of(mode, g) + " N " + std::to_string(n));
        auto c = make_case(tp::list_query(query(mode, g)), square(M, N, 1), n);
        float* p = c->arrays[0].as<float>();   // P[i, 0]
        float* r = c->arrays[1].as<float>();   // R[0, j]
        for (int64_t i = 0; i < M; ++i) p[i] = pv[(i * 7) % 13];
        for (int64_t j = 0; j < N; ++j) r[j] = rv[(j * 3) % 7];
        const Results cpu = check(*c, {"", "32x32x8/4x4", "128x128x16/8x8"});
        EXPECT_EQ(cpu.lists[0].rows, expected_rows(g, n, M, N));
      }
}

// Select at ~0% (none), one row, ~1% and 100% of the pairs, on odd sizes.
TEST(GpuListEpilogue, SelectFractions) {
  SKIP_WITHOUT_GPU();
  tp::ListQuery q;
  q.under_if = true;
  const int64_t M = 1000, N = 777, K = 16;
  auto c = make_case(tp::list_query(q), square(M, N, K), 0, -1000, 1000);
  // The sums on the host, for thresholds at chosen quantiles.
  const float* p = c->arrays[0].as<float>();
  const float* r = c->arrays[1].as<float>();
  std::vector<double> sums;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += double(p[i * K + k]) * double(r[k * N + j]);
      sums.push_back(s);
    }
  std::sort(sums.begin(), sums.end());
  // Sums are integers below 2^24: exact in f32, as are the thresholds.
  struct T { const char* what; double thres; };
  const T cases[] = {{"none", sums.back() + 1}, {"the largest", sums.back() - 1},
                     {"~1%", sums[sums.size() * 99 / 100]}, {"all", sums.front() - 1}};
  for (const T& t : cases) {
    SCOPED_TRACE(t.what);
    c->inst.params[0] = Scalar::of_float(CType::F64, t.thres);
    const int64_t want = int64_t(sums.end() - std::upper_bound(sums.begin(), sums.end(), t.thres));
    EXPECT_EQ(check(*c).lists[0].rows, want);
  }
}

// Every pair, sizes 1 .. 1000 that are not multiples of any tile; distinct lists too.
// One test per row count (a test process each under compute-sanitizer, as above).
class GpuListEpilogueOddSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(GpuListEpilogueOddSizes, EveryListKind) {
  SKIP_WITHOUT_GPU();
  const Plan plain = tp::list_query(tp::ListQuery{});
  const Plan distinct = tp::list_query(query(ListMode::Distinct, PerGroup::None));
  const Plan knn = tp::list_query(query(ListMode::Bottom, PerGroup::Row));
  const Plan top = tp::list_query(query(ListMode::Top, PerGroup::None));
  const Plan per_j = tp::list_query(query(ListMode::Top, PerGroup::Col));
  const int64_t m = GetParam();
  for (int64_t n : {1, 33, 257, 1000}) {
    SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n));
    EXPECT_EQ(check(*make_case(plain, square(m, n, 5), 0)).lists[0].rows, m * n);
    EXPECT_EQ(check(*make_case(distinct, square(m, n, 5), 0), {"", "32x32x8/4x4"}).lists[0].rows, m * n);
    EXPECT_EQ(check(*make_case(knn, square(m, n, 5), 10)).lists[0].rows, expected_rows(PerGroup::Row, 10, m, n));
    EXPECT_EQ(check(*make_case(top, square(m, n, 5), 128)).lists[0].rows, expected_rows(PerGroup::None, 128, m, n));
    EXPECT_EQ(check(*make_case(per_j, square(m, n, 5), 3)).lists[0].rows, expected_rows(PerGroup::Col, 3, m, n));
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, GpuListEpilogueOddSizes, ::testing::Values(int64_t(1), int64_t(33), int64_t(257),
                                                                          int64_t(1000)));

// Ranges that do not start at 0: per-group thresholds are indexed from the range's start.
TEST(GpuListEpilogue, OffsetRanges) {
  SKIP_WITHOUT_GPU();
  Sizes z;
  z.row = {5, 300};
  z.col = {7, 400};
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col}) {
    SCOPED_TRACE(name_of(ListMode::Bottom, g));
    const Results cpu = check(*make_case(tp::list_query(query(ListMode::Bottom, g)), z, 4, -1000, 1000));
    EXPECT_EQ(cpu.lists[0].rows, expected_rows(g, 4, 295, 393));
  }
  EXPECT_EQ(check(*make_case(tp::list_query(tp::ListQuery{}), z, 0)).lists[0].rows, 295 * 393);
}

// More rows than the first buffers hold (2^20 rows): the kernel counts them all, the buffers
// grow and the launch is repeated. Plain, batched, and top/bottom where every key ties.
TEST(GpuListEpilogue, ListsOutgrowTheirBuffers) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::string> tiles = {"", "128x128x16/8x8"};
  EXPECT_EQ(check(*make_case(tp::list_query(tp::ListQuery{}), square(1100, 1000, 4), 0), tiles).lists[0].rows,
            1100 * 1000);
  tp::ListQuery b;
  b.batched = true;
  EXPECT_EQ(check(*make_case(tp::list_query(b), square(800, 700, 4, 2), 0), tiles).lists[0].rows, 2 * 800 * 700);
  // All inputs 0: every key is 0, every tile keeps every pair (ties of the N-th key).
  for (PerGroup g : {PerGroup::Row, PerGroup::None}) {
    SCOPED_TRACE(name_of(ListMode::Top, g));
    auto c = make_case(tp::list_query(query(ListMode::Top, g)), square(1100, 1000, 4), 1, 0, 0);
    EXPECT_EQ(check(*c, tiles).lists[0].rows, expected_rows(g, 1, 1100, 1000));
  }
}

// batch: per-group thresholds per (b, i) / (b, j), one global list over all instances.
TEST(GpuListEpilogue, Batch) {
  SKIP_WITHOUT_GPU();
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (ListMode mode : {ListMode::Top, ListMode::Bottom})
      for (int64_t n : {1, 10, 128}) {
        SCOPED_TRACE(name_of(mode, g) + " N " + std::to_string(n));
        tp::ListQuery q = query(mode, g);
        q.batched = true;
        auto c = make_case(tp::list_query(q), square(130, 150, 8, 3), n, -20, 20);
        EXPECT_EQ(check(*c).lists[0].rows, expected_rows(g, n, 130, 150, 3));
      }
}

// Per-group lists at the one-pass selection's limit (N <= 32: outputs/list/finish/top_of_groups.h) and just
// past it (N = 33: the radix select and sort): batch, ranges off 0, groups of hundreds of
// candidates (many chunks of 32) whose keys tie heavily (data in [-3, 3]: ties broken by the
// other axis across chunks) or hardly (wide data).
TEST(GpuListEpilogue, GroupTopAtItsLimits) {
  SKIP_WITHOUT_GPU();
  Sizes z;
  z.row = {5, 160};
  z.col = {7, 610};
  z.k = 8;
  z.batch = 3;
  for (PerGroup g : {PerGroup::Row, PerGroup::Col})
    for (ListMode mode : {ListMode::Top, ListMode::Bottom})
      for (int wide : {0, 1})
        for (int64_t n : {1, 31, 32, 33}) {
          SCOPED_TRACE(name_of(mode, g) + " N " + std::to_string(n) + (wide ? " wide data" : " data in [-3, 3]"));
          tp::ListQuery q = query(mode, g);
          q.batched = true;
          auto c = make_case(tp::list_query(q), z, n, wide ? -1000 : -3, wide ? 1000 : 3);
          EXPECT_EQ(check(*c, {"", "64x32x4/4x2"}).lists[0].rows, expected_rows(g, n, 155, 603, 3));
        }
}

// `if` and `when` around the emit, with batch.
TEST(GpuListEpilogue, IfAndWhen) {
  SKIP_WITHOUT_GPU();
  for (ListMode mode : {ListMode::Plain, ListMode::Bottom, ListMode::Top})
    for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col}) {
      if (mode == ListMode::Plain && g != PerGroup::None) continue;
      SCOPED_TRACE(std::to_string(int(mode)) + " per " + std::to_string(int(g)));
      tp::ListQuery q = query(mode, g);
      q.under_if = q.when_mask = q.batched = true;
      auto c = make_case(tp::list_query(q), square(97, 83, 9, 2), 5);
      EXPECT_GT(check(*c).lists[0].rows, 0);
    }
  // A `when` mask over vectors, a bool column.
  EXPECT_GT(check(*make_case(tp::masked_emit(), square(97, 83, 9), 0)).lists[0].rows, 0);
}

// Three lists and a dense output in one kernel: each list its own counter and thresholds.
TEST(GpuListEpilogue, SeveralListsInOneQuery) {
  SKIP_WITHOUT_GPU();
  for (bool batched : {false, true}) {
    SCOPED_TRACE(batched ? "batched" : "not batched");
    auto c = make_case(tp::three_lists(batched), square(300, 280, 8, 2), 5, -3, 3, 4);
    c->inst.list_limits = {5, 0, 0};
    const Results cpu = check(*c);
    EXPECT_EQ(cpu.lists[0].rows, (batched ? 2 : 1) * 300 * 5);
    EXPECT_GT(cpu.lists[1].rows, 0);
    EXPECT_GT(cpu.lists[2].rows, 1);
    EXPECT_LT(cpu.lists[2].rows, 300 * 280);   // distinct: duplicates removed
  }
}

// Benchmark repetitions launch again after resetting counters and thresholds; the rows the
// last launch leaves are still exactly the CPU's.
TEST(GpuListEpilogue, RepeatedLaunches) {
  SKIP_WITHOUT_GPU();
  cuda::GpuRunOptions o;
  o.warmup = 1;
  o.repeats = 2;
  for (PerGroup g : {PerGroup::None, PerGroup::Row}) {
    auto c = make_case(tp::three_lists(), square(500, 400, 8), 10, -1000, 1000, 0);
    c->plan.lists[0].per = g;
    c->inst.list_limits = {10, 0, 0};
    check(*c, {""}, o);
  }
}

// Join keys (`when (g[i] == h[j])`): plain and global top lists may run as a key-grouped join
// (rows reached through position maps); per i / per j top lists.
TEST(GpuListEpilogue, JoinKeys) {
  SKIP_WITHOUT_GPU();
  for (ListMode mode : {ListMode::Plain, ListMode::Top, ListMode::Bottom})
    for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col}) {
      if (mode == ListMode::Plain && g != PerGroup::None) continue;
      SCOPED_TRACE(std::to_string(int(mode)) + " per " + std::to_string(int(g)));
      tp::ListQuery q = query(mode, g);
      q.join_keys = true;
      auto c = make_case(tp::list_query(q), square(333, 250, 8), 6, -50, 50);
      EXPECT_GT(check(*c).lists[0].rows, 0);
    }
}
