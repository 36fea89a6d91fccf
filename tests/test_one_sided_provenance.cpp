// The one-sided rewrite under list provenance (issue 40): a block of a partitioned run
// (Options::list_provenance) keeps the rewrite, and the last stage's top/bottom lists carry the
// hidden columns (rewrite/list_provenance.h): __key as the rewritten program computes it, and
// the query's own b, i, j. On integer-valued data the expanded distances equal the written ones
// exactly, so the rewritten and the written form give the same rows, hidden columns and all, and
// blocks merged by those columns equal the whole run. The CPU engine runs the rewrite as the
// GPU's does (it applies under bf16 inputs, or f32 under tf32, whichever engine runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "cpu/engine.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "driver/kernel_sources.h"
#include "integer_data.h"
#include "nvrtc_check.h"
#include "partition/blocks.h"
#include "rewrite/list_provenance.h"

using namespace gamut;

namespace {

const auto& ints = testdata::integer_valued;

// Values in [-2, 2] over K = 3: many equal distances, so that ties decide which rows survive.
const char* kKnn =
    "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
    " emit Nearest(i, j, dist) bottom 4 by dist per i; emit Closest(j, i, dist) bottom 9 by dist; }";

struct Case {
  DType type;
  const char* math;
  F32Math f32_math;
};
const Case kCases[] = {{DType::BF16, "ieee", F32Math::Ieee}, {DType::F32, "tf32", F32Math::Tf32}};

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

const Array& column(const Output& o, const std::string& name) {
  for (const auto& [n, a] : o.columns)
    if (n == name) return a;
  ADD_FAILURE() << o.name << " has no column " << name;
  return o.columns.front().second;
}

bool same_bytes(const Array& a, const Array& b) {
  return a.dtype == b.dtype && a.nbytes() == b.nbytes() && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

}  // namespace

// A library call with list provenance takes the rewrite, and its lists (hidden columns too)
// equal the written form's with provenance, row for row.
TEST(OneSidedProvenance, LibraryCallsKeepTheRewriteAndItsHiddenColumns) {
  const Query query = Query::compile(kKnn, "knn.mmlt");
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.math);
    NDArray q = ints(c.type, {13, 3}, -2, 2, 3), x = ints(c.type, {17, 3}, -2, 2, 5);
    Inputs in;
    in.array("Q", ArrayRef::host(q.data.data(), c.type, q.shape));
    in.array("X", ArrayRef::host(x.data.data(), c.type, x.shape));
    Options o;
    o.backend = "cpu";
    o.f32_math = c.math;
    o.list_provenance = true;
    const Result got = query.run(in, o);
    EXPECT_TRUE(has(got.stats.rewrites, "list-provenance"));
    ASSERT_FALSE(got.stats.rewrites.empty());
    EXPECT_EQ(got.stats.rewrites.back(), "expand-squares");
    o.as_written = true;
    const Result want = query.run(in, o);
    EXPECT_FALSE(has(want.stats.rewrites, "expand-squares"));
    o.as_written = false;
    o.list_provenance = false;
    const Result plain = query.run(in, o);
    for (const char* list : {"Nearest", "Closest"}) {
      SCOPED_TRACE(list);
      const Output &g = got[list], &w = want[list], &p = plain[list];
      ASSERT_EQ(g.rows, w.rows);
      ASSERT_EQ(g.rows, p.rows);
      ASSERT_GT(g.rows, 0);
      ASSERT_EQ(g.columns.size(), 7u);
      ASSERT_EQ(w.columns.size(), 7u);
      for (size_t k = 0; k < w.columns.size(); ++k) {
        EXPECT_EQ(g.columns[k].first, w.columns[k].first);
        EXPECT_TRUE(same_bytes(g.columns[k].second, w.columns[k].second)) << w.columns[k].first;
      }
      // The hidden columns are the query's i, j and key; the own columns are the plain call's.
      EXPECT_TRUE(same_bytes(column(g, "__i"), column(g, "i")));
      EXPECT_TRUE(same_bytes(column(g, "__j"), column(g, "j")));
      EXPECT_TRUE(same_bytes(column(g, "__key"), column(g, "dist")));
      for (size_t k = 0; k < p.columns.size(); ++k) EXPECT_TRUE(same_bytes(g.columns[k].second, p.columns[k].second));
    }
  }
}

