// run_gpu against run_cpu on the same Instance: hand-built plans (tests/codegen_plans.h) with
// odd sizes and every code path of the generated kernels, and the reference queries through
// the whole pipeline. Integer-valued data is compared exactly; random floats norm-wise.
#include <gtest/gtest.h>

#include "gpu_skip.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "../codegen_plans.h"
#include "cpu/engine.h"
#include "cuda/codegen/codegen.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"

using namespace gamut;
namespace tp = gamut::testplans;

namespace {

enum class Data { Exact, Float };   // small integers (exact in any order) / uniform [-1, 1]

void set_value(NDArray& a, int64_t e, double v) {
  switch (a.dtype) {
    case DType::Bool: a.as<uint8_t>()[e] = v != 0; break;
    case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
    case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
    case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
    case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
    case DType::I64: a.as<int64_t>()[e] = int64_t(v); break;
    case DType::F16: a.as<uint16_t>()[e] = float_to_half(float(v)); break;
    case DType::BF16: a.as<uint16_t>()[e] = float_to_bf16(float(v)); break;
    case DType::F32: a.as<float>()[e] = float(v); break;
    case DType::F64: a.as<double>()[e] = v; break;
  }
}

NDArray random_array(DType t, std::vector<int64_t> shape, Data mode, std::mt19937& rng, int64_t index_range = 0) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  std::uniform_int_distribution<int> small(-3, 3), index(0, int(std::max<int64_t>(index_range, 1)) - 1);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  for (int64_t e = 0; e < a.size(); ++e) {
    double v;
    if (index_range > 0) v = index(rng);
    else if (t == DType::Bool) v = small(rng) > 0;
    else if (t == DType::U8) v = small(rng) + 3;
    else if (mode == Data::Float && is_float(t)) v = real(rng);
    else v = small(rng);
    set_value(a, e, v);
  }
  return a;
}

// A plan with data: the Instance points into `arrays`.
struct Case {
  Plan plan;
  std::vector<NDArray> arrays;
  Instance inst;
};

bool is_index_operand(const Plan& p, int op) {
  if (p.operands[size_t(op)].is_index) return true;
  for (const JoinKey& k : p.when.keys)
    if (p.accesses[size_t(k.row_access)].operand == op || p.accesses[size_t(k.col_access)].operand == op) return true;
  return false;
}

// Ranges are [begin, end) per axis; index vectors take values in [0, groups).
std::unique_ptr<Case> make_case(Plan plan, AxisRange row, AxisRange col, AxisRange red, int64_t batch, Data mode,
                                int64_t groups = 5, double param = 2.5, uint32_t seed = 1) {
  auto c = std::make_unique<Case>();
  c->plan = std::move(plan);
  const Plan& P = c->plan;
  std::mt19937 rng(seed);
  for (size_t o = 0; o < P.operands.size(); ++o) {
    const Pattern pat = P.accesses[size_t(P.operands[o].accesses[0])].pattern;
    std::vector<int64_t> shape;
    switch (pat) {
      case Pattern::RowRed: shape = {row.end, red.end}; break;
      case Pattern::RedRow: shape = {red.end, row.end}; break;
      case Pattern::RedCol: shape = {red.end, col.end}; break;
      case Pattern::ColRed: shape = {col.end, red.end}; break;
      case Pattern::RowVec: shape = {row.end}; break;
      case Pattern::ColVec: shape = {col.end}; break;
      case Pattern::RedVec: shape = {red.end}; break;
      case Pattern::RowCol: shape = {row.end, col.end}; break;
      case Pattern::ColRow: shape = {col.end, row.end}; break;
    }
    if (P.batched) shape.insert(shape.begin(), batch);
    c->arrays.push_back(random_array(*P.operands[o].dtype, shape, mode, rng, is_index_operand(P, int(o)) ? groups : 0));
  }
  Instance& I = c->inst;
  I.plan = &c->plan;
  I.row = row;
  I.col = col;
  I.red = red;
  I.batch = batch;
  for (const NDArray& a : c->arrays) I.inputs.push_back(&a);
  for (size_t n = 0; n < P.params.size(); ++n) I.params.push_back(Scalar::of_float(CType::F64, param));
  for (size_t d = 0; d < P.dense.size(); ++d) {
    std::vector<int64_t> shape;
    for (const OutIndex& x : cuda::output_index(P, int(d))) {
      if (x.kind == OutIndex::Axis)
        shape.push_back(x.axis == AxisRole::Row ? row.end : x.axis == AxisRole::Col ? col.end : batch);
      else {
        const NDArray& g = c->arrays[size_t(P.accesses[size_t(x.access)].operand)];
        const AxisRange& r = x.axis == AxisRole::Row ? row : col;
        int64_t mx = -1;
        for (int64_t b = 0; b < batch; ++b)
          for (int64_t v = r.begin; v < r.end; ++v)
            mx = std::max(mx, g.get_i64((P.batched ? b * g.shape.back() : 0) + v));
        shape.push_back(mx + 1);
      }
    }
    I.dense_shapes.push_back(shape);
  }
  for (const ListOutput& l : P.lists) I.list_limits.push_back(l.limit);
  return c;
}

