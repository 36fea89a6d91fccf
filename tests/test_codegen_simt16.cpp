// 1- and 2-byte tile operands on the SIMT mainloop without a GPU (the GPU side:
// tests/gpu/test_gpu_simt16.cpp): they are staged raw by cp.async and widened in shared memory
// (gm::StagedTileLoader), so they take the tile the same query takes on f32 data, the kernels
// compile with NVRTC for sm_90a without spills, and the shared-memory plan holds the staging
// slices the kernel's static_asserts check.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "codegen_plans.h"
#include "cuda/codegen/codegen.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#include "nvrtc_check.h"

using namespace gamut;
using namespace gamut::cuda;
namespace tp = gamut::testplans;

namespace {

using testnvrtc::kH100Smem;
using testnvrtc::kH100Sms;

const char* const kMaxPlus = "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }";
const char* const kMinPlusNT = "where (i, j) { a = inf; reduce (k) { a min= A[i, k] + B[j, k]; } C[i, j] = a; }";
const char* const kMaxPlusTN = "where (i, j) { a = -inf; reduce (k) { a max= A[k, i] + B[k, j]; } C[i, j] = a; }";

// The query bound to small arrays of type t, its ranges then widened to n (the tile choice reads
// only the extents; the packed-step check reads the data). `device`: inputs in device memory
// (not read on the host: no packed steps).
std::unique_ptr<Prepared> bound(const char* text, DType t, int64_t n, bool device) {
  Bindings b;
  b.arrays["A"] = NDArray::zeros(t, {8, 8});
  b.arrays["B"] = NDArray::zeros(t, {8, 8});
  auto p = prepare(Source{"q.mmlt", text}, std::move(b), false);
  Instance& inst = p->instance;
  inst.row = {0, n};
  inst.col = {0, n};
  inst.red = {0, n};
  if (device) {
    inst.device_inputs.resize(p->plan.operands.size());
    for (auto& d : inst.device_inputs) {
      d.data = reinterpret_cast<const void*>(uintptr_t(0x10000));
      d.strides = {n, 1};
    }
  }
  return p;
}

KernelChoice choice(const Prepared& p) { return choose_kernel(p.instance, kH100Sms, kH100Smem); }

}  // namespace

// bench/simt16.py's queries at 8192^3: bf16 / f16 take the tile f32 takes, or a larger one
// (min-plus X[i,k] Y[j,k] on f32 holds both operands' next chunks in registers and steps down).
TEST(CodegenSimt16, SixteenBitTakesTheTileOfF32) {
  for (const char* q : {kMaxPlus, kMinPlusNT, kMaxPlusTN}) {
    SCOPED_TRACE(q);
    const TileConfig f32 = choice(*bound(q, DType::F32, 8192, true)).tile;
    for (DType t : {DType::BF16, DType::F16}) {
      const KernelChoice k = choice(*bound(q, t, 8192, true));
      EXPECT_FALSE(k.options.tensor_cores());
      EXPECT_GE(k.tile.bm * k.tile.bn * k.tile.bk, f32.bm * f32.bn * f32.bk) << k.tile.str() << " vs " << f32.str();
      EXPECT_EQ(k.tile.str(), "128x256x16/8x16");
    }
  }
}

// Bytes of spill stores in a ptxas -v log (-1: no such line).
long spill_stores(const std::string& log) {
  const size_t at = log.find(" bytes spill stores");
  if (at == std::string::npos) return -1;
  const size_t from = log.rfind(' ', at - 1);
  return std::stol(log.substr(from + 1, at - from - 1));
}

