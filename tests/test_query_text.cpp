// Hostile query text (issue 11): non-ASCII characters and bytes that are not UTF-8, a byte order
// mark, literals that do not fit the type they are used at, a float value added into an integer
// accumulator, and the errors that follow a missing ';'.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "driver/pipeline.h"
#include "sema/analyze.h"

using namespace gamut;

namespace {

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

size_t error_count(const std::string& rendered) {
  size_t n = 0;
  for (size_t p = 0; (p = rendered.find(": error: ", p)) != std::string::npos; ++p) ++n;
  return n;
}

// Line `n` (0-based) of the rendered diagnostics.
std::string line_of(const std::string& s, int n) {
  size_t a = 0;
  for (int k = 0; k < n; ++k) a = s.find('\n', a) + 1;
  return s.substr(a, s.find('\n', a) - a);
}

const char* kSgemm = "where (i, j) {\n  acc = 0;\n  reduce (k) {\n    acc += A[i, k] * B[k, j];\n  }\n  C[i, j] = acc;\n}\n";
const TypeEnv kF32{{{"A", DType::F32}, {"B", DType::F32}}};
const TypeEnv kI32{{{"A", DType::I32}, {"B", DType::I32}}};

}  // namespace

// ---- non-ASCII input ----

TEST(QueryText, NonAsciiCharacterIsShownAndColumnsCountCharacters) {
  // '×' is two bytes; 'é' in the comment before it is two more: the column counts characters.
  const std::string text = "where (i, j) { a = 0; reduce (k) { /* é */ a += A[i,k] × B[k,j]; } C[i,j] = a; }";
  const std::string e = errors_of(text);
  EXPECT_EQ(line_of(e, 0), "q.mmlt:1:56: error: unexpected character '×' (U+00D7)") << e;
  // The caret is under the character: as many characters before it as the column says.
  const std::string shown = line_of(e, 1), caret = line_of(e, 2);
  EXPECT_EQ(shown, "  " + text);
  EXPECT_EQ(caret, std::string(2 + 55, ' ') + "^");
}

TEST(QueryText, BytesThatAreNotUtf8AreShownInHex) {
  const std::string e = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] \xE9 B[k,j]; } C[i,j] = a; }");
  EXPECT_EQ(line_of(e, 0), "q.mmlt:1:48: error: unexpected byte 0xE9 (the query is not valid UTF-8)") << e;
  EXPECT_NE(line_of(e, 1).find("A[i,k] ? B[k,j]"), std::string::npos) << "shown as '?', one column: " << e;
  // A truncated sequence, an overlong form, a surrogate: each byte is reported in hex, not as text.
  for (const char* bad : {"\xE2\x82", "\xC0\xAF", "\xED\xA0\x80"}) {
    const std::string t = errors_of(std::string("where (i, j) { a = 0; ") + bad + " reduce (k) { a += A[i,k]; } C[i,j] = a; }");
    EXPECT_NE(line_of(t, 0).find("q.mmlt:1:23: error: unexpected byte 0x"), std::string::npos) << t;
  }
  const std::string ctl = errors_of("where (i, j) { a = 0;\x07 reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_EQ(line_of(ctl, 0), "q.mmlt:1:22: error: unexpected control character U+0007") << ctl;
  EXPECT_EQ(line_of(ctl, 1).find('\x07'), std::string::npos) << "control characters are not echoed";
}