std::unique_ptr<Case> square_case(Plan plan, int64_t m, int64_t n, int64_t k, Data mode, int64_t batch = 1,
                                  int64_t groups = 5, double param = 2.5) {
  return make_case(std::move(plan), {0, m}, {0, n}, {0, k}, batch, mode, groups, param);
}

::testing::AssertionResult same_array(const NDArray& cpu, const NDArray& gpu, Data mode) {
  if (cpu.dtype != gpu.dtype || cpu.shape != gpu.shape) return ::testing::AssertionFailure() << "dtype or shape differs";
  if (!is_float(cpu.dtype) || mode == Data::Exact) {
    for (int64_t e = 0; e < cpu.size(); ++e) {
      const double x = cpu.get_f64(e), y = gpu.get_f64(e);
      const bool same = is_float(cpu.dtype) ? (x == y || (std::isnan(x) && std::isnan(y))) : cpu.get_i64(e) == gpu.get_i64(e);
      if (!same) return ::testing::AssertionFailure() << "element " << e << ": cpu " << x << ", gpu " << y;
    }
    return ::testing::AssertionSuccess();
  }
  double diff = 0, norm = 0;
  for (int64_t e = 0; e < cpu.size(); ++e) {
    const double x = cpu.get_f64(e), y = gpu.get_f64(e);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (!(x == y || (std::isnan(x) && std::isnan(y))))
        return ::testing::AssertionFailure() << "element " << e << ": cpu " << x << ", gpu " << y;
      continue;
    }
    diff += (x - y) * (x - y);
    norm += x * x;
  }
  if (std::sqrt(diff) <= 1e-5 * std::sqrt(norm) + 1e-30) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "relative error " << std::sqrt(diff / std::max(norm, 1e-300));
}

::testing::AssertionResult same_table(const Table& cpu, const Table& gpu) {
  if (cpu.rows != gpu.rows) return ::testing::AssertionFailure() << "rows: cpu " << cpu.rows << ", gpu " << gpu.rows;
  if (cpu.columns.size() != gpu.columns.size()) return ::testing::AssertionFailure() << "column count differs";
  for (size_t c = 0; c < cpu.columns.size(); ++c) {
    const Column &x = cpu.columns[c], &y = gpu.columns[c];
    if (x.name != y.name || x.dtype != y.dtype || x.data != y.data)
      return ::testing::AssertionFailure() << "column " << x.name << " differs";
  }
  return ::testing::AssertionSuccess();
}

void expect_same(const Results& cpu, const Results& gpu, Data mode) {
  ASSERT_EQ(cpu.dense.size(), gpu.dense.size());
  for (size_t d = 0; d < cpu.dense.size(); ++d) EXPECT_TRUE(same_array(cpu.dense[d], gpu.dense[d], mode)) << "output " << d;
  ASSERT_EQ(cpu.lists.size(), gpu.lists.size());
  for (size_t l = 0; l < cpu.lists.size(); ++l) EXPECT_TRUE(same_table(cpu.lists[l], gpu.lists[l])) << "list " << l;
}

// The CPU result, then the GPU's with the chosen tile and with each of `tiles`.
void check(const Case& c, Data mode, std::vector<std::string> tiles = {}) {
  const Results cpu = run_cpu(c.inst);
  tiles.insert(tiles.begin(), "");
  for (const std::string& t : tiles) {
    SCOPED_TRACE("tile " + (t.empty() ? std::string("chosen") : t));
    cuda::GpuRunOptions o;
    if (!t.empty()) o.tile = cuda::parse_tile(t);
    cuda::GpuRunStats st;
    const Results gpu = cuda::run_gpu(c.inst, o, &st);
    expect_same(cpu, gpu, mode);
  }
}

