// Distinct lists on the GPU with per-tile de-duplication (gm::TileDistinct) against run_cpu on
// the same Instance, bit for bit: a few values over every pair (each tile appends each value
// once), every row distinct (more per tile than the table has slots: overflow), a mix of both,
// none selected, -0.0 / 0.0 as different rows and NaNs as one, odd sizes, batch, joins, two
// distinct lists and an aggregate table in one kernel, and a list that outgrows its buffers.
// GpuRunStats::list_rows_appended shows what the kernel appended before the device hash set.
// Lists of vector lookups with values in a small box run on seen tables (outputs/list/finish/seen.h): check()
// runs every case both ways; the Seen* tests check the boxes, device vectors and neighbours.
#include <gtest/gtest.h>

#include "gpu_skip.h"
#include "table_compare.h"

#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../integer_data.h"
#include "../list_plans.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"

using namespace gamut;
namespace tp = gamut::testplans;
using C = tp::DistinctCol;

namespace {

struct Case {
  Plan plan;
  std::vector<NDArray> arrays;
  Instance inst;
};

// The raw bits of g[b, i] / h[b, j], stored in the vector's type (its low bytes).
using Bits = std::function<uint64_t(int64_t b, int64_t x)>;

uint64_t int_bits(int64_t v) { return uint64_t(v); }

// P, R: integers in [-3, 3] (so every sum is exact); g, h from their functions; thres = param.
std::unique_ptr<Case> make_case(Plan plan, int64_t m, int64_t n, const Bits& g, const Bits& h, int64_t batch = 1,
                                double param = 0, int64_t k = 8) {
  auto c = std::make_unique<Case>();
  c->plan = std::move(plan);
  const Plan& P = c->plan;
  const bool bat = P.batched;
  auto shape = [&](std::vector<int64_t> s) {
    if (bat) s.insert(s.begin(), batch);
    return s;
  };
  c->arrays.push_back(testdata::integer_valued(DType::F32, shape({m, k}), -3, 3, 5));
  c->arrays.push_back(testdata::integer_valued(DType::F32, shape({k, n}), -3, 3, 6));
  for (int v = 0; v < 2; ++v) {
    const DType t = *P.operands[size_t(2 + v)].dtype;
    const int64_t len = v == 0 ? m : n;
    NDArray a = NDArray::zeros(t, shape({len}));
    const size_t w = dtype_size(t);
    for (int64_t b = 0; b < (bat ? batch : 1); ++b)
      for (int64_t x = 0; x < len; ++x) {
        const uint64_t bits = (v == 0 ? g : h)(b, x);
        std::memcpy(a.data.data() + size_t(b * len + x) * w, &bits, w);
      }
    c->arrays.push_back(std::move(a));
  }
  Instance& I = c->inst;
  I.plan = &c->plan;
  I.row = {0, m};
  I.col = {0, n};
  I.red = {0, k};
  I.batch = bat ? batch : 1;
  for (const NDArray& a : c->arrays) I.inputs.push_back(&a);
  for (size_t p = 0; p < P.params.size(); ++p) I.params.push_back(Scalar::of_float(CType::F64, param));
  for (size_t d = 0; d < P.dense.size(); ++d) I.dense_shapes.push_back({5});   // Cnt[g[i]], g in [0, 5)
  for (size_t l = 0; l < P.lists.size(); ++l) I.list_limits.push_back(0);
  return c;
}

::testing::AssertionResult same_bits(const Table& cpu, const Table& gpu) {
  return test::same_table_bits(cpu, gpu, false);
}

struct GpuRun {
  std::string tile;
  int64_t blocks = 0;                 // tiles x batch of a masked launch
  std::vector<uint64_t> appended;     // per list: rows the kernel appended (on the tile hash)
  std::vector<int64_t> seen;          // per list: its seen table's cells in the other run (0: none)
};

const std::vector<std::string> kTiles = {"", "128x128x8/8x8", "32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4"};

// Every list and dense output of the GPU run equals the CPU's (lists bit for bit).
void expect_same(const Case& c, const Results& cpu, const Results& gpu) {
  EXPECT_EQ(cpu.lists.size(), gpu.lists.size());
  for (size_t l = 0; l < cpu.lists.size() && l < gpu.lists.size(); ++l)
    EXPECT_TRUE(same_bits(cpu.lists[l], gpu.lists[l])) << "list " << c.plan.lists[l].name;
  EXPECT_EQ(cpu.dense.size(), gpu.dense.size());
  for (size_t d = 0; d < cpu.dense.size() && d < gpu.dense.size(); ++d)
    EXPECT_TRUE(cpu.dense[d].data == gpu.dense[d].data) << "dense output " << c.plan.dense[d].name;
}

// Per tile, two runs equal to the CPU's: with seen tables where a list's box is small (its
// kernel then appends nothing), and on the tile hash (GpuRunOptions::seen_tables false), whose
// counts the tests check.
std::vector<GpuRun> check(const Case& c, Results* cpu_out = nullptr, const std::vector<std::string>& tiles = kTiles,
                          const cuda::GpuRunOptions& base = {}) {
  const Results cpu = run_cpu(c.inst);
  std::vector<GpuRun> runs;
  for (const std::string& t : tiles) {
    SCOPED_TRACE("tile " + (t.empty() ? std::string("chosen") : t));
    cuda::GpuRunOptions o = base;
    if (!t.empty()) o.tile = cuda::parse_tile(t);
    cuda::GpuRunStats seen_stats;
    {
      SCOPED_TRACE("seen tables");
      o.seen_tables = true;
      expect_same(c, cpu, cuda::run_gpu(c.inst, o, &seen_stats));
      EXPECT_EQ(seen_stats.list_seen_cells.size(), c.plan.lists.size());
      for (size_t l = 0; l < seen_stats.list_seen_cells.size() && l < seen_stats.list_rows_appended.size(); ++l)
        if (seen_stats.list_seen_cells[l] > 0) EXPECT_EQ(seen_stats.list_rows_appended[l], 0u) << "list " << l;
    }
    o.seen_tables = false;
    cuda::GpuRunStats stats;
    const Results gpu = cuda::run_gpu(c.inst, o, &stats);
    expect_same(c, cpu, gpu);
    for (int64_t cells : stats.list_seen_cells) EXPECT_EQ(cells, 0);
    GpuRun r;
    r.seen = seen_stats.list_seen_cells;
    r.tile = stats.tile;
    const cuda::TileConfig tc = cuda::parse_tile(stats.tile.substr(0, stats.tile.find(' ')));   // "... grouped-join"
    r.blocks = (c.inst.row.size() + tc.bm - 1) / tc.bm * ((c.inst.col.size() + tc.bn - 1) / tc.bn) * c.inst.batch;
    r.appended = stats.list_rows_appended;
    EXPECT_EQ(r.appended.size(), c.plan.lists.size());
    // Every distinct row reached the buffers at least once.
    for (size_t l = 0; l < cpu.lists.size() && l < r.appended.size(); ++l)
      EXPECT_GE(r.appended[l], uint64_t(cpu.lists[l].rows)) << "list " << c.plan.lists[l].name;
    runs.push_back(r);
  }
  if (cpu_out) *cpu_out = cpu;
  return runs;
}

tp::DistinctQuery query(std::vector<C> cols, DType g = DType::I32, DType h = DType::I32) {
  tp::DistinctQuery q;
  q.cols = std::move(cols);
  q.g = g;
  q.h = h;
  return q;
}

}  // namespace

