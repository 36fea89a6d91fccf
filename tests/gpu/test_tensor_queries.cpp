// Queries on the tensor-core mainloop (src/cuda/codegen/mainloop_tensor_cores.cpp) against the CPU
// engine: every output operator (project, aggregate, select list, top global, bottom per i,
// distinct, the expanded kNN) x {bf16, f16, i8, tf32x3, tf32}, both operand orientations with a
// constant factor, batched plans; odd sizes (1, 7, 33, 1025; K not a multiple of the
// instruction's k). Small-integer data (tests/gpu/tensor_queries.h): products and sums are exact
// in every math, so results must be bit-identical. One kernel per query and math serves every
// size (sizes are kernel arguments). Select them all with --gtest_filter='GpuTensorQueries.*'.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "cpu/engine.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gpu_skip.h"
#include "table_compare.h"
#include "tensor_queries.h"

using namespace gamut;
namespace tq = gamut::testtcq;

namespace {

// (M, N, K): one row / column, odd sizes below and above the 128 x 128 tile, K below, between and
// above the instructions' k (8, 16, 32) and the k-slices (16, 32, 64), never a multiple of 8.
const tq::Sizes kSizes[] = {{1, 1, 1}, {7, 33, 7}, {33, 7, 45}, {1025, 33, 37}, {40, 1025, 99}};

bool any_nonzero(const NDArray& a) {
  for (std::byte b : a.data)
    if (b != std::byte{0}) return true;
  return false;
}

// The query on the GPU (the tensor-core mainloop, checked through the run's tile) and on the CPU:
// dense outputs and lists bit-identical. Project outputs go to device memory filled with 0xff
// first, so that a pair the kernel misses shows. Returns rows + non-zero dense outputs seen.
// device_offset >= 0: the inputs are device arrays as a framework holds them (C order, no row
// padding), starting that many elements into their allocation.
int g_persistent_runs = 0;    // runs whose kernel had persistent tiles
int g_resident_b_runs = 0;    // runs whose kernel kept B's slices for bands of tiles
int g_resident_top_runs = 0;  // runs whose kernel kept a list's thresholds in its blocks
int g_pingpong_runs = 0;      // runs whose kernel had ping-pong consumer groups

// resident_blocks > 0: persistent kernels launch that many blocks, each looping over many tiles.
int64_t check(const tq::TcQuery& q, const tq::TcMath& m, const tq::Sizes& s, int device_offset = -1,
              int resident_blocks = 0) {
  SCOPED_TRACE(std::string(q.name) + " " + m.name + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
               std::to_string(s.k) + (device_offset < 0 ? "" : " device+" + std::to_string(device_offset)) +
               (resident_blocks ? " blocks " + std::to_string(resident_blocks) : ""));
  auto p = prepare(Source{std::string(q.name) + ".mmlt", q.text}, tq::bindings(q, m, s), false);
  EXPECT_FALSE(p->program);
  if (p->program) return 0;
  const Results cpu = run_cpu(p->instance);
  std::vector<cuda::DeviceBuffer> ins;
  if (device_offset >= 0) {
    Instance& inst = p->instance;
    inst.device_inputs.resize(inst.inputs.size());
    for (size_t o = 0; o < inst.inputs.size(); ++o) {
      if (!inst.inputs[o]) continue;
      const NDArray& x = *inst.inputs[o];
      const size_t es = dtype_size(x.dtype), off = size_t(device_offset) * es;
      ins.emplace_back(x.nbytes() + off + 16);
      ins.back().upload(x.data.data(), x.nbytes(), off);
      std::vector<int64_t> strides(x.shape.size(), 1);
      for (size_t d = x.shape.size(); d-- > 1;) strides[d - 1] = strides[d] * x.shape[d];
      inst.device_inputs[o].data = static_cast<const unsigned char*>(ins.back().get()) + off;
      inst.device_inputs[o].strides = strides;
    }
  }
  cuda::GpuRunOptions o;
  o.f32_math = m.f32_math;
  o.masked_joins = q.masked_joins;
  o.resident_blocks = resident_blocks;
  const bool poison = std::string(q.text).find("C[") != std::string::npos;
  std::vector<cuda::DeviceBuffer> outs;
  if (poison)
    o.dense_output = [&outs](size_t, size_t bytes) {
      outs.emplace_back(bytes);
      outs.back().fill_bytes(0xff);
      return outs.back().get();
    };
  cuda::GpuRunStats st;
  const Results gpu = cuda::run_gpu(p->instance, o, &st);
  cuda::synchronize();
  // Tensor cores wherever the math choice says so.
  const bool tc = executed_math(p->plan, m.f32_math).tensor_cores();
  const bool ran_tc = st.tile.find("mma.sync") != std::string::npos || st.tile.find("wgmma") != std::string::npos;
  EXPECT_EQ(ran_tc, tc) << "ran " << st.tile;
  // f16 / bf16 on wgmma where the device has it (sm_90a) and the plan allows it (distinct lists
  // only on seen tables; per-group top / bottom lists from K = 512 in 16-bit math), the other
  // maths on mma.sync.
  // Distinct lists of vector lookups: wgmma where every one ran on a seen table.
  bool every_seen = !st.list_seen_cells.empty();
  for (size_t l = 0; l < p->plan.lists.size(); ++l)
    if (p->plan.lists[l].mode == ListMode::Distinct)
      every_seen = every_seen && l < st.list_seen_cells.size() && st.list_seen_cells[l] > 0;
  const MathChoice chosen = executed_math(p->plan, m.f32_math);
  const bool wgmma_device =
      cuda::tensor_isa(cuda::device().cc_major, cuda::device().cc_minor) == cuda::TensorIsa::Wgmma;
  // A top / bottom list per i or per j of N <= 32 keeps its thresholds in the blocks of a
  // persistent wgmma kernel at any K (not tf32x3).
  const int resident_list = resident_top_form(p->plan);
  const bool resident = tc && wgmma_device && cuda::wgmma_math(m.math) && m.math != InnerMath::Tf32x3 &&
                        s.k * (m.math == InnerMath::Tf32 ? 4 : 2) <= 2048 && resident_list >= 0 &&
                        p->instance.list_limits[size_t(resident_list)] <= 32;
  EXPECT_EQ(st.resident_top, resident) << st.tile;
  if (st.resident_top) {
    EXPECT_TRUE(st.persistent);
    ++g_resident_top_runs;
  }
  if (tc)
    EXPECT_EQ(st.tile.find("wgmma") != std::string::npos,
              cuda::wgmma_math(m.math) && (chosen.wgmma || (chosen.wgmma_if_seen && every_seen)) &&
                  (s.k >= executed_math(p->plan, m.f32_math).wgmma_min_k || resident) && wgmma_device)
        << st.tile;
  // Device inputs TMA cannot address in place are read from re-pitched copies: still TMA.
  if (tc && device_offset >= 0 && st.tile.find("wgmma") != std::string::npos)
    EXPECT_EQ(st.mainloop, "wgmma+tma") << st.tile;
  // Persistent grids only for TMA-fed kernels without a `when` pass (and only where the
  // outputs' shared memory fits beside the stages: codegen tests check which).
  if (st.persistent) {
    EXPECT_EQ(st.mainloop, "wgmma+tma") << st.tile;
    EXPECT_FALSE(p->plan.when.present());
    ++g_persistent_runs;
    if (resident_blocks > 0) EXPECT_EQ(st.launch_blocks, resident_blocks);
  }
  if (st.tile.find("pingpong") != std::string::npos) {
    EXPECT_TRUE(st.persistent) << st.tile;
    ++g_pingpong_runs;
  }
  if (st.tile.find("resident-b") != std::string::npos) {
    EXPECT_TRUE(st.persistent) << st.tile;
    ++g_resident_b_runs;
  }
  int64_t seen = 0;
  EXPECT_EQ(cpu.dense.size(), gpu.dense.size());
  for (size_t d = 0; d < cpu.dense.size() && d < gpu.dense.size(); ++d) {
    NDArray got = cpu.dense[d];  // (shape and type; the bytes are replaced)
    if (poison)
      outs.at(d).download(got.data.data(), got.nbytes());
    else
      got = gpu.dense[d];
    EXPECT_EQ(got.nbytes(), cpu.dense[d].nbytes());
    if (got.nbytes() != cpu.dense[d].nbytes()) continue;
    const bool same = std::memcmp(got.data.data(), cpu.dense[d].data.data(), got.nbytes()) == 0;
    EXPECT_TRUE(same) << "dense output " << d;
    if (!same)
      for (int64_t e = 0; e < got.size(); ++e)
        if (got.get_f64(e) != cpu.dense[d].get_f64(e)) {
          ADD_FAILURE() << "first difference at element " << e << ": cpu " << cpu.dense[d].get_f64(e) << ", gpu "
                        << got.get_f64(e);
          break;
        }
    seen += any_nonzero(cpu.dense[d]) ? 1 : 0;
  }
  EXPECT_EQ(cpu.lists.size(), gpu.lists.size());
  for (size_t l = 0; l < cpu.lists.size() && l < gpu.lists.size(); ++l) {
    EXPECT_TRUE(test::same_table_bits(cpu.lists[l], gpu.lists[l], true)) << "list " << l;
    seen += cpu.lists[l].rows;
  }
  return seen;
}

void check_all_sizes(const tq::TcQuery& q, const tq::TcMath& m) {
  int64_t seen = 0;
  for (const tq::Sizes& s : kSizes) seen += check(q, m, s);
  EXPECT_GT(seen, 0) << q.name << " " << m.name << ": every result was empty or zero";
}

void operators_of(const char* math) {
  for (const tq::TcMath& m : tq::maths())
    if (std::string(m.name) == math)
      for (const tq::TcQuery& q : tq::operator_queries()) check_all_sizes(q, m);
}
void layouts_of(const char* math) {
  for (const tq::TcMath& m : tq::maths())
    if (std::string(m.name) == math)
      for (const tq::TcQuery& q : tq::layout_queries()) check_all_sizes(q, m);
}

}  // namespace

