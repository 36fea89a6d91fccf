// Block-resident thresholds (gm::ResidentTop) on the GPU: top / bottom lists per i and per j
// whose thresholds stay in the persistent blocks, against the CPU engine row for row (skipped
// without a GPU). The other tensor-core queries: test_tensor_queries.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>

#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gpu_skip.h"
#include "table_compare.h"
#include "tensor_queries.h"

using namespace gamut;
namespace tq = gamut::testtcq;

namespace {

// Block-resident thresholds (gm::ResidentTop): the queries of ResidentThresholds.
const tq::TcQuery kResidentQueries[] = {
    {"bottom_n_per_i",
     "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } emit L(i, j, s) bottom n by s per i; }"},
    {"top_n_per_j", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[j, k]; } emit L(i, j, s) top n by s per j; }",
     false, true},
    {"batched_top_n_per_i",
     "batch (b) where (i, j) { s = 0; reduce (k) { s += P[b, i, k] * R[b, k, j]; }\n"
     "  if (s > -20) emit L(b, i, j, s) top n by s per i; }",
     false, false, true},
};

// One resident case on `blocks` persistent blocks against the CPU engine, row for row; returns
// whether the kernel kept its thresholds in the blocks.
// memo: a kernel memo shared by several runs (as a compiled query's).
// stats: the run's statistics, where asked.
bool resident_case(const tq::TcQuery& q, const tq::TcMath& m, int64_t n, const tq::Sizes& s, int blocks,
                   std::shared_ptr<void>* memo = nullptr, cuda::GpuRunStats* stats = nullptr) {
  SCOPED_TRACE(std::string(q.name) + " " + m.name + " N " + std::to_string(n) + " " + std::to_string(s.m) + "x" +
               std::to_string(s.n) + "x" + std::to_string(s.k) + " blocks " + std::to_string(blocks));
  Bindings b = tq::bindings(q, m, s);
  b.scalars["n"] = std::to_string(n);
  auto p = prepare(Source{std::string(q.name) + ".mmlt", q.text}, b, false);
  EXPECT_FALSE(p->program);
  if (p->program) return false;
  const Results cpu = run_cpu(p->instance);
  EXPECT_EQ(cpu.lists.size(), 1u);
  const bool per_j = std::string(q.name).find("per_j") != std::string::npos;
  EXPECT_GE(cpu.lists[0].rows, (q.batched ? s.batch : 1) * (per_j ? s.n : s.m));  // (N >= 1)
  cuda::GpuRunOptions o;
  o.f32_math = m.f32_math;
  o.resident_blocks = blocks;
  o.kernel_memo = memo;
  cuda::GpuRunStats st;
  const Results gpu = cuda::run_gpu(p->instance, o, &st);
  EXPECT_EQ(st.resident_top, n <= 32) << st.tile;
  EXPECT_EQ(st.tile.find("resident-top") != std::string::npos, st.resident_top) << st.tile;
  if (st.resident_top && blocks > 0) EXPECT_EQ(st.launch_blocks, blocks);
  EXPECT_EQ(gpu.lists.size(), 1u);
  if (gpu.lists.size() == 1 && cpu.lists.size() == 1)
    EXPECT_TRUE(test::same_table_bits(cpu.lists[0], gpu.lists[0], true));
  if (stats) *stats = st;
  return st.resident_top;
}

}  // namespace

// Block-resident thresholds (gm::ResidentTop): top / bottom lists per i and per j, N from 1 to
// 32 (33: the tile selection), 3 and 7 persistent blocks whose runs of tiles start and end
// mid-band (and cross batch instances), edge tiles on both axes, small-integer data whose keys
// tie heavily (the N-th key shared by many pairs), against the CPU engine row for row. Each
// also with epilogue warpgroups (GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS=1; by default they take
// longer k ranges only), whose outputs read the accumulators the consumers hand over. One test
// per math and epilogue choice (racecheck runs each for minutes).
class GpuTensorResident : public ::testing::TestWithParam<std::tuple<const char*, bool>> {};

