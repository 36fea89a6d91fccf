// One-sided sums hoisted and squared differences expanded (rewrite/one_sided_sums.h): where the
// rewrite applies and where not, that its main stage lands on the tensor cores, and that its
// program computes on the CPU what the query as written computes (exactly on integer-valued
// data; within the cancellation bound of docs/tensor-cores.md on random data). No GPU needed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "integer_data.h"

using namespace gamut;

namespace {

const auto& ints = testdata::integer_valued;

const char* kKnn =
    "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
    " emit Nearest(i, j, dist) bottom 5 by dist per i; }";
const char* kCosine =
    "where (i, j) { dot = 0; nq = 0; nx = 0;"
    " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nx += X[j, k] * X[j, k]; }"
    " S[i, j] = dot / sqrt(nq * nx); }";

Bindings qx(DType t, int64_t m, int64_t n, int64_t k, int lo = -6, int hi = 6) {
  Bindings b;
  b.arrays["Q"] = ints(t, {m, k}, lo, hi, 3);
  b.arrays["X"] = ints(t, {n, k}, lo, hi, 5);
  return b;
}

RewriteChoice under(F32Math m, bool one_sided = true) { return RewriteChoice{true, one_sided, m}; }

// The rewrite's name, "" when none applies.
std::string rewrite_of(const std::string& text, const Bindings& b, const RewriteChoice& c) {
  auto p = prepare(Source{"q.mmlt", text}, b, c);
  return p->program && !p->plan.rewrites.empty() ? p->plan.rewrites.back() : "";
}

// The math of the rewritten program's main stage.
MathChoice main_math(const std::string& text, const Bindings& b, F32Math m) {
  auto p = prepare(Source{"q.mmlt", text}, b, under(m));
  EXPECT_TRUE(p->program && p->program->main_plan);
  return p->program && p->program->main_plan ? executed_math(*p->program->main_plan, m) : MathChoice{};
}

Results cpu(const Prepared& p) {
  RunOptions o;
  o.backend = Backend::Cpu;
  o.threads = 2;
  return execute(p, o, nullptr);
}

void expect_equal_tables(const Table& a, const Table& b) {
  ASSERT_EQ(a.rows, b.rows);
  ASSERT_EQ(a.columns.size(), b.columns.size());
  for (size_t c = 0; c < a.columns.size(); ++c) {
    SCOPED_TRACE("column " + a.columns[c].name);
    EXPECT_EQ(a.columns[c].data, b.columns[c].data);
  }
}

// Written form and rewritten program on the CPU: equal outputs (integer-valued data).
void expect_same_results(const std::string& text, const Bindings& b, F32Math m, const std::string& rewrite) {
  SCOPED_TRACE(text);
  auto written = prepare(Source{"q.mmlt", text}, b, under(m, false));
  auto rewritten = prepare(Source{"q.mmlt", text}, b, under(m));
  ASSERT_FALSE(written->program.has_value());
  ASSERT_TRUE(rewritten->program.has_value());
  EXPECT_EQ(rewritten->plan.rewrites.back(), rewrite);
  const Results want = cpu(*written), got = cpu(*rewritten);
  ASSERT_EQ(got.dense.size(), want.dense.size());
  for (size_t d = 0; d < want.dense.size(); ++d) {
    EXPECT_EQ(got.dense[d].shape, want.dense[d].shape);
    EXPECT_EQ(got.dense[d].data, want.dense[d].data) << "output " << written->plan.dense[d].name;
  }
  ASSERT_EQ(got.lists.size(), want.lists.size());
  for (size_t l = 0; l < want.lists.size(); ++l) expect_equal_tables(got.lists[l], want.lists[l]);
}

}  // namespace