// Persistent kernels (GAMUT_EXPERIMENT_PERSISTENT=1: every kernel whose form allows it) with
// two blocks, each looping over many tiles (7 to 27 here, batch instances included), K
// spanning several turns of the stage ring within a tile (bf16: 64 per
// slice, 4 stages) or one slice: the ring's phases carried across tiles, and the output
// operators' state reset per tile.
TEST(GpuTensorQueries, PersistentBlocksLoopOverTiles) {
  SKIP_WITHOUT_GPU();
  // Every kernel whose form allows it (by default only those with shared-memory outputs).
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "1", 1), 0);
  const tq::Sizes sizes[] = {{300, 520, 300}, {1025, 641, 45}};
  std::vector<tq::TcQuery> queries = tq::operator_queries();
  for (const tq::TcQuery& q : tq::layout_queries())
    if (std::string(q.name) == "batched") queries.push_back(q);
  for (const char* math : {"bf16", "tf32", "tf32x3"})
    for (const tq::TcMath& m : tq::maths())
      if (std::string(m.name) == math)
        for (const tq::TcQuery& q : queries) {
          int64_t seen = 0;
          const int before = g_persistent_runs;
          for (const tq::Sizes& s : sizes) seen += check(q, m, s, -1, 2);
          EXPECT_GT(seen, 0) << q.name << " " << m.name << ": every result was empty or zero";
          // The product, aggregate, select and batched kernels are persistent for every math.
          const std::string n = q.name;
          if (n == "project" || n == "aggregate" || n == "select" || n == "batched")
            EXPECT_EQ(g_persistent_runs - before, 2) << n << " " << m.name;
        }
  unsetenv("GAMUT_EXPERIMENT_PERSISTENT");
}