TEST_P(GpuTensorResident, Thresholds) {
  SKIP_WITHOUT_GPU();
  const auto [math, epilogue_warpgroups] = GetParam();
  int runs = 0;
  if (epilogue_warpgroups) ASSERT_EQ(setenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS", "1", 1), 0);
  for (const tq::TcMath& m : tq::maths()) {
    if (std::string(m.name) != math) continue;
    for (const tq::TcQuery& q : kResidentQueries)
      for (const int64_t n : {1, 10, 32, 33})
        for (const tq::Sizes& s : {tq::Sizes{300, 1100, 40}, tq::Sizes{257, 700, 300}})
          for (const int blocks : {3, 7}) runs += resident_case(q, m, n, s, blocks) ? 1 : 0;
  }
  unsetenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS");
  EXPECT_EQ(runs, 3 * 3 * 2 * 2);
}

INSTANTIATE_TEST_SUITE_P(MathsAndEpilogues, GpuTensorResident,
                         ::testing::Combine(::testing::Values("bf16", "tf32"), ::testing::Bool()),
                         [](const ::testing::TestParamInfo<std::tuple<const char*, bool>>& info) {
                           return std::string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_epilogue_warpgroups" : "_consumers");
                         });

// bf16 K = 1000: epilogue warpgroups by default.
TEST(GpuTensorQueries, ResidentThresholdsLongK) {
  SKIP_WITHOUT_GPU();
  for (const tq::TcMath& m : tq::maths())
    if (std::string(m.name) == "bf16")
      for (const int64_t n : {1, 10, 32}) EXPECT_TRUE(resident_case(kResidentQueries[0], m, n, {300, 700, 1000}, 5));
}

// Two small resident kernels (per i, per j; bf16, 3 blocks over 2 x 3 tiles): small enough for
// compute-sanitizer (tools/device_run.sh sanitizers).
TEST(GpuTensorQueries, ResidentThresholdsSmall) {
  SKIP_WITHOUT_GPU();
  for (const tq::TcMath& m : tq::maths())
    if (std::string(m.name) == "bf16")
      for (const char* epi : {"0", "1"}) {  // (without and with epilogue warpgroups)
        ASSERT_EQ(setenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS", epi, 1), 0);
        for (int q = 0; q < 2; ++q) EXPECT_TRUE(resident_case(kResidentQueries[q], m, 10, {200, 300, 40}, 3));
      }
  unsetenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS");
}

// A compiled query's kernel memo across runs of N = 10, 40, 10 (N a parameter): K = 600 takes
// wgmma either way and the small grid 128 x 128 tiles, so only the memo's variant (which names
// the resident kernel) keeps N = 40 off the kernel whose state holds 32 ranks.
TEST(GpuTensorQueries, ResidentThresholdsAcrossRunsOfOneQuery) {
  SKIP_WITHOUT_GPU();
  std::shared_ptr<void> memo = cuda::new_kernel_memo();
  for (const tq::TcMath& m : tq::maths())
    if (std::string(m.name) == "bf16")
      for (const int64_t n : {10, 40, 10})
        EXPECT_EQ(resident_case(kResidentQueries[0], m, n, {200, 300, 600}, 0, &memo), n <= 32) << n;
}

// The default grid of a resident kernel is aligned with its bands (GpuRun::band_aligned_blocks):
// 5 or 6 bands (row tiles per i, batch instances included; column tiles per j) of 40 tiles, each
// cut into min(S / bands, 40) parts on a device of S SMs where that costs a block at most 6 % more
// tiles than the even split (on 132 SMs: 130 blocks for 5 bands), which
// GAMUT_EXPERIMENT_WHOLE_BANDS=0 takes instead (min(S, tiles) blocks, crossing bands). Both
// against the CPU engine row for row, edge tiles on both axes.
TEST(GpuTensorQueries, ResidentBlocksAlignedWithBands) {
  SKIP_WITHOUT_GPU();
  const int64_t sms = cuda::device().sm_count;
  if (sms < 12) GTEST_SKIP() << "needs 12 SMs";
  struct Case {
    int query;
    tq::Sizes sizes;
    int64_t bands, length;
  };
  // (bf16 resident tiles are 128 x 128: 600 -> 5 tiles, 5000 -> 40, 300 -> 3 a batch instance x 2)
  const Case cases[] = {{0, {600, 5000, 64}, 5, 40}, {1, {5000, 600, 64}, 5, 40}, {2, {300, 5000, 64, 2}, 6, 40}};
  for (const tq::TcMath& m : tq::maths()) {
    if (std::string(m.name) != "bf16") continue;
    for (const Case& c : cases) {
      const int64_t even = std::min(sms, c.bands * c.length), parts = std::min(even / c.bands, c.length);
      const bool align =
          double((c.length + parts - 1) / parts) <= 1.06 * double((c.bands * c.length + even - 1) / even);
      for (const char* whole : {"1", "0"}) {
        ASSERT_EQ(setenv("GAMUT_EXPERIMENT_WHOLE_BANDS", whole, 1), 0);
        cuda::GpuRunStats st;
        EXPECT_TRUE(resident_case(kResidentQueries[c.query], m, 10, c.sizes, 0, nullptr, &st));
        const int64_t want = std::string(whole) == "1" && align ? c.bands * parts : even;
        EXPECT_EQ(st.launch_blocks, want) << kResidentQueries[c.query].name << " WHOLE_BANDS=" << whole;
      }
    }
  }
  unsetenv("GAMUT_EXPERIMENT_WHOLE_BANDS");
}