// 5 x 4 values over every pair: each tile appends each of its values once (no overflow with so
// few), where the plain path appended every pair. Sizes that are not multiples of any tile.
TEST(GpuDistinct, FewValuesEveryPair) {
  SKIP_WITHOUT_GPU();
  const Plan p = tp::distinct_query(query({C::G, C::H}));
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 5); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 4); };
  struct Z { int64_t m, n; };
  for (const Z& z : {Z{1, 1}, Z{1, 37}, Z{37, 1}, Z{37, 37}, Z{300, 280}, Z{129, 257}}) {
    SCOPED_TRACE(std::to_string(z.m) + " x " + std::to_string(z.n));
    Results cpu;
    for (const GpuRun& r : check(*make_case(p, z.m, z.n, g, h), &cpu)) {
      SCOPED_TRACE(r.tile);
      EXPECT_LE(r.appended[0], uint64_t(r.blocks) * 20);
      EXPECT_EQ(r.seen[0], std::min<int64_t>(z.m, 5) * std::min<int64_t>(z.n, 4));  // the values' box
    }
    EXPECT_EQ(cpu.lists[0].rows, std::min<int64_t>(z.m, 5) * std::min<int64_t>(z.n, 4));
  }
}

// One value everywhere: exactly one row per block.
TEST(GpuDistinct, OneValue) {
  SKIP_WITHOUT_GPU();
  const Bits zero = [](int64_t, int64_t) { return uint64_t(0); };
  for (const GpuRun& r : check(*make_case(tp::distinct_query(query({C::G, C::H})), 300, 280, zero, zero))) {
    SCOPED_TRACE(r.tile);
    EXPECT_EQ(r.appended[0], uint64_t(r.blocks));
  }
}

