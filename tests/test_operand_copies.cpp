// Sizes of the tensor-core operand copies (src/cuda/engine/operand_copies.h, stages/k_major_copy.h)
// without a GPU: rows of whole 16-byte chunks for 1-, 2- and 4-byte elements, the memory check's
// bound covers a copy in either orientation, and sizes from user input are checked before they
// are multiplied. (The copies themselves run in GpuTensorQueries.DeviceInputsOffSixteenBytes.)
#include <gtest/gtest.h>

#if GAMUT_HAVE_CUDA
#include <cstdint>

#include "core/error.h"
#include "cuda/engine/operand_copies.h"
#include "driver/pipeline.h"
#include "gpu/tensor_queries.h"

using namespace gamut;
using namespace gamut::cuda;
namespace tq = gamut::testtcq;

TEST(OperandCopies, RowsAreWholeSixteenByteChunks) {
  KMajorSource s;
  s.p_extent = 3;
  s.k_extent = 4097;
  for (const auto& [e, pitch] : {std::pair{1, 4112}, std::pair{2, 4104}, std::pair{4, 4100}}) {
    s.element_bytes = e;
    EXPECT_EQ(k_major_pitch(s), pitch) << e << "-byte elements";
    EXPECT_EQ(k_major_pitch(s) * e % 16, 0);
    EXPECT_EQ(k_major_bytes(s), size_t(3 * pitch * e));
  }
  s.k_extent = 0;  // (an empty operand still has one chunk per row)
  s.element_bytes = 2;
  EXPECT_EQ(k_major_pitch(s), 8);
}

TEST(OperandCopies, SizesFromUserInputAreCheckedBeforeTheyAreMultiplied) {
  KMajorSource s;
  s.element_bytes = 2;
  s.p_extent = int64_t(1) << 40;
  s.k_extent = int64_t(1) << 30;
  s.batch = 1 << 20;
  EXPECT_THROW(k_major_bytes(s), Error);
}

// The memory check's bound (both operands copied) is at least what the engine copies, in
// either orientation: a re-pitched X[k, i] has rows of i, a k-major copy rows of k.
TEST(OperandCopies, TheMemoryBoundCoversEitherOrientation) {
  for (const char* name : {"scaled_ki_kj", "scaled_ik_jk", "batched"}) {
    const tq::TcQuery* q = nullptr;
    for (const tq::TcQuery& x : tq::layout_queries())
      if (std::string(x.name) == name) q = &x;
    ASSERT_TRUE(q) << name;
    const tq::Sizes sz{33, 1025, 7};
    auto p = prepare(Source{std::string(name) + ".mmlt", q->text}, tq::bindings(*q, tq::maths()[0], sz), false);
    ASSERT_FALSE(p->program);
    const MathChoice m = executed_math(p->plan, F32Math::Ieee);
    const int64_t batch = p->plan.batched ? p->instance.batch : 1;
    int64_t largest = 0;
    for (const bool row : {true, false}) {
      const int64_t p_end = row ? p->instance.row.end : p->instance.col.end, k_end = p->instance.red.end;
      for (const bool kc : {true, false}) {  // rows along p (k contiguous) or along k
        KMajorSource s;
        s.element_bytes = 2;
        s.batch = batch;
        s.p_extent = kc ? p_end : k_end;
        s.k_extent = kc ? k_end : p_end;
        largest = std::max(largest, int64_t(k_major_bytes(s)));
      }
    }
    EXPECT_GE(operand_copies_bytes(p->instance, m), largest) << name;
    EXPECT_GT(operand_copies_bytes(p->instance, m), 0) << name;
  }
}
#endif
