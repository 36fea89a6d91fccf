// top/bottom lists on the GPU (tile pre-selection + device selection, src/cuda/outputs/list/finish/select.h),
// and plain lists ordered behind the kernel, against run_cpu on the same Instance: every row must be identical. Data are small integers,
// so sums are exact and keys tie a lot; some cases put NaN into the inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "../codegen_plans.h"
#include "cpu/engine.h"
#include "cuda/codegen/codegen.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "gpu_skip.h"
#include "table_compare.h"

using namespace gamut;
namespace tp = gamut::testplans;

namespace {

struct Case {
  Plan plan;
  std::vector<NDArray> arrays;
  Instance inst;
};

// Inputs of small integers in [-3, 3] (index vectors and bools in range); no dense outputs.
std::unique_ptr<Case> make_case(Plan plan, int64_t m, int64_t n, int64_t k, int64_t limit, uint32_t seed = 7) {
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
  for (size_t p = 0; p < P.params.size(); ++p) I.params.push_back(Scalar::of_float(CType::F64, 2.5));
  for (size_t l = 0; l < P.lists.size(); ++l) I.list_limits.push_back(limit);
  return c;
}

// Bit-exact, except that any NaN equals any NaN.
::testing::AssertionResult same_table(const Table& cpu, const Table& gpu) {
  return test::same_table_bits(cpu, gpu, true);
}

void check(const Case& c, std::vector<std::string> tiles = {"32x32x8/4x4", "128x128x16/8x8"}) {
  const Results cpu = run_cpu(c.inst);
  tiles.insert(tiles.begin(), "");
  for (const std::string& t : tiles) {
    SCOPED_TRACE("tile " + (t.empty() ? std::string("chosen") : t));
    cuda::GpuRunOptions o;
    if (!t.empty()) o.tile = cuda::parse_tile(t);
    const Results gpu = cuda::run_gpu(c.inst, o, nullptr);
    ASSERT_EQ(cpu.lists.size(), gpu.lists.size());
    for (size_t l = 0; l < cpu.lists.size(); ++l) EXPECT_TRUE(same_table(cpu.lists[l], gpu.lists[l])) << "list " << l;
  }
}

Plan regroup(Plan p, ListMode mode, PerGroup per) {
  p.lists[0].mode = mode;
  p.lists[0].per = per;
  return p;
}

// masked_emit (a `when` mask, an f64 column) as a top/bottom list keyed by that f64 column.
Plan masked_top(ListMode mode, PerGroup per) {
  Plan p = tp::masked_emit();
  p.lists[0].mode = mode;
  p.lists[0].per = per;
  p.lists[0].key = p.outer[0].columns[3];
  return p;
}

// select_list (`if (accum > thres) emit`) as a top list keyed by accum.
Plan if_top(PerGroup per) {
  Plan p = tp::select_list();
  const Stmt& emit = p.outer[0].body[0];
  p.lists[0].mode = ListMode::Top;
  p.lists[0].per = per;
  p.lists[0].key = emit.columns[2];
  return p;
}

}  // namespace

TEST(GpuLists, PerRowManyTies) {
  SKIP_WITHOUT_GPU();
  for (int64_t n : {0, 1, 3, 10, 200, 5000}) {
    SCOPED_TRACE("N " + std::to_string(n));
    check(*make_case(tp::knn(n), 200, 150, 16, n));
  }
}

// Lists that overflow their first buffers (GpuRunOptions::list_rows: 64 rows) run again with
// room for every row; per-group lists of N <= 32 are selected in stream order behind each
// launch (DeviceLists::select_before_count, reading the row counter on the device), and the
// overflowed launch's selection is dropped. Both the waiting and the asynchronous run.
TEST(GpuLists, OverflowAndRunAgain) {
  SKIP_WITHOUT_GPU();
  for (const PerGroup per : {PerGroup::Row, PerGroup::Col, PerGroup::None})
    for (const int64_t n : {1, 10, 32, 33}) {
      SCOPED_TRACE("per " + std::to_string(int(per)) + ", N " + std::to_string(n));
      auto c = make_case(regroup(tp::knn(), ListMode::Bottom, per), 300, 200, 16, n);
      const Results cpu = run_cpu(c->inst);
      for (const bool async : {false, true}) {
        cuda::GpuRunOptions o;
        o.list_rows = 64;
        o.asynchronous = async;
        cuda::GpuRunStats st;
        const Results gpu = cuda::run_gpu(c->inst, o, &st);
        ASSERT_EQ(gpu.lists.size(), 1u);
        EXPECT_TRUE(same_table(cpu.lists[0], gpu.lists[0])) << "async " << async;
        if (per != PerGroup::None) EXPECT_GT(cpu.lists[0].rows, 64);  // (a global list keeps N rows)
        EXPECT_GE(st.result_launches, 2) << st.list_rows_appended[0] << " rows appended";  // (counts may move)
      }
    }
}