TEST(QueryText, ByteOrderMarkIsAccepted) {
  EXPECT_EQ(errors_of(std::string("\xEF\xBB\xBF") + kSgemm), "");
  // Columns on line 1 start after it, and the shown line does not carry it.
  const std::string e = errors_of("\xEF\xBB\xBFwher (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_EQ(line_of(e, 0).rfind("q.mmlt:1:1: error: a query starts with 'where'", 0), 0u) << e;
  EXPECT_EQ(line_of(e, 1), "  wher (i, j) { a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  // Elsewhere U+FEFF is just a character the language does not have.
  EXPECT_NE(errors_of(std::string("where (i, j) {\xEF\xBB\xBF a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }"))
                .find("q.mmlt:1:15: error: unexpected character '\xEF\xBB\xBF' (U+FEFF)"),
            std::string::npos);
}

TEST(QueryText, RangeTextAfterNonAsciiIsTheBoundAsWritten) {
  Plan p = build_plan(Source{"q.mmlt", "/* ünï */ where (i in [0, M], j) { a = 0; reduce (k) { a += A[i,k]; } C[i,j] = a; }"});
  EXPECT_EQ(p.axes[0].end.text, "M");
  EXPECT_EQ(p.axes[0].begin.text, "0");
}

TEST(QueryText, RewriteCutsTheQueryTextAtTokensAfterNonAscii) {
  // Or-and bit packing keeps the output block as written, cut out of the text at token positions:
  // byte offsets, not character columns (a BOM and 'é' before the cut on the same lines).
  const std::string text =
      "\xEF\xBB\xBFwhere (i, j) { /* é */ r: i32 = 0; reduce (k) { r |= Adj[i, k] & Adj[k, j]; } /* ü */ Reach[i, j] = r; }";
  Bindings b;
  NDArray adj = NDArray::zeros(DType::Bool, {200, 200});
  unsigned st = 7;
  for (int64_t e = 0; e < adj.size(); ++e) {
    st = st * 1103515245u + 12345u;
    adj.as<uint8_t>()[e] = (st >> 8) % 100u < 4u;
  }
  b.arrays["Adj"] = adj;
  auto with = prepare(Source{"q.mmlt", text}, b, true);
  ASSERT_TRUE(with->program.has_value());
  EXPECT_NE(with->program->stages.back().text.find("/* ü */ Reach[i, j] = r; "), std::string::npos)
      << with->program->stages.back().text;
  auto without = prepare(Source{"q.mmlt", text}, b, false);
  RunOptions o;
  o.backend = Backend::Cpu;
  Results x = execute(*with, o, nullptr), y = execute(*without, o, nullptr);
  EXPECT_EQ(x.dense[0].data, y.dense[0].data);
  int64_t ones = 0;
  for (int64_t e = 0; e < y.dense[0].size(); ++e) ones += y.dense[0].get_i64(e);
  EXPECT_GT(ones, 0);
  EXPECT_LT(ones, y.dense[0].size());
}

TEST(QueryText, GarbageInputGivesAtMostTwentyErrorsQuickly) {
  std::mt19937 rng(11);
  std::string junk(1 << 20, '\0');
  for (char& c : junk) c = char(rng() & 0xFF);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = errors_of(junk);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(error_count(e), Diagnostics::kMaxErrors);
  EXPECT_NE(e.find("more errors not shown"), std::string::npos);
  EXPECT_LT(s, 10.0);
  EXPECT_LT(e.size(), 20000u) << "source lines are shown as windows";
}

// ---- literals and the type they are used at ----

TEST(QueryText, IntegerLiteralThatDoesNotFitI32) {
  const std::string init = errors_of("where (i, j) { a: i32 = 3000000000; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(init.find("q.mmlt:1:25: error: integer 3000000000 does not fit in i32, the type of accumulator 'a'"),
            std::string::npos) << init;
  EXPECT_NE(errors_of("where (i, j) { a: i32 = 2147483648; reduce (k) { a += A[i,k]; } C[i,j] = a; }")
                .find("does not fit in i32"), std::string::npos);
  EXPECT_NE(errors_of("where (i, j) { a: i32 = -2147483649; reduce (k) { a += A[i,k]; } C[i,j] = a; }")
                .find("q.mmlt:1:25: error: integer -2147483649 does not fit in i32"), std::string::npos);
  Plan lowest = build_plan(Source{"q.mmlt", "where (i, j) { a: i32 = -2147483648; reduce (k) { a max= A[i,k]; } C[i,j] = a; }"});
  EXPECT_EQ(lowest.accs[0].init.i, -2147483648LL);
  // Used in an operation: the literal takes the operand's type (docs/semantics.md) and must fit it.
  const std::string use = errors_of("where (i, j) { a: i64 = 0; reduce (k) { a += A[i,k] + 3000000000; } C[i,j] = a; }", kI32);
  EXPECT_NE(use.find("q.mmlt:1:55: error: integer 3000000000 does not fit in i32, the type it takes here; write "
                     "i64(3000000000)"), std::string::npos) << use;
  const std::string cmp = errors_of("where (i, j) { a = 0; reduce (k) { if (A[i,k] < -3000000000) a += 1; } C[i,j] = a; }", kI32);
  EXPECT_NE(cmp.find("does not fit in i32"), std::string::npos) << cmp;
  // An explicit conversion wraps as C does; i64 arithmetic takes the literal.
  EXPECT_EQ(errors_of("where (i, j) { a: i64 = 0; reduce (k) { a += A[i,k] + i32(3000000000); } C[i,j] = a; }", kI32), "");
  EXPECT_EQ(errors_of("where (i, j) { a: i64 = 0; reduce (k) { a += i64(A[i,k]) + 3000000000; } C[i,j] = a; }", kI32), "");
}

TEST(QueryText, FloatLiteralThatOverflowsF32) {
  const std::string init = errors_of("where (i, j) { a: f32 = 1e39; reduce (k) { a += A[i,k]; } C[i,j] = a; }");
  EXPECT_NE(init.find("q.mmlt:1:25: error: number 1e39 is too large for f32, the type of accumulator 'a' (it would become inf)"),
            std::string::npos) << init;
  const std::string use = errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] * -1e39; } C[i,j] = a; }", kF32);
  EXPECT_NE(use.find("q.mmlt:1:50: error: number -1e39 is too large for f32, the type it takes here"), std::string::npos) << use;
  // The largest f32 and infinity itself are fine; f64 takes 1e39.
  EXPECT_EQ(errors_of("where (i, j) { a: f32 = -3.4028234e38; reduce (k) { a max= A[i,k] * 3.4e38; } C[i,j] = a; }", kF32), "");
  EXPECT_EQ(errors_of("where (i, j) { a: f32 = -inf; reduce (k) { a max= A[i,k]; } C[i,j] = a; }", kF32), "");
  EXPECT_EQ(errors_of("where (i, j) { a: f64 = 1e39; reduce (k) { a += f64(A[i,k]) * 1e39; } C[i,j] = a; }", kF32), "");
  // Beyond f64 already in the lexer.
  EXPECT_NE(errors_of("where (i, j) { a: f64 = 1e400; reduce (k) { a += A[i,k]; } C[i,j] = a; }")
                .find("q.mmlt:1:25: error: number '1e400' is too large (beyond the range of f64)"), std::string::npos);
}

