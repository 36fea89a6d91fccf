// Blocks (src/partition/blocks.h, issue 40) on the CPU engine: every output operator run as a
// grid of separate queries on blocks of the inputs (row blocks of A and g, column blocks of B
// and h), moved to whole coordinates and merged (along j within each row of blocks, then along
// i) gives exactly the whole run's result (integer-valued data: sums are exact in any order).
// Options::list_provenance, which the blocks run with, returns the hidden columns.
#include <gamut/gamut.h>
#include <gtest/gtest.h>

#include <cstring>

#include "cpu/engine.h"
#include "driver/pipeline.h"
#include "partition/blocks.h"
#include "partition/partition.h"
#include "partition_cases.h"
#include "rewrite/list_provenance.h"

using namespace gamut;
using namespace gamut::partition_cases;

namespace {

// Rows [b, e) of `a` along dimension `dim` (a copy).
NDArray slice(const NDArray& a, int dim, int64_t b, int64_t e) {
  NDArray out;
  out.dtype = a.dtype;
  out.shape = a.shape;
  out.shape[size_t(dim)] = e - b;
  int64_t outer = 1, inner = int64_t(dtype_size(a.dtype));
  for (int k = 0; k < dim; ++k) outer *= a.shape[size_t(k)];
  for (size_t k = size_t(dim) + 1; k < a.shape.size(); ++k) inner *= a.shape[k];
  std::vector<std::byte> bytes;
  for (int64_t o = 0; o < outer; ++o) {
    const std::byte* from = a.data.data() + (o * a.shape[size_t(dim)] + b) * inner;
    bytes.insert(bytes.end(), from, from + (e - b) * inner);
  }
  out.data = Bytes(std::move(bytes));
  return out;
}

std::vector<int64_t> cuts(int64_t n, int parts) {
  std::vector<int64_t> at;
  for (int p = 0; p <= parts; ++p) at.push_back(n * p / parts);
  return at;
}

struct Blocked {
  Results merged;
  int runs = 0;
};

// The query of `text` on `whole` as a grid of rows x cols blocks, each run by the CPU engine.
Blocked run_as_blocks(const std::string& text, const Bindings& whole, int rows, int cols) {
  const Source src{"q.mmlt", text};
  const Plan plan = with_list_provenance(plan_with_rewrites(src, type_env(whole)));
  const BlockLayout L = block_layout(plan);
  EXPECT_TRUE(rows == 1 || L.row_splits) << L.row_why;
  EXPECT_TRUE(cols == 1 || L.col_splits) << L.col_why;
  auto probe = prepare(src, whole, plan, false);
  const std::vector<int64_t> limits = probe->instance.list_limits;
  const int64_t m = probe->instance.row.size(), n = probe->instance.col.size();
  const std::vector<int64_t> ri = cuts(m, rows), ci = cuts(n, cols);
  Blocked out;
  std::vector<Results> row_blocks;
  for (int r = 0; r < rows; ++r) {
    std::vector<Results> line;
    for (int c = 0; c < cols; ++c) {
      Bindings b = whole;
      for (size_t o = 0; o < plan.operands.size(); ++o) {
        NDArray& a = b.arrays[plan.operands[o].name];
        if (rows > 1 && L.operand_row_dim[o] >= 0) a = slice(a, L.operand_row_dim[o], ri[size_t(r)], ri[size_t(r) + 1]);
        if (cols > 1 && L.operand_col_dim[o] >= 0) a = slice(a, L.operand_col_dim[o], ci[size_t(c)], ci[size_t(c) + 1]);
      }
      auto prep = prepare(src, std::move(b), plan, false);
      Results res = run_cpu(prep->instance, 2);
      to_whole_coordinates(plan, L, res, ri[size_t(r)], ci[size_t(c)]);
      line.push_back(std::move(res));
      ++out.runs;
    }
    row_blocks.push_back(merge_blocks(plan, L, limits, AxisRole::Col, std::move(line)));
  }
  out.merged = merge_blocks(plan, L, limits, AxisRole::Row, std::move(row_blocks));
  for (size_t l = 0; l < plan.lists.size(); ++l)
    if (has_provenance(plan.lists[l]))
      out.merged.lists[l].columns.resize(plan.lists[l].columns.size() - kProvenanceColumnCount);
  return out;
}

bool same_table(const Table& x, const Table& y) {
  if (x.rows != y.rows || x.columns.size() != y.columns.size()) return false;
  for (size_t c = 0; c < x.columns.size(); ++c)
    if (x.columns[c].dtype != y.columns[c].dtype || x.columns[c].data != y.columns[c].data ||
        x.columns[c].name != y.columns[c].name)
      return false;
  return true;
}

}  // namespace

