// The semiring recogniser that explain's roofline and code generation share.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "plan/semiring.h"
#include "sema/analyze.h"

using namespace gamut;

namespace {
Plan example(const char* name, TypeEnv env) {
  std::ifstream f(std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt");
  std::stringstream ss;
  ss << f.rdbuf();
  return build_plan(Source{name, ss.str()}, env);
}
}  // namespace

TEST(Semiring, ReferenceQueriesAreClassified) {
  auto f = [](const char* q, TypeEnv env) { return semiring_form(example(q, env)); };
  SemiringForm s = f("sgemm", {{{"A", DType::F32}, {"B", DType::F32}}});
  EXPECT_EQ(s.op, "fma");
  EXPECT_EQ(s.type, CType::F32);
  SemiringForm m = f("maxplus", {{{"A", DType::I32}, {"B", DType::I32}}});
  EXPECT_EQ(m.op, "add-max");
  EXPECT_EQ(m.type, CType::I32);
  SemiringForm b = f("minplus_batched", {{{"D", DType::F32}, {"E", DType::F32}}});
  EXPECT_EQ(b.op, "add-min");
  SemiringForm r = f("reachability", {{{"Adj", DType::U8}}});
  EXPECT_EQ(r.op, "or-and");
  EXPECT_EQ(r.type, CType::I32);
  SemiringForm h = f("maxplus", {{{"A", DType::I16}, {"B", DType::I16}}});
  EXPECT_EQ(h.op, "add-max") << "i16 inputs widen to i32: still the tropical form";
  EXPECT_FALSE(f("q1_amplify", {{{"S", DType::F32}, {"W", DType::F32}, {"thres", DType::F32}}}).recognised());
  EXPECT_FALSE(f("knn", {{{"Q", DType::F32}, {"X", DType::F32}}}).recognised());
}

TEST(Semiring, BottleneckAndOperandOrder) {
  TypeEnv env{{{"A", DType::F32}, {"B", DType::F32}}};
  Plan p = build_plan(Source{"q", "where (i, j) { c = -inf; reduce (k) { c max= min(B[k, j], A[i, k]); } C[i, j] = c; }"}, env);
  SemiringForm s = semiring_form(p);
  EXPECT_EQ(s.op, "max-min");
  EXPECT_EQ(p.accesses[size_t(s.row_access)].pattern, Pattern::RowRed) << "row operand first whatever the order written";
  Plan g = build_plan(Source{"q", "where (i, j) { c = 0; reduce (k) { c += A[i, k] * B[k, j] + 1; } C[i, j] = c; }"}, env);
  EXPECT_FALSE(semiring_form(g).recognised());
  EXPECT_EQ(ops_per_step(g), 3) << "mul, add, and the fold";
}
