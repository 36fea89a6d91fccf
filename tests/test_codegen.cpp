// The CUDA code generator without a GPU: generated source for hand-built plans compiles with
// NVRTC (sm_90a and sm_80), the sgemm kernel does not spill, tiles are chosen and parsed sanely.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "codegen_plans.h"
#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/gpu_engine.h"
#include "nvrtc_check.h"
#include "cuda/codegen/tile_choice.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;
using namespace gamut::cuda;
namespace tp = gamut::testplans;
using tp::all_plans;

namespace {

using testnvrtc::kH100Sms;
using testnvrtc::kH100Smem;

#if GAMUT_HAVE_CUDA
using testnvrtc::compile;
#endif

}  // namespace

TEST(Codegen, EveryPlanCompilesWithNvrtc) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  for (const auto& [name, make] : all_plans()) {
    SCOPED_TRACE(name);
    const Plan p = make();
    const TileConfig t = choose_tile(p, kH100Sms, kH100Smem);
    std::string src;
    ASSERT_NO_THROW(src = generate_source(p, t));
    for (const char* arch : {"sm_90a", "sm_80"}) {
      SCOPED_TRACE(arch);
      const std::string log = compile(src, arch);
      EXPECT_NE(log.find("Used "), std::string::npos) << log;
      // The chosen tile fits its register budget on the arch the engine is tuned for, list
      // kernels too (128x128x8/8x8 under the two-blocks-per-SM bound of 128 registers: they
      // spilled ~40 bytes in the k loop until the epilogue stopped reusing prologue values).
      if (std::string(arch) == "sm_90a")
        EXPECT_NE(log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << t.str() << "\n" << log;
    }
  }
#endif
}

TEST(Codegen, OddTilesCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  const char* tiles[] = {"32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x128x16/8x8", "128x256x8/8x16",
                         "32x16x32/2x2"};
  for (const char* name : {"sgemm", "aggregates", "masked_emit", "minplus_batched", "f16_bf16_transposed"}) {
    for (const auto& [n, make] : all_plans()) {
      if (n != name) continue;
      const Plan p = make();
      for (const char* tile : tiles) {
        SCOPED_TRACE(std::string(name) + " " + tile);
        compile(generate_source(p, parse_tile(tile)), "sm_90a");
      }
    }
  }
#endif
}