// Ping-pong consumer groups (GAMUT_EXPERIMENT_PINGPONG=256 / =128: 64 x BN tiles, two groups
// of one warpgroup taking every other tile of their block; CodegenOptions::pingpong): plain
// selects (one list; two lists, one of them holding the other pairs; batched) in bf16, f16 and tf32,
// 1 to 3 blocks (4 to 51 tiles: a group runs one more tile than the other or as many), K over several turns
// of the ring (bf16: 64 per slice, tf32 32, 4 stages), one partial slice, or one k; K <= 256, where
// the choice takes the groups in tf32 too (plain selects over at most 1 KiB of k per row). One test
// per tile width and math (racecheck runs each for minutes).
class GpuTensorPingpong : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(GpuTensorPingpong, SelectsAlternateTiles) {
  SKIP_WITHOUT_GPU();
  const auto [bn, math] = GetParam();
  const std::vector<tq::TcQuery> queries = {
      {"select",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  if (accum > thres) emit Pairs(i, j, accum); }"},
      {"two_selects",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  if (accum > thres) emit Pairs(i, j, accum);\n"
       "  if (accum <= thres) emit Rest(j, i); }"},
      {"batched_select",
       "batch (b) where (i, j) { accum = 0; reduce (k) { accum += P[b, i, k] * R[b, k, j]; }\n"
       "  if (accum > thres) emit Pairs(b, i, j, accum); }",
       false, false, true}};
  const tq::Sizes sizes[] = {{300, 520, 200}, {1025, 641, 45}, {70, 300, 1}, {130, 700, 64}};
  int runs = 0;
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PINGPONG", bn, 1), 0);
  for (const tq::TcMath& m : tq::maths()) {
    if (std::string(m.name) != math) continue;
    for (const tq::TcQuery& q : queries) {
      int64_t seen = 0;
      for (const tq::Sizes& s : sizes)
        for (const int blocks : {1, 2, 3}) {
          const int before = g_pingpong_runs;
          seen += check(q, m, s, -1, blocks);
          EXPECT_EQ(g_pingpong_runs - before, 1) << q.name << " " << math << " ran without the groups";
          ++runs;
        }
      EXPECT_GT(seen, 0) << q.name << " " << math << ": every result was empty";
    }
  }
  unsetenv("GAMUT_EXPERIMENT_PINGPONG");
  EXPECT_EQ(runs, 3 * 4 * 3);
}