// Every orientation and 1- / 2-byte type, inputs on the host (8-bit and i16: packed steps) and in
// device memory: staged loaders (the packed steps' p-contiguous i16 column operand is copied as
// it is), and the chosen kernel spills no more than the f32 one of the same query and size (none
// at 8192 and 1000; at 2048 max-plus X[i,k] Y[k,j] takes 128x128x8/8x8 under the two-block bound
// on f32 data too, and both spill 16 bytes).
TEST(CodegenSimt16, StagedKernelsSpillNoMoreThanF32) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  for (const char* q : {kMaxPlus, kMinPlusNT, kMaxPlusTN})
    for (int64_t n : {8192, 2048, 1000}) {
      auto f = bound(q, DType::F32, n, true);
      const KernelChoice kf = choice(*f);
      const long f32_spill = spill_stores(testnvrtc::compile(generate_source(f->plan, kf.tile, kf.options), "sm_90a"));
      EXPECT_GE(f32_spill, 0);
      if (n != 2048) EXPECT_EQ(f32_spill, 0) << kf.tile.str();
      for (DType t : {DType::BF16, DType::F16, DType::I8, DType::U8, DType::I16})
        for (bool device : {false, true}) {
          SCOPED_TRACE(std::string(q) + " " + std::string(dtype_name(t)) + (device ? " device " : " host ") +
                       std::to_string(n));
          auto p = bound(q, t, n, device);
          const KernelChoice k = choice(*p);
          const std::string src = generate_source(p->plan, k.tile, k.options);
          EXPECT_NE(src.find("gm::StagedTileLoader<"), std::string::npos);
          EXPECT_EQ(src.find("gm::TileLoader<"), std::string::npos);
          EXPECT_EQ(src.find("gm::AsyncTileLoader<") != std::string::npos,
                    k.options.packed16 && t == DType::I16 && q != kMinPlusNT)
              << k.tile.str() << (k.options.packed16 ? " packed16" : "");
          const std::string log = testnvrtc::compile(src, "sm_90a");
          const long spill = spill_stores(log);
          EXPECT_GE(spill, 0) << log;
          EXPECT_LE(spill, f32_spill) << k.tile.str() << (k.options.packed16 ? " packed16" : "") << " against "
                                      << kf.tile.str() << "\n"
                                      << log;
        }
    }
#endif
}

// The odd tiles tests/gpu/test_gpu_simt16.cpp runs 8-bit operands at (fewer chunks than
// threads, BK = 4, BK = 32) compile (bf16 at these tiles: Codegen.OddTilesCompile).
TEST(CodegenSimt16, EightBitOddTilesCompile) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  for (const char* q : {kMaxPlus, kMinPlusNT, kMaxPlusTN})
    for (const char* tile : {"16x64x16/1x4", "64x32x4/4x2", "32x16x32/2x2"}) {
      SCOPED_TRACE(std::string(q) + " " + tile);
      auto p = bound(q, DType::I8, 100, true);
      const KernelChoice k = choose_kernel(p->instance, kH100Sms, kH100Smem, parse_tile(tile));
      EXPECT_FALSE(k.options.packed16);
      testnvrtc::compile(generate_source(p->plan, k.tile, k.options), "sm_90a");
    }
#endif
}

// The shared-memory plan: kStages (BK, P + pad) tiles of the compute type, then kStages raw
// (P, BK) staging slices per staged operand; packed steps copy their i16 column operand as it is.
TEST(CodegenSimt16, SharedMemoryHoldsTheStagingSlices) {
  const Plan p = tp::product(DType::F16, DType::BF16, Pattern::RedRow, Pattern::ColRed, true);
  const KernelInfo k = kernel_info(p, parse_tile("128x128x8/8x8"));
  // A[k, i]: (8, 128) f32 tiles; B[j, k]: (8, 128 + 4); staging: (128, 8) 16-bit values each.
  EXPECT_EQ(k.smem_bytes, size_t(3 * 8 * 128 * 4 + 3 * 8 * 132 * 4 + 2 * 3 * 128 * 8 * 2));
  const std::string src = generate_source(p, parse_tile("128x128x8/8x8"));
  EXPECT_NE(src.find("// dynamic shared memory: " + std::to_string(k.smem_bytes) + " bytes"), std::string::npos);
  // An f32 plan has no staging slices.
  EXPECT_EQ(kernel_info(tp::sgemm(), parse_tile("128x128x8/8x8")).smem_bytes,
            size_t(3 * 8 * 132 * 4 + 3 * 8 * 128 * 4));
  // Packed steps on i16: the row operand staged (its tile holds 32-bit words), the column
  // operand's i16 tile copied by cp.async, with no staging slices.
  auto packed = bound(kMaxPlus, DType::I16, 8192, false);
  const KernelChoice kc = choice(*packed);
  ASSERT_TRUE(kc.options.packed16);
  const TileConfig& t = kc.tile;
  const size_t tiles = size_t(3 * t.bk * (t.bm + 4) * 4) + size_t(3 * t.bk * t.bn * 4);  // (multiples of 16)
  EXPECT_EQ(kernel_info(packed->plan, t, kc.options).smem_bytes, tiles + size_t(3 * t.bm * t.bk * 2));
}