// Every row distinct (i, j): 16384 rows on a 128 x 128 tile, far more than its 1024 slots, so
// rows overflow and the table gives up; still every row exactly once.
TEST(GpuDistinct, EveryRowDistinct) {
  SKIP_WITHOUT_GPU();
  const Plan p = tp::distinct_query(query({C::I, C::J}));
  const Bits none = [](int64_t, int64_t) { return uint64_t(0); };
  for (const GpuRun& r : check(*make_case(p, 300, 280, none, none))) {
    SCOPED_TRACE(r.tile);
    EXPECT_EQ(r.appended[0], uint64_t(300 * 280));
    EXPECT_EQ(r.seen[0], 0);  // axis values: no seen table
  }
  // More rows than the first buffers hold (2^20): counted past the capacity, grown, run again.
  for (const GpuRun& r : check(*make_case(p, 1100, 1000, none, none), nullptr, {"", "128x128x8/8x8"}))
    EXPECT_EQ(r.appended[0], uint64_t(1100 * 1000));
}

// 50 x 40 values: about 2000 per 128 x 128 tile, twice its slots. Some rows overflow, repeats
// of the values in the table are still dropped.
TEST(GpuDistinct, MoreValuesThanSlots) {
  SKIP_WITHOUT_GPU();
  const Plan p = tp::distinct_query(query({C::G, C::H}));
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 50); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 40); };
  Results cpu;
  const std::vector<GpuRun> runs = check(*make_case(p, 600, 520, g, h), &cpu, {"", "128x128x8/8x8"});
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_LT(runs[1].appended[0], uint64_t(600 * 520));
  EXPECT_EQ(cpu.lists[0].rows, 2000);
}

// `if (accum > thres)`: nothing selected (no row, nothing appended), and everything selected.
TEST(GpuDistinct, NoneAndAllSelected) {
  SKIP_WITHOUT_GPU();
  tp::DistinctQuery q = query({C::G, C::H});
  q.under_if = true;
  const Plan p = tp::distinct_query(q);
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 5); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 4); };
  Results cpu;
  for (const GpuRun& r : check(*make_case(p, 300, 280, g, h, 1, 1e9), &cpu)) EXPECT_EQ(r.appended[0], 0u);
  EXPECT_EQ(cpu.lists[0].rows, 0);
  for (const GpuRun& r : check(*make_case(p, 300, 280, g, h, 1, -1e9), &cpu))
    EXPECT_LE(r.appended[0], uint64_t(r.blocks) * 20);
  EXPECT_EQ(cpu.lists[0].rows, 20);
  // Some selected: the threshold in the middle of the sums.
  check(*make_case(p, 300, 280, g, h, 1, 2));
}