INSTANTIATE_TEST_SUITE_P(WidthsAndMaths, GpuTensorPingpong,
                         ::testing::Combine(::testing::Values("256", "128"), ::testing::Values("bf16", "f16", "tf32")),
                         [](const ::testing::TestParamInfo<std::tuple<const char*, const char*>>& info) {
                           return std::string("bn") + std::get<0>(info.param) + "_" + std::get<1>(info.param);
                         });

// Resident B (GAMUT_EXPERIMENT_RESIDENT_B=1; bench/NOTES.md, session 17): where the k range
// fits the stages' B halves (16-bit: K <= 256, tf32: K <= 128) B's slices stay for a band of
// tiles sharing a column tile. 3 and 7 blocks over 2 x 3 x 5 tiles of 128 x 128 start and end
// their runs mid-band; the k ranges fill every slice, end in a partial one (tf32: K = 100), or
// are one k.
TEST(GpuTensorQueries, ResidentBSmall) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_RESIDENT_B", "1", 1), 0);  // (an experiment, not the default)
  const int before = g_resident_b_runs;
  int runs = 0;
  for (const tq::TcMath& m : tq::maths()) {
    const std::string math = m.name;
    if (math != "bf16" && math != "f16" && math != "tf32") continue;
    for (const tq::TcQuery& q : tq::operator_queries()) {
      const std::string n = q.name;
      if (n != "project" && n != "aggregate" && n != "select" && n != "top" && n != "distinct") continue;
      for (const int k : {math == "tf32" ? 128 : 256, math == "tf32" ? 100 : 130, 1})
        for (const int blocks : {3, 7}) {
          EXPECT_GT(check(q, m, {300, 520, k}, -1, blocks), 0) << n;
          ++runs;
        }
    }
  }
  // Every run but the distinct list's on a tile hash (mma.sync): f16 / bf16 / tf32 on wgmma + TMA.
  unsetenv("GAMUT_EXPERIMENT_RESIDENT_B");
  EXPECT_GE(g_resident_b_runs - before, runs * 4 / 5);
  EXPECT_GT(runs, 0);
}

