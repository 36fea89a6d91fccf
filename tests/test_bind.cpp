// Binding: extents, output shapes and every data error, each naming its binding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "bind/bind.h"
#include "core/error.h"

using namespace gamut;

namespace {

NDArray iota(DType t, std::vector<int64_t> shape, int64_t start = 1) {
  NDArray a = NDArray::zeros(t, shape);
  for (int64_t e = 0; e < a.size(); ++e) {
    int64_t v = start + e % 7;
    switch (t) {
      case DType::F32: a.as<float>()[e] = float(v); break;
      case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
      case DType::I64: a.as<int64_t>()[e] = v; break;
      default: a.as<uint8_t>()[e] = uint8_t(v); break;
    }
  }
  return a;
}

struct BoundQuery {
  Source src;
  Bindings b;
  Plan plan;
  Instance inst;
};

// Bind `text`; returns the error (code, message) or an empty message on success.
std::pair<ExitCode, std::string> bind_error(const std::string& text, Bindings b, BoundQuery* out = nullptr) {
  auto bd = std::make_unique<BoundQuery>();
  bd->src = Source{"q.mmlt", text};
  bd->b = std::move(b);
  try {
    bd->plan = build_plan(bd->src, type_env(bd->b));
    bd->inst = bind(bd->plan, bd->b);
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  if (out) *out = std::move(*bd);
  return {ExitCode::Ok, ""};
}

const char* kSgemm = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";
const char* kZip = "where (i in [0, M], j in [0, N]) { a = 0; reduce (k in [0, K]) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; }";

}  // namespace

TEST(Bind, ExtentsInferredFromOperands) {
  BoundQuery bd;
  auto [code, msg] = bind_error(kSgemm, {{{"A", iota(DType::F32, {5, 3})}, {"B", iota(DType::F32, {3, 4})}}}, &bd);
  ASSERT_EQ(code, ExitCode::Ok) << msg;
  EXPECT_EQ(bd.inst.row.size(), 5);
  EXPECT_EQ(bd.inst.col.size(), 4);
  EXPECT_EQ(bd.inst.red.size(), 3);
  EXPECT_EQ(bd.inst.dense_shapes[0], (std::vector<int64_t>{5, 4}));
}

TEST(Bind, RangeSymbolsBoundToExtentsAndIndexVectorsSizeTheOutput) {
  BoundQuery bd;
  Bindings b{{{"P", iota(DType::F32, {6, 3})}, {"R", iota(DType::F32, {3, 2})}, {"g", iota(DType::I32, {6}, 0)},
              {"h", iota(DType::I64, {2}, 4)}}};
  auto [code, msg] = bind_error(kZip, b, &bd);
  ASSERT_EQ(code, ExitCode::Ok) << msg;
  EXPECT_EQ(bd.inst.row.end, 6);
  EXPECT_EQ(bd.inst.dense_shapes[0], (std::vector<int64_t>{6, 6})) << "max(g)+1 = 6, max(h)+1 = 6";
  b.dims["C"] = {10, 8};
  BoundQuery bd2;
  auto [c2, m2] = bind_error(kZip, b, &bd2);
  ASSERT_EQ(c2, ExitCode::Ok) << m2;
  EXPECT_EQ(bd2.inst.dense_shapes[0], (std::vector<int64_t>{10, 8}));
  b.scalars["M"] = "4";
  BoundQuery bd3;
  auto [c3, m3] = bind_error(kZip, b, &bd3);
  ASSERT_EQ(c3, ExitCode::Ok) << m3;
  EXPECT_EQ(bd3.inst.row.end, 4);
}

TEST(Bind, EmptyExtentIsFine) {
  BoundQuery bd;
  auto [code, msg] = bind_error(kSgemm, {{{"A", iota(DType::F32, {0, 3})}, {"B", iota(DType::F32, {3, 4})}}}, &bd);
  ASSERT_EQ(code, ExitCode::Ok) << msg;
  EXPECT_EQ(bd.inst.dense_shapes[0], (std::vector<int64_t>{0, 4}));
}

TEST(BindErrors, MissingInput) {
  auto [code, msg] = bind_error(kSgemm, {{{"A", iota(DType::F32, {5, 3})}}});
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: B: input array is not bound; pass B=FILE.npy (q.mmlt:1:51)");
}

TEST(BindErrors, WrongRank) {
  auto [code, msg] = bind_error(kSgemm, {{{"A", iota(DType::F32, {5, 3, 2})}, {"B", iota(DType::F32, {3, 4})}}});
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: A: expected 2 dimensions, got shape (5, 3, 2)");
}

TEST(BindErrors, ExtentsDisagreeNamingBoth) {
  auto [code, msg] = bind_error(kSgemm, {{{"A", iota(DType::F32, {5, 3})}, {"B", iota(DType::F32, {4, 4})}}});
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: B: extent 4 along axis 'k' disagrees with A's extent 3");
}

TEST(BindErrors, ExplicitRangeBeyondOperand) {
  Bindings b{{{"P", iota(DType::F32, {6, 3})}, {"R", iota(DType::F32, {3, 2})}, {"g", iota(DType::I32, {6}, 0)},
              {"h", iota(DType::I32, {2}, 0)}}};
  b.scalars["M"] = "9";
  auto [code, msg] = bind_error(kZip, b);
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: P: extent 6 along axis 'i' is smaller than its range end 9");
}

TEST(BindErrors, IndexValuesOutOfRange) {
  NDArray g = iota(DType::I32, {6}, 0);
  g.as<int32_t>()[3] = -2;
  Bindings b{{{"P", iota(DType::F32, {6, 3})}, {"R", iota(DType::F32, {3, 2})}, {"g", g}, {"h", iota(DType::I32, {2}, 0)}}};
  auto [code, msg] = bind_error(kZip, b);
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: g: index value -2 at position 3 is negative");
  b.arrays["g"] = iota(DType::I32, {6}, 0);
  b.dims["C"] = {3, 8};
  auto [c2, m2] = bind_error(kZip, b);
  EXPECT_EQ(c2, ExitCode::Data);
  EXPECT_EQ(m2, "data error: g: index value 3 at position 3 is not below the extent 3 of output C");
  b.arrays["g"] = iota(DType::F32, {6}, 0);
  b.dims.clear();
  auto [c3, m3] = bind_error(kZip, b);
  EXPECT_EQ(c3, ExitCode::Query) << "float index vector is a type error";
  EXPECT_NE(m3.find("index vector 'g' must hold integers, but it is f32"), std::string::npos) << m3;
}

// The range of an index vector comes from one typed pass (NDArray::i64_range); errors still
// name the first bad value in order: a value past --dim before a negative one is reported first.
TEST(BindErrors, FirstBadIndexValueInOrderIsNamed) {
  NDArray g = iota(DType::I32, {6}, 0);
  g.as<int32_t>()[1] = 9;    // past the extent 3 given below
  g.as<int32_t>()[4] = -1;   // negative, later
  Bindings b{{{"P", iota(DType::F32, {6, 3})}, {"R", iota(DType::F32, {3, 2})}, {"g", g}, {"h", iota(DType::I32, {2}, 0)}}};
  b.dims["C"] = {3, 8};
  auto [code, msg] = bind_error(kZip, b);
  EXPECT_EQ(code, ExitCode::Data);
  EXPECT_EQ(msg, "data error: g: index value 9 at position 1 is not below the extent 3 of output C");
  b.dims.clear();
  auto [c2, m2] = bind_error(kZip, b);
  EXPECT_EQ(c2, ExitCode::Data);
  EXPECT_EQ(m2, "data error: g: index value -1 at position 4 is negative");
}

// Index vectors of every integer type size the output as max + 1 (the typed range pass), and
// NDArray::i64_range agrees with get_i64 element by element, on sub-ranges too.
TEST(Bind, IndexVectorsOfEveryIntegerTypeSizeTheOutput) {
  for (DType t : {DType::U8, DType::I8, DType::I16, DType::I32, DType::I64}) {
    SCOPED_TRACE(dtype_name(t));
    NDArray g = NDArray::zeros(t, {6}), h = NDArray::zeros(t, {2});
    const int64_t gv[6] = {4, 0, 11, 2, 3, 1};
    for (int64_t e = 0; e < 6; ++e) {
      switch (t) {
        case DType::U8: g.as<uint8_t>()[e] = uint8_t(gv[e]); break;
        case DType::I8: g.as<int8_t>()[e] = int8_t(gv[e]); break;
        case DType::I16: g.as<int16_t>()[e] = int16_t(gv[e]); break;
        case DType::I32: g.as<int32_t>()[e] = int32_t(gv[e]); break;
        default: g.as<int64_t>()[e] = gv[e]; break;
      }
    }
    Bindings b{{{"P", iota(DType::F32, {6, 3})}, {"R", iota(DType::F32, {3, 2})}, {"g", g}, {"h", h}}};
    BoundQuery q;
    auto [code, msg] = bind_error(kZip, b, &q);
    ASSERT_EQ(code, ExitCode::Ok) << msg;
    ASSERT_FALSE(q.inst.dense_shapes.empty());
    EXPECT_EQ(q.inst.dense_shapes[0], (std::vector<int64_t>{12, 1}));
    for (int64_t first = 0; first < 6; ++first)
      for (int64_t count = 1; first + count <= 6; ++count) {
        int64_t lo = 0, hi = 0, wlo = INT64_MAX, whi = INT64_MIN;
        g.i64_range(first, count, lo, hi);
        for (int64_t e = first; e < first + count; ++e) {
          wlo = std::min(wlo, g.get_i64(e));
          whi = std::max(whi, g.get_i64(e));
        }
        EXPECT_EQ(lo, wlo) << first << "+" << count;
        EXPECT_EQ(hi, whi) << first << "+" << count;
      }
  }
  NDArray f = iota(DType::F32, {5}, 3);   // other types: through get_i64
  int64_t lo = 0, hi = 0;
  f.i64_range(0, 5, lo, hi);
  EXPECT_EQ(lo, 3);
  EXPECT_EQ(hi, 7);
}

TEST(BindErrors, ParametersAndUnknownBindings) {
  const char* q5 = "where (i, j) { a = 0; reduce (k) { a += P[i,k] * R[k,j]; } if (a > thres) emit S(i, j, a) top n by a; }";
  Bindings b{{{"P", iota(DType::F32, {4, 3})}, {"R", iota(DType::F32, {3, 2})}}};
  b.scalars["n"] = "5";
  auto [c1, m1] = bind_error(q5, b);
  EXPECT_EQ(c1, ExitCode::Data);
  EXPECT_EQ(m1, "data error: thres: parameter is not bound; pass thres=VALUE (q.mmlt:1:68)");
  b.scalars["thres"] = "0.5";
  b.scalars["n"] = "2.5";
  auto [c2, m2] = bind_error(q5, b);
  EXPECT_EQ(c2, ExitCode::Data);
  EXPECT_EQ(m2, "data error: n: must be an integer (it is used as one at q.mmlt:1:95), got '2.5'");
  b.scalars["n"] = "-1";
  auto [c3, m3] = bind_error(q5, b);
  EXPECT_EQ(c3, ExitCode::Data);
  EXPECT_EQ(m3, "data error: n: N of top/bottom must not be negative");
  b.scalars["n"] = "3";
  b.scalars["bogus"] = "1";
  auto [c4, m4] = bind_error(q5, b);
  EXPECT_EQ(c4, ExitCode::Usage);
  EXPECT_EQ(m4, "usage error: binding 'bogus' matches no input or parameter of the query");
  b.scalars.erase("bogus");
  b.scalars["thres"] = "abc";
  auto [c5, m5] = bind_error(q5, b);
  EXPECT_EQ(c5, ExitCode::Data);
  EXPECT_EQ(m5, "data error: thres: 'abc' is not a number (bind arrays as thres=FILE.npy)");
}
