// Device finalisation of plain and distinct lists (src/cuda/outputs/list/finish/order.h) against
// finalize_list, the reference: the same rows in the same order, bit for bit. Directly on
// uploaded columns (every storage type, NaNs of both signs and several payloads, -0.0, ties,
// empty, one row, 2^20+ rows) and through run_gpu (against run_cpu, also with benchmark
// repetitions, which finalise inside the timed loop).
#include <gtest/gtest.h>

#include "gpu_skip.h"
#include "table_compare.h"

#if GAMUT_HAVE_CUDA  // order_list_rows exists only in builds with the CUDA backend

#include <cstring>
#include <random>

#include "../codegen_plans.h"
#include "../list_rows_data.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "cuda/outputs/list/finish/order.h"
#include "cuda/runtime.h"

using namespace gamut;
namespace tp = gamut::testplans;

namespace {

::testing::AssertionResult same_rows(const Table& want, const Table& got) {
  return test::same_table_bits(want, got, false);
}

// Uploads the rows, orders them on the device into poisoned buffers, downloads the result.
Table device_order(const ListCandidates& rows, bool distinct, cuda::ListOrderScratch& scratch) {
  std::vector<cuda::DeviceBuffer> in;
  std::vector<const cuda::DeviceBuffer*> cols;
  std::vector<DType> types;
  std::vector<cuda::DeviceBuffer> out;
  for (const Column& c : rows.table.columns) {
    in.emplace_back(std::max<size_t>(c.data.size(), 1));
    in.back().upload(c.data.data(), c.data.size());
    types.push_back(c.dtype);
    // Larger than needed and poisoned: the finaliser reuses these and must write every row.
    out.emplace_back(c.data.size() + 64);
    out.back().fill_bytes(0xa5);
  }
  for (const cuda::DeviceBuffer& b : in) cols.push_back(&b);
  const uint64_t m = cuda::order_list_rows(cols, types, uint64_t(rows.table.rows), distinct, scratch, out);
  EXPECT_EQ(out.size(), rows.table.columns.size());
  Table t;
  t.rows = int64_t(m);
  for (size_t c = 0; c < rows.table.columns.size(); ++c) {
    Column col;
    col.name = rows.table.columns[c].name;
    col.dtype = types[c];
    col.data.resize(size_t(m) * dtype_size(col.dtype));
    out[c].download(col.data.data(), col.data.size());
    t.columns.push_back(std::move(col));
  }
  cuda::synchronize();
  return t;
}

// Both modes against finalize_list; `nonempty`: the reference must have rows.
void check_rows(const ListCandidates& rows, cuda::ListOrderScratch& scratch, bool nonempty = true) {
  for (ListMode mode : {ListMode::Plain, ListMode::Distinct}) {
    SCOPED_TRACE(mode == ListMode::Plain ? "plain" : "distinct");
    ListCandidates copy = rows;
    const Table want = finalize_list(testdata::list_spec(rows.table, mode), 0, std::move(copy));
    if (nonempty) ASSERT_GT(want.rows, 0);
    EXPECT_TRUE(same_rows(want, device_order(rows, mode == ListMode::Distinct, scratch)));
  }
}

const std::vector<DType> kAllTypes = {DType::Bool, DType::U8,  DType::I8,  DType::I16, DType::I32,
                                      DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

}  // namespace

TEST(GpuListOrder, EveryTypeWithSpecialValues) {
  SKIP_WITHOUT_GPU();
  cuda::ListOrderScratch scratch;
  uint32_t seed = 1;
  for (DType t : kAllTypes)
    for (int64_t n : {int64_t(2), int64_t(37), int64_t(5000)}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " n " + std::to_string(n));
      check_rows(testdata::mixed_rows({t}, n, seed++, 3), scratch);
    }
}

TEST(GpuListOrder, EmptyAndOneRow) {
  SKIP_WITHOUT_GPU();
  cuda::ListOrderScratch scratch;
  check_rows(testdata::mixed_rows({DType::I32, DType::F32}, 0, 1, 3), scratch, false);
  check_rows(testdata::mixed_rows({DType::I32, DType::F32}, 1, 2, 3), scratch);
  check_rows(testdata::mixed_rows({DType::F64}, 1, 3, 3), scratch);
}