// The persistent kernels of the operators with shared memory (aggregate tables, top ranks, a
// seen table) and a list, bf16, four blocks of 3-4 tiles (with GAMUT_EXPERIMENT_CLUSTER=2: two clusters of
// two blocks taking 5 pairs of row tiles each, the partner of the third row tile without rows),
// and in clusters a bf16 and a tf32x3 product: small enough for compute-sanitizer
// (tools/device_run.sh sanitizers).
TEST(GpuTensorQueries, PersistentSmall) {
  SKIP_WITHOUT_GPU();
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "1", 1), 0);
  for (const char* cluster : {"1", "2"}) {
    SCOPED_TRACE(std::string("GAMUT_EXPERIMENT_CLUSTER=") + cluster);
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_CLUSTER", cluster, 1), 0);
    for (const tq::TcMath& m : tq::maths())
      for (const tq::TcQuery& q : tq::operator_queries()) {
        const std::string n = q.name, math = m.name;
        if (!(math == "bf16" && (n == "aggregate" || n == "top" || n == "select" || n == "distinct")) &&
            !(std::string(cluster) == "2" && n == "project" && (math == "bf16" || math == "tf32x3")))
          continue;
        const int before = g_persistent_runs;
        EXPECT_GT(check(q, m, {300, 520, 300}, -1, 4), 0) << n;
        EXPECT_EQ(g_persistent_runs - before, 1) << n;
      }
  }
  unsetenv("GAMUT_EXPERIMENT_CLUSTER");
  unsetenv("GAMUT_EXPERIMENT_PERSISTENT");
}

// Top / bottom lists per i take wgmma in 16-bit math from K = 512 (below it mma.sync, whose
// selection is cheaper; bench/NOTES.md session 14), and in tf32 at every K: both sides of the
// rule, checked by check() through the run's tile.
TEST(GpuTensorQueries, GroupedRankedListsOnWgmmaFromLongReductions) {
  SKIP_WITHOUT_GPU();
  for (const tq::TcMath& m : tq::maths()) {
    const std::string math = m.name;
    if (math != "bf16" && math != "f16" && math != "tf32") continue;
    for (const tq::TcQuery& q : tq::operator_queries()) {
      const std::string n = q.name;
      if (n != "bottom_per_i" && n != "knn_expanded") continue;
      int64_t seen = 0;
      for (const tq::Sizes& s : {tq::Sizes{300, 520, 600}, tq::Sizes{129, 1025, 513}, tq::Sizes{200, 300, 511}})
        seen += check(q, m, s);
      EXPECT_GT(seen, 0) << n << " " << math;
    }
  }
}

TEST(GpuTensorQueries, Bf16Operators) {
  SKIP_WITHOUT_GPU();
  operators_of("bf16");
}
TEST(GpuTensorQueries, F16Operators) {
  SKIP_WITHOUT_GPU();
  operators_of("f16");
}
TEST(GpuTensorQueries, I8Operators) {
  SKIP_WITHOUT_GPU();
  operators_of("i8");
}
TEST(GpuTensorQueries, Tf32x3Operators) {
  SKIP_WITHOUT_GPU();
  operators_of("tf32x3");
}
TEST(GpuTensorQueries, Tf32Operators) {
  SKIP_WITHOUT_GPU();
  operators_of("tf32");
}
// Orientations, factors and batches: bf16 (ldmatrix and its .trans form), i8 (the transpose
// through registers), tf32 (scalar f32 reads); f16 and tf32x3 share those loaders.
// Mixed signedness of 8-bit operands: u8 x i8 and i8 x u8 (with both operands transposed).
TEST(GpuTensorQueries, MixedEightBit) {
  SKIP_WITHOUT_GPU();
  for (const tq::TcQuery& q : tq::operator_queries())
    if (std::string(q.name) == "project" || std::string(q.name) == "top") check_all_sizes(q, tq::mixed_8bit()[0]);
  check_all_sizes(tq::layout_queries()[0], tq::mixed_8bit()[1]);
}
TEST(GpuTensorQueries, Bf16Layouts) {
  SKIP_WITHOUT_GPU();
  layouts_of("bf16");
}
TEST(GpuTensorQueries, I8Layouts) {
  SKIP_WITHOUT_GPU();
  layouts_of("i8");
}
TEST(GpuTensorQueries, Tf32Layouts) {
  SKIP_WITHOUT_GPU();
  layouts_of("tf32");
}