TEST(Blocks, EveryOutputOperatorMergesToTheWholeRun) {
  for (const Case& c : kCases) {
    const Bindings b = bindings(c);
    auto prep = prepare(Source{"q.mmlt", c.text}, b, false);
    const Results whole = run_cpu(prep->instance, 1);
    for (auto [rows, cols] : {std::pair{3, 1}, {1, 2}, {2, 3}, {7, 4}}) {
      const Blocked got = run_as_blocks(c.text, b, rows, cols);
      EXPECT_EQ(got.runs, rows * cols);
      ASSERT_EQ(got.merged.dense.size(), whole.dense.size());
      for (size_t d = 0; d < whole.dense.size(); ++d) {
        const NDArray& x = got.merged.dense[d];
        EXPECT_TRUE(x.dtype == whole.dense[d].dtype && x.shape == whole.dense[d].shape && x.data == whole.dense[d].data)
            << c.name << " in " << rows << " x " << cols << " blocks, output " << d;
      }
      ASSERT_EQ(got.merged.lists.size(), whole.lists.size());
      for (size_t l = 0; l < whole.lists.size(); ++l)
        EXPECT_TRUE(same_table(got.merged.lists[l], whole.lists[l]))
            << c.name << " in " << rows << " x " << cols << " blocks: " << got.merged.lists[l].rows << " rows against "
            << whole.lists[l].rows;
    }
  }
}

// concatenate_disjoint (the Python binding's merge of top / bottom lists whose groups a split
// keeps whole, read in place) gives merge_blocks' table: per i lists in row blocks, per j lists in
// column blocks, with the provenance columns, blocks of 0 rows among them.
TEST(Blocks, DisjointListsConcatenateAsMergeBlocksDoes) {
  for (const char* name : {"bottom_per_i", "top_per_j_no_axis_columns", "top_per_j_wide"}) {
    const Case* c = nullptr;
    for (const Case& x : kCases)
      if (std::string(x.name) == name) c = &x;
    ASSERT_NE(c, nullptr) << name;
    const Bindings whole = bindings(*c);
    const Source src{"q.mmlt", c->text};
    const Plan plan = with_list_provenance(plan_with_rewrites(src, type_env(whole)));
    const BlockLayout L = block_layout(plan);
    const bool by_rows = plan.lists[0].per == PerGroup::Row;
    const AxisRole axis = by_rows ? AxisRole::Row : AxisRole::Col;
    auto probe = prepare(src, whole, plan, false);
    const int64_t extent = by_rows ? probe->instance.row.size() : probe->instance.col.size();
    // Four blocks, the second empty (a cut at the same place twice).
    const std::vector<int64_t> at = {0, extent / 3, extent / 3, 2 * extent / 3, extent};
    std::vector<Results> blocks;
    for (size_t p = 0; p + 1 < at.size(); ++p) {
      Bindings b = whole;
      for (size_t o = 0; o < plan.operands.size(); ++o) {
        const int dim = by_rows ? L.operand_row_dim[o] : L.operand_col_dim[o];
        NDArray& a = b.arrays[plan.operands[o].name];
        if (dim >= 0) a = slice(a, dim, at[p], at[p + 1]);
      }
      if (at[p] == at[p + 1]) {  // (an empty block: the engine needs an extent of 1 or more)
        Results none = run_cpu(prepare(src, whole, plan, false)->instance, 1);
        for (Column& col : none.lists[0].columns) col.data.clear();
        none.lists[0].rows = 0;
        blocks.push_back(std::move(none));
        continue;
      }
      Results r = run_cpu(prepare(src, std::move(b), plan, false)->instance, 1);
      to_whole_coordinates(plan, L, r, by_rows ? at[p] : 0, by_rows ? 0 : at[p]);
      blocks.push_back(std::move(r));
    }
    std::vector<std::vector<ColumnView>> views;
    std::vector<int64_t> rows;
    for (const Results& r : blocks) {
      views.emplace_back();
      for (const Column& col : r.lists[0].columns) views.back().push_back(ColumnView{col.data.data(), col.data.size()});
      rows.push_back(r.lists[0].rows);
    }
    const Table got = concatenate_disjoint(plan.lists[0], views, rows);
    const Results want = merge_blocks(plan, L, probe->instance.list_limits, axis, std::move(blocks));
    EXPECT_GT(got.rows, 0) << name;
    EXPECT_TRUE(same_table(got, want.lists[0])) << name << ": " << got.rows << " rows against " << want.lists[0].rows;
  }
}