// Several key words (columns packed whole into 64-bit words) and heavy repeats.
// One test per table (a test process each under compute-sanitizer, whose racecheck runs the
// sorts of all five for minutes).
class GpuListOrderMixed : public ::testing::TestWithParam<int> {};

TEST_P(GpuListOrderMixed, Columns) {
  SKIP_WITHOUT_GPU();
  const std::vector<std::vector<DType>> tables = {
      {DType::I32, DType::I32, DType::F32},                                       // the emit of Q5
      {DType::I32, DType::I32, DType::Bool, DType::F64},                          // masked_emit
      {DType::I32, DType::I64, DType::I32},
      {DType::F64, DType::F64, DType::I64},
      {DType::Bool, DType::F32, DType::I16, DType::U8, DType::I8, DType::F16, DType::BF16},
  };
  cuda::ListOrderScratch scratch;
  const int t = GetParam();
  uint32_t seed = 100 + 4 * uint32_t(t);
  for (int range : {0, 1, 4, 100000}) {
    SCOPED_TRACE("table " + std::to_string(seed) + " range " + std::to_string(range));
    check_rows(testdata::mixed_rows(tables[size_t(t)], 20000, seed++, range), scratch);
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, GpuListOrderMixed, ::testing::Range(0, 5));

// All rows equal, and all rows distinct but equal in value (+0/-0, NaN payloads).
TEST(GpuListOrder, TiesAndBitTieBreaks) {
  SKIP_WITHOUT_GPU();
  cuda::ListOrderScratch scratch;
  ListCandidates same = testdata::mixed_rows({DType::F32, DType::I32}, 3000, 9, 0, false);
  for (Column& c : same.table.columns)
    for (size_t r = 0; r < c.data.size(); ++r) c.data[r] = c.data[r % dtype_size(c.dtype)];
  check_rows(same, scratch);
  ListCandidates zeros = testdata::mixed_rows({DType::F64, DType::F32}, 4096, 10, 0, false);
  const uint64_t f64[] = {0, 0x8000000000000000ull, 0x7ff8000000000000ull, 0xfff8000000000001ull, 0x7ff0000000000001ull};
  const uint32_t f32[] = {0, 0x80000000u, 0x7fc00000u, 0xffc00001u};
  for (int64_t r = 0; r < 4096; ++r) {
    std::memcpy(zeros.table.columns[0].data.data() + r * 8, &f64[r % 5], 8);
    std::memcpy(zeros.table.columns[1].data.data() + r * 4, &f32[(r / 5) % 4], 4);
  }
  check_rows(zeros, scratch);
}

// 2^20+ rows (several blocks per CUB pass, a hash set of 2^22 slots), then a small list with
// the same (larger) scratch.
TEST(GpuListOrder, LargeThenSmall) {
  SKIP_WITHOUT_GPU();
  cuda::ListOrderScratch scratch;
  const int64_t n = (int64_t(1) << 20) + 12345;
  check_rows(testdata::mixed_rows({DType::I32, DType::I32, DType::F32}, n, 21, 50), scratch);
  check_rows(testdata::mixed_rows({DType::I64, DType::F64}, n, 22, 1000000), scratch);
  check_rows(testdata::mixed_rows({DType::F32}, n, 23, 2), scratch);   // distinct: few rows
  check_rows(testdata::mixed_rows({DType::F32, DType::I32}, 100, 24, 2), scratch);
}

// ---- through run_gpu -------------------------------------------------------------------------

namespace {

struct Case {
  Plan plan;
  std::vector<NDArray> arrays;
  Instance inst;
};

// Inputs of small integers in [-3, 3] (exact sums, many equal rows); `thres` for Q5's filter.
std::unique_ptr<Case> make_case(Plan plan, int64_t m, int64_t n, int64_t k, double thres, uint32_t seed = 3) {
  auto c = std::make_unique<Case>();
  c->plan = std::move(plan);
  const Plan& P = c->plan;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-3, 3);
  for (const Operand& o : P.operands) {
    std::vector<int64_t> shape;
    switch (P.accesses[size_t(o.accesses[0])].pattern) {
      case Pattern::RowRed: shape = {m, k}; break;
      case Pattern::RedRow: shape = {k, m}; break;
      case Pattern::RedCol: shape = {k, n}; break;
      case Pattern::ColRed: shape = {n, k}; break;
      case Pattern::RowVec: shape = {m}; break;
      case Pattern::ColVec: shape = {n}; break;
      default: shape = {k}; break;
    }
    NDArray a = NDArray::zeros(*o.dtype, shape);
    for (int64_t e = 0; e < a.size(); ++e) {
      const int v = small(rng);
      switch (a.dtype) {
        case DType::F32: a.as<float>()[e] = float(v); break;
        case DType::F64: a.as<double>()[e] = v; break;
        case DType::I32: a.as<int32_t>()[e] = v; break;
        case DType::I64: a.as<int64_t>()[e] = v; break;
        default: a.as<uint8_t>()[e] = uint8_t(v > 0); break;
      }
    }
    c->arrays.push_back(std::move(a));
  }
  Instance& I = c->inst;
  I.plan = &c->plan;
  I.row = {0, m};
  I.col = {0, n};
  I.red = {0, k};
  for (const NDArray& a : c->arrays) I.inputs.push_back(&a);
  for (size_t p = 0; p < P.params.size(); ++p) I.params.push_back(Scalar::of_float(CType::F64, thres));
  for (size_t l = 0; l < P.lists.size(); ++l) I.list_limits.push_back(0);
  return c;
}

// The list keeps only columns `keep` of its emit, in `mode`.
Plan reshape_list(Plan p, ListMode mode, const std::vector<size_t>& keep) {
  ListOutput& l = p.lists[0];
  Stmt* emit = p.outer[0].kind == StmtKind::Emit ? &p.outer[0] : &p.outer[0].body[0];
  std::vector<ListColumn> cols;
  std::vector<ExprId> exprs;
  for (size_t c : keep) {
    cols.push_back(l.columns[c]);
    exprs.push_back(emit->columns[c]);
  }
  l.columns = cols;
  emit->columns = exprs;
  l.mode = mode;
  return p;
}

// run_gpu against run_cpu, plain and with benchmark repetitions (the lists are finalised in
// every timed repetition; results() then downloads the last one).
void check_run(const Case& c, int64_t min_rows) {
  const Results cpu = run_cpu(c.inst);
  ASSERT_EQ(cpu.lists.size(), 1u);
  ASSERT_GE(cpu.lists[0].rows, min_rows);
  for (int repeats : {0, 3}) {
    SCOPED_TRACE("repeats " + std::to_string(repeats));
    cuda::GpuRunOptions o;
    o.warmup = repeats > 0 ? 1 : 0;
    o.repeats = repeats;
    cuda::GpuRunStats stats;
    const Results gpu = cuda::run_gpu(c.inst, o, &stats);
    ASSERT_EQ(gpu.lists.size(), 1u);
    EXPECT_TRUE(same_rows(cpu.lists[0], gpu.lists[0]));
    EXPECT_EQ(stats.runs_ms.size(), size_t(repeats));
  }
}

}  // namespace