// Rows are distinct by their bits: 0.0 and -0.0 differ; every NaN, whatever its sign or payload,
// is stored as the quiet NaN and is one value (docs/semantics.md).
TEST(GpuDistinct, SignedZerosAndNaNPayloads) {
  SKIP_WITHOUT_GPU();
  const uint32_t f[] = {0x00000000u, 0x80000000u, 0x7fc00000u, 0x7fc00001u, 0xffc00000u, 0x7f800000u, 0x3f800000u};
  const uint64_t d[] = {0, 0x8000000000000000ull, 0x7ff8000000000000ull, 0x7ff8000000000001ull, 0xfff8000000000000ull};
  const Bits g = [&](int64_t, int64_t i) { return uint64_t(f[i % 7]); };
  const Bits h = [&](int64_t, int64_t j) { return d[j % 5]; };
  Results cpu;
  check(*make_case(tp::distinct_query(query({C::G, C::H}, DType::F32, DType::F64)), 300, 280, g, h), &cpu);
  EXPECT_EQ(cpu.lists[0].rows, 5 * 3);   // f32: 0, -0, NaN, inf, 1; f64: 0, -0, NaN
  check(*make_case(tp::distinct_query(query({C::H}, DType::F32, DType::F64)), 37, 300, g, h), &cpu);
  EXPECT_EQ(cpu.lists[0].rows, 3);
}

// Columns of every type in one row (i64, f64, f32, bool: 6 words) with few values.
TEST(GpuDistinct, WideRows) {
  SKIP_WITHOUT_GPU();
  const Plan p = tp::distinct_query(query({C::G, C::H, C::Acc, C::AccPositive}, DType::I64, DType::F64));
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 3 - 1) << 33; };
  const Bits h = [](int64_t, int64_t j) {
    const double v = j % 2 ? -0.0 : 0.5;
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  };
  check(*make_case(p, 300, 280, g, h, 1, 0, 2));
}

// batch: one list over all instances; the same values in every instance are repeats too.
TEST(GpuDistinct, Batch) {
  SKIP_WITHOUT_GPU();
  tp::DistinctQuery q = query({C::G, C::H});
  q.batched = true;
  const Bits g = [](int64_t b, int64_t i) { return int_bits((i + b) % 5); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 4); };
  Results cpu;
  for (const GpuRun& r : check(*make_case(tp::distinct_query(q), 130, 150, g, h, 3), &cpu))
    EXPECT_LE(r.appended[0], uint64_t(r.blocks) * 20);
  EXPECT_EQ(cpu.lists[0].rows, 20);
  q.under_if = true;
  check(*make_case(tp::distinct_query(q), 97, 83, g, h, 2, 1));
}

// Two distinct lists take turns in the shared memory, after an aggregate output's table.
TEST(GpuDistinct, TwoListsAndATable) {
  SKIP_WITHOUT_GPU();
  tp::DistinctQuery q = query({C::G});
  q.second = {C::H, C::AccPositive};
  q.aggregate = true;
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 5); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 9 - 4); };
  Results cpu;
  check(*make_case(tp::distinct_query(q), 300, 280, g, h), &cpu);
  EXPECT_EQ(cpu.lists[0].rows, 5);
  EXPECT_GT(cpu.lists[1].rows, 9);
}

// `when (g[i] == h[j])`: as a key-grouped join where the engine can, and as a mask.
TEST(GpuDistinct, JoinKeys) {
  SKIP_WITHOUT_GPU();
  tp::DistinctQuery q = query({C::G, C::H, C::AccPositive});
  q.join_keys = true;
  const Bits g = [](int64_t, int64_t i) { return int_bits(i % 7); };
  const Bits h = [](int64_t, int64_t j) { return int_bits(j % 5); };
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "grouped where possible");
    cuda::GpuRunOptions o;
    o.masked_joins = masked;
    Results cpu;
    check(*make_case(tp::distinct_query(q), 333, 250, g, h), &cpu, {""}, o);
    EXPECT_GE(cpu.lists[0].rows, 5);
  }
}