namespace {

// Rows [b, e) of a 2-D array.
NDArray rows_of(const NDArray& a, int64_t b, int64_t e) {
  NDArray out = NDArray::zeros(a.dtype, {e - b, a.shape[1]});
  const size_t row = size_t(a.shape[1]) * dtype_size(a.dtype);
  std::memcpy(out.data.data(), a.data.data() + size_t(b) * row, size_t(e - b) * row);
  return out;
}

// One block as Query::run binds it with list provenance: the plan with provenance bound, the
// one-sided rewrite made of the plan without it, its last stage carrying the hidden columns
// (`carry` false: the rewrite as a call without provenance makes it).
std::unique_ptr<Prepared> block_program(const Source& src, const Plan& plain, const Plan& with, Bindings b,
                                        F32Math math, bool carry = true) {
  auto bound = prepare(src, b, plain, false);
  std::optional<BoundRewrite> rw = bound_rewrite(plain, bound->instance, src, b, RewriteChoice{false, true, math});
  EXPECT_TRUE(rw.has_value());
  if (!rw) return nullptr;
  if (carry) {
    EXPECT_TRUE(carry_list_provenance(*rw, plain));
    EXPECT_TRUE(rw->program.stages.back().list_provenance);
  }
  return prepare(src, std::move(b), carry ? with : plain, std::move(*rw));
}

Results run_block(const Source& src, const Plan& plain, const Plan& with, Bindings b, F32Math math) {
  auto prep = block_program(src, plain, with, std::move(b), math);
  if (!prep) return {};
  RunOptions ro;
  ro.backend = Backend::Cpu;
  ro.threads = 2;
  return execute(*prep, ro, nullptr);
}

}  // namespace

// Blocks of Q's rows and X's rows (a grid, as gamut.dask cuts it), each run as the rewritten
// program with provenance, moved to whole coordinates and merged by the hidden columns: the
// whole run's lists, which the global bottom 9 with its ties checks across column blocks.
TEST(OneSidedProvenance, RewrittenBlocksMergeToTheWholeRun) {
  const Source src{"knn.mmlt", kKnn};
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.math);
    Bindings whole;
    whole.arrays["Q"] = ints(c.type, {23, 3}, -2, 2, 3);
    whole.arrays["X"] = ints(c.type, {19, 3}, -2, 2, 5);
    const Plan plain = plan_with_rewrites(src, type_env(whole));
    const Plan with = with_list_provenance(plain);
    const BlockLayout L = block_layout(with);
    ASSERT_TRUE(L.row_splits && L.col_splits) << L.row_why << L.col_why;
    auto written = prepare(src, whole, plain, false);
    const Results want = run_cpu(written->instance, 1);
    const std::vector<int64_t> limits = written->instance.list_limits;
    for (auto [rows, cols] : {std::pair{3, 2}, {2, 3}, {1, 4}}) {
      SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols) + " blocks");
      std::vector<Results> line_blocks;
      for (int r = 0; r < rows; ++r) {
        const int64_t r0 = 23 * r / rows, r1 = 23 * (r + 1) / rows;
        std::vector<Results> line;
        for (int k = 0; k < cols; ++k) {
          const int64_t c0 = 19 * k / cols, c1 = 19 * (k + 1) / cols;
          Bindings b;
          b.arrays["Q"] = rows_of(whole.arrays["Q"], r0, r1);
          b.arrays["X"] = rows_of(whole.arrays["X"], c0, c1);
          Results res = run_block(src, plain, with, std::move(b), c.f32_math);
          ASSERT_EQ(res.lists.size(), 2u);
          for (const Table& t : res.lists) ASSERT_EQ(t.columns.size(), 7u) << "the hidden columns";
          to_whole_coordinates(with, L, res, r0, c0);
          line.push_back(std::move(res));
        }
        line_blocks.push_back(merge_blocks(with, L, limits, AxisRole::Col, std::move(line)));
      }
      Results got = merge_blocks(with, L, limits, AxisRole::Row, std::move(line_blocks));
      ASSERT_EQ(got.lists.size(), want.lists.size());
      for (size_t l = 0; l < want.lists.size(); ++l) {
        const Table &g = got.lists[l], &w = want.lists[l];
        ASSERT_EQ(g.rows, w.rows) << w.columns[0].name;
        ASSERT_EQ(g.columns.size(), w.columns.size() + kProvenanceColumnCount);
        for (size_t k = 0; k < w.columns.size(); ++k)
          EXPECT_EQ(g.columns[k].data, w.columns[k].data) << "list " << l << " column " << w.columns[k].name;
      }
    }
  }
}

