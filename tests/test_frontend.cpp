// Lexer, parser and semantic analysis: plans of the reference queries and one test per error
// class of spec section 8, each asserting the message and its position.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sema/analyze.h"

using namespace gamut;

namespace {

// The rendered diagnostics of `text`, or "" when it analyses cleanly.
std::string errors_of(const std::string& text, const TypeEnv& env = {}) {
  Source src{"q.mmlt", text};
  try {
    build_plan(src, env);
  } catch (const QueryError& e) {
    EXPECT_EQ(e.code(), ExitCode::Query);
    return e.what();
  }
  return "";
}

Plan plan_of(const std::string& text, const TypeEnv& env = {}) { return build_plan(Source{"q.mmlt", text}, env); }

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const char* kSgemm = "where (i, j) {\n  acc = 0;\n  reduce (k) {\n    acc += A[i, k] * B[k, j];\n  }\n  C[i, j] = acc;\n}\n";

}  // namespace

TEST(Lexer, TokensCommentsAndUpdateOperators) {
  Source s{"t", "a max= b; /* c */ x min= max(1, 2) # tail\n y == 2.5e3 // z"};
  Diagnostics d(s);
  auto t = lex(s, d);
  ASSERT_FALSE(d.any());
  std::vector<Tok> kinds;
  for (auto& x : t) kinds.push_back(x.kind);
  std::vector<Tok> want = {Tok::Ident, Tok::MaxAssign, Tok::Ident, Tok::Semi, Tok::Ident, Tok::MinAssign, Tok::Ident,
                           Tok::LParen, Tok::Int, Tok::Comma, Tok::Int, Tok::RParen, Tok::Ident, Tok::EqEq, Tok::Float, Tok::End};
  EXPECT_EQ(kinds, want);
  EXPECT_DOUBLE_EQ(t[14].fval, 2500.0);
  EXPECT_EQ(t[12].span.line, 2);
  EXPECT_EQ(t[12].span.col, 2);
}

TEST(Lexer, BadCharacterAndUnterminatedComment) {
  EXPECT_NE(errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] @ B[k,j]; } C[i,j] = a; }")
                .find("q.mmlt:1:48: error: unexpected character '@'"), std::string::npos);
  EXPECT_NE(errors_of("where (i, j) /* never closed").find("unterminated comment"), std::string::npos);
}

TEST(Parser, PrecedenceFollowsC) {
  Plan p = plan_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] + B[k,j] * 2 << 1 & 3 | 4 ^ 5; } C[i,j] = a; }");
  std::string s = print_plan(p);
  EXPECT_NE(s.find("a += ((((A[i,k] + (B[k,j] * 2:i64)) << 1:i64) & 3:i64) | (4:i64 ^ 5:i64))"), std::string::npos) << s;
}

TEST(Parser, ReferenceQueriesAllAnalyse) {
  for (const char* q : {"sgemm", "q1_amplify", "q2_zip_aggregate", "q3_count_pairs", "q4_join_area", "q5_select",
                        "q6_complementary", "q7_top128", "knn", "maxplus", "minplus_batched", "reachability"}) {
    std::string text = read(std::string(GAMUT_SOURCE_DIR) + "/examples/" + q + ".mmlt");
    ASSERT_FALSE(text.empty()) << q;
    EXPECT_EQ(errors_of(text), "") << q;
  }
}

TEST(Parser, Figure8AcceptedVerbatimWithRanges) {
  Plan p = plan_of(read(std::string(GAMUT_SOURCE_DIR) + "/examples/q2_zip_aggregate.mmlt"));
  ASSERT_EQ(p.axes.size(), 3u);
  EXPECT_TRUE(p.axes[0].has_range);
  EXPECT_EQ(p.axes[0].end.text, "M");
  EXPECT_EQ(p.params.size(), 3u);
  EXPECT_TRUE(p.params[0].integer_only);
  ASSERT_EQ(p.dense.size(), 1u);
  EXPECT_EQ(p.dense[0].op, StoreOp::Add);
  ASSERT_EQ(p.dense[0].index.size(), 2u);
  EXPECT_EQ(p.dense[0].index[0].kind, OutIndex::Lookup);
}

