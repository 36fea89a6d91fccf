// Partition and merge (src/partition, issue 14) on the CPU engine: every output operator run in
// 2, 3 and 7 parts one after another gives exactly the unpartitioned run's result (integer-valued
// data, so sums are exact whatever the order). The same merge runs under the GPU engine's parts.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu/engine.h"
#include "driver/pipeline.h"
#include "partition/partition.h"
#include "partition_cases.h"
#include "rewrite/list_provenance.h"

using namespace gamut;
using namespace gamut::partition_cases;

namespace {

bool same_bytes(const NDArray& x, const NDArray& y) {
  return x.dtype == y.dtype && x.shape == y.shape && x.data == y.data;
}

bool same_table(const Table& x, const Table& y) {
  if (x.rows != y.rows || x.columns.size() != y.columns.size()) return false;
  for (size_t c = 0; c < x.columns.size(); ++c)
    if (x.columns[c].dtype != y.columns[c].dtype || x.columns[c].data != y.columns[c].data ||
        x.columns[c].name != y.columns[c].name)
      return false;
  return true;
}

bool any_nonzero(const Results& r) {
  for (const NDArray& a : r.dense)
    for (std::byte x : a.data)
      if (x != std::byte{0}) return true;
  for (const Table& t : r.lists)
    if (t.rows > 0) return true;
  return false;
}

}  // namespace

TEST(Partition, EveryOutputOperatorMergesToTheWholeRun) {
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    const Instance& inst = prep->instance;
    const Results whole = run_cpu(inst, 1);
    ASSERT_TRUE(any_nonzero(whole)) << c.name;
    for (int parts : {2, 3, 7}) {
      Partition used;
      int runs = 0;
      const Results merged = run_in_parts(
          inst, parts,
          [&](const Instance& part) {
            ++runs;
            return run_cpu(part, 2);
          },
          &used);
      EXPECT_EQ(used.parts(), parts) << c.name << ": " << used.why;
      if (std::string(c.name) == "top_per_j_wide") EXPECT_EQ(used.axis, AxisRole::Col);  // per j groups kept whole
      EXPECT_EQ(runs, used.parts()) << c.name;
      ASSERT_EQ(merged.dense.size(), whole.dense.size());
      for (size_t d = 0; d < whole.dense.size(); ++d)
        EXPECT_TRUE(same_bytes(merged.dense[d], whole.dense[d])) << c.name << " in " << parts << " parts, output " << d;
      ASSERT_EQ(merged.lists.size(), whole.lists.size());
      for (size_t l = 0; l < whole.lists.size(); ++l)
        EXPECT_TRUE(same_table(merged.lists[l], whole.lists[l]))
            << c.name << " in " << parts << " parts: " << merged.lists[l].rows << " rows against "
            << whole.lists[l].rows;
    }
  }
}

TEST(Partition, WideQueriesSplitColumnsAndUnsplittableOnesRunWhole) {
  auto wide = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 8, 200, 3}), false);
  EXPECT_EQ(choose_partition(wide->instance, 4).axis, AxisRole::Col);
  auto tall = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 200, 8, 3}), false);
  EXPECT_EQ(choose_partition(tall->instance, 4).axis, AxisRole::Row);
  // (Every `=` store indexes both i and j: the language requires it, so either axis splits.)
  auto flat = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 1, 1, 3}), false);
  Partition none = choose_partition(flat->instance, 4);
  EXPECT_EQ(none.parts(), 1);
  EXPECT_NE(none.why.find("too short"), std::string::npos) << none.why;
  EXPECT_NE(describe_partition(none).find("one part"), std::string::npos);
  EXPECT_EQ(describe_partition(choose_partition(tall->instance, 2)), "partition: 2 parts along i (0..100, 100..200)\n");
  // More parts than rows: one row each.
  auto tiny = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 3, 2, 3}), false);
  EXPECT_EQ(choose_partition(tiny->instance, 8).parts(), 3);
}

TEST(Partition, ProvenanceColumnsFollowTheKeyAndThePair) {
  auto prep = prepare(Source{"q.mmlt", kCases[7].text}, bindings(kCases[7]), false);
  const Plan pp = with_list_provenance(prep->plan);
  ASSERT_EQ(pp.lists[0].columns.size(), prep->plan.lists[0].columns.size() + kProvenanceColumnCount);
  EXPECT_TRUE(has_provenance(pp.lists[0]));
  EXPECT_FALSE(has_provenance(prep->plan.lists[0]));
  Instance inst = prep->instance;
  inst.plan = &pp;
  const Results r = run_cpu(inst, 1);
  const Table& t = r.lists[0];
  ASSERT_EQ(t.rows, 17);
  // Column 0 is j, 1 the key s: the hidden key equals s, and the hidden j equals column 0.
  EXPECT_EQ(t.columns[2].data, t.columns[1].data);
  EXPECT_EQ(t.columns[5].data, t.columns[0].data);
}
