// Segment sum for aggregate push-down: the kernel source compiles, and the stage descriptions
// that aggregate_pushdown hands to it say what the stage queries compute (no GPU needed).
#include <gtest/gtest.h>

#include "driver/pipeline.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#include "cuda/stages/segment_sum.h"
#endif

#include "integer_data.h"

using namespace gamut;

namespace {

const auto& make = testdata::integer_valued;

// What a SegmentSum description says, computed directly on the host.
NDArray reference(const SegmentSum& s, const NDArray& src, const NDArray& index) {
  const int64_t K = s.k_range.end, G = s.groups, ld = src.shape[1];
  NDArray out = NDArray::zeros(storage_type_of(s.type), s.group_rows ? std::vector<int64_t>{G, K}
                                                                      : std::vector<int64_t>{K, G});
  for (int64_t i = s.group_range.begin; i < s.group_range.end; ++i) {
    const int64_t g = index.get_i64(i);
    for (int64_t k = s.k_range.begin; k < s.k_range.end; ++k) {
      const int64_t se = s.src_k_minor ? i * ld + k : k * ld + i;
      const int64_t oe = s.group_rows ? g * K + k : k * G + g;
      switch (s.type) {
        case CType::F32: out.as<float>()[oe] += float(src.get_f64(se)); break;
        case CType::F64: out.as<double>()[oe] += src.get_f64(se); break;
        case CType::I32: out.as<uint32_t>()[oe] += uint32_t(src.get_i64(se)); break;
        case CType::I64: out.as<uint64_t>()[oe] += uint64_t(src.get_i64(se)); break;
        default: ADD_FAILURE() << "unexpected accumulator type";
      }
    }
  }
  return out;
}

}  // namespace

TEST(SegmentSum, KernelSourceCompilesWithNvrtc) {
#if GAMUT_HAVE_CUDA
  for (const char* arch : {"sm_90a", "sm_80"})
    for (DType t : {DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16,
                    DType::F32, DType::F64}) {
      cuda::CompileOptions o;
      o.arch = arch;
      std::string log;
      EXPECT_NO_THROW(EXPECT_FALSE(cuda::nvrtc_compile(cuda::segment_sum_source(t), o, &log).empty()))
          << arch << " " << dtype_name(t) << "\n" << log;
    }
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(SegmentSum, AccumulatorTypeIsTheStageQueryType) {
#if GAMUT_HAVE_CUDA
  EXPECT_EQ(cuda::segment_sum_acc_type(DType::Bool), CType::I32);
  EXPECT_EQ(cuda::segment_sum_acc_type(DType::I8), CType::I32);
  EXPECT_EQ(cuda::segment_sum_acc_type(DType::I64), CType::I64);
  EXPECT_EQ(cuda::segment_sum_acc_type(DType::BF16), CType::F32);
  EXPECT_EQ(cuda::segment_sum_acc_type(DType::F64), CType::F64);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(SegmentSum, DescriptionsMatchTheStageQueries) {
  // Ranges that do not start at 0, so entries for k below the range must stay 0.
  const int64_t M = 97, N = 83, K = 29;
  // (The rewrite takes only products without a widening cast, so both sides share a load type.)
  const std::pair<DType, DType> types[] = {{DType::F32, DType::F32}, {DType::I32, DType::I16}, {DType::F64, DType::F64},
                                           {DType::I64, DType::I64}, {DType::F16, DType::F16}};
  for (auto [ta, tb] : types)
    for (bool a_km : {false, true})
      for (bool b_km : {false, true})
        for (bool join : {false, true}) {
          std::string a = a_km ? "A[k, i]" : "A[i, k]", bb = b_km ? "B[k, j]" : "B[j, k]";
          std::string text = std::string("where (i in [3, 90), j in [2, 80))") + (join ? " when (g[i] == h[j])" : "") +
                             " { s = 0; reduce (k in [4, 29)) { s += " + a + " * " + bb + "; } " +
                             (join ? "T[g[i]] += s; }" : "T[g[i], h[j]] += s; }");
          SCOPED_TRACE(text + " A " + std::string(dtype_name(ta)) + " B " + std::string(dtype_name(tb)));
          Bindings b;
          b.arrays["A"] = make(ta, a_km ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, -3, 3, 1);
          b.arrays["B"] = make(tb, b_km ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K}, -3, 3, 2);
          b.arrays["g"] = make(DType::I32, {M}, 0, 6, 3);
          b.arrays["h"] = make(DType::I32, {N}, 0, 4, 4);
          auto p = prepare(Source{"q.mmlt", text}, b);
          ASSERT_TRUE(p->program.has_value()) << "the rewrite applies";
          const auto& stages = p->program->stages;
          ASSERT_EQ(stages.size(), 3u);
          EXPECT_FALSE(stages[2].segment.has_value());
          for (int s = 0; s < 2; ++s) {
            ASSERT_TRUE(stages[size_t(s)].segment.has_value());
            const SegmentSum& sg = *stages[size_t(s)].segment;
            EXPECT_EQ(sg.output, s == 0 ? "pd_A" : "pd_B");
            EXPECT_EQ(sg.group_rows, s == 0);
            EXPECT_EQ(sg.src_k_minor, s == 0 ? !a_km : !b_km);
            Bindings sb;
            for (const std::string& n : stages[size_t(s)].inputs) sb.arrays[n] = b.arrays.at(n);
            auto stage = prepare(Source{"stage", stages[size_t(s)].text}, sb);
            RunOptions o;
            o.backend = Backend::Cpu;
            Results r = execute(*stage, o, nullptr);
            ASSERT_EQ(stage->plan.dense.size(), 1u);
            EXPECT_EQ(stage->plan.dense[0].name, sg.output);
            EXPECT_EQ(stage->plan.dense[0].type, sg.type);
            NDArray want = reference(sg, b.arrays.at(sg.source), b.arrays.at(sg.index));
            ASSERT_EQ(r.dense[0].shape, want.shape);
            ASSERT_EQ(r.dense[0].dtype, want.dtype);
            EXPECT_EQ(r.dense[0].data, want.data);
          }
        }
}