TEST(Sema, OperandKindsAndSelfJoin) {
  Plan p = plan_of(read(std::string(GAMUT_SOURCE_DIR) + "/examples/q6_complementary.mmlt"),
                   TypeEnv{{{"A", DType::F32}}});
  ASSERT_EQ(p.operands.size(), 1u);
  EXPECT_EQ(p.operands[0].kind, OperandKind::Mixed);
  ASSERT_EQ(p.accesses.size(), 2u);
  EXPECT_EQ(p.accesses[0].pattern, Pattern::RowRed);
  EXPECT_EQ(p.accesses[1].pattern, Pattern::ColRed);
  EXPECT_TRUE(p.typed);
  ASSERT_EQ(p.lists.size(), 1u);
  EXPECT_EQ(p.lists[0].columns[2].type, CType::F32);
}

TEST(Sema, AccumulatorTypeInferenceAndMonoids) {
  TypeEnv ints{{{"A", DType::I16}, {"B", DType::I32}}};
  Plan p = plan_of("where (i, j) { m = -inf; reduce (k) { m max= A[i,k] + B[k,j]; } C[i,j] = m; }", ints);
  EXPECT_EQ(p.accs[0].type, CType::I32);
  EXPECT_EQ(p.accs[0].monoid, Monoid::Max);
  EXPECT_EQ(p.accs[0].init.i, std::numeric_limits<int32_t>::min());
  TypeEnv mixed{{{"A", DType::I64}, {"B", DType::F16}}};
  Plan q = plan_of("where (i, j) { m = 0; reduce (k) { m = max(m, A[i,k] * B[k,j]); } C[i,j] = m; }", mixed);
  EXPECT_EQ(q.accs[0].type, CType::F32);
  EXPECT_EQ(q.accs[0].monoid, Monoid::Max) << "max(ACC, e) counts as max=";
  TypeEnv f64{{{"A", DType::F64}, {"B", DType::F32}}};
  Plan r = plan_of("where (i, j) { s = 1; reduce (k) { s = s * 0.5 + A[i,k] * B[k,j]; } C[i,j] = s; }", f64);
  EXPECT_EQ(r.accs[0].type, CType::F64);
  EXPECT_EQ(r.accs[0].monoid, Monoid::Sequential);
  EXPECT_TRUE(r.k_sequential);
}

TEST(Sema, WeakLiteralsKeepF32Arithmetic) {
  TypeEnv env{{{"A", DType::F32}, {"B", DType::F32}}};
  Plan p = plan_of("where (i, j) { a = 0; reduce (k) { a += 0.5 * A[i,k] * B[k,j]; } C[i,j] = a * thres; }", env);
  std::string s = print_plan(p);
  EXPECT_NE(s.find("((0.5:f32 * A[i,k]) * B[k,j])"), std::string::npos) << s;
  EXPECT_NE(s.find("(a * $thres:f32)"), std::string::npos) << s;
  EXPECT_EQ(p.dense[0].type, CType::F32);
}

TEST(Sema, BoolCountsAsI32InAggregates) {
  TypeEnv env{{{"P", DType::F32}, {"R", DType::F32}, {"Pzip", DType::I32}, {"Rzip", DType::I64}}};
  Plan p = plan_of(read(std::string(GAMUT_SOURCE_DIR) + "/examples/q3_count_pairs.mmlt"), env);
  EXPECT_EQ(p.dense[0].type, CType::I32);
}

TEST(Sema, WhenSplitsJoinKeysFromMask) {
  TypeEnv env{{{"P", DType::F32}, {"R", DType::F32}, {"g", DType::I32}, {"h", DType::I32}}};
  Plan p = plan_of("where (i, j) when (g[i] == h[j] && i != j) { a = 0; reduce (k) { a += P[i,k] * R[k,j]; } T[g[i]] += a; }", env);
  ASSERT_EQ(p.when.keys.size(), 1u);
  EXPECT_NE(p.when.mask, kNoExpr);
}

TEST(Sema, BatchPrefixesEveryAccess) {
  Plan p = plan_of(read(std::string(GAMUT_SOURCE_DIR) + "/examples/minplus_batched.mmlt"));
  EXPECT_TRUE(p.batched);
  EXPECT_EQ(p.dense[0].index.size(), 3u);
  EXPECT_NE(errors_of("batch (b) where (i, j) { d = inf; reduce (k) { d min= D[i, k] + E[b, k, j]; } O[b, i, j] = d; }")
                .find("q.mmlt:1:55: error: with 'batch (b)' every access starts with the batch axis"), std::string::npos);
}