TEST(OneSidedSums, SquaredDifferencesExpandWhereThePrecisionAllowsTensorCores) {
  // bf16 / f16 inputs: any f32_math; f32 inputs: tf32 and tf32x3 only.
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::BF16, 8, 9, 16), under(F32Math::Ieee)), "expand-squares");
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::F16, 8, 9, 16), under(F32Math::Ieee)), "expand-squares");
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::F32, 8, 9, 16), under(F32Math::Tf32)), "expand-squares");
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::F32, 8, 9, 16), under(F32Math::Tf32x3)), "expand-squares");
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::F32, 8, 9, 16), under(F32Math::Ieee)), "") << "IEEE f32 keeps the written form";
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::F64, 8, 9, 16), under(F32Math::Tf32)), "") << "no tensor-core math for f64";
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::I8, 8, 9, 16), under(F32Math::Tf32)), "") << "integer sums keep their form";
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::BF16, 8, 9, 16), under(F32Math::Ieee, false)), "") << "as_written";
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::BF16, 8, 9, 16), RewriteChoice{true, true, F32Math::Ieee}), "expand-squares");
  EXPECT_EQ(rewrite_of(kKnn, qx(DType::BF16, 8, 9, 16), RewriteChoice{false, false, F32Math::Ieee}), "");
  // The main stage is one sum of products on the tensor cores.
  EXPECT_EQ(main_math(kKnn, qx(DType::BF16, 8, 9, 16), F32Math::Ieee).math_name(), "bf16");
  EXPECT_EQ(main_math(kKnn, qx(DType::F32, 8, 9, 16), F32Math::Tf32).math_name(), "tf32");
  EXPECT_EQ(main_math(kKnn, qx(DType::F32, 8, 9, 16), F32Math::Tf32x3).math_name(), "tf32x3");
}

TEST(OneSidedSums, FormsThatExpand) {
  const Bindings b = qx(DType::BF16, 7, 6, 12);
  for (const char* body : {
           "dist += (Q[i, k] - X[j, k]) * (Q[i, k] - X[j, k]);",
           "dist += (Q[i, k] + X[j, k]) * (Q[i, k] + X[j, k]);",
           "dist += (X[j, k] - Q[i, k]) * (X[j, k] - Q[i, k]);",
           "let t = Q[i, k] - X[j, k]; dist += 3 * t * t;",
           "let t = Q[i, k] - X[j, k]; dist -= 0.5 * t * t;",
           "dist += pow(Q[i, k] - X[j, k], 2);",
           "dist += Q[i, k] * Q[i, k] - 2 * Q[i, k] * X[j, k] + X[j, k] * X[j, k];",
           "let t = 2 * Q[i, k] - X[j, k]; dist += t * t;",
           "let t = Q[i, k] - X[j, k]; dist += t * t; dist += Q[i, k] * X[j, k];",
       }) {
    const std::string text = std::string("where (i, j) { dist = 0; reduce (k) { ") + body +
                             " } emit Nearest(i, j, dist) bottom 3 by dist per i; }";
    SCOPED_TRACE(text);
    EXPECT_EQ(rewrite_of(text, b, under(F32Math::Ieee)), "expand-squares");
    EXPECT_TRUE(main_math(text, b, F32Math::Ieee).tensor_cores());
    expect_same_results(text, b, F32Math::Ieee, "expand-squares");
  }
}

TEST(OneSidedSums, FormsThatKeepTheirShape) {
  const Bindings b = [] {
    Bindings x = qx(DType::BF16, 7, 6, 12);
    x.arrays["w"] = ints(DType::BF16, {12}, 0, 3, 9);
    return x;
  }();
  for (const char* body : {
           "dist += w[k] * Q[i, k] * X[j, k];",                            // already one product
           "let t = Q[i, k] - X[j, k]; dist += abs(t);",                   // not a polynomial
           "let t = Q[i, k] - X[j, k]; dist += t * t * t;",                // cross terms of two kinds
           "let t = Q[i, k] - X[j, k]; dist += w[k] * t * t;",             // a per-k weight in bf16
           "let t = Q[i, k] - X[j, k]; dist = max(dist, t * t);",          // not a sum
           "let t = Q[i, k] - X[j, k]; if (t > 0) dist += t * t;",         // conditional
       }) {
    std::string text = std::string("where (i, j) { dist = 0; reduce (k) { ") + body +
                       " } emit Nearest(i, j, dist) bottom 3 by dist per i; }";
    SCOPED_TRACE(text);
    Bindings used = b;
    if (text.find("w[") == std::string::npos) used.arrays.erase("w");
    EXPECT_EQ(rewrite_of(text, used, under(F32Math::Tf32)), "");
  }
}