TEST(GpuListOrder, PlainEmitThroughRunGpu) {
  SKIP_WITHOUT_GPU();
  check_run(*make_case(tp::select_list(), 300, 200, 16, 0.0), 1000);      // i, j, accum where accum > 0
  check_run(*make_case(tp::masked_emit(), 257, 131, 9, 0.0), 1000);       // i, j, bool, f64
  check_run(*make_case(reshape_list(tp::select_list(), ListMode::Plain, {2}), 300, 200, 16, -1.0), 1000);
}

TEST(GpuListOrder, DistinctThroughRunGpu) {
  SKIP_WITHOUT_GPU();
  // accum alone: few distinct values out of many rows.
  check_run(*make_case(reshape_list(tp::select_list(), ListMode::Distinct, {2}), 300, 200, 16, -1e9), 5);
  // (pos, v) of masked_emit; and all columns (every row distinct).
  check_run(*make_case(reshape_list(tp::masked_emit(), ListMode::Distinct, {2, 3}), 257, 131, 9, 0.0), 5);
  check_run(*make_case(reshape_list(tp::masked_emit(), ListMode::Distinct, {0, 1, 2, 3}), 257, 131, 9, 0.0), 1000);
  check_run(*make_case(reshape_list(tp::select_list(), ListMode::Distinct, {1, 2}), 300, 200, 16, 2.0), 100);
}

