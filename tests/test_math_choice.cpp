// The plan-level math choice (spec section 10) over the reference queries and the forms the
// recogniser must accept (casts, constant factors, lets, -=) and refuse.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "plan/math_choice.h"
#include "sema/analyze.h"

using namespace gamut;

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << path;
  return ss.str();
}
Plan example(const std::string& name, const TypeEnv& env) {
  return build_plan(Source{name, read(std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt")}, env);
}
Plan text(const std::string& q, const TypeEnv& env) { return build_plan(Source{"q.mmlt", q}, env); }

TypeEnv pr(DType t) { return TypeEnv{{{"P", t}, {"R", t}, {"Pzip", DType::I32}, {"Rzip", DType::I32}}}; }

}  // namespace

TEST(MathChoice, F32MathNames) {
  for (F32Math m : {F32Math::Ieee, F32Math::Tf32x3, F32Math::Tf32})
    EXPECT_EQ(f32_math_from_name(f32_math_name(m)), m);
  EXPECT_FALSE(f32_math_from_name("fp32").has_value());
  EXPECT_FALSE(f32_math_from_name("").has_value());
}

TEST(MathChoice, ReferenceSumsOfProductsByType) {
  // Every reference query whose inner operation is `acc += X * Y` of a row and a column matrix.
  for (const char* q : {"q2_zip_aggregate", "q3_count_pairs", "q4_join_area", "q5_select", "q7_top128"}) {
    SCOPED_TRACE(q);
    MathChoice bf = choose_math(example(q, pr(DType::BF16)), F32Math::Ieee);
    EXPECT_TRUE(bf.sum_of_products);
    EXPECT_EQ(bf.math, InnerMath::BF16);
    EXPECT_EQ(bf.math_name(), "bf16");
    EXPECT_EQ(bf.mainloop_name(), "wgmma");
    EXPECT_TRUE(bf.why.empty()) << bf.why;
    EXPECT_EQ(choose_math(example(q, pr(DType::F16)), F32Math::Tf32).math, InnerMath::F16)
        << "f32_math does not touch 16-bit inputs";
    MathChoice ieee = choose_math(example(q, pr(DType::F32)), F32Math::Ieee);
    EXPECT_TRUE(ieee.sum_of_products);
    EXPECT_EQ(ieee.math, InnerMath::Simt);
    EXPECT_EQ(ieee.math_name(), "ieee");
    EXPECT_EQ(ieee.mainloop_name(), "simt");
    EXPECT_EQ(choose_math(example(q, pr(DType::F32)), F32Math::Tf32).math, InnerMath::Tf32);
    EXPECT_EQ(choose_math(example(q, pr(DType::F32)), F32Math::Tf32x3).math, InnerMath::Tf32x3);
    MathChoice i8 = choose_math(example(q, pr(DType::I8)), F32Math::Ieee);
    EXPECT_EQ(i8.math, InnerMath::Int8);
    EXPECT_EQ(i8.math_name(), "i8");
    EXPECT_EQ(choose_math(example(q, pr(DType::U8)), F32Math::Ieee).math_name(), "u8");
    // i16 and i32 products have no tensor-core math; f64 neither.
    for (DType t : {DType::I16, DType::I32, DType::F64}) {
      MathChoice s = choose_math(example(q, pr(t)), F32Math::Tf32);
      EXPECT_TRUE(s.sum_of_products);
      EXPECT_EQ(s.math, InnerMath::Simt) << dtype_name(t);
      EXPECT_FALSE(s.why.empty());
    }
  }
}

TEST(MathChoice, SgemmOperandsAndOrientation) {
  Plan p = example("sgemm", {{{"A", DType::BF16}, {"B", DType::BF16}}});
  MathChoice c = choose_math(p, F32Math::Ieee);
  ASSERT_TRUE(c.sum_of_products);
  EXPECT_EQ(p.accesses[size_t(c.row_access)].pattern, Pattern::RowRed);
  EXPECT_EQ(p.accesses[size_t(c.col_access)].pattern, Pattern::RedCol);
  EXPECT_EQ(c.row_type, DType::BF16);
  EXPECT_EQ(c.factor.f, 1.0);
  // Written column operand first and transposed: the row side is still found.
  Plan t = text("where (i, j) { s = 0; reduce (k) { s += B[j, k] * A[k, i]; } C[i, j] = s; }",
                {{{"A", DType::U8}, {"B", DType::I8}}});
  MathChoice u = choose_math(t, F32Math::Ieee);
  EXPECT_EQ(u.math, InnerMath::Int8);
  EXPECT_EQ(t.accesses[size_t(u.row_access)].pattern, Pattern::RedRow);
  EXPECT_EQ(t.accesses[size_t(u.col_access)].pattern, Pattern::ColRed);
  EXPECT_EQ(u.math_name(), "u8xi8");
}

TEST(MathChoice, KnnExpandedRunsItsDotOnTensorCores) {
  const std::string q = read("/work/shared/queries/knn_expanded.mmlt");
  TypeEnv bf{{{"Q", DType::BF16}, {"X", DType::BF16}, {"qn", DType::F32}, {"xn", DType::F32}}};
  MathChoice c = choose_math(build_plan(Source{"knn_expanded.mmlt", q}, bf), F32Math::Ieee);
  EXPECT_TRUE(c.sum_of_products);
  EXPECT_EQ(c.math, InnerMath::BF16);
  TypeEnv f{{{"Q", DType::F32}, {"X", DType::F32}, {"qn", DType::F32}, {"xn", DType::F32}}};
  EXPECT_EQ(choose_math(build_plan(Source{"knn_expanded.mmlt", q}, f), F32Math::Tf32x3).math, InnerMath::Tf32x3);
  EXPECT_EQ(choose_math(build_plan(Source{"knn_expanded.mmlt", q}, f), F32Math::Ieee).math, InnerMath::Simt);
}

TEST(MathChoice, OtherInnerOperationsStayOnSimt) {
  // knn (difference squared), Q1 (thresholded product), Q6 (max then square), semirings.
  EXPECT_FALSE(choose_math(example("knn", {{{"Q", DType::BF16}, {"X", DType::BF16}}}), F32Math::Tf32).sum_of_products);
  EXPECT_FALSE(choose_math(example("q1_amplify", {{{"S", DType::BF16}, {"W", DType::BF16}, {"thres", DType::F32}}}),
                           F32Math::Tf32)
                   .sum_of_products);
  EXPECT_FALSE(choose_math(example("q6_complementary", {{{"A", DType::BF16}}}), F32Math::Tf32).sum_of_products);
  for (const char* q : {"maxplus", "minplus_batched", "reachability"}) {
    TypeEnv env{{{"A", DType::I8}, {"B", DType::I8}, {"D", DType::BF16}, {"E", DType::BF16}, {"Adj", DType::U8}}};
    MathChoice c = choose_math(example(q, env), F32Math::Tf32);
    EXPECT_FALSE(c.sum_of_products) << q;
    EXPECT_EQ(c.math, InnerMath::Simt) << q;
    EXPECT_FALSE(c.why.empty()) << q;
  }
}

TEST(MathChoice, CastsFactorsLetsAndSubtraction) {
  TypeEnv bf{{{"A", DType::BF16}, {"B", DType::BF16}, {"w", DType::BF16}}};
  auto choose = [&](const std::string& inner, const TypeEnv& env = {}) {
    return choose_math(text("where (i, j) { s = 0; reduce (k) { " + inner + " } C[i, j] = s; }",
                            env.inputs.empty() ? TypeEnv{{{"A", DType::BF16}, {"B", DType::BF16}, {"w", DType::BF16}}} : env),
                       F32Math::Ieee);
  };
  MathChoice two = choose("s += 2 * A[i, k] * B[k, j];");
  EXPECT_EQ(two.math, InnerMath::BF16);
  EXPECT_EQ(two.factor.f, 2.0);
  MathChoice half = choose("s += A[i, k] * (B[k, j] * 0.5);");
  EXPECT_EQ(half.math, InnerMath::BF16);
  EXPECT_EQ(half.factor.f, 0.5);
  MathChoice sub = choose("s -= A[i, k] * B[k, j];");
  EXPECT_EQ(sub.math, InnerMath::BF16);
  EXPECT_EQ(sub.factor.f, -1.0);
  MathChoice neg = choose("s -= -A[i, k] * 3 * B[k, j];");
  EXPECT_EQ(neg.factor.f, 3.0);
  MathChoice let = choose("let p = A[i, k] * B[k, j]; s += p;");
  EXPECT_EQ(let.math, InnerMath::BF16);
  MathChoice cast = choose("s += f32(A[i, k]) * f32(B[k, j]);");
  EXPECT_EQ(cast.math, InnerMath::BF16) << "f32() of a bf16 load is the load itself";
  TypeEnv i8{{{"A", DType::I8}, {"B", DType::U8}}};
  MathChoice ifac = choose("s += A[i, k] * B[k, j] * -3;", i8);
  EXPECT_EQ(ifac.math, InnerMath::Int8);
  EXPECT_EQ(ifac.factor.i, -3);
  EXPECT_EQ(ifac.math_name(), "i8xu8");

  // Refused: not a product of exactly a row and a column matrix, or not exact.
  EXPECT_FALSE(choose("s += A[i, k] * B[k, j] + 1;").sum_of_products);
  EXPECT_FALSE(choose("s += A[i, k] * w[k] * B[k, j];").sum_of_products);
  EXPECT_FALSE(choose("s += A[i, k] * A[i, k];").sum_of_products) << "two row operands";
  EXPECT_FALSE(choose("s *= A[i, k] * B[k, j];").sum_of_products);
  EXPECT_FALSE(choose("s max= A[i, k] * B[k, j];").sum_of_products);
  EXPECT_FALSE(choose("if (A[i, k] > 0) s += A[i, k] * B[k, j];").sum_of_products);
  EXPECT_FALSE(choose("s = s + A[i, k] * B[k, j];").sum_of_products) << "a general update keeps k in order";
  TypeEnv f32{{{"A", DType::F32}, {"B", DType::F32}}};
  EXPECT_FALSE(choose("s += i32(A[i, k]) * i32(B[k, j]);", f32).sum_of_products) << "truncating casts";
  // i8 products summed in f32 (the accumulator declared f32) differ from i32 sums past 2^24.
  MathChoice f32sum = choose_math(text("where (i, j) { s: f32 = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }",
                                       TypeEnv{{{"A", DType::I8}, {"B", DType::I8}}}),
                                  F32Math::Tf32);
  EXPECT_EQ(f32sum.math, InnerMath::Simt);
  // Mixed 16-bit float types, and 16-bit with f32, have no common tensor-core math.
  EXPECT_EQ(choose("s += A[i, k] * B[k, j];", TypeEnv{{{"A", DType::F16}, {"B", DType::BF16}}}).math, InnerMath::Simt);
  EXPECT_EQ(choose("s += A[i, k] * B[k, j];", TypeEnv{{{"A", DType::F32}, {"B", DType::BF16}}}).math, InnerMath::Simt);
}

TEST(MathChoice, BatchedAndUntyped) {
  Plan b = text("batch (b) where (i, j) { s = 0; reduce (k) { s += A[b, i, k] * B[b, j, k]; } C[b, i, j] = s; }",
                {{{"A", DType::F16}, {"B", DType::F16}}});
  EXPECT_EQ(choose_math(b, F32Math::Ieee).math, InnerMath::F16);
  Plan u = text("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }", {});
  MathChoice c = choose_math(u, F32Math::Tf32);
  EXPECT_EQ(c.math, InnerMath::Simt);
  EXPECT_NE(c.why.find("not known"), std::string::npos) << c.why;
}

TEST(MathChoice, CliTakesF32Math) {
  auto status = [](const std::string& args) {
    const int st = std::system((std::string(GAMUT_BINARY) + " " + args + " >/dev/null 2>&1").c_str());
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  };
  const std::string q = " -e 'where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }'";
  for (const char* m : {"ieee", "tf32x3", "tf32"}) EXPECT_EQ(status("explain" + q + " --f32-math " + m), 0) << m;
  EXPECT_EQ(status("explain" + q + " --f32-math fast"), 2) << "a usage error";
  EXPECT_EQ(status("run" + q + " --f32-math"), 2) << "the value is required";
}

// What explain and --json report is what the engines run: the kernel generator has the SIMT
// mainloop only, so a tensor-core candidate reports SIMT and says why.
TEST(MathChoice, ExecutedMathIsWhatTheGeneratorEmits) {
  // The generator has a tensor-core mainloop for every tensor-core math (wgmma for f16 / bf16 on
  // sm_90a, mma.sync for the others): explain and --json name it; f32 under ieee and other inner
  // operations stay on SIMT with the reason.
  const std::string q = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }";
  Plan bf = text(q, {{{"A", DType::BF16}, {"B", DType::BF16}}});
  ASSERT_TRUE(choose_math(bf, F32Math::Ieee).tensor_cores());
  MathChoice ran = executed_math(bf, F32Math::Ieee);
  EXPECT_EQ(ran.mainloop_name(), "wgmma");
  EXPECT_EQ(ran.math, InnerMath::BF16);
  EXPECT_TRUE(ran.why.empty()) << ran.why;
  EXPECT_EQ(explain_math(bf, F32Math::Ieee), "math: bf16 on the wgmma mainloop\n");
  for (DType t : {DType::F16, DType::I8, DType::U8}) {
    Plan p = text(q, {{{"A", t}, {"B", t}}});
    EXPECT_EQ(executed_math(p, F32Math::Ieee).mainloop_name(), t == DType::F16 ? "wgmma" : "mma.sync") << dtype_name(t);
  }
  Plan f = text(q, {{{"A", DType::F32}, {"B", DType::F32}}});
  EXPECT_EQ(explain_math(f, F32Math::Ieee), "math: ieee on the simt mainloop (f32 inputs under f32_math ieee)\n");
  EXPECT_EQ(explain_math(f, F32Math::Tf32), "math: tf32 on the wgmma mainloop\n");
  EXPECT_EQ(explain_math(f, F32Math::Tf32x3), "math: tf32x3 on the wgmma mainloop\n");
  Plan maxplus = text("where (i, j) { s = 0; reduce (k) { s max= A[i, k] + B[k, j]; } C[i, j] = s; }",
                      {{{"A", DType::BF16}, {"B", DType::BF16}}});
  EXPECT_EQ(executed_math(maxplus, F32Math::Tf32).mainloop_name(), "simt");
}

// A distinct list keeps bf16 off wgmma (its per-tile de-duplication ran 2x slower over wgmma's
// accumulator layout): mma.sync, in the kernel choice and in what explain names.
TEST(MathChoice, DistinctListsTakeMmaSync) {
  const TypeEnv bf{{{"A", DType::BF16}, {"B", DType::BF16}}};
  Plan p = text("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 0) emit L(i) distinct; }", bf);
  const MathChoice m = executed_math(p, F32Math::Ieee);
  EXPECT_TRUE(m.tensor_cores());
  EXPECT_FALSE(m.wgmma);
  EXPECT_EQ(m.mainloop_name(), "mma.sync");
  Plan q = text("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 0) emit L(i, j); }", bf);
  EXPECT_EQ(executed_math(q, F32Math::Ieee).mainloop_name(), "wgmma");
  // Columns of vector lookups: wgmma in the runs where the list has a seen table (the values).
  const TypeEnv bfg{{{"A", DType::BF16}, {"B", DType::BF16}, {"g", DType::I32}, {"h", DType::I8}}};
  Plan s = text("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 0) emit L(g[i], h[j]) distinct; }",
                bfg);
  const MathChoice ms = executed_math(s, F32Math::Ieee);
  EXPECT_FALSE(ms.wgmma);
  EXPECT_TRUE(ms.wgmma_if_seen);
  EXPECT_EQ(ms.mainloop_name(), "wgmma with seen tables (mma.sync otherwise)");
  EXPECT_NE(print_plan(s).find("distinct (on the GPU a seen table"), std::string::npos);
  // One list of lookups beside one of axis values: never wgmma.
  Plan t = text("where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } if (s > 0) { emit L(g[i]) distinct; "
                "emit M(i) distinct; } }",
                bfg);
  EXPECT_FALSE(executed_math(t, F32Math::Ieee).wgmma_if_seen);
  EXPECT_EQ(executed_math(t, F32Math::Ieee).mainloop_name(), "mma.sync");
  EXPECT_FALSE(executed_math(p, F32Math::Ieee).wgmma_if_seen);
}

// Top/bottom lists per i or j take tensor cores like a global top list (the expanded kNN is
// faster there since its rows are ordered on the device, session 7), and wgmma from K = 512 in
// 16-bit math (session 14) unless N <= 32 is known: then their thresholds stay in the blocks of
// a wgmma kernel at every K (session 20, resident_top_form).
TEST(MathChoice, PerGroupRankedListsTakeTensorCores) {
  const std::string head = "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } ";
  const TypeEnv bf{{{"A", DType::BF16}, {"B", DType::BF16}}};
  for (const char* per : {" per i", " per j"}) {
    Plan p = text(head + "emit L(i, j, s) bottom 33 by s" + per + "; }", bf);
    ASSERT_TRUE(choose_math(p, F32Math::Ieee).tensor_cores());
    EXPECT_EQ(resident_top_form(p), 0) << per;
    const MathChoice ran = executed_math(p, F32Math::Ieee);
    EXPECT_TRUE(ran.tensor_cores()) << per;
    // N = 33: wgmma from K = 512 (below it the tile selection dominates, and is cheaper over
    // mma.sync's map); N = 32: at every K; tf32 at every K.
    EXPECT_TRUE(ran.wgmma) << per;
    EXPECT_EQ(ran.wgmma_min_k, 512) << per;
    EXPECT_EQ(ran.mainloop_name(), "wgmma from K = 512 (mma.sync below)") << per;
    const MathChoice resident = executed_math(text(head + "emit L(i, j, s) bottom 32 by s" + per + "; }", bf), F32Math::Ieee);
    EXPECT_EQ(resident.wgmma_min_k, 0) << per;
    EXPECT_EQ(resident.mainloop_name(), "wgmma") << per;
    // N as a parameter: the plan does not know it.
    EXPECT_EQ(executed_math(text(head + "emit L(i, j, s) bottom n by s" + per + "; }", bf), F32Math::Ieee).wgmma_min_k,
              512)
        << per;
    const TypeEnv f32{{{"A", DType::F32}, {"B", DType::F32}}};
    const MathChoice tf32 = executed_math(text(head + "emit L(i, j, s) bottom 3 by s" + per + "; }", f32), F32Math::Tf32);
    EXPECT_EQ(tf32.wgmma_min_k, 0) << per;
    EXPECT_EQ(tf32.mainloop_name(), "wgmma") << per;
  }
  EXPECT_TRUE(executed_math(text(head + "emit L(i, j, s) top 3 by s; }", bf), F32Math::Ieee).tensor_cores());
  // Not the resident form: a global list, two outputs, a 64-bit key.
  EXPECT_EQ(resident_top_form(text(head + "emit L(i, j, s) top 3 by s; }", bf)), -1);
  EXPECT_EQ(resident_top_form(text(head + "C[i, j] = s; emit L(i, j, s) top 3 by s per i; }", bf)), -1);
  const TypeEnv f64{{{"A", DType::F64}, {"B", DType::F64}}};
  EXPECT_EQ(resident_top_form(text(head + "emit L(i, j, s) top 3 by s per i; }", f64)), -1);
}
