// Partition and merge (src/partition, issue 14) under the GPU engine: every output operator run
// as 2 and 5 parts one after another on one GPU (standing in for several) gives the CPU engine's
// unpartitioned result bit for bit (integer-valued data).
#include <gtest/gtest.h>

#include "../partition_cases.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#include "gpu_skip.h"
#include "partition/partition.h"
#include "table_compare.h"

using namespace gamut;
using namespace gamut::partition_cases;

TEST(GpuPartition, PartsOnOneGpuMatchTheWholeCpuRun) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    const Instance& inst = prep->instance;
    const Results want = run_cpu(inst, 1);
    for (int parts : {2, 5}) {
      Partition used;
      const Results got = run_in_parts(
          inst, parts, [](const Instance& part) { return cuda::run_gpu(part, {}, nullptr); }, &used);
      ASSERT_EQ(used.parts(), parts) << c.name << ": " << used.why;
      ASSERT_EQ(got.dense.size(), want.dense.size());
      for (size_t d = 0; d < want.dense.size(); ++d)
        EXPECT_TRUE(got.dense[d].data == want.dense[d].data && got.dense[d].shape == want.dense[d].shape)
            << c.name << " in " << parts << " parts, output " << d;
      ASSERT_EQ(got.lists.size(), want.lists.size());
      for (size_t l = 0; l < want.lists.size(); ++l)
        EXPECT_TRUE(test::same_table_bits(want.lists[l], got.lists[l], false)) << c.name << " in " << parts << " parts";
    }
  }
}