TEST(Blocks, ExtentsOfIndexVectorsArePaddedToTheLargest) {
  // g's largest value sits in the last rows only: the first blocks' Hist is shorter.
  Bindings b = bindings(kCases[3]);
  b.arrays.erase("h");
  NDArray& g = b.arrays["g"];
  for (int64_t r = 0; r < g.shape[0]; ++r) g.as<int32_t>()[r] = r < g.shape[0] - 2 ? int32_t(r % 2) : 9;
  const char* text =
      "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } Hist[g[i]] max= s; N[g[i], j] += 1; }";
  auto prep = prepare(Source{"q.mmlt", text}, b, false);
  const Results whole = run_cpu(prep->instance, 1);
  ASSERT_EQ(whole.dense[0].shape, std::vector<int64_t>{10});
  const Blocked got = run_as_blocks(text, b, 4, 2);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(got.merged.dense[d].shape, whole.dense[d].shape) << d;
    EXPECT_TRUE(got.merged.dense[d].data == whole.dense[d].data) << d;
  }
}

TEST(Blocks, AxesThatCannotSplitSayWhy) {
  Bindings b = bindings(kCases[0]);
  auto layout = [&](const char* text) {
    return block_layout(with_list_provenance(plan_with_rewrites(Source{"q.mmlt", text}, type_env(b))));
  };
  const BlockLayout self = layout("where (i, j) { s = 0; reduce (k) { s += A[i, k] * A[j, k]; } C[i, j] = s; }");
  EXPECT_FALSE(self.row_splits);
  EXPECT_FALSE(self.col_splits);
  EXPECT_NE(self.row_why.find("A is read both along i"), std::string::npos) << self.row_why;
  const BlockLayout mask =
      layout("where (i, j) when (i != j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }");
  EXPECT_FALSE(mask.row_splits);
  EXPECT_NE(mask.row_why.find("reads the value of i"), std::string::npos) << mask.row_why;
  const BlockLayout ranged =
      layout("where (i in [1, M), j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }");
  EXPECT_FALSE(ranged.row_splits);
  EXPECT_TRUE(ranged.col_splits) << ranged.col_why;
  EXPECT_NE(ranged.row_why.find("range"), std::string::npos) << ranged.row_why;
  const BlockLayout plain =
      layout("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(i, j + 1, s); }");
  EXPECT_TRUE(plain.row_splits);
  EXPECT_FALSE(plain.col_splits);  // j + 1 is not j: a shift cannot fix it
  EXPECT_EQ(plain.list_row_columns[0], std::vector<int>{0});
  EXPECT_EQ(plain.operand_row_dim, (std::vector<int>{0, -1}));
  EXPECT_EQ(plain.operand_col_dim, (std::vector<int>{-1, 1}));
}

TEST(Blocks, TheLibraryReturnsProvenanceColumnsWhenAsked) {
  const gamut::Query q = gamut::Query::compile(
      "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } emit L(j, s) top 5 by s; if (s > 0) emit P(i); }");
  const Bindings b = bindings(kCases[0]);
  gamut::Inputs in;
  for (const char* n : {"A", "B"}) {
    const NDArray& a = b.arrays.at(n);
    in.array(n, gamut::ArrayRef::host(a.data.data(), a.dtype, a.shape));
  }
  gamut::Options o;
  o.backend = "cpu";
  const gamut::Result plain = q.run(in, o);
  o.list_provenance = true;
  const gamut::Result with = q.run(in, o);
  ASSERT_EQ(plain["L"].columns.size(), 2u);
  ASSERT_EQ(with["L"].columns.size(), 6u);
  EXPECT_EQ(with["L"].columns[2].first, "__key");
  EXPECT_EQ(with["L"].columns[4].first, "__i");
  EXPECT_EQ(with["P"].columns.size(), 1u);  // plain lists have no provenance
  // The hidden key is the key (s), the hidden j is column j, and the rows are the same.
  EXPECT_EQ(std::memcmp(with["L"].columns[2].second.data, with["L"].columns[1].second.data, 5 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(with["L"].columns[5].second.data, with["L"].columns[0].second.data, 5 * sizeof(int32_t)), 0);
  EXPECT_EQ(std::memcmp(with["L"].columns[1].second.data, plain["L"].columns[1].second.data, 5 * sizeof(float)), 0);
}