// explain under list provenance names the rewrite and shows the plan with the hidden columns;
// a rewrite whose last stage is not the query's own (aggregate push-down) carries none.
TEST(OneSidedProvenance, ExplainNamesTheRewriteAndOtherRewritesCarryNone) {
  NDArray q = ints(DType::BF16, {16, 8}, -3, 3, 1), x = ints(DType::BF16, {20, 8}, -3, 3, 2);
  Inputs in;
  in.array("Q", ArrayRef::host(q.data.data(), DType::BF16, q.shape));
  in.array("X", ArrayRef::host(x.data.data(), DType::BF16, x.shape));
  const Query query = Query::compile(kKnn, "knn.mmlt");
  Options o;
  o.backend = "cpu";
  o.list_provenance = true;
  const std::string e = query.explain(in, o);
  EXPECT_NE(e.find("rewrite expand-squares"), std::string::npos) << e;
  EXPECT_NE(e.find("__key"), std::string::npos) << e;
  EXPECT_NE(e.find("os_dot += Q[i, k] * X[j, k];"), std::string::npos) << e;

  Bindings b;
  b.arrays["A"] = ints(DType::F32, {40, 6}, -3, 3, 4);
  b.arrays["B"] = ints(DType::F32, {6, 30}, -3, 3, 6);
  b.arrays["g"] = ints(DType::I32, {40}, 0, 2, 7);
  b.arrays["h"] = ints(DType::I32, {30}, 0, 2, 8);
  const Source src{"q.mmlt", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }"};
  auto p = prepare(src, b, RewriteChoice{false, false});
  std::optional<BoundRewrite> rw = bound_rewrite(p->plan, p->instance, src, b);
  ASSERT_TRUE(rw.has_value());
  EXPECT_EQ(rw->name, "aggregate-pushdown");
  EXPECT_FALSE(carry_list_provenance(*rw, p->plan));
  EXPECT_FALSE(rw->program.stages.back().list_provenance);
}

// The GPU kernels of a block's program (kernel_sources, as explain --source lists them): the last
// stage's main kernel and its selections carry the hidden columns, unlike the same program's
// without provenance, and every kernel compiles with NVRTC for sm_90a.
TEST(OneSidedProvenance, TheBlockStageKernelsCompile) {
  const Source src{"knn.mmlt", kKnn};
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.math);
    Bindings b;
    b.arrays["Q"] = ints(c.type, {300, 64}, -2, 2, 3);
    b.arrays["X"] = ints(c.type, {700, 64}, -2, 2, 5);
    const Plan plain = plan_with_rewrites(src, type_env(b));
    const Plan with = with_list_provenance(plain);
    auto prep = block_program(src, plain, with, b, c.f32_math);
    auto bare = block_program(src, plain, with, b, c.f32_math, false);
    ASSERT_TRUE(prep && bare);
    const std::vector<KernelSource> ks =
        kernel_sources(*prep, testnvrtc::kH100Sms, testnvrtc::kH100Smem, "", false, c.f32_math);
    const std::vector<KernelSource> bs =
        kernel_sources(*bare, testnvrtc::kH100Sms, testnvrtc::kH100Smem, "", false, c.f32_math);
    ASSERT_EQ(ks.size(), bs.size());
    int differ = 0;
    for (size_t k = 0; k < ks.size(); ++k) {
      SCOPED_TRACE(ks[k].name);
      EXPECT_EQ(ks[k].name, bs[k].name);
      const bool last = ks[k].name.rfind("stage" + std::to_string(prep->program->stages.size()) + "-", 0) == 0;
      if (ks[k].name.find("select") == std::string::npos) differ += last && ks[k].source != bs[k].source;
      if (!last) EXPECT_EQ(ks[k].source, bs[k].source);
#if GAMUT_HAVE_CUDA
      testnvrtc::compile(ks[k].source, "sm_90a");
#endif
    }
    EXPECT_EQ(differ, 1) << "the last stage's main kernel emits the hidden columns";
  }
}