const std::vector<std::string> kOddTiles = {"32x32x8/4x4", "16x64x16/1x4", "64x32x4/4x2", "128x128x16/8x8",
                                            "128x256x8/8x16"};

}  // namespace

TEST(GpuEngine, SgemmOddSizesExact) {
  SKIP_WITHOUT_GPU();
  const int64_t sizes[][3] = {{1, 1, 1}, {7, 13, 5}, {64, 64, 64}, {127, 129, 31}, {131, 67, 257},
                              {5, 6, 0}, {4097, 65, 3}, {33, 4099, 9}, {300, 301, 1000}};
  for (const auto& s : sizes) {
    SCOPED_TRACE(std::to_string(s[0]) + "x" + std::to_string(s[1]) + "x" + std::to_string(s[2]));
    check(*square_case(tp::sgemm(), s[0], s[1], s[2], Data::Exact), Data::Exact, kOddTiles);
  }
}

TEST(GpuEngine, SgemmRandomFloats) {
  SKIP_WITHOUT_GPU();
  check(*square_case(tp::sgemm(), 517, 263, 389, Data::Float), Data::Float, {"32x32x8/4x4"});
  check(*square_case(tp::sgemm(), 1024, 1024, 1024, Data::Float), Data::Float);
}

TEST(GpuEngine, RangesNotStartingAtZero) {
  SKIP_WITHOUT_GPU();
  // Unaligned begins and leading dimensions: the scalar load paths; positions below begin keep 0.
  check(*make_case(tp::sgemm(), {3, 70}, {1, 98}, {2, 37}, 1, Data::Exact), Data::Exact, kOddTiles);
  check(*make_case(tp::sgemm(), {4, 260}, {8, 132}, {4, 68}, 1, Data::Exact), Data::Exact, kOddTiles);
  // 1- and 2-byte operands (staged raw and widened in shared memory), both orientations each:
  // unaligned begins take the element-by-element copies, aligned ones the whole-chunk copies.
  for (const Plan& p : {tp::product(DType::F16, DType::BF16, Pattern::RedRow, Pattern::ColRed, true),
                        tp::product(DType::I8, DType::U8, Pattern::RowRed, Pattern::RedCol)}) {
    SCOPED_TRACE(print_plan(p));
    check(*make_case(p, {3, 70}, {1, 98}, {2, 37}, 1, Data::Exact), Data::Exact, kOddTiles);
    check(*make_case(p, {4, 260}, {8, 132}, {4, 68}, 1, Data::Exact), Data::Exact, kOddTiles);
  }
}

TEST(GpuEngine, InputTypesAndOrientations) {
  SKIP_WITHOUT_GPU();
  const Plan plans[] = {tp::product(DType::F16, DType::BF16, Pattern::RedRow, Pattern::ColRed, true),
                        tp::product(DType::I8, DType::U8), tp::product(DType::I64, DType::F64, Pattern::RowRed, Pattern::ColRed),
                        tp::product(DType::Bool, DType::I16, Pattern::RedRow, Pattern::RedCol),
                        tp::product(DType::I32, DType::I32, Pattern::RedRow, Pattern::RedCol, true)};
  for (const Plan& p : plans) {
    SCOPED_TRACE(print_plan(p));
    check(*square_case(p, 77, 45, 37, Data::Exact), Data::Exact,
          {"32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x256x16/8x16"});
  }
}

TEST(GpuEngine, Q1Amplify) {
  SKIP_WITHOUT_GPU();
  check(*square_case(tp::q1(), 131, 197, 61, Data::Exact, 1, 5, 1.5), Data::Exact, {"32x32x8/4x4"});
  check(*square_case(tp::q1(), 300, 200, 100, Data::Float, 1, 5, 0.1), Data::Float);
}

