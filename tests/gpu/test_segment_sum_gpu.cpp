// The GPU segment sum against the stage query it replaces, run on the CPU; and push-down queries
// end to end on the GPU against the CPU. Skipped where no GPU is present.
#include <gtest/gtest.h>

#if GAMUT_HAVE_CUDA  // segment_sum exists only in builds with the CUDA backend
#include "cuda/gpu_engine.h"
#include "cuda/stages/segment_sum.h"
#include "driver/pipeline.h"

#include "../integer_data.h"
#include "gpu_skip.h"

using namespace gamut;

namespace {

const auto& make = testdata::integer_valued;

std::string range(int64_t b, int64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + ")"; }

// The stage query of aggregate_pushdown.cpp for one orientation.
std::string stage_text(const cuda::SegmentSumShape& s) {
  const std::string x = s.src_k_minor ? "X[pd_i, pd_k]" : "X[pd_k, pd_i]";
  const std::string body = "  pd_s = 0;\n  reduce (pd_i in " + range(s.rows.begin, s.rows.end) + ") {\n    pd_s += (g[pd_i] == pd_g) * " + x + ";\n  }\n";
  if (s.group_rows)
    return "where (pd_g in " + range(0, s.groups) + ", pd_k in " + range(s.k.begin, s.k.end) + ") {\n" + body +
           "  pd_A[pd_g, pd_k] = pd_s;\n}\n";
  return "where (pd_k in " + range(s.k.begin, s.k.end) + ", pd_g in " + range(0, s.groups) + ") {\n" + body +
         "  pd_B[pd_k, pd_g] = pd_s;\n}\n";
}

using Path = cuda::SegmentSumPath;

// Runs one case both ways; `path` is the kernel path the shape should take.
void check(DType t, const cuda::SegmentSumShape& s, int64_t rows_extent, int64_t k_extent, Path path) {
  SCOPED_TRACE(std::string(dtype_name(t)) + " groups " + std::to_string(s.groups) + (s.src_k_minor ? " X[i,k]" : " X[k,i]") +
               (s.group_rows ? " out[g,k]" : " out[k,g]") + " rows " + range(s.rows.begin, s.rows.end) + " k " +
               range(s.k.begin, s.k.end));
  Bindings b;
  b.arrays["X"] = make(t, s.src_k_minor ? std::vector<int64_t>{rows_extent, k_extent} : std::vector<int64_t>{k_extent, rows_extent},
                       -3, 3, 7);
  b.arrays["g"] = make(DType::I32, {rows_extent}, 0, int(s.groups) - 1, 11);
  const CType acc = cuda::segment_sum_acc_type(t);
  cuda::SegmentSumStats st;
  NDArray got = cuda::segment_sum(b.arrays["X"], b.arrays["g"], s, acc, 0, &st);
  EXPECT_EQ(st.path, path);
  EXPECT_EQ(got.dtype, storage_type_of(acc));
  if (s.rows.size() == 0) {  // an empty reduction: zeros of the stage query's shape
    EXPECT_EQ(got.shape, (s.group_rows ? std::vector<int64_t>{s.groups, s.k.end} : std::vector<int64_t>{s.k.end, s.groups}));
    for (std::byte x : got.data) EXPECT_EQ(x, std::byte{0});
    return;
  }
  auto stage = prepare(Source{"stage", stage_text(s)}, b);
  RunOptions o;
  o.backend = Backend::Cpu;
  Results want = execute(*stage, o, nullptr);
  ASSERT_EQ(got.shape, want.dense[0].shape);
  ASSERT_EQ(got.dtype, want.dense[0].dtype);
  EXPECT_EQ(got.data, want.dense[0].data);
}

}  // namespace

TEST(SegmentSumGpu, EveryOrientationAndPathMatchesTheStageQuery) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::I32})
    for (bool k_minor : {true, false})
      for (bool group_rows : {true, false})
        for (auto [groups, path] : {std::pair<int64_t, Path>{1, Path::Tiled}, {16, Path::Tiled}, {300, Path::Tiled}, {5000, Path::Direct}}) {
          // Ranges not starting at 0 and not multiples of 32; k entries below 5 stay 0.
          cuda::SegmentSumShape s{k_minor, group_rows, groups, {7, 1490}, {5, 70}};
          check(t, s, 1501, 71, path);
        }
}

TEST(SegmentSumGpu, OtherElementTypes) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::F16, DType::BF16, DType::F64, DType::I8, DType::I64})
    for (bool k_minor : {true, false}) {
      check(t, cuda::SegmentSumShape{k_minor, true, 16, {0, 1000}, {0, 40}}, 1000, 40, Path::Tiled);
      // 200 groups of 8-byte sums no longer fit one shared copy per warp (about 170 do): direct path.
      const bool wide = dtype_size(storage_type_of(cuda::segment_sum_acc_type(t))) == 8;
      check(t, cuda::SegmentSumShape{k_minor, false, 200, {1, 999}, {3, 40}}, 1000, 40, wide ? Path::Direct : Path::Tiled);
    }
}

TEST(SegmentSumGpu, EmptyRanges) {
  SKIP_WITHOUT_GPU();
  check(DType::F32, cuda::SegmentSumShape{true, true, 16, {5, 5}, {0, 40}}, 100, 40, Path::Empty);
  check(DType::F32, cuda::SegmentSumShape{false, false, 16, {5, 5}, {0, 40}}, 100, 40, Path::Empty);
}

TEST(SegmentSumGpu, PushdownQueriesEndToEndMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 700, N = 500, K = 96;
  const std::string q2 = "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; } C[Pzip[i], Rzip[j]] += accum; }";
  const std::string q4 =
      "where (i, j) when (Pzip[i] == Rzip[j]) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; } AreaTotal[Pzip[i]] += accum; }";
  const std::string q2t = "where (i in [3, 690), j in [1, 480)) { accum = 0; reduce (k in [2, 90)) { accum += P[k, i] * R[j, k]; } "
                          "C[Pzip[i], Rzip[j]] += accum; }";
  for (DType t : {DType::F32, DType::I32})
    for (int q = 0; q < 3; ++q) {
      const std::string& text = q == 0 ? q2 : q == 1 ? q4 : q2t;
      SCOPED_TRACE(text + " " + std::string(dtype_name(t)));
      const bool transposed = q == 2;
      Bindings b;
      b.arrays["P"] = make(t, transposed ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, -3, 3, 1);
      b.arrays["R"] = make(t, transposed ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N}, -3, 3, 2);
      b.arrays["Pzip"] = make(DType::I32, {M}, 0, 15, 3);
      b.arrays["Rzip"] = make(DType::I32, {N}, 0, 15, 4);
      auto p = prepare(Source{"q.mmlt", text}, b);
      ASSERT_TRUE(p->program.has_value()) << "push-down applies";
      RunOptions cpu, gpu;
      cpu.backend = Backend::Cpu;
      gpu.backend = Backend::Gpu;
      RunReport rep;
      Results want = execute(*p, cpu, nullptr), got = execute(*p, gpu, &rep);
      EXPECT_EQ(rep.backend, "gpu");
      ASSERT_EQ(got.dense[0].shape, want.dense[0].shape);
      EXPECT_EQ(got.dense[0].data, want.dense[0].data);
    }
}

#endif  // GAMUT_HAVE_CUDA