// Device arrays as PyTorch holds them: rows of 257, 1025, 4097 or 37 elements (not whole 16-byte
// chunks), starting at offset 0 or one element in. Every layout, output operator and math,
// bit-identical to the CPU engine; wgmma still fed by TMA (the engine reads such operands from
// copies with 16-byte rows, on every tensor-core mainloop).
TEST(GpuTensorQueries, DeviceInputsOffSixteenBytes) {
  SKIP_WITHOUT_GPU();
  const tq::Sizes sizes[] = {{300, 257, 515}, {33, 1025, 37}, {129, 4097, 33}, {1, 7, 9}};
  for (const tq::TcMath& m : tq::maths()) {
    if (m.r_type) continue;  // (mixed 8-bit: MixedEightBit)
    int64_t seen = 0;
    std::vector<tq::TcQuery> queries = tq::layout_queries();
    queries.push_back(tq::operator_queries()[0]);  // project, P[i, k] x R[k, j]
    for (const tq::TcQuery& q : queries)
      for (const tq::Sizes& s : sizes)
        for (int off : {0, 1}) seen += check(q, m, s, off);
    // Every output operator (mma.sync for distinct and per-i lists: re-pitched copies there too).
    for (const tq::TcQuery& q : tq::operator_queries()) seen += check(q, m, {40, 1025, 99}, 1);
    EXPECT_GT(seen, 0) << m.name << ": every result was empty or zero";
  }
}

// Random (not integer) bf16 data: within the documented bound of the f32 SIMT result
// (docs/tensor-cores.md: products exact, sums in f32 in another order).
TEST(GpuTensorQueries, Bf16RandomWithinBound) {
  SKIP_WITHOUT_GPU();
  const tq::TcQuery& q = tq::operator_queries()[0];
  const tq::Sizes s{300, 257, 515};
  Bindings b = tq::bindings(q, tq::maths()[0], s);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (const char* name : {"P", "R"}) {
    NDArray& a = b.arrays[name];
    for (int64_t e = 0; e < a.size(); ++e) tq::put(a, e, u(rng));
  }
  auto p = prepare(Source{"q.mmlt", q.text}, std::move(b), false);
  const Results cpu = run_cpu(p->instance);
  cuda::GpuRunStats st;
  const Results gpu = cuda::run_gpu(p->instance, {}, &st);
  EXPECT_EQ(st.tile.find("wgmma") != std::string::npos, executed_math(p->plan, F32Math::Ieee).tensor_cores())
      << st.tile;
  double worst = 0, scale = 0;
  for (int64_t e = 0; e < cpu.dense[0].size(); ++e) {
    worst = std::max(worst, std::abs(gpu.dense[0].get_f64(e) - cpu.dense[0].get_f64(e)));
    scale = std::max(scale, std::abs(cpu.dense[0].get_f64(e)));
  }
  EXPECT_GT(scale, 0.5);
  // f32 sums of 515 exact products in two orders: a few ulps of the largest partial sums.
  EXPECT_LE(worst, 1e-4 * scale) << "max |gpu - cpu| " << worst << " of max |cpu| " << scale;
}