TEST(GpuEngine, Semirings) {
  SKIP_WITHOUT_GPU();
  check(*square_case(tp::maxplus_i32(), 129, 67, 33, Data::Exact), Data::Exact, kOddTiles);
  check(*square_case(tp::maxplus_i32(), 20, 30, 0, Data::Exact), Data::Exact);   // k empty: -inf
  check(*square_case(tp::minplus_batched(), 61, 70, 45, Data::Exact, 3), Data::Exact, kOddTiles);
  check(*square_case(tp::or_and_i32(), 75, 75, 75, Data::Exact), Data::Exact, {"32x32x8/4x4"});
  check(*square_case(tp::or_and_i32(DType::Bool), 133, 133, 133, Data::Exact), Data::Exact, {"32x32x8/4x4"});
}

TEST(GpuEngine, AggregatesAndJoins) {
  SKIP_WITHOUT_GPU();
  // Few groups (the shared tables merge most values) and many (they overflow to global atomics).
  for (int64_t groups : {1, 3, 40, 700}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    check(*square_case(tp::zip_aggregate(), 257, 263, 19, Data::Exact, 1, groups), Data::Exact, {"32x32x8/4x4"});
    check(*square_case(tp::join_area(), 257, 263, 19, Data::Exact, 1, groups), Data::Exact, {"32x32x8/4x4"});
    check(*square_case(tp::aggregates(), 130, 141, 23, Data::Exact, 1, groups), Data::Exact, {"32x32x8/4x4"});
  }
  check(*square_case(tp::zip_aggregate(), 300, 200, 100, Data::Float, 1, 4), Data::Float);
}

// Aggregate outputs small enough for the direct block tables take the compact pair loop
// (outputs/dense/codegen/aggregate.cpp): every operator and type of tp::aggregates with 1, 3 and 16 groups
// (all outputs direct; 16 x 16 elements move through the table's bank swizzle), 25 groups (some
// outputs too large: the general loop), with a `when` mask, batched (the batch index in the row
// part), on tiles wholly inside the ranges and on tiles with partial edges.
TEST(GpuEngine, DirectTableAggregates) {
  SKIP_WITHOUT_GPU();
  for (int64_t groups : {1, 3, 16, 25}) {
    SCOPED_TRACE("groups " + std::to_string(groups));
    check(*square_case(tp::aggregates(), 131, 77, 29, Data::Exact, 1, groups), Data::Exact, kOddTiles);
    Plan masked;
    {
      tp::PlanBuilder b("masked_aggregates");
      b.p = tp::aggregates();
      const int r = b.input("r", DType::I32), c = b.input("c", DType::I64);
      b.p.when.mask = b.bin(BinOp::Gt, b.bin(BinOp::Add, b.load_as(r, Pattern::RowVec, CType::I64), b.load(c, Pattern::ColVec)),
                            b.lit(CType::I64, 0));
      masked = b.done();
    }
    check(*square_case(std::move(masked), 200, 90, 13, Data::Exact, 1, groups), Data::Exact, {"32x32x8/4x4"});
  }
  // Batched: Out[b, g[b, i], h[b, j]] += accum > thres.
  {
    tp::PlanBuilder b("batched_counts", true);
    int P, R;
    const int acc = tp::preference(b, P, R);
    const int g = b.input("g", DType::I32), h = b.input("h", DType::I32);
    const int out = b.output("Cnt", StoreOp::Add, CType::I32,
                             {b.ax(AxisRole::Batch), b.lookup(g, Pattern::RowVec), b.lookup(h, Pattern::ColVec)});
    b.p.outer.push_back(tp::PlanBuilder::store(out, b.cast(b.bin(BinOp::Gt, b.acc(acc), b.param("thres", CType::F32)), CType::I32)));
    check(*square_case(b.done(), 70, 45, 21, Data::Exact, 3, 4), Data::Exact, {"32x32x8/4x4"});
  }
}

TEST(GpuEngine, Lists) {
  SKIP_WITHOUT_GPU();
  // (128x256x8/8x16: 128 pairs per thread, pass 2 as a loop over the marked pairs.)
  check(*square_case(tp::select_list(), 131, 257, 17, Data::Exact), Data::Exact, {"32x32x8/4x4", "128x256x8/8x16"});
  check(*square_case(tp::topk(), 131, 257, 17, Data::Exact), Data::Exact, {"32x32x8/4x4", "128x256x8/8x16"});
  check(*square_case(tp::knn(), 200, 150, 16, Data::Exact), Data::Exact, {"32x32x8/4x4", "128x256x8/8x16"});
  check(*square_case(tp::masked_emit(), 300, 270, 11, Data::Exact), Data::Exact, {"128x256x16/8x16"});
  check(*square_case(tp::selfjoin(), 140, 140, 12, Data::Exact), Data::Exact);
  check(*square_case(tp::masked_emit(), 90, 70, 11, Data::Exact), Data::Exact, {"16x64x16/1x4"});
  // More candidate rows (1.2M) than the first buffers hold: grown and run again.
  check(*square_case(tp::topk(5), 1100, 1100, 3, Data::Exact), Data::Exact);
}