// Seen tables (outputs/list/finish/seen.h): the box of the columns' values decides per run. Vectors of every
// integer type with negative values; boxes of exactly 32768 cells (a seen table) and just over
// (the tile hash); one column spanning the whole table; 64-bit extremes (spans beyond int64).
TEST(GpuDistinct, SeenTableBoxes) {
  SKIP_WITHOUT_GPU();
  struct Box {
    const char* what;
    DType g, h;
    Bits gv, hv;
    int64_t cells;  // expected seen-table cells, 0: the tile hash
  };
  const Bits i8_span = [](int64_t, int64_t i) { return int_bits(i % 7 - 3); };
  const std::vector<Box> boxes = {
      {"i8 x u8", DType::I8, DType::U8, i8_span, [](int64_t, int64_t j) { return int_bits(250 - j % 6); }, 7 * 6},
      {"i16 x i64", DType::I16, DType::I64, [](int64_t, int64_t i) { return int_bits(i % 3 * 1000 - 30000); },
       [](int64_t, int64_t j) { return int_bits(j % 2 ? -(int64_t(1) << 40) : -(int64_t(1) << 40) + 9); }, 2001 * 10},
      // 128 x 256 values: the table exactly; 129 x 256: over it.
      {"32768 cells", DType::I32, DType::I32, [](int64_t, int64_t i) { return int_bits(i % 128 - 64); },
       [](int64_t, int64_t j) { return int_bits(j % 256); }, 32768},
      {"33024 cells", DType::I32, DType::I32, [](int64_t, int64_t i) { return int_bits(i % 129 - 64); },
       [](int64_t, int64_t j) { return int_bits(j % 256); }, 0},
      {"64-bit extremes", DType::I64, DType::I64,
       [](int64_t, int64_t i) { return i % 2 ? uint64_t(INT64_MIN) : uint64_t(INT64_MAX); },
       [](int64_t, int64_t j) { return int_bits(j % 3); }, 0},
      {"bool x i32", DType::Bool, DType::I32, [](int64_t, int64_t i) { return uint64_t(i % 3 == 0); },
       [](int64_t, int64_t j) { return int_bits(-j % 11); }, 2 * 11},
  };
  for (const Box& x : boxes) {
    SCOPED_TRACE(x.what);
    tp::DistinctQuery q = query({C::G, C::H}, x.g, x.h);
    q.under_if = true;
    Results cpu;
    for (const GpuRun& r : check(*make_case(tp::distinct_query(q), 331, 517, x.gv, x.hv, 1, -2), &cpu,
                                 {"", "128x128x8/8x8", "16x64x16/1x4"}))
      EXPECT_EQ(r.seen[0], x.cells);
    EXPECT_GT(cpu.lists[0].rows, 1);
  }
  // One column: h in [-16384, 16383], the whole table; and 1200 values of it.
  const Bits ends = [](int64_t, int64_t j) { return int_bits(j % 2 ? -16384 : 16383); };
  const Bits some = [](int64_t, int64_t j) { return int_bits(j % 2 ? -16384 : j - 16383); };
  for (const auto& [h, cells] : {std::pair<Bits, int64_t>{ends, 32768}, {some, 1200}}) {
    Results cpu;
    for (const GpuRun& r : check(*make_case(tp::distinct_query(query({C::H})), 40, 1200, i8_span, h), &cpu, {""}))
      EXPECT_EQ(r.seen[0], cells);
    EXPECT_GE(cpu.lists[0].rows, 2);
  }
}