TEST(OneSidedSums, OneSidedAccumulatorsAreHoistedUnderEveryMath) {
  // Cosine similarity: nq and nx leave the pair loop; dot is one sum of products.
  for (DType t : {DType::F32, DType::BF16}) {
    const Bindings b = qx(t, 9, 11, 20, 1, 5);  // positive: no zero norms
    SCOPED_TRACE(dtype_name(t));
    EXPECT_EQ(rewrite_of(kCosine, b, under(F32Math::Ieee)), "hoist-one-sided");
    const MathChoice m = main_math(kCosine, b, F32Math::Ieee);
    EXPECT_TRUE(m.sum_of_products);
    EXPECT_EQ(m.math_name(), t == DType::F32 ? "ieee" : "bf16");
    if (t == DType::F32) expect_same_results(kCosine, b, F32Math::Ieee, "hoist-one-sided");  // (bf16: below)
    EXPECT_EQ(rewrite_of(kCosine, b, under(F32Math::Ieee, false)), "");
  }
  // Integer accumulators and one side only.
  const std::string ints_text =
      "where (i, j) { a: i32 = 0; c: i32 = 2; reduce (k) { a += Q[i, k] * X[j, k]; c += Q[i, k] - 1; }"
      " C[i, j] = a * c; }";
  expect_same_results(ints_text, qx(DType::I8, 5, 4, 9), F32Math::Ieee, "hoist-one-sided");
  const std::string col_only =
      "where (i, j) { a = 0; c = 0; reduce (k) { a += Q[i, k] * X[j, k]; c -= X[j, k] * X[j, k]; } C[i, j] = a + c; }";
  expect_same_results(col_only, qx(DType::F32, 5, 4, 9), F32Math::Ieee, "hoist-one-sided");
  // Nothing would be left in the pair loop: no rewrite.
  Bindings q_only = qx(DType::F32, 5, 4, 9);
  q_only.arrays.erase("X");
  q_only.arrays["R"] = ints(DType::F32, {4}, 0, 1, 3);
  EXPECT_EQ(rewrite_of("where (i, j) { a = 0; reduce (k) { a += Q[i, k] * Q[i, k]; } C[i, j] = a + R[j]; }", q_only,
                       under(F32Math::Ieee)),
            "");
}

// The main stage's query text ("" without a program).
std::string main_text(const std::string& text, const Bindings& b, F32Math m) {
  auto p = prepare(Source{"q.mmlt", text}, b, under(m));
  return p->program ? p->program->stages.back().text : "";
}