TEST(Codegen, SgemmKernelDoesNotSpill) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  const Plan p = tp::sgemm();
  EXPECT_EQ(choose_tile(p, kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  // The chosen tile (one block per SM) and the two-blocks-per-SM one the ladder goes on with.
  for (const char* tile : {"128x256x16/8x16", "128x128x8/8x8"}) {
    for (const char* arch : {"sm_90a", "sm_80"}) {
      const std::string log = compile(generate_source(p, parse_tile(tile)), arch);
      EXPECT_NE(log.find(" 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads"), std::string::npos)
          << tile << " " << arch << "\n" << log;
    }
  }
#endif
}

TEST(Codegen, SgemmSourceShape) {
  const std::string src = generate_source(tp::sgemm(), parse_tile("128x128x8/8x8"));
  // A[i,k] is transposed into shared memory through registers, B[k,j] copied by cp.async; the
  // inner op is one multiply-add per (i,j,k).
  EXPECT_NE(src.find("gm::TileLoader<float, float, Shape::BM, Shape::BK, Shape::THREADS, true>"), std::string::npos);
  EXPECT_NE(src.find("gm::AsyncTileLoader<float, Shape::BN, Shape::BK, Shape::THREADS, false>"), std::string::npos);
  EXPECT_NE(src.find("accum = accum + (A * B);"), std::string::npos);
  EXPECT_NE(src.find("gm::store_run<float, Shape::VN>"), std::string::npos);
  EXPECT_NE(src.find("__launch_bounds__(256, 2)"), std::string::npos);
  EXPECT_NE(src.find(std::string("void __launch_bounds__(256, 2) ") + kMainKernelName + "("), std::string::npos);
  // Deterministic: the source is the cache key.
  EXPECT_EQ(src, generate_source(tp::sgemm(), parse_tile("128x128x8/8x8")));
}

TEST(Codegen, OutputIteratorsChosenPerOutput) {
  const std::string agg = generate_source(tp::aggregates(), parse_tile("64x64x8/4x4"));
  EXPECT_NE(agg.find("gm::TableSink<int, gm::kAdd"), std::string::npos);      // Cnt[g[i], h[j]]
  EXPECT_NE(agg.find("gm::TableSink<float, gm::kMax"), std::string::npos);    // Mx[g[i], j]
  EXPECT_NE(agg.find("gm::TableSink<gm::i64, gm::kMin"), std::string::npos);  // Mn[h[j]]
  EXPECT_NE(agg.find("gm::TableSink<int, gm::kOr"), std::string::npos);       // Or[i]
  EXPECT_NE(agg.find("gm::TableSink<double, gm::kAdd"), std::string::npos);   // Total
  EXPECT_NE(agg.find("gm::AggRun<"), std::string::npos);
  const std::string q5 = generate_source(tp::select_list(), parse_tile("64x64x8/4x4"));
  EXPECT_NE(q5.find("gm::BlockAppend<Shape>::reserve(Pairs_marks, Pairs_append.counter, row)"), std::string::npos);
  const std::string tr = generate_source(tp::product(DType::F16, DType::BF16, Pattern::RedRow, Pattern::ColRed, true),
                                         parse_tile("64x64x8/4x4"));
  EXPECT_EQ(tr.find("store_run"), std::string::npos);   // C[j,i]: scalar stores
  // 16-bit operands: raw copies staged in shared memory and widened there, in both orientations.
  EXPECT_NE(tr.find("gm::StagedTileLoader<gm::f16, float, Shape::BM, Shape::BK, Shape::THREADS, false>"),
            std::string::npos);
  EXPECT_NE(tr.find("gm::StagedTileLoader<gm::bf16, float, Shape::BN, Shape::BK, Shape::THREADS, true>"),
            std::string::npos);
  const std::string q4 = generate_source(tp::join_area(), parse_tile("64x64x8/4x4"));
  EXPECT_NE(q4.find("__syncthreads_or(any)"), std::string::npos);
}

TEST(Codegen, KernelInfoMatchesTheSharedMemoryPlan) {
  const KernelInfo k = kernel_info(tp::sgemm(), parse_tile("128x128x8/8x8"));
  EXPECT_EQ(k.threads, 256);
  // 3 buffers of (8, 128+4) and (8, 128) floats.
  EXPECT_EQ(k.smem_bytes, size_t(3 * 8 * 132 * 4 + 3 * 8 * 128 * 4));
  EXPECT_GE(k.args.count, 7 + 4 * 2 + 4);
  const KernelInfo b = kernel_info(tp::minplus_batched(), parse_tile("64x64x8/4x4"));
  ASSERT_EQ(b.args.dense.size(), 1u);
  EXPECT_EQ(b.args.dense[0].stride.size(), 3u);
}

TEST(Codegen, RejectsWhatItCannotRun) {
  Plan untyped = tp::sgemm();
  untyped.typed = false;
  EXPECT_THROW(generate_source(untyped, TileConfig{}), Error);
  TileConfig bad;
  bad.bm = 100;
  try {
    generate_source(tp::sgemm(), bad);
    FAIL() << "accepted an invalid tile";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Usage);
  }
}