TEST(GpuEngine, VectorsSequentialAndIntegerSemantics) {
  SKIP_WITHOUT_GPU();
  check(*square_case(tp::vectors_i32(), 99, 101, 37, Data::Exact), Data::Exact, kOddTiles);
  check(*square_case(tp::sequential_f64(), 70, 90, 40, Data::Exact), Data::Exact, {"32x32x8/4x4"});
}

// The reference queries through the whole pipeline (parser, sema, bind) on both backends.
TEST(GpuEngine, ReferenceQueries) {
  SKIP_WITHOUT_GPU();
  struct Arr { std::string name; DType t; std::vector<int64_t> shape; int64_t index_range; };
  struct Q { std::string file; std::vector<Arr> arrays; std::map<std::string, std::string> scalars; };
  const int64_t M = 150, N = 131, K = 37, G = 6;
  const std::vector<Q> queries = {
      {"sgemm", {{"A", DType::F32, {M, K}, 0}, {"B", DType::F32, {K, N}, 0}}, {}},
      {"q1_amplify", {{"S", DType::F32, {M, K}, 0}, {"W", DType::F32, {K, N}, 0}, {"thres", DType::F32, {M}, 0}}, {}},
      {"maxplus", {{"A", DType::I32, {M, K}, 0}, {"B", DType::I32, {K, N}, 0}}, {}},
      {"minplus_batched", {{"D", DType::F32, {4, M, K}, 0}, {"E", DType::F32, {4, K, N}, 0}}, {}},
      {"reachability", {{"Adj", DType::Bool, {N, N}, 0}}, {}},
      {"q2_zip_aggregate", {{"P", DType::F32, {M, K}, 0}, {"R", DType::F32, {K, N}, 0}, {"Pzip", DType::I32, {M}, G},
                            {"Rzip", DType::I64, {N}, G}}, {}},
      {"q3_count_pairs", {{"P", DType::F32, {M, K}, 0}, {"R", DType::F32, {K, N}, 0}, {"Pzip", DType::I32, {M}, G},
                          {"Rzip", DType::I32, {N}, G}}, {{"thres", "2.5"}}},
      {"q4_join_area", {{"P", DType::F32, {M, K}, 0}, {"R", DType::F32, {K, N}, 0}, {"Pzip", DType::I32, {M}, G},
                        {"Rzip", DType::I32, {N}, G}}, {}},
      {"q5_select", {{"P", DType::F32, {M, K}, 0}, {"R", DType::F32, {K, N}, 0}}, {{"thres", "4.5"}}},
      {"q6_complementary", {{"A", DType::F32, {N, K}, 0}}, {{"thres", "40.5"}}},
      {"q7_top128", {{"P", DType::F32, {M, K}, 0}, {"R", DType::F32, {K, N}, 0}}, {}},
      {"knn", {{"Q", DType::F32, {M, K}, 0}, {"X", DType::F32, {N, K}, 0}}, {}},
  };
  for (const Q& q : queries) {
    SCOPED_TRACE(q.file);
    std::ifstream f(std::string(GAMUT_SOURCE_DIR) + "/../shared/queries/" + q.file + ".mmlt");
    std::ifstream f2(std::string(GAMUT_SOURCE_DIR) + "/examples/" + q.file + ".mmlt");
    std::stringstream text;
    if (f) text << f.rdbuf();
    else if (f2) text << f2.rdbuf();
    else continue;
    std::mt19937 rng(7);
    Bindings b;
    for (const Arr& a : q.arrays) b.arrays[a.name] = random_array(a.t, a.shape, Data::Exact, rng, a.index_range);
    b.scalars = q.scalars;
    auto prep = prepare(Source{q.file + ".mmlt", text.str()}, std::move(b));
    const Results cpu = run_cpu(prep->instance);
    const Results gpu = cuda::run_gpu(prep->instance);
    expect_same(cpu, gpu, Data::Exact);
  }
}