TEST(OneSidedSums, CosineNormsBecomeReciprocalFactorsOnTensorCores) {
  // `dot / sqrt(nq * nx)` becomes `(dot) * (os_rsq0[i] * os_rsq1[j])` where the main stage runs on
  // the tensor cores (bf16 inputs; f32 under tf32 / tf32x3); under IEEE f32 it stays as written.
  const Bindings bf = qx(DType::BF16, 9, 11, 20, 1, 5), f = qx(DType::F32, 9, 11, 20, 1, 5);
  for (const auto& [b, m] : {std::pair{bf, F32Math::Ieee}, std::pair{f, F32Math::Tf32}, std::pair{f, F32Math::Tf32x3}}) {
    const std::string t = main_text(kCosine, b, m);
    SCOPED_TRACE(t);
    EXPECT_NE(t.find("S[i, j] = (dot) * (os_rsq0[i] * os_rsq1[j]);"), std::string::npos);
    EXPECT_EQ(t.find("sqrt"), std::string::npos);
    EXPECT_EQ(rewrite_of(kCosine, b, under(m)), "hoist-one-sided");
    // On the CPU: the written form within a few units in the last place (|S| <= 1).
    auto written = prepare(Source{"q.mmlt", kCosine}, b, under(m, false));
    auto rewritten = prepare(Source{"q.mmlt", kCosine}, b, under(m));
    const NDArray want = cpu(*written).dense[0], got = cpu(*rewritten).dense[0];
    ASSERT_EQ(want.shape, got.shape);
    for (int64_t e = 0; e < 9 * 11; ++e) {
      const float w = want.as<float>()[e], g = got.as<float>()[e];
      EXPECT_GT(w, 0.f);
      EXPECT_NEAR(g, w, 4e-7f) << e;
    }
  }
  EXPECT_NE(main_text(kCosine, f, F32Math::Ieee).find("dot / sqrt(nq * nx)"), std::string::npos);
  // Either order of the product, as a top-N key, and both occurrences; a numerator of its own.
  const std::string top =
      "where (i, j) { dot = 0; nq = 0; nx = 0;"
      " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nx += X[j, k] * X[j, k]; }"
      " emit Similar(i, j, dot / sqrt(nx * nq) as cos) top 3 by 2 * dot / sqrt(nq * nx) per i; }";
  const std::string t = main_text(top, bf, F32Math::Ieee);
  EXPECT_NE(t.find("Similar(i, j, (dot) * (os_rsq0[i] * os_rsq1[j]) as cos) top 3 by (2 * dot) * (os_rsq0[i] * "
                   "os_rsq1[j]) per i"),
            std::string::npos)
      << t;
  // A parenthesised numerator (the plan's span starts inside the parentheses); a quotient inside a
  // larger expression.
  const std::string paren =
      "where (i, j) { dot = 0; nq = 0; nx = 0;"
      " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nx += X[j, k] * X[j, k]; }"
      " S[i, j] = ( dot + 1 ) / sqrt(nq * nx); T[i, j] = 1 - (dot) / sqrt ( (nq) * nx ) * 2; }";
  const std::string pt = main_text(paren, bf, F32Math::Ieee);
  EXPECT_NE(pt.find("S[i, j] = (( dot + 1 )) * (os_rsq0[i] * os_rsq1[j]);"), std::string::npos) << pt;
  EXPECT_NE(pt.find("T[i, j] = 1 - ((dot)) * (os_rsq0[i] * os_rsq1[j]) * 2;"), std::string::npos) << pt;
  // Two row sums: not a norm pair.
  const std::string rows =
      "where (i, j) { dot = 0; nq = 0; nr = 0;"
      " reduce (k) { dot += Q[i, k] * X[j, k]; nq += Q[i, k] * Q[i, k]; nr += Q[i, k]; }"
      " S[i, j] = dot / sqrt(nq * nr); }";
  EXPECT_NE(main_text(rows, bf, F32Math::Ieee).find("dot / sqrt(nq * nr)"), std::string::npos);
}

TEST(OneSidedSums, ExpandedProgramsAgreeExactlyOnIntegerData) {
  // Integer-valued data: every sum is exact in f32 both ways (|values| <= 6, K <= 64), ties and
  // all: the lists come out the same row for row.
  for (int64_t k : {1, 7, 64}) {
    SCOPED_TRACE("K = " + std::to_string(k));
    expect_same_results(kKnn, qx(DType::BF16, 13, 17, k), F32Math::Ieee, "expand-squares");
    expect_same_results(kKnn, qx(DType::F32, 13, 17, k), F32Math::Tf32, "expand-squares");
  }
  // Ranges, a `when` and a parameter kept; dense and list outputs.
  Bindings b = qx(DType::F16, 10, 12, 8);
  b.scalars["r"] = "40";
  expect_same_results(
      "where (i in [2, 9), j in [1, 12)) when (i != j) { dist = 1; reduce (k in [1, 7)) {"
      " let t = Q[i, k] - X[j, k]; dist += t * t; } D[i, j] = dist; if (dist < r) emit Close(i, j, dist); }",
      b, F32Math::Ieee, "expand-squares");
}