// Every pair emitted: 1100 x 1000 rows, beyond the 2^20 rows the list buffers start with, so
// the list grows, the kernel runs again, and the device sort handles 2^20+ rows.
TEST(GpuListOrder, LargePlainAndDistinctThroughRunGpu) {
  SKIP_WITHOUT_GPU();
  check_run(*make_case(tp::select_list(), 1100, 1000, 8, -1e9), 1100 * 1000);
  check_run(*make_case(reshape_list(tp::select_list(), ListMode::Distinct, {0, 2}), 1100, 1000, 8, -1e9), 1100);
}

// top/bottom through the radix select with narrower digits: more than 2^16 groups (4-bit
// digits) and more than 2^20 (2-bit), with many rank ties (small integer distances).
class GpuListOrderManyGroups : public ::testing::TestWithParam<int64_t> {};

TEST_P(GpuListOrderManyGroups, TopBottom) {
  SKIP_WITHOUT_GPU();
  const int64_t m = GetParam();
  auto c = make_case(tp::knn(5), m, 40, 8, 0.0);
  c->inst.list_limits[0] = 5;
  check_run(*c, m * 5);
}

INSTANTIATE_TEST_SUITE_P(Rows, GpuListOrderManyGroups, ::testing::Values(int64_t(70000), int64_t(1100000)));

// gather_list_columns: 37 columns of every width (more than one launch's 16), rows gathered
// through a permutation with repeats, into poisoned buffers; every byte against the host.
TEST(GpuListOrder, GatherColumnsOfEveryWidthBeyondOneLaunch) {
  SKIP_WITHOUT_GPU();
  for (uint64_t m : {uint64_t(1), uint64_t(1000), uint64_t(70001)}) {
    SCOPED_TRACE("rows " + std::to_string(m));
    const uint64_t n = m + 13;   // source rows
    std::mt19937 gen{static_cast<unsigned>(m)};
    std::vector<uint32_t> perm(m);
    for (uint64_t r = 0; r < m; ++r) perm[r] = uint32_t(gen() % n);
    cuda::DeviceBuffer rows(m * 4);
    rows.upload(perm.data(), m * 4);
    std::vector<cuda::DeviceBuffer> src, dst;
    std::vector<std::vector<unsigned char>> host;
    std::vector<cuda::sortdev::GatherColumn> cols;
    for (int c = 0; c < 37; ++c) {
      const int w = 1 << (c % 4);
      host.emplace_back(n * w);
      for (auto& b : host.back()) b = static_cast<unsigned char>(gen() % 251 + 1);   // never 0 or 0xff
      src.emplace_back(n * w);
      src.back().upload(host.back().data(), n * w);
      dst.emplace_back(m * w);
      dst.back().fill_bytes(0xff);
      cols.push_back({dst.back().get(), src.back().get(), w});
    }
    cuda::gather_list_columns(cols, static_cast<const uint32_t*>(rows.get()), m);
    for (int c = 0; c < 37; ++c) {
      const int w = cols[size_t(c)].bytes;
      std::vector<unsigned char> got(m * w);
      dst[size_t(c)].download(got.data(), got.size());
      for (uint64_t r = 0; r < m; ++r)
        ASSERT_EQ(std::memcmp(got.data() + r * w, host[size_t(c)].data() + uint64_t(perm[r]) * w, size_t(w)), 0)
            << "column " << c << " row " << r;
    }
  }
}

#endif  // GAMUT_HAVE_CUDA