// Plain lists ordered behind the kernel before the host knows their count
// (DeviceLists::select_before_count, outputs/list/finish/order.h enqueue_list_order) once an earlier launch
// told how many rows to expect: about twice that many are sorted, the rows past the count
// last; where more came, the list is ordered after the count. Runs of one query one after the
// other (its list buffers and their last count kept with the kernel): a first run of a room of
// 64 rows (an overflow and a launch with room for the exact count), then the same rows (ordered
// early), then about six times the rows with a lower threshold (more than the early order covers:
// ordered after the count), then those again (early); waiting and asynchronous; against the
// CPU engine every time.
TEST(GpuLists, PlainListsOrderedBehindTheKernel) {
  SKIP_WITHOUT_GPU();
  for (const bool async : {false, true}) {
    auto c = make_case(tp::select_list(), 300, 200, 16, 0);
    std::shared_ptr<void> memo = cuda::new_kernel_memo();  // (a compiled query's: kernels, list buffers)
    cuda::GpuRunOptions o;
    o.list_rows = 64;
    o.asynchronous = async;
    o.kernel_memo = &memo;
    int early = 0;
    for (const double thres : {20.5, 20.5, -4.5, -4.5}) {
      SCOPED_TRACE("async " + std::to_string(async) + ", thres " + std::to_string(thres));
      c->inst.params[0] = Scalar::of_float(CType::F64, thres);
      const Results cpu = run_cpu(c->inst);
      ASSERT_EQ(cpu.lists.size(), 1u);
      ASSERT_GT(cpu.lists[0].rows, 64);
      cuda::GpuRunStats st;
      const Results gpu = cuda::run_gpu(c->inst, o, &st);
      ASSERT_EQ(gpu.lists.size(), 1u);
      EXPECT_TRUE(same_table(cpu.lists[0], gpu.lists[0]));
      early += st.lists_finished_with_kernel;
    }
    EXPECT_GE(early, 2);  // the repeated runs (the list's buffers kept with the kernel)
  }
}

TEST(GpuLists, PerColumnAndGlobal) {
  SKIP_WITHOUT_GPU();
  for (int64_t n : {0, 1, 7, 128, 40000}) {
    SCOPED_TRACE("N " + std::to_string(n));
    check(*make_case(regroup(tp::knn(), ListMode::Top, PerGroup::Col), 150, 200, 16, n));
    check(*make_case(regroup(tp::knn(), ListMode::Bottom, PerGroup::Col), 150, 200, 16, n));
    check(*make_case(tp::topk(n), 131, 257, 17, n));
    check(*make_case(regroup(tp::topk(), ListMode::Bottom, PerGroup::None), 131, 257, 17, n));
  }
}

TEST(GpuLists, WhenMaskIfAndF64Keys) {
  SKIP_WITHOUT_GPU();
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (int64_t n : {1, 5, 100}) {
      SCOPED_TRACE("per " + std::to_string(int(g)) + " N " + std::to_string(n));
      check(*make_case(masked_top(ListMode::Top, g), 97, 83, 9, n));
      check(*make_case(masked_top(ListMode::Bottom, g), 97, 83, 9, n));
      check(*make_case(if_top(g), 97, 83, 9, n));
    }
}

TEST(GpuLists, NaNKeys) {
  SKIP_WITHOUT_GPU();
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (ListMode mode : {ListMode::Top, ListMode::Bottom}) {
      auto c = make_case(regroup(tp::knn(), mode, g), 120, 90, 8, 6);
      // NaN in some rows of Q and columns of X: those dist are NaN.
      float* q = c->arrays[0].as<float>();
      float* x = c->arrays[1].as<float>();
      for (int64_t r = 0; r < 120; r += 7) q[r * 8 + 3] = std::numeric_limits<float>::quiet_NaN();
      for (int64_t r = 0; r < 90; r += 5) x[r * 8 + 1] = std::numeric_limits<float>::quiet_NaN();
      check(*c);
    }
}

TEST(GpuLists, OddSizes) {
  SKIP_WITHOUT_GPU();
  check(*make_case(tp::knn(10), 1000, 777, 33, 10));
  check(*make_case(tp::topk(128), 1000, 777, 33, 128));
  check(*make_case(regroup(tp::knn(), ListMode::Top, PerGroup::Col), 1000, 777, 33, 3));
}