TEST(OneSidedSums, NaNOperandsGiveNaNAsWritten) {
  // The clamp at 0 of an expanded sum of squares must not turn NaN into 0 (fuzz seed 352333658:
  // `max(0.0, NaN)` is 0, since max ignores NaN). Row 1 of Q and column 2 of X hold a NaN.
  const std::string text =
      "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; } D[i, j] = dist; }";
  Bindings b = qx(DType::F32, 5, 4, 8);
  b.arrays["Q"].as<float>()[1 * 8 + 3] = NAN;
  b.arrays["X"].as<float>()[2 * 8 + 0] = NAN;
  auto written = prepare(Source{"q.mmlt", text}, b, under(F32Math::Tf32x3, false));
  auto rewritten = prepare(Source{"q.mmlt", text}, b, under(F32Math::Tf32x3));
  ASSERT_TRUE(rewritten->program.has_value());
  const NDArray want = cpu(*written).dense[0], got = cpu(*rewritten).dense[0];
  int nans = 0;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 4; ++j) {
      const float w = want.as<float>()[i * 4 + j], g = got.as<float>()[i * 4 + j];
      ASSERT_EQ(std::isnan(w), i == 1 || j == 2) << "(" << i << ", " << j << ")";
      if (std::isnan(w)) {
        ++nans;
        EXPECT_TRUE(std::isnan(g)) << "(" << i << ", " << j << "): " << g;
      } else {
        EXPECT_EQ(g, w) << "(" << i << ", " << j << ")";
        EXPECT_GT(w, 0.f);
      }
    }
  EXPECT_EQ(nans, 5 + 4 - 1);
}

TEST(OneSidedSums, RandomDataWithinTheCancellationBound) {
  // |expanded - written| <= 8 K u (|q|^2 + |x|^2) with u = 2^-24 (docs/tensor-cores.md).
  const int64_t m = 31, n = 29, K = 96;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.f, 1.f);
  Bindings b;
  b.arrays["Q"] = NDArray::zeros(DType::F32, {m, K});
  b.arrays["X"] = NDArray::zeros(DType::F32, {n, K});
  for (int64_t e = 0; e < m * K; ++e) b.arrays["Q"].as<float>()[e] = 3.f + g(rng);  // off the origin
  for (int64_t e = 0; e < n * K; ++e) b.arrays["X"].as<float>()[e] = 3.f + g(rng);
  const std::string text = "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; } D[i, j] = dist; }";
  auto written = prepare(Source{"q.mmlt", text}, b, under(F32Math::Tf32, false));
  auto rewritten = prepare(Source{"q.mmlt", text}, b, under(F32Math::Tf32));
  ASSERT_TRUE(rewritten->program.has_value());
  const NDArray want = cpu(*written).dense[0], got = cpu(*rewritten).dense[0];
  const float* Q = b.arrays["Q"].as<float>();
  const float* X = b.arrays["X"].as<float>();
  double worst = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double qn = 0, xn = 0;
      for (int64_t k = 0; k < K; ++k) {
        qn += double(Q[i * K + k]) * Q[i * K + k];
        xn += double(X[j * K + k]) * X[j * K + k];
      }
      const double bound = 8.0 * double(K) * std::ldexp(1.0, -24) * (qn + xn);
      const double err = std::fabs(double(got.as<float>()[i * n + j]) - double(want.as<float>()[i * n + j]));
      worst = std::max(worst, err / bound);
      ASSERT_LE(err, bound) << "(" << i << ", " << j << ")";
    }
  EXPECT_GT(worst, 0.0) << "the two forms round differently: the comparison sees them";
}