// Seen tables over batch instances, with join keys (grouped and masked), and next to an
// aggregate table and a second list that stays on the tile hash.
TEST(GpuDistinct, SeenTablesWithBatchJoinsAndOtherOutputs) {
  SKIP_WITHOUT_GPU();
  const Bits g = [](int64_t b, int64_t i) { return int_bits((i * 7 + b) % 13); };
  const Bits h = [](int64_t b, int64_t j) { return int_bits((j + 3 * b) % 9 - 4); };
  tp::DistinctQuery q = query({C::G, C::H});
  q.batched = true;
  q.under_if = true;
  for (const GpuRun& r : check(*make_case(tp::distinct_query(q), 150, 97, g, h, 3, 1))) EXPECT_EQ(r.seen[0], 13 * 9);
  tp::DistinctQuery j = query({C::H, C::G});
  j.join_keys = true;
  const Bits gj = [](int64_t, int64_t i) { return int_bits(i % 7); };
  const Bits hj = [](int64_t, int64_t k) { return int_bits(k % 5); };
  for (bool masked : {false, true}) {
    SCOPED_TRACE(masked ? "masked" : "grouped where possible");
    cuda::GpuRunOptions o;
    o.masked_joins = masked;
    Results cpu;
    for (const GpuRun& r : check(*make_case(tp::distinct_query(j), 333, 250, gj, hj), &cpu, {""}, o))
      EXPECT_EQ(r.seen[0], 5 * 7);
    EXPECT_EQ(cpu.lists[0].rows, 5);  // h == g: only the pairs (v, v), v < 5
  }
  tp::DistinctQuery t = query({C::G});
  t.second = {C::H, C::AccPositive};
  t.aggregate = true;
  for (const GpuRun& r : check(*make_case(tp::distinct_query(t), 300, 280, hj, g))) {
    EXPECT_EQ(r.seen[0], 5);
    EXPECT_EQ(r.seen[1], 0);
  }
}

// Vectors in device memory (the library's callers' arrays): their box is found on the device.
// Batched, so that the vectors' rows are apart by their stride (a pitch wider than the row).
TEST(GpuDistinct, SeenTableOfDeviceVectors) {
  SKIP_WITHOUT_GPU();
  tp::DistinctQuery q = query({C::G, C::H}, DType::I16, DType::I64);
  q.batched = true;
  q.under_if = true;
  const Bits g = [](int64_t b, int64_t i) { return int_bits((i * 5 + b) % 17 - 8); };
  const Bits h = [](int64_t b, int64_t j) { return int_bits(((j + b) % 6) * 3 - 1); };
  auto c = make_case(tp::distinct_query(q), 211, 300, g, h, 2, 0);
  const Results cpu = run_cpu(c->inst);
  // Every input on the device; the vectors with a row pitch of len + 3 elements, poisoned around.
  std::vector<cuda::DeviceBuffer> ins;
  Instance& inst = c->inst;
  inst.device_inputs.resize(inst.inputs.size());
  for (size_t o = 0; o < inst.inputs.size(); ++o) {
    const NDArray& x = *inst.inputs[o];
    const size_t es = dtype_size(x.dtype);
    const int64_t len = x.shape.back(), rows = x.size() / len;
    const int64_t pitch = x.shape.size() == 2 ? len + 3 : len;  // (batch, len) vectors
    ins.emplace_back(size_t(rows * pitch) * es);
    ins.back().fill_bytes(0x7f);
    for (int64_t r = 0; r < rows; ++r)
      ins.back().upload(x.data.data() + size_t(r * len) * es, size_t(len) * es, size_t(r * pitch) * es);
    std::vector<int64_t> strides(x.shape.size(), 1);
    for (size_t d = x.shape.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * x.shape[d];
    if (x.shape.size() == 2) strides[0] = pitch;
    inst.device_inputs[o].data = ins.back().get();
    inst.device_inputs[o].strides = strides;
  }
  cuda::GpuRunStats stats;
  const Results gpu = cuda::run_gpu(inst, {}, &stats);
  expect_same(*c, cpu, gpu);
  ASSERT_EQ(stats.list_seen_cells.size(), 1u);
  EXPECT_EQ(stats.list_seen_cells[0], 17 * 16);  // g in [-8, 8], h in [-1, 14]
  EXPECT_EQ(stats.list_rows_appended[0], 0u);
  EXPECT_GT(cpu.lists[0].rows, 6);
}
