// Size arithmetic from user input (issue 11, item 1): checked products, the .npy shape rule, and
// every extent binding computes (scalar parameters, --dim, index-vector values, batch ranges,
// operand extents) rejected with a data error before it can wrap into a small buffer.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>

#include "bind/bind.h"
#include "core/error.h"
#include "core/sizes.h"
#include "cuda/device/core/gamut_constants.cuh"
#include "data/npy.h"

namespace fs = std::filesystem;
using namespace gamut;

namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

NDArray ints(DType t, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  for (size_t e = 0; e < v.size(); ++e) {
    if (t == DType::I64) a.as<int64_t>()[e] = v[e];
    else if (t == DType::F32) a.as<float>()[e] = float(v[e]);
    else a.as<int32_t>()[e] = int32_t(v[e]);
  }
  return a;
}

struct Outcome {
  ExitCode code = ExitCode::Ok;
  std::string message;
  std::vector<std::vector<int64_t>> shapes;
};

Outcome bind_text(const std::string& text, const Bindings& b) {
  const Source src{"q.mmlt", text};
  Outcome o;
  try {
    const Plan plan = build_plan(src, type_env(b));
    o.shapes = bind(plan, b).dense_shapes;
  } catch (const Error& e) {
    o.code = e.code();
    o.message = e.what();
  }
  return o;
}

const char* kGroupBy =
    "where (i, j) { a = 0; reduce (k) { a += P[i, k] * R[k, j]; } C[g[i], h[j]] += a; }";

Bindings group_by(const std::vector<int64_t>& g) {
  Bindings b;
  b.arrays["P"] = ints(DType::F32, {int64_t(g.size()), 3}, std::vector<int64_t>(g.size() * 3, 1));
  b.arrays["R"] = ints(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6});
  b.arrays["g"] = ints(DType::I64, {int64_t(g.size())}, g);
  b.arrays["h"] = ints(DType::I64, {2}, {0, 1});
  return b;
}

}  // namespace

