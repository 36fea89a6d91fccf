// Packed 16-bit tropical steps (src/cuda/codegen/packed16.cpp) without a GPU: when the plan and
// the data allow them, and that the packed kernels compile with NVRTC without spilling.
#include <gtest/gtest.h>

#include <limits>

#include "bind/bind.h"
#include "cuda/codegen/codegen.h"
#include "cuda/gpu_engine.h"
#include "cuda/codegen/tile_choice.h"
#include "driver/pipeline.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;
using namespace gamut::cuda;

namespace {

NDArray matrix(DType t, int64_t r, int64_t c, int64_t lo, int64_t hi) {
  NDArray a = NDArray::zeros(t, {r, c});
  for (int64_t e = 0; e < a.size(); ++e) {
    const int64_t v = lo + (e * 7919) % (hi - lo + 1);   // covers [lo, hi], both ends included
    switch (t) {
      case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
      case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
      case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
      case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
      default: a.as<float>()[e] = float(v); break;
    }
  }
  if (a.size() > 0) {
    // Pin the extremes so that the range is exactly [lo, hi].
    auto put = [&](int64_t e, int64_t v) {
      switch (t) {
        case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
        case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
        case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
        case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
        default: a.as<float>()[e] = float(v); break;
      }
    };
    put(0, lo);
    put(a.size() - 1, hi);
  }
  return a;
}

std::unique_ptr<Prepared> prepared(const std::string& text, NDArray A, NDArray B) {
  Bindings b;
  b.arrays["A"] = std::move(A);
  b.arrays["B"] = std::move(B);
  return prepare(Source{"q.mmlt", text}, std::move(b));
}

const char* kMaxPlus = "where (i, j) { accum = -inf; reduce (k) { accum max= A[i, k] + B[k, j]; } C[i, j] = accum; }";
const char* kMinPlusT = "where (i, j) { d = 7; reduce (k) { d min= B[j, k] + A[k, i]; } C[i, j] = d; }";
const char* kSum = "where (i, j) { s = 0; reduce (k) { s += A[i, k] + B[k, j]; } C[i, j] = s; }";
const char* kFloatSum = "where (i, j) { s: f32 = -inf; reduce (k) { s max= f32(A[i, k]) + f32(B[k, j]); } C[i, j] = s; }";

const TileConfig kTile = parse_tile("128x256x16/8x16");

}  // namespace

TEST(Packed16, FormNeedsSmallIntegerTropicalSteps) {
  auto p = prepared(kMaxPlus, matrix(DType::I16, 5, 7, -3, 3), matrix(DType::I16, 7, 6, -3, 3));
  EXPECT_TRUE(packed16_form(p->plan, kTile));
  EXPECT_FALSE(packed16_form(p->plan, parse_tile("32x32x8/4x1")));   // no column pairs
  p = prepared(kMinPlusT, matrix(DType::I8, 7, 5, -3, 3), matrix(DType::U8, 6, 7, 0, 3));
  EXPECT_TRUE(packed16_form(p->plan, kTile));
  p = prepared(kMaxPlus, matrix(DType::I32, 5, 7, -3, 3), matrix(DType::I16, 7, 6, -3, 3));
  EXPECT_FALSE(packed16_form(p->plan, kTile));   // i32 input
  p = prepared(kSum, matrix(DType::I16, 5, 7, -3, 3), matrix(DType::I16, 7, 6, -3, 3));
  EXPECT_FALSE(packed16_form(p->plan, kTile));   // not tropical
  p = prepared(kFloatSum, matrix(DType::I16, 5, 7, -3, 3), matrix(DType::I16, 7, 6, -3, 3));
  EXPECT_FALSE(packed16_form(p->plan, kTile));   // the sum is f32 arithmetic
}

TEST(Packed16, DataMustKeepEverySumIn16Bits) {
  auto p = prepared(kMaxPlus, matrix(DType::I16, 5, 7, -16384, 16383), matrix(DType::I16, 7, 6, -16384, 16384));
  EXPECT_TRUE(packed16_data_fits(p->plan, p->instance));   // -32768 .. 32767 exactly
  p = prepared(kMaxPlus, matrix(DType::I16, 5, 7, -16384, 16384), matrix(DType::I16, 7, 6, -3, 16384));
  EXPECT_FALSE(packed16_data_fits(p->plan, p->instance));  // 32768
  p = prepared(kMaxPlus, matrix(DType::I16, 5, 7, -32768, 0), matrix(DType::I16, 7, 6, -1, 0));
  EXPECT_FALSE(packed16_data_fits(p->plan, p->instance));  // -32769
  p = prepared(kMinPlusT, matrix(DType::I8, 7, 5, -128, 127), matrix(DType::U8, 6, 7, 0, 255));
  EXPECT_TRUE(packed16_data_fits(p->plan, p->instance));
}

TEST(Packed16, KernelsCompileWithoutSpills) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  CodegenOptions packed;
  packed.packed16 = true;
  for (const char* text : {kMaxPlus, kMinPlusT}) {
    auto p = prepared(text, matrix(DType::I16, 8, 8, -3, 3), matrix(DType::I16, 8, 8, -3, 3));
    for (const char* tile : {"128x256x16/8x16", "128x128x8/8x8", "64x64x8/4x4", "32x32x8/4x2", "128x128x16/16x8"}) {
      SCOPED_TRACE(std::string(text) + " " + tile);
      const TileConfig t = parse_tile(tile);
      ASSERT_TRUE(packed16_form(p->plan, t));
      const std::string src = generate_source(p->plan, t, packed);
      EXPECT_NE(src.find(text == kMaxPlus ? "__viaddmax_s16x2" : "__viaddmin_s16x2"), std::string::npos);
      CompileOptions o;
      o.arch = "sm_90a";
      o.extra = {"-Xptxas=-v"};
      std::string log;
      ASSERT_NO_THROW(nvrtc_compile(src, o, &log)) << src;
      EXPECT_NE(log.find(" 0 bytes spill stores, 0 bytes spill loads"), std::string::npos) << log;
    }
  }
  // A plan without the form is refused rather than miscompiled.
  auto s = prepared(kSum, matrix(DType::I16, 8, 8, -3, 3), matrix(DType::I16, 8, 8, -3, 3));
  EXPECT_THROW(generate_source(s->plan, kTile, packed), Error);
#endif
}