TEST(OneSidedSums, ExplainNamesTheRewriteAndTheMainStageMath) {
  NDArray q = ints(DType::BF16, {16, 32}, -3, 3, 1), x = ints(DType::BF16, {40, 32}, -3, 3, 2);
  Inputs in;
  in.array("Q", ArrayRef::host(q.data.data(), DType::BF16, q.shape));
  in.array("X", ArrayRef::host(x.data.data(), DType::BF16, x.shape));
  const Query query = Query::compile(kKnn, "knn.mmlt");
  Options o;
  o.backend = "cpu";
  const std::string e = query.explain(in, o);
  EXPECT_NE(e.find("rewrite expand-squares"), std::string::npos) << e;
  EXPECT_NE(e.find("on a GPU it would be bf16 on the wgmma"), std::string::npos) << e;  // (explain under the CPU engine)
  EXPECT_NE(e.find("os_dot += Q[i, k] * X[j, k];"), std::string::npos) << e;
  o.as_written = true;
  const std::string w = query.explain(in, o);
  EXPECT_EQ(w.find("expand-squares"), std::string::npos) << w;
  EXPECT_NE(w.find("on a GPU it would be simt on the simt mainloop"), std::string::npos) << w;
  // A run reports it too.
  o.as_written = false;
  const Result r = query.run(in, o);
  ASSERT_FALSE(r.stats.rewrites.empty());
  EXPECT_EQ(r.stats.rewrites.back(), "expand-squares");
}

// A library Query keeps the one-sided rewrite and its stages' plans per shape (query.cpp,
// pipeline.cpp's StageMemo): calls that alternate shapes and ranges must each get their own
// program, equal to the query as written (integer-valued data: exact), and report the rewrite.
TEST(OneSidedSums, RepeatedLibraryCallsAcrossShapes) {
  const Query query = Query::compile(
      "where (i in [a, M), j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
      " D[i, j] = dist; emit Nearest(i, j, dist) bottom 3 by dist per i; }",
      "knn_ranges.mmlt");
  struct Shape {
    int64_t m, n, k, a;
  };
  const Shape shapes[] = {{13, 17, 5, 0}, {9, 4, 11, 2}, {13, 17, 5, 3}, {13, 17, 5, 0}, {21, 8, 2, 20}};
  for (const Shape& s : shapes) {
    SCOPED_TRACE("M " + std::to_string(s.m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k) + " a " +
                 std::to_string(s.a));
    NDArray q = ints(DType::BF16, {s.m, s.k}, -6, 6, int(s.m + s.k)), x = ints(DType::BF16, {s.n, s.k}, -6, 6, 7);
    Inputs in;
    in.array("Q", ArrayRef::host(q.data.data(), DType::BF16, q.shape));
    in.array("X", ArrayRef::host(x.data.data(), DType::BF16, x.shape));
    in.scalar("a", s.a).scalar("M", s.m);
    Options o;
    o.backend = "cpu";
    const Result got = query.run(in, o);
    ASSERT_FALSE(got.stats.rewrites.empty());
    EXPECT_EQ(got.stats.rewrites.back(), "expand-squares");
    o.as_written = true;
    const Result want = query.run(in, o);
    const Array &gd = got["D"].array, &wd = want["D"].array;
    ASSERT_EQ(gd.shape, wd.shape);
    ASSERT_EQ(gd.nbytes(), wd.nbytes());
    EXPECT_EQ(0, std::memcmp(gd.data, wd.data, gd.nbytes()));
    const Output &gl = got["Nearest"], &wl = want["Nearest"];
    ASSERT_EQ(gl.rows, wl.rows);
    ASSERT_GT(wl.rows, 0);
    ASSERT_EQ(gl.columns.size(), wl.columns.size());
    for (size_t c = 0; c < wl.columns.size(); ++c) {
      ASSERT_EQ(gl.columns[c].second.nbytes(), wl.columns[c].second.nbytes()) << wl.columns[c].first;
      EXPECT_EQ(0, std::memcmp(gl.columns[c].second.data, wl.columns[c].second.data, wl.columns[c].second.nbytes()))
          << wl.columns[c].first;
    }
  }
}