// ---- spec section 8: one test per error class, message and position ----

TEST(Errors, MisspelledKeyword) {
  std::string e = errors_of("wher (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(e.find("q.mmlt:1:1: error: a query starts with 'where' (or 'batch'), found 'wher'; did you mean 'where'?"), std::string::npos) << e;
  std::string r = errors_of("where (i, j) { a = 0; reduse (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(r.find("q.mmlt:1:23: error: expected 'reduce' after the accumulator declarations, found 'reduse'; did you mean 'reduce'?"),
            std::string::npos) << r;
  EXPECT_EQ(r.find("\nq.mmlt:"), std::string::npos) << "reads on as 'reduce': no cascade: " << r;
}

TEST(Errors, MisspelledNames) {
  std::string e = errors_of("where (i, j) {\n  accum = 0;\n  reduce (k) {\n    acum += A[i, k] * B[k, j];\n  }\n  C[i, j] = accum;\n}");
  EXPECT_NE(e.find("q.mmlt:4:5: error: unknown accumulator 'acum'; did you mean 'accum'?"), std::string::npos) << e;
  EXPECT_NE(e.find("    acum += A[i, k] * B[k, j];\n      ^~~~"), std::string::npos) << "source line and caret: " << e;
  std::string f = errors_of("where (i, j) { a = 0; reduce (k) { a += mx(A[i,k], B[k,j]); } C[i,j] = a; }");
  EXPECT_NE(f.find("q.mmlt:1:41: error: unknown function 'mx'; did you mean 'max'?"), std::string::npos) << f;
}

TEST(Errors, MissingSemicolonReportedWhereItBelongs) {
  std::string e = errors_of("where (i, j) {\n  a = 0\n  reduce (k) { a += A[i,k] * B[k,j]; }\n  C[i,j] = a;\n}");
  EXPECT_NE(e.find("q.mmlt:2:8: error: expected ';' after the accumulator declaration, found 'reduce'"), std::string::npos) << e;
}

TEST(Errors, SeveralErrorsReportedAtOnce) {
  // Syntax errors: parsing resumes at the next statement.
  std::string e = errors_of("where (i, j) {\n  a = 0;\n  reduce (k) {\n    a += A[i,k] * B[k,j]\n    b += 1;\n  }\n  C[i,j] = a +;\n}");
  EXPECT_NE(e.find("q.mmlt:4:25: error: expected ';'"), std::string::npos) << e;
  EXPECT_NE(e.find("q.mmlt:7:15: error: expected an expression, found ';'"), std::string::npos) << e;
  // Semantic errors: every statement is checked.
  std::string s = errors_of("where (i, j) {\n  a = 0;\n  reduce (k) {\n    a += A[i,j];\n  }\n  C[i,j] = a;\n  D[i,k] += a;\n}");
  EXPECT_NE(s.find("q.mmlt:4:10: error: access pattern A[i, j]"), std::string::npos) << s;
  EXPECT_NE(s.find("q.mmlt:7:7: error: reduction axis 'k' cannot index an output"), std::string::npos) << s;
}

TEST(Errors, AccumulatorNotDeclaredBeforeReduce) {
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { s += A[i,k] * B[k,j]; } C[i,j] = s; }");
  EXPECT_NE(e.find("q.mmlt:1:36: error: unknown accumulator 's'; declare it before 'reduce' (s = 0;)"), std::string::npos) << e;
}

TEST(Errors, AccessPatternNotAllowed) {
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i, j] * B[k, j]; } C[i, j] = a; }");
  EXPECT_NE(e.find("q.mmlt:1:41: error: access pattern A[i, j] is not allowed inside 'reduce'"), std::string::npos) << e;
  std::string kk = errors_of("where (i, j) { a = 0; reduce (k) { a += A[k, k]; } C[i, j] = a; }");
  EXPECT_NE(kk.find("q.mmlt:1:41: error: access pattern A[k, k] is not allowed"), std::string::npos) << kk;
}