TEST(Sizes, CheckedProductsAndSums) {
  EXPECT_EQ(size_mul(3, 4), 12);
  EXPECT_EQ(size_mul(0, kMax), 0);
  EXPECT_EQ(size_mul(kMax, 1), kMax);
  EXPECT_FALSE(size_mul(int64_t(1) << 32, int64_t(1) << 31));
  EXPECT_FALSE(size_mul(-1, 4)) << "a negative size is never a size";
  EXPECT_EQ(size_add(kMax - 1, 1), kMax);
  EXPECT_FALSE(size_add(kMax, 1));
  EXPECT_EQ(size_product({}), 1);
  EXPECT_EQ(size_product({2, 3, 7}), 42);
  EXPECT_FALSE(size_product({int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_EQ(size_mul_saturated(int64_t(1) << 40, int64_t(1) << 40), kMax);
  EXPECT_EQ(size_mul_saturated(5, 6), 30);
  EXPECT_THROW(size_mul_or_throw(int64_t(1) << 40, int64_t(1) << 40, "x"), Error);
  try {
    size_mul_or_throw(int64_t(1) << 40, int64_t(1) << 40, "output C");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_EQ(std::string(e.what()).rfind("resource error: output C needs more than 2^63-1 bytes", 0), 0u) << e.what();
  }
}

TEST(Sizes, ShapesFollowNumpysRuleForEmptyArrays) {
  EXPECT_EQ(shape_elements({}), 1);
  EXPECT_EQ(shape_elements({4, 5}), 20);
  EXPECT_EQ(shape_elements({0, int64_t(1) << 40}), 0) << "NumPy allows this";
  // ... but not extents whose non-zero product wraps: strides of such an array would.
  EXPECT_FALSE(shape_elements({0, int64_t(1) << 40, int64_t(1) << 40}));
  EXPECT_EQ(shape_bytes({int64_t(1) << 61}, 4), std::nullopt);
  EXPECT_EQ(shape_bytes({int64_t(1) << 60}, 4), int64_t(1) << 62);
  EXPECT_EQ(shape_bytes({0, int64_t(1) << 62}, 4), std::nullopt);
  EXPECT_EQ(shape_bytes({0, int64_t(1) << 62}, 1), 0);
  EXPECT_EQ(shape_text({5}), "(5,)");
  EXPECT_EQ(shape_text({2, 3}), "(2, 3)");
  EXPECT_EQ(bytes_text(1536), "1.50 KiB");
  EXPECT_EQ(bytes_text(int64_t(3) << 30), "3.00 GiB");
}

TEST(Sizes, ZerosRefusesAShapeWhoseBytesWrap) {
  // (2^62, 4) f32 is 2^66 bytes: before the check it wrapped to an empty buffer.
  try {
    NDArray a = NDArray::zeros(DType::F32, {int64_t(1) << 62, 4});
    FAIL() << "allocated " << a.nbytes() << " bytes for shape (2^62, 4)";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_NE(std::string(e.what()).find("(4611686018427387904, 4)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(NDArray::zeros(DType::I16, {3, 5}).nbytes(), 30u);
}

TEST(Sizes, NpyHeaderWithWrappingEmptyShapeIsADataError) {
  const fs::path p = fs::temp_directory_path() / ("gamut_sizes_" + std::to_string(::getpid()) + ".npy");
  auto write = [&](const std::string& shape) {
    std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    dict += std::string((64 - (10 + dict.size() + 1) % 64) % 64, ' ') + "\n";
    std::string file = std::string("\x93NUMPY\x01\x00", 8);
    file += char(dict.size() & 0xff);
    file += char(dict.size() >> 8);
    file += dict;
    FILE* f = std::fopen(p.c_str(), "wb");
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
  };
  // No data, but extents whose product wraps (before: accepted, then sized the output of sgemm).
  write("(0, 4611686018427387904, 4611686018427387904)");
  try {
    read_npy(p.string(), "A");
    FAIL() << "accepted a shape whose extents multiply past 2^63";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Data);
    EXPECT_NE(std::string(e.what()).find("is too large"), std::string::npos) << e.what();
  }
  write("(0, 1000)");
  NDArray ok = read_npy(p.string(), "A");
  EXPECT_EQ(ok.shape, (std::vector<int64_t>{0, 1000}));
  fs::remove(p);
}

TEST(SizesBind, IndexValueThatWrapsTheOutputShapeIsADataError) {
  // max(g) + 1 = 2^62 + 1 rows of 2 f32: 2^65 bytes, which wrapped to 8 and was written out of bounds.
  Outcome o = bind_text(kGroupBy, group_by({0, 1, int64_t(1) << 62}));
  EXPECT_EQ(o.code, ExitCode::Data) << "shape " << (o.shapes.empty() ? "" : shape_text(o.shapes[0]));
  EXPECT_EQ(o.message, "data error: C: output shape (4611686018427387905, 2) of f32 needs more than 2^63-1 bytes");
  // The largest int64 leaves no room for max + 1.
  Outcome m = bind_text(kGroupBy, group_by({0, kMax}));
  EXPECT_EQ(m.code, ExitCode::Data);
  EXPECT_NE(m.message.find("data error: g: index value 9223372036854775807"), std::string::npos) << m.message;
  // A large but representable extent binds (whether it fits in memory is the engines' check).
  Outcome fine = bind_text(kGroupBy, group_by({0, 1, int64_t(1) << 40}));
  ASSERT_EQ(fine.code, ExitCode::Ok) << fine.message;
  EXPECT_EQ(fine.shapes[0], (std::vector<int64_t>{(int64_t(1) << 40) + 1, 2}));
}

TEST(SizesBind, DimThatWrapsTheOutputShapeIsADataError) {
  Bindings b = group_by({0, 1, 2});
  b.dims["C"] = {int64_t(1) << 62, 4};
  Outcome o = bind_text(kGroupBy, b);
  EXPECT_EQ(o.code, ExitCode::Data);
  EXPECT_EQ(o.message, "data error: C: output shape (4611686018427387904, 4) of f32 needs more than 2^63-1 bytes (extents from --dim)");
  b.dims["C"] = {kMax, 2};
  EXPECT_EQ(bind_text(kGroupBy, b).code, ExitCode::Data);
}

TEST(SizesBind, AxisExtentsNear2To31AreDataErrors) {
  // From a scalar parameter: the engines index i with 32-bit integers.
  const char* q = "where (i in [0, M], j in [0, N]) { a = 0; reduce (k in [0, 1]) { a += 1; } C[i, j] = a + i + j; }";
  Bindings b;
  b.scalars = {{"M", "4294967296"}, {"N", "2"}};
  Outcome o = bind_text(q, b);
  EXPECT_EQ(o.code, ExitCode::Data);
  EXPECT_EQ(o.message, "data error: M: axis 'i' would run to 4294967296; gamut supports axis ranges up to 2147418112 (2^31 - 2^16)");
  b.scalars["M"] = "2147418112";
  b.scalars["N"] = "0";
  EXPECT_EQ(bind_text(q, b).code, ExitCode::Ok) << "the limit itself is fine";
  b.scalars["M"] = "2147418113";
  EXPECT_EQ(bind_text(q, b).code, ExitCode::Data) << "a GPU tile past it would wrap a 32-bit index";
  // From an operand's extent (an empty array may have any extent).
  Bindings e;
  e.arrays["A"] = NDArray::zeros(DType::I8, {int64_t(1) << 31, 0});
  e.arrays["B"] = NDArray::zeros(DType::I8, {0, 3});
  Outcome x = bind_text("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }", e);
  EXPECT_EQ(x.code, ExitCode::Data);
  EXPECT_EQ(x.message.rfind("data error: A: axis 'i' would run to 2147483648", 0), 0u) << x.message;
}

TEST(SizesBind, BatchRangeFromAParameterIsBounded) {
  // Before: 2^61 instances of a 2x2 i32 output wrapped to 0 bytes (SIGSEGV in the store).
  const char* q = "batch (b in [0, n]) where (i in [0, 2], j in [0, 2]) { a = 0; reduce (k in [0, 1]) { a += 1; } C[b, i, j] = a; }";
  Bindings b;
  b.scalars["n"] = "2305843009213693952";
  Outcome o = bind_text(q, b);
  EXPECT_EQ(o.code, ExitCode::Data);
  EXPECT_EQ(o.message.rfind("data error: n: axis 'b' would run to 2305843009213693952", 0), 0u) << o.message;
  b.scalars["n"] = "3";
  Outcome ok = bind_text(q, b);
  ASSERT_EQ(ok.code, ExitCode::Ok) << ok.message;
  EXPECT_EQ(ok.shapes[0], (std::vector<int64_t>{3, 2, 2}));
}

TEST(SizesBind, RangeBoundArithmeticDoesNotWrap) {
  // N + 2^63-1 wrapped to a negative end (undefined behaviour in bind).
  const char* q = "where (i in [0, 2], j in [0, N + 9223372036854775807]) { a = 0; reduce (k in [0, 1]) { a += 1; } C[i, j] = a; }";
  Bindings b;
  b.scalars["N"] = "5";
  Outcome o = bind_text(q, b);
  EXPECT_EQ(o.code, ExitCode::Data);
  EXPECT_EQ(o.message, "data error: N: range bound N + 9223372036854775807 of axis 'j' overflows 64 bits with N = 5");
}

// Top/bottom reservoirs: N comes from the user. int(N) wrapped to 0 (N = 2^62) or -1 (2^63 - 1),
// and the GPU engine then asked for groups x -1 x 4 bytes (2^64 - 280 for 70 groups).
TEST(Sizes, ReservoirSlotsStayPositiveForEveryN) {
  for (long long n : {1LL, 16LL, 17LL, 1000LL, (1LL << 31) - 1, 1LL << 32, 1LL << 62, std::numeric_limits<long long>::max()}) {
    const int s = gm::reservoir_slots(n);
    EXPECT_GT(s, 0) << n;
    EXPECT_LE(s, 1 << 30) << n;
    if (n > 16 && n < (1LL << 30)) EXPECT_EQ(s, n);
  }
  EXPECT_EQ(gm::reservoir_slots(3), 32);
}