// kNN at 4096 x 4096: exact rows, and device memory nowhere near the M x N candidates.
TEST(GpuLists, LargeKnnStaysSmall) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 4096, N = 4096;
  auto c = make_case(tp::knn(10), M, N, 64, 10);
  const Results cpu = run_cpu(c->inst);
  cuda::reset_device_bytes_peak();
  const Results gpu = cuda::run_gpu(c->inst, {}, nullptr);
  const size_t peak = cuda::device_bytes_peak();
  EXPECT_TRUE(same_table(cpu.lists[0], gpu.lists[0]));
  EXPECT_EQ(gpu.lists[0].rows, M * 10);
  EXPECT_LT(peak, size_t(M) * size_t(N) * 16 / 2) << "peak device bytes " << peak;
  auto q7 = make_case(tp::topk(128), M, N, 64, 128);
  const Results cpu7 = run_cpu(q7->inst);
  cuda::reset_device_bytes_peak();
  const Results gpu7 = cuda::run_gpu(q7->inst, {}, nullptr);
  EXPECT_TRUE(same_table(cpu7.lists[0], gpu7.lists[0]));
  EXPECT_LT(cuda::device_bytes_peak(), size_t(M) * size_t(N) * 16 / 2);
}

// Reservoirs (gm::TileSelect::keep / refresh): the per-row thresholds follow the rows appended
// by all tiles, so a kNN appends a few times N rows per query row, not about N per row and
// column tile (with 8192 columns, 64 or more column tiles). Integer data in [-30, 30] over
// K = 16: distances are exact in any order (below 2^24) and rarely tie at the 10th. The first
// wave of blocks runs before any threshold exists: with 64 row tiles, ~4-5 column tiles per
// row on an H100/H200 (with 16 row tiles it was ~16, 160 rows per row before any reservoir).
TEST(GpuLists, ReservoirsKeepAppendedRowsNearN) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 8192, N = 8192, K = 16;
  auto c = make_case(tp::knn(10), M, N, K, 10);
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> wide(-30, 30);
  for (NDArray& a : c->arrays)
    for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = float(wide(rng));
  const Results cpu = run_cpu(c->inst);
  for (const char* tile : {"", "128x64x8/8x4", "32x32x8/4x4"}) {
    SCOPED_TRACE(std::string("tile ") + tile);
    cuda::GpuRunOptions o;
    if (*tile) o.tile = cuda::parse_tile(tile);
    cuda::GpuRunStats st;
    const Results gpu = cuda::run_gpu(c->inst, o, &st);
    EXPECT_TRUE(same_table(cpu.lists[0], gpu.lists[0]));
    ASSERT_EQ(st.list_rows_appended.size(), 1u);
    // ~1.2 N ln(column tiles) + the first wave's N per tile: about 100 per row; a tile's own
    // threshold alone appended N per row and column tile (640 at 128 columns). (32x32 tiles:
    // the first wave alone has ~16 column tiles per row, so only the rows are checked.)
    if (std::string(tile) != "32x32x8/4x4") EXPECT_LE(st.list_rows_appended[0], uint64_t(M) * 150) << st.tile;
    EXPECT_GE(st.list_rows_appended[0], uint64_t(M) * 10);
    // The initial buffers (initial_list_rows: a few times what the reservoirs keep, not N per
    // row and column tile) hold them: one launch.
    if (!*tile) EXPECT_EQ(st.result_launches, 1) << st.list_rows_appended[0] << " rows appended";
  }
}

// A global list of at most 32768 candidates is selected and ordered by one block
// (gamut_select_small.cuh) unless more than its 4096 sort entries tie at the N-th rank; then,
// as for more candidates, the multi-launch path runs. Every key equal (all operands 1): 60 x 60
// pairs tie (3600, sorted in the block by (b, i, j)), 100 x 100 (10000: the block reports the
// overflow), 131 x 257 (33667: never tried). Top and bottom, N below and above the candidates.
TEST(GpuLists, GlobalTiesAroundTheOneBlockSelection) {
  SKIP_WITHOUT_GPU();
  for (const int64_t m : {60, 100, 131})
    for (const ListMode mode : {ListMode::Top, ListMode::Bottom})
      for (const int64_t limit : {5, 2048, 40000}) {
        const int64_t n = m == 131 ? 257 : m;
        SCOPED_TRACE(std::to_string(m) + "x" + std::to_string(n) + " N " + std::to_string(limit));
        auto c = make_case(regroup(tp::topk(), mode, PerGroup::None), m, n, 6, limit);
        for (NDArray& a : c->arrays)
          if (a.dtype == DType::F32)
            for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = 1.0f;
        check(*c, {});
      }
}