TEST(Errors, IndexThatIsNotAnAxis) {
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i + 1, k]; } C[i, j] = a; }");
  EXPECT_NE(e.find("q.mmlt:1:43: error: index of 'A' must be an axis (i, j or k), found an expression"), std::string::npos) << e;
  std::string n = errors_of("where (i, j) { a = 0; reduce (k) { a += A[x, k]; } C[i, j] = a; }");
  EXPECT_NE(n.find("q.mmlt:1:43: error: index of 'A' must be an axis (i, j or k), found 'x'"), std::string::npos) << n;
}

TEST(Errors, ReductionAxisAfterReduce) {
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i, j] = a + k; }");
  EXPECT_NE(e.find("q.mmlt:1:65: error: reduction axis 'k' cannot be used after 'reduce'"), std::string::npos) << e;
  std::string s = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i, j] = a + X[i, k]; }");
  EXPECT_NE(s.find("q.mmlt:1:65: error: access pattern X[i, k] is not allowed after 'reduce'"), std::string::npos) << s;
}

TEST(Errors, TypeErrors) {
  TypeEnv env{{{"A", DType::F32}, {"B", DType::F32}}};
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a |= A[i,k] * B[k,j]; } C[i,j] = a; }", env);
  EXPECT_NE(e.find("q.mmlt:1:38: error: '|=' needs an integer accumulator, but 'a' is f32 (inferred from the inputs"), std::string::npos) << e;
  std::string d = errors_of("where (i, j) { a: f32 = 0; reduce (k) { a ^= A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(d.find("q.mmlt:1:43: error: '^=' needs an integer accumulator, but 'a' is f32"), std::string::npos) << d;
  std::string m = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] % 2.5; } C[i,j] = a; }", env);
  EXPECT_NE(m.find("'%' needs integer operands"), std::string::npos) << m;
  std::string t = errors_of("where (i, j) { a: u8 = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(t.find("q.mmlt:1:19: error: accumulator type must be i32, i64, f32 or f64, found 'u8'"), std::string::npos) << t;
}

TEST(Errors, OutputOperatorRules) {
  std::string two = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i, j] = a; C[i, j] += a; }");
  EXPECT_NE(two.find("output 'C' is written with '+=' here but with '=' at 1:51"), std::string::npos) << two;
  std::string vec = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i] = a; }");
  EXPECT_NE(vec.find("'=' stores need both spatial axes"), std::string::npos) << vec;
  std::string in_reduce = errors_of("where (i, j) { a = 0; reduce (k) { C[i, j] += A[i,k]; } D[i,j] = a; }");
  EXPECT_NE(in_reduce.find("q.mmlt:1:36: error: outputs are written after 'reduce'"), std::string::npos) << in_reduce;
  std::string dup = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } emit S(i, a, a); }");
  EXPECT_NE(dup.find("list 'S' has two columns named 'a'"), std::string::npos) << dup;
  std::string per = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k]; } emit S(i, j) top 3 by a per k; }");
  EXPECT_NE(per.find("'per' must name a 'where' axis"), std::string::npos) << per;
}

TEST(Errors, RangeBoundsAndRankMismatch) {
  std::string r = errors_of("where (i in [0, M * 2], j) { a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(r.find("q.mmlt:1:17: error: a range bound must be an integer literal or a parameter"), std::string::npos) << r;
  std::string k = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] * A[k]; } C[i,j] = a; }");
  EXPECT_NE(k.find("array 'A' is used with 1 indices here but 2 at 1:41"), std::string::npos) << k;
}

TEST(Errors, AccumulatorDeclaredTwiceKeepsTheOthersInitialValues) {
  // The second 'a' has no accumulator of its own: 'b' must still get its own declaration.
  std::string e = errors_of("where (i, j) { a = 0; a = 2.5; b: i32 = 1; reduce (k) { a += A[i,k]; b += A[i,k]; } C[i,j] = a + b; }");
  EXPECT_NE(e.find("q.mmlt:1:23: error: accumulator 'a' is declared twice"), std::string::npos) << e;
  EXPECT_EQ(e.find("\nq.mmlt:"), std::string::npos) << "one error: " << e;
}

TEST(Errors, TooManyArgumentsToMinSaysTheLimit) {
  std::string args = "A[i,k]";
  for (int n = 0; n < 1000; ++n) args += ", A[i,k]";
  std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a += min(" + args + "); } C[i,j] = a; }");
  EXPECT_NE(e.find("error: 'min' takes at most 1000 arguments, got 1001"), std::string::npos) << e.substr(0, 200);
}