TEST(QueryText, InitialValueOfAnIntegerAccumulatorIsAnInteger) {
  EXPECT_NE(errors_of("where (i, j) { a: i32 = 2.5; reduce (k) { a += A[i,k]; } C[i,j] = a; }")
                .find("q.mmlt:1:25: error: initial value 2.5 is not an integer of i32, the type of accumulator 'a'"),
            std::string::npos);
  EXPECT_NE(errors_of("where (i, j) { a: i32 = 1e10; reduce (k) { a += A[i,k]; } C[i,j] = a; }").find("not an integer of i32"),
            std::string::npos);
  Plan p = build_plan(Source{"q.mmlt", "where (i, j) { a: i32 = 1e3; b: i64 = inf; reduce (k) { a += A[i,k]; b min= A[i,k]; } C[i,j] = a + b; }"});
  EXPECT_EQ(p.accs[0].init.i, 1000);
  EXPECT_EQ(p.accs[1].init.i, std::numeric_limits<int64_t>::max());
  // An undeclared accumulator's type comes from the inputs: checked once they are known.
  EXPECT_EQ(errors_of("where (i, j) { a = 2.5; reduce (k) { a += A[i,k]; } C[i,j] = a; }"), "");
  EXPECT_NE(errors_of("where (i, j) { a = 2.5; reduce (k) { a += A[i,k]; } C[i,j] = a; }", kI32).find("not an integer of i32"),
            std::string::npos);
}

// ---- a float value into an integer accumulator ----

