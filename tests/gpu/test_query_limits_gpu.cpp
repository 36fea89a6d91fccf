// Queries exactly at the nesting limits (tests/query_limits_cases.h) on the GPU: the generated
// kernels compile and give the reference values (integer data: exact).
#include <gtest/gtest.h>

#include "gpu_skip.h"

#include "../query_limits_cases.h"
#include "driver/pipeline.h"

using namespace gamut;
using namespace gamut::limits;

TEST(GpuQueryLimits, EveryCaseAtTheLimitsMatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const NDArray A = make_input("A"), B = make_input("B"), J = make_input("J");
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::string text = c.text(0);
    Bindings b;
    for (const char* n : {"A", "B", "J"})
      if (text.find(std::string(n) + "[") != std::string::npos) b.arrays[n] = make_input(n);
    auto p = prepare(Source{"limit.mmlt", text}, b);
    RunOptions o;
    o.backend = Backend::Gpu;
    Results r = execute(*p, o, nullptr);
    ASSERT_EQ(r.dense.size(), 1u);
    const NDArray& C = r.dense[0];
    ASSERT_EQ(C.shape, (std::vector<int64_t>{kM, kN}));
    bool some_nonzero = false;
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        const int64_t want = c.expect(A, B, J, i, j);
        some_nonzero |= want != 0;
        EXPECT_EQ(C.get_i64(i * kN + j), want) << "C[" << i << ", " << j << "]";
      }
    EXPECT_TRUE(some_nonzero);
  }
}
