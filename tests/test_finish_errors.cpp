// Finishing steps (docs/language.md section 9): each bad form is one query error at its place,
// and a good block becomes the plan's steps and reads.
#include <gtest/gtest.h>

#include <string>

#include "sema/analyze.h"

using namespace gamut;

namespace {

// Line 1: a query with dense outputs S, C (by group), P (per pair), total and a list L.
const std::string kBody =
    "where (i, j) { d = 0; reduce (k) { d += A[i, k] * W[k, j]; } let e = d * 2; S[g[i]] += e; C[g[i]] += 1; "
    "P[i, j] = d; total += d; emit L(i, j); }\n";

TypeEnv types() {
  TypeEnv env;
  env.inputs = {{"A", DType::F32}, {"W", DType::F32}, {"g", DType::I32}};
  return env;
}

// The one diagnostic line (FILE:LINE:COL: error: ...) of `finish` on line 2; "" when it is clean.
std::string error_of(const std::string& finish) {
  try {
    build_plan(Source{"q.mmlt", kBody + finish}, types());
  } catch (const QueryError& e) {
    EXPECT_EQ(e.code(), ExitCode::Query);
    const std::string all = e.what();
    return all.substr(0, all.find('\n'));
  }
  return "";
}

}  // namespace

TEST(FinishErrors, EachBadFormAtItsPlace) {
  const std::pair<const char*, const char*> cases[] = {
      {"finish { M[x] = Sx[x]; }", "q.mmlt:2:17: error: unknown output 'Sx' in 'finish'; did you mean 'S'?"},
      {"finish { M[x] = P[x]; }", "q.mmlt:2:17: error: 'P' has 2 dimensions, indexed here with 1"},
      {"finish { M[x] = L[x]; }",
       "q.mmlt:2:17: error: list 'L' cannot be read in 'finish'; finishing steps read dense outputs"},
      {"finish { M[x] = A[x, x]; }",
       "q.mmlt:2:17: error: input 'A' cannot be read in 'finish'; finishing steps read outputs and parameters"},
      {"finish { M[x] = S[0]; }",
       "q.mmlt:2:19: error: an output in 'finish' is indexed by the step's own index names (x), not by '0'"},
      {"finish { M[x, y] = S[x]; }",
       "q.mmlt:2:15: error: index 'y' of 'M' reads no output, so its extent is unknown; index an output with it "
       "(M[y] = OUT[y] ...)"},
      {"finish { S[x] = C[x]; }",
       "q.mmlt:2:10: error: 'S' is already an output (at 1:77); a finishing step makes a new output, name it anew"},
      {"finish { M[x] = S[x] + d; }",
       "q.mmlt:2:24: error: accumulator 'd' exists per pair, not in 'finish'; read the output it is stored into"},
      {"finish { M[x] = S[x] + e; }",
       "q.mmlt:2:24: error: 'e' is a 'let' of the query body (per pair), not visible in 'finish'"},
      {"finish { scale = S[0 + 0] * 0 + scale; }",
       "q.mmlt:2:20: error: an output in 'finish' is indexed by the step's own index names (this step has none), not by "
       "'0 + 0'"},
      {"finish { scale = total * scale; }",
       "q.mmlt:2:10: error: 'scale' is a parameter; a finishing step makes a new output, name it anew"},
      {"finish { M[x] = S[x] + i; }",
       "q.mmlt:2:24: error: axis 'i' has no value in 'finish'; a step runs over its own indices, named in its target"},
      {"finish { M[x] = S[x] + x; }",
       "q.mmlt:2:24: error: index 'x' only names a position in 'finish'; its value cannot be read"},
      {"finish { M = sum(S, C); }",
       "q.mmlt:2:14: error: 'sum' takes one output's name (sum(H)): the sum of all its elements"},
      {"finish { M = P; }",
       "q.mmlt:2:14: error: 'P' has 2 dimensions; read it as P[...] with the step's index names, or as sum(P)"},
      {"finish { M[0] = total; }",
       "q.mmlt:2:12: error: a finishing step's target is indexed by names, one per dimension (M[x, y] = ...), not by "
       "'0'"},
      {"finish { M[x, x] = P[x, x]; }", "q.mmlt:2:15: error: index 'x' appears twice in the target of 'M'"},
      {"finish { A1[x] = B1[x]; B1[x] = S[x]; }",
       "q.mmlt:2:18: error: 'B1' is a finishing step after this one; a step reads only the steps before it"},
      {"finish { M[x] += S[x]; }",
       "q.mmlt:2:15: error: expected '=' after the finishing step's target (a step is NAME[x, ...] = EXPR;), found "
       "'+='"},
      {"finish M[x] = S[x];", "q.mmlt:2:8: error: expected '{' after 'finish', found 'M'"},
      {"finish { M[x] = S[x] % 2; }", "q.mmlt:2:17: error: '%' needs integer operands, but this is f32"},
      {"finish { M[x] = S[x] }", "q.mmlt:2:21: error: expected ';' after the finishing step, found '}'"},
      {"finish { M[x] = S[x]; } x", "q.mmlt:2:25: error: unexpected 'x' after the end of the query"},
      {"finish { M[a, b, c, e] = P[a, b] + P[c, e]; }",
       "q.mmlt:2:10: error: a finishing step has at most 3 dimensions (as outputs do), 'M' has 4"},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(error_of(text), want) << text;
  // `sum` is a function of finishing steps only; `finish` a word only after the body.
  const std::string e = [] {
    try {
      build_plan(Source{"q.mmlt", "where (i, j) { a = 0; reduce (k) { a += sum(A[i, k]); } C[i, j] = a; }"});
    } catch (const QueryError& x) {
      return std::string(x.what());
    }
    return std::string();
  }();
  EXPECT_EQ(e.substr(0, e.find('\n')), "q.mmlt:1:41: error: unknown function 'sum'");
  EXPECT_NO_THROW(
      build_plan(Source{"q.mmlt", "where (i, j) { finish = 0; reduce (k) { finish += A[i, k]; } C[i, j] = finish; }"}));
}

TEST(FinishErrors, GoodBlockBecomesStepsAndReads) {
  EXPECT_EQ(error_of(""), "");
  const Plan p = build_plan(Source{"q.mmlt", kBody + "finish { Mean[x] = S[x] / max(C[x], 1); T[c, r] = P[r, c]; "
                                                     "Frac = total / sum(S) * scale; }"},
                            types());
  ASSERT_EQ(p.finish.size(), 3u);
  EXPECT_EQ(p.finish[0].name, "Mean");
  EXPECT_EQ(p.finish[0].index, (std::vector<std::string>{"x"}));
  EXPECT_EQ(p.finish[0].type, CType::F32);  // f32 / i64 count: C promotion
  EXPECT_EQ(p.finish[1].type, CType::F32);
  EXPECT_EQ(p.finish[2].type, CType::F32);                      // a weak parameter takes the f32 of the outputs
  ASSERT_EQ(p.output_reads.size(), 5u);                         // S, C, P, total, sum(S)
  EXPECT_EQ(p.output_reads[2].dims, (std::vector<int>{1, 0}));  // P[r, c] in T[c, r]
  EXPECT_TRUE(p.output_reads[4].sum);
  // `scale` is a parameter like any other.
  ASSERT_EQ(p.params.size(), 1u);
  EXPECT_EQ(p.params[0].name, "scale");
  const std::string text = print_plan(p);
  EXPECT_NE(text.find("finish (per element, on the host once every output is final):\n"
                      "  Mean[x]: f32 = (S[x] / f32(max(C[x], 1:i64)))\n"
                      "  T[c, r]: f32 = P[r, c]\n"),
            std::string::npos)
      << text;
}