TEST(QueryText, FloatAddedIntoAnIntegerAccumulatorIsRejected) {
  for (const char* op : {"+=", "-=", "*="}) {
    const std::string e = errors_of(std::string("where (i, j) { a: i32 = 0; reduce (k) { a ") + op + " A[i,k]; } C[i,j] = a; }", kF32);
    EXPECT_NE(e.find(std::string("q.mmlt:1:46: error: 'a' is i32 but this value is f32; ") + op +
                     " would truncate at every step: convert the value (i32(...)) or declare 'a: f64'"),
              std::string::npos) << e;
  }
  EXPECT_NE(errors_of("where (i, j) { a: i64 = 0; reduce (k) { a += 0.5; } C[i,j] = a + A[i,j]; }")
                .find("'a' is i64 but this value is f64"), std::string::npos);
  // Inferred from integer inputs, then a float product: the same error.
  EXPECT_NE(errors_of("where (i, j) { a = 0; reduce (k) { a += A[i,k] * 0.5; } C[i,j] = a; }", kI32)
                .find("q.mmlt:1:41: error: 'a' is i32 but this value is f64"), std::string::npos);
  // What stays allowed: an explicit conversion, the C assignment, max=/min= (both orders agree).
  EXPECT_EQ(errors_of("where (i, j) { a: i32 = 0; reduce (k) { a += i32(A[i,k] * 0.5); } C[i,j] = a; }", kF32), "");
  EXPECT_EQ(errors_of("where (i, j) { a: i32 = 0; reduce (k) { a = a + A[i,k]; } C[i,j] = a; }", kF32), "");
  EXPECT_EQ(errors_of("where (i, j) { a: i32 = -inf; b: i32 = inf; reduce (k) { a max= A[i,k]; b min= A[i,k]; } C[i,j] = a + b; }", kF32),
            "");
  // inf and -inf are the integer type's limits (spec section 3), not floats here.
  EXPECT_EQ(errors_of("where (i, j) { a: i64 = 0; reduce (k) { a += A[i,k]; a -= -inf; } C[i,j] = a; }", kI32), "");
  // A bare parameter becomes an integer parameter (binding 2.5 is then a data error).
  Plan p = build_plan(Source{"q.mmlt", "where (i, j) { a: i32 = 0; reduce (k) { a += w; a += A[i,k]; } C[i,j] = a; }"}, kI32);
  ASSERT_EQ(p.params.size(), 1u);
  EXPECT_TRUE(p.params[0].integer_only);
}

// ---- errors after a missing ';' ----

TEST(QueryText, EachMissingSemicolonIsOneError) {
  const std::string e = errors_of("where (i, j) {\n  acc = 0\n  reduce (k) {\n    acc += A[i,k] * B[k,j]\n  }\n  C[i,j] = acc\n}\n");
  EXPECT_EQ(error_count(e), 3u) << e;
  EXPECT_EQ(line_of(e, 0), "q.mmlt:2:10: error: expected ';' after the accumulator declaration, found 'reduce'");
  EXPECT_EQ(line_of(e, 3), "q.mmlt:4:27: error: expected ';' after the statement, found '}'");
  EXPECT_EQ(line_of(e, 6), "q.mmlt:6:15: error: expected ';' after the statement, found '}'");
  // On one line, before a keyword or a '}'.
  const std::string one = errors_of("where (i, j) { a = 0 reduce (k) { let x = A[i,k] a += x } C[i,j] = a; }");
  // (`a += x }` follows on the same line: recovery skips it to the '}'.)
  EXPECT_EQ(error_count(one), 2u) << one;
  EXPECT_NE(one.find("q.mmlt:1:21: error: expected ';' after the accumulator declaration, found 'reduce'"), std::string::npos);
  EXPECT_NE(one.find("q.mmlt:1:49: error: expected ';' after the 'let' statement, found 'a'"), std::string::npos) << one;
  // Inner statements after the broken one are still parsed: their own errors show.
  const std::string next = errors_of("where (i, j) {\n  a = 0;\n  reduce (k) {\n    a += A[i,k]\n    a += ;\n  }\n  C[i,j] = a;\n}");
  EXPECT_EQ(error_count(next), 2u) << next;
  EXPECT_NE(next.find("q.mmlt:5:10: error: expected an expression, found ';'"), std::string::npos) << next;
}

TEST(QueryText, BrokenDeclarationDoesNotCascade) {
  // No "expected at least one accumulator declaration" after a declaration that failed.
  const std::string e = errors_of("where (i, j) {\n  a = ;\n  reduce (k) { a += A[i,k]; }\n  C[i,j] = a;\n}");
  EXPECT_EQ(error_count(e), 1u) << e;
  EXPECT_NE(e.find("q.mmlt:2:7: error: expected an expression, found ';'"), std::string::npos) << e;
  // A broken declaration without its ';': recovery stops at 'reduce' and the body still parses.
  const std::string r = errors_of("where (i, j) {\n  a = 0 0\n  reduce (k) { a += A[i,k] }\n  C[i,j] = a;\n}");
  EXPECT_EQ(error_count(r), 2u) << r;
  EXPECT_NE(r.find("q.mmlt:3:27: error: expected ';' after the statement, found '}'"), std::string::npos) << r;
}