TEST(TileChoice, ScalesUpFirstAndFitsRegisters) {
  const Plan s = tp::sgemm();
  EXPECT_EQ(choose_tile(s, kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  EXPECT_EQ(choose_tile_sized(s, 16384, 16384, 1, kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  EXPECT_EQ(choose_tile_sized(s, 4096, 4096, 1, kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  // A problem too small to give every SM a 128x128 block gets smaller tiles.
  const TileConfig small = choose_tile_sized(s, 256, 256, 1, kH100Sms, kH100Smem);
  EXPECT_LT(small.bm * small.bn, 128 * 128);
  EXPECT_TRUE(tile_valid(small));
  // A batch fills the GPU by itself.
  EXPECT_EQ(choose_tile_sized(s, 256, 256, 64, kH100Sms, kH100Smem).str(), "128x128x8/8x8");
  EXPECT_EQ(choose_tile_sized(s, 256, 256, 512, kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  // Inner ops with temporaries, and `when` bits, need registers the big tile does not have.
  EXPECT_NE(choose_tile(tp::q1(), kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  EXPECT_NE(choose_tile(tp::join_area(), kH100Sms, kH100Smem).str(), "128x256x16/8x16");
  // Tiny problems get the smallest tile.
  EXPECT_EQ(choose_tile_sized(s, 1, 1, 1, kH100Sms, kH100Smem).str(), "32x32x8/4x4");
  // 8-byte accumulators need twice the registers per pair: a smaller thread tile.
  const TileConfig f64 = choose_tile(tp::product(DType::F64, DType::F64), kH100Sms, kH100Smem);
  EXPECT_LE(f64.tm * f64.tn, 32);
  for (const auto& [name, make] : all_plans()) {
    const Plan p = make();
    const TileConfig t = choose_tile(p, kH100Sms, kH100Smem);
    EXPECT_TRUE(tile_valid(t)) << name;
    EXPECT_LE(kernel_info(p, t).smem_bytes, kH100Smem) << name;
    // A device with the least shared memory (48 KiB per block) still gets a tile that fits it.
    const TileConfig lean = choose_tile(p, 20, 48 * 1024);
    EXPECT_LE(kernel_info(p, lean).smem_bytes, size_t(48 * 1024)) << name;
  }
}

TEST(TileChoice, ParseTile) {
  EXPECT_EQ(parse_tile("128x128x8").str(), "128x128x8/8x8");
  EXPECT_EQ(parse_tile("128x128x8/8x8").str(), "128x128x8/8x8");
  EXPECT_EQ(parse_tile("64x32x16/4x2").str(), "64x32x16/4x2");
  EXPECT_EQ(parse_tile("32x32x8").threads() % 32, 0);
  EXPECT_TRUE(tile_valid(parse_tile("256x256x8")));
  for (const char* bad : {"", "128", "128x128", "128x128x8/8", "128x128x8/8x8x8", "abc", "128x128x7",
                          "100x128x8", "128x128x8/3x8", "16x16x8/8x8", "256x256x8/1x1", "128x128x8/", "-128x128x8",
                          "128x128x8x", "12345x128x8"}) {
    try {
      parse_tile(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Usage) << bad;
    }
  }
}

#if GAMUT_HAVE_CUDA
#include "cuda/outputs/list/finish/select.h"
#endif

// top/bottom lists pre-select per tile (gm::TileSelect) and reduce on the device
// (device/stages/gamut_select.cuh): the kernels for every grouping, N beyond a tile, and every key type.
TEST(Codegen, TopBottomListKernelsCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  auto per_j = [] {
    Plan p = tp::knn();
    p.lists[0].per = PerGroup::Col;
    p.lists[0].mode = ListMode::Top;
    return p;
  };
  const std::vector<std::pair<std::string, Plan>> plans = {
      {"knn", tp::knn()}, {"q7", tp::topk(128)}, {"top_per_j", per_j()}, {"knn_n5000", tp::knn(5000)},
      {"q7_n100000", tp::topk(100000)}};
  for (const auto& [name, p] : plans) {
    SCOPED_TRACE(name);
    const TileConfig t = choose_tile(p, kH100Sms, kH100Smem);
    const std::string src = generate_source(p, t);
    EXPECT_NE(src.find("gm::TileSelect<Shape, "), std::string::npos);
    EXPECT_NE(src.find("gm::rank32("), std::string::npos);
    for (const char* arch : {"sm_90a", "sm_80"}) {
      SCOPED_TRACE(arch);
      compile(src, arch);
    }
  }
  for (DType k : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
    for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
      for (bool top : {true, false}) {
        const std::string src = select_source(k, top, g);
        SCOPED_TRACE(src);
        for (const char* arch : {"sm_90a", "sm_80"}) compile(src, arch);
      }
  for (int e : {4, 2, 1}) compile(k_major_copy_source(e), "sm_90a");  // the tensor-core operands' copies
#endif
}