// f32 under tf32 / tf32x3 on random data (on sm_90a: wgmma fed by TMA, R[k, j] read through its
// k-major copy): within the documented bounds of the f64 sum (docs/tensor-cores.md: tf32 1.1e-3,
// tf32x3 1e-5 of sum |x y|). And tf32 rounds each operand to nearest like PyTorch's
// allow_tf32: P = 1 + 3 * 2^-12 becomes 1 + 2^-10 (toward zero it would be 1), so with
// small-integer R every result is exactly (1 + 2^-10) sum_k R[k, j].
TEST(GpuTensorQueries, F32MathsRandomAndRounding) {
  SKIP_WITHOUT_GPU();
  const tq::TcQuery& q = tq::operator_queries()[0];  // project, P[i, k] x R[k, j]
  const tq::Sizes s{300, 257, 515};
  for (const tq::TcMath& m : tq::maths()) {
    if (m.type != DType::F32) continue;
    SCOPED_TRACE(m.name);
    Bindings b = tq::bindings(q, m, s);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (const char* name : {"P", "R"}) {
      NDArray& a = b.arrays[name];
      for (int64_t e = 0; e < a.size(); ++e) tq::put(a, e, u(rng));
    }
    const NDArray P = b.arrays["P"], R = b.arrays["R"];
    auto p = prepare(Source{"q.mmlt", q.text}, std::move(b), false);
    cuda::GpuRunOptions o;
    o.f32_math = m.f32_math;
    cuda::GpuRunStats st;
    const Results gpu = cuda::run_gpu(p->instance, o, &st);
    if (cuda::tensor_isa(cuda::device().cc_major, cuda::device().cc_minor) == cuda::TensorIsa::Wgmma)
      EXPECT_NE(st.tile.find("wgmma"), std::string::npos) << st.tile;
    double worst = 0;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const double x = P.get_f64(i * s.k + k) * R.get_f64(k * s.n + j);
          ref += x;
          mag += std::abs(x);
        }
        const double got = gpu.dense[0].get_f64(i * s.n + j);
        worst = std::max(worst, std::abs(got - ref) / mag);
        nonzero += got != 0;
      }
    EXPECT_GT(nonzero, s.m * s.n / 2);
    EXPECT_LE(worst, m.math == InnerMath::Tf32 ? 1.1e-3 : 1e-5) << "worst |gpu - f64| / sum |x y|";
    std::printf("[ f32 math ] %s: worst error %.3g of sum |x y| (%s)\n", m.name, worst, st.tile.c_str());
  }
  // The rounding mode of tf32.
  const tq::TcMath* tf32 = nullptr;
  for (const tq::TcMath& m : tq::maths())
    if (m.math == InnerMath::Tf32) tf32 = &m;
  ASSERT_TRUE(tf32);
  Bindings b = tq::bindings(q, *tf32, s);
  NDArray& P = b.arrays["P"];
  for (int64_t e = 0; e < P.size(); ++e) tq::put(P, e, 1.0f + 3.0f / 4096.0f);
  const NDArray R = b.arrays["R"];  // small integers
  auto p = prepare(Source{"q.mmlt", q.text}, std::move(b), false);
  cuda::GpuRunOptions o;
  o.f32_math = F32Math::Tf32;
  const Results gpu = cuda::run_gpu(p->instance, o, nullptr);
  int64_t wrong = 0, nonzero = 0;
  for (int64_t j = 0; j < s.n; ++j) {
    double col = 0;
    for (int64_t k = 0; k < s.k; ++k) col += R.get_f64(k * s.n + j);
    const double want = (1.0 + 1.0 / 1024.0) * col;
    for (int64_t i = 0; i < s.m; ++i) {
      const double got = gpu.dense[0].get_f64(i * s.n + j);
      wrong += got != want;
      nonzero += got != 0;
    }
  }
  EXPECT_EQ(wrong, 0) << "tf32 operands not rounded to nearest";
  EXPECT_GT(nonzero, 0);
}
