// Or-and bit packing: the three stages compute exactly what the query as written computes, and the
// rewrite stays away from data where packing would change `&` (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>

#include "semantics/bit_pack.h"
#include "driver/pipeline.h"
#include "rewrite/bitpack_orand.h"
#if GAMUT_HAVE_CUDA
#include "cuda/stages/bit_pack.h"
#include "cuda/runtime.h"
#endif

using namespace gamut;

namespace {

// 0/1 values (1 with probability `density`) from a fixed sequence, stored as `t`.
NDArray bits(DType t, std::vector<int64_t> shape, double density, unsigned seed) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  unsigned s = seed;
  for (int64_t e = 0; e < a.size(); ++e) {
    s = s * 1103515245u + 12345u;
    const int v = double((s >> 8) % 100000u) < density * 100000.0 ? 1 : 0;
    switch (t) {
      case DType::Bool: case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
      case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
      case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
      case DType::I32: a.as<int32_t>()[e] = v; break;
      case DType::I64: a.as<int64_t>()[e] = v; break;
      case DType::F32: a.as<float>()[e] = float(v); break;
      default: ADD_FAILURE() << "unsupported dtype in the test";
    }
  }
  return a;
}

// Density for which about half the (i, j) pairs are reachable over K steps.
double half_density(int64_t K) { return std::sqrt(1.0 - std::pow(0.5, 1.0 / double(K))); }

Results run_cpu_engine(const Prepared& p) {
  RunOptions o;
  o.backend = Backend::Cpu;
  o.threads = 2;
  return execute(p, o, nullptr);
}

// The query as written (no rewrite) and the rewritten program, both on the CPU; the rewrite is
// forced with min_k = 1 so that small K are covered too.
void expect_same(const std::string& text, const Bindings& b, bool want_some_ones = true) {
  SCOPED_TRACE(text);
  auto original = prepare(Source{"q.mmlt", text}, b, false);
  ASSERT_FALSE(original->program.has_value());
  Results want = run_cpu_engine(*original);

  auto rewritten = prepare(Source{"q.mmlt", text}, b, false);
  BitpackOptions opt;
  opt.min_k = 1;
  rewritten->program = bitpack_orand(rewritten->plan, rewritten->instance, rewritten->source, rewritten->bindings, opt);
  ASSERT_TRUE(rewritten->program.has_value()) << "the rewrite applies";
  ASSERT_EQ(rewritten->program->stages.size(), 3u);
  EXPECT_TRUE(rewritten->program->stages[0].bitpack.has_value());
  EXPECT_TRUE(rewritten->program->stages[1].bitpack.has_value());
  EXPECT_FALSE(rewritten->program->stages[2].bitpack.has_value());
  Results got = run_cpu_engine(*rewritten);

  ASSERT_EQ(got.dense.size(), want.dense.size());
  for (size_t d = 0; d < want.dense.size(); ++d) {
    SCOPED_TRACE("output " + original->plan.dense[d].name);
    EXPECT_EQ(got.dense[d].dtype, want.dense[d].dtype);
    ASSERT_EQ(got.dense[d].shape, want.dense[d].shape);
    EXPECT_EQ(got.dense[d].data, want.dense[d].data);
  }
  ASSERT_EQ(got.lists.size(), want.lists.size());
  for (size_t l = 0; l < want.lists.size(); ++l) {
    ASSERT_EQ(got.lists[l].rows, want.lists[l].rows);
    ASSERT_EQ(got.lists[l].columns.size(), want.lists[l].columns.size());
    for (size_t c = 0; c < want.lists[l].columns.size(); ++c) {
      EXPECT_EQ(got.lists[l].columns[c].name, want.lists[l].columns[c].name);
      EXPECT_EQ(got.lists[l].columns[c].data, want.lists[l].columns[c].data);
    }
  }
  if (want_some_ones) {
    bool nonzero = false;
    for (std::byte x : want.dense[0].data) nonzero |= x != std::byte{0};
    EXPECT_TRUE(nonzero) << "the data reaches something";
  }
}

const char* const kReachability =
    "where (i, j) {\n  r: i32 = 0;\n  reduce (k) {\n    r |= Adj[i, k] & Adj[k, j];\n  }\n  Reach[i, j] = r;\n}\n";

}  // namespace

TEST(BitpackOrand, EveryLengthTypeAndOrientationMatchesTheQueryAsWritten) {
  const int64_t M = 37, N = 45;
  for (int64_t K : {1, 31, 32, 33, 64, 100, 1000})
    for (DType t : {DType::Bool, DType::U8, DType::I32})
      for (bool x_km : {false, true})
        for (bool y_km : {false, true}) {
          const std::string x = x_km ? "X[k, i]" : "X[i, k]", y = y_km ? "Y[k, j]" : "Y[j, k]";
          const std::string acc = t == DType::I32 ? "i64" : "i32";
          const std::string text = "where (i, j) { r: " + acc + " = 0; reduce (k) { r |= " + x + " & " + y +
                                   "; } C[i, j] = r; }";
          Bindings b;
          const double d = half_density(K);
          b.arrays["X"] = bits(t, x_km ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K}, d, unsigned(K * 7 + 1));
          b.arrays["Y"] = bits(t, y_km ? std::vector<int64_t>{K, N} : std::vector<int64_t>{N, K}, d, unsigned(K * 13 + 2));
          SCOPED_TRACE(std::string(dtype_name(t)) + " K " + std::to_string(K));
          expect_same(text, b);
        }
}

TEST(BitpackOrand, ReachabilityAppliesThroughPrepareAndNotWithoutRewrites) {
  for (DType t : {DType::Bool, DType::U8}) {
    Bindings b;
    b.arrays["Adj"] = bits(t, {300, 300}, half_density(300), 5);
    auto with = prepare(Source{"reachability.mmlt", kReachability}, b, true);
    ASSERT_TRUE(with->program.has_value());
    EXPECT_EQ(with->plan.rewrites.back(), "bitpack-orand");
    EXPECT_NE(print_plan(with->plan).find("bitpack-orand"), std::string::npos);
    const auto& st = with->program->stages;
    ASSERT_EQ(st.size(), 3u);
    EXPECT_EQ(st[0].bitpack->words(), 10);  // ceil(300 / 32)
    EXPECT_TRUE(st[0].bitpack->src_k_minor);   // Adj[i, k]
    EXPECT_FALSE(st[1].bitpack->src_k_minor);  // Adj[k, j]: packed transposed
    EXPECT_NE(st[2].text.find("reduce (bp_w in [0, 10))"), std::string::npos) << st[2].text;
    EXPECT_NE(st[2].text.find("Reach[i, j] = r;"), std::string::npos) << st[2].text;
    EXPECT_LT(with->program->rewritten_work * 10, with->program->original_work);
    auto without = prepare(Source{"reachability.mmlt", kReachability}, b, false);
    EXPECT_FALSE(without->program.has_value());
    Results a = run_cpu_engine(*with), c = run_cpu_engine(*without);
    ASSERT_EQ(a.dense[0].shape, c.dense[0].shape);
    EXPECT_EQ(a.dense[0].data, c.dense[0].data);
  }
  expect_same(kReachability, [] {
    Bindings b;
    b.arrays["Adj"] = bits(DType::Bool, {97, 97}, half_density(97), 9);
    return b;
  }());
}

TEST(BitpackOrand, RangesWhenParametersAndEveryOutputForm) {
  // Ranges that start past 0 and end before the extents, a mask, a join-free aggregate, a list,
  // a parameter read after the reduction, other inputs read in the output block.
  const std::string text =
      "where (i in [2, 40), j in [5, N)) when (i != j && W[i, j] >= 0) {\n"
      "  r: i64 = 0;  // reach\n"
      "  reduce (k in [7, 107)) {\n"
      "    r |= X[k, i] & Y[j, k];\n"
      "  }\n"
      "  let s = r * 2 + W[i, j];  /* a let after reduce */\n"
      "  if (s > thres) { C[i, j] = s; }\n"
      "  T[g[i]] += r;\n"
      "  emit L(i, j, r) top 20 by s;\n"
      "}\n";
  Bindings b;
  b.arrays["X"] = bits(DType::U8, {120, 43}, half_density(100), 3);
  b.arrays["Y"] = bits(DType::U8, {50, 110}, half_density(100), 4);
  b.arrays["W"] = bits(DType::I32, {43, 50}, 0.5, 6);
  NDArray g = NDArray::zeros(DType::I32, {43});
  for (int64_t e = 0; e < 43; ++e) g.as<int32_t>()[e] = int32_t(e % 5);
  b.arrays["g"] = g;
  b.scalars["N"] = "47";
  b.scalars["thres"] = "1";
  b.dims["T"] = {9};
  expect_same(text, b);
  // A 2 outside the accessed ranges changes nothing.
  b.arrays["X"].as<uint8_t>()[0] = 2;            // k = 0 < 7
  b.arrays["Y"].as<uint8_t>()[49 * 110 + 3] = 2;  // j = 49 >= N
  expect_same(text, b);
}

TEST(BitpackOrand, NotAppliedWhereItDoesNotHoldOrDoesNotPay) {
  auto applies = [](const std::string& text, const Bindings& b, int64_t min_k = 1) {
    auto p = prepare(Source{"q.mmlt", text}, b, false);
    BitpackOptions opt;
    opt.min_k = min_k;
    return bitpack_orand(p->plan, p->instance, p->source, p->bindings, opt).has_value();
  };
  const int64_t K = 100;
  Bindings b;
  b.arrays["Adj"] = bits(DType::U8, {K, K}, 0.05, 1);
  ASSERT_TRUE(applies(kReachability, b));
  EXPECT_TRUE(prepare(Source{"q.mmlt", kReachability}, b, true)->program.has_value());

  // A value 2 anywhere read: 2 & 3 is 2, not 1.
  Bindings two = b;
  two.arrays["Adj"].as<uint8_t>()[37 * K + 61] = 2;
  EXPECT_FALSE(applies(kReachability, two));
  EXPECT_FALSE(prepare(Source{"q.mmlt", kReachability}, two, true)->program.has_value());
  Bindings negative = b;
  negative.arrays["Adj"] = bits(DType::I32, {K, K}, 0.05, 1);
  negative.arrays["Adj"].as<int32_t>()[5] = -1;
  EXPECT_FALSE(applies(kReachability, negative));
  // Float data, however 0/1 it is.
  Bindings floats;
  floats.arrays["Adj"] = bits(DType::F32, {K, K}, 0.05, 1);
  EXPECT_FALSE(applies("where (i, j) { r: i32 = 0; reduce (k) { r |= i32(Adj[i, k]) & i32(Adj[k, j]); } R[i, j] = r; }",
                       floats));
  // K below the threshold that prepare uses.
  Bindings small;
  small.arrays["Adj"] = bits(DType::U8, {63, 63}, 0.05, 1);
  EXPECT_FALSE(prepare(Source{"q.mmlt", kReachability}, small, true)->program.has_value());
  EXPECT_TRUE(applies(kReachability, small));
  // Other forms: a non-zero start, a sum, a second accumulator, a batch.
  EXPECT_FALSE(applies("where (i, j) { r: i32 = 1; reduce (k) { r |= Adj[i, k] & Adj[k, j]; } R[i, j] = r; }", b));
  EXPECT_FALSE(applies("where (i, j) { r: i32 = 0; reduce (k) { r += Adj[i, k] * Adj[k, j]; } R[i, j] = r; }", b));
  EXPECT_FALSE(applies(
      "where (i, j) { r: i32 = 0; s: i32 = 0; reduce (k) { r |= Adj[i, k] & Adj[k, j]; s += Adj[i, k]; } R[i, j] = r + s; }",
      b));
  Bindings batched;
  batched.arrays["Adj"] = bits(DType::U8, {2, K, K}, 0.05, 1);
  EXPECT_FALSE(applies("batch (b) where (i, j) { r: i32 = 0; reduce (k) { r |= Adj[b, i, k] & Adj[b, k, j]; } R[b, i, j] = r; }",
                       batched));
  // Names the stage queries use for themselves.
  Bindings named;
  named.arrays["bp_X"] = b.arrays["Adj"];
  EXPECT_FALSE(applies("where (i, j) { r: i32 = 0; reduce (k) { r |= bp_X[i, k] & bp_X[k, j]; } R[i, j] = r; }", named));
}

TEST(BitpackOrand, CpuPackSetsExactlyTheBitsOfTheRange) {
  for (bool k_minor : {true, false}) {
    const int64_t R = 9, Kx = 75;
    NDArray src = bits(DType::I16, k_minor ? std::vector<int64_t>{R, Kx} : std::vector<int64_t>{Kx, R}, 0.5, 17);
    BitPack bp{"X", "bp_X", k_minor, {2, 8}, {3, 70}};
    ASSERT_EQ(bp.words(), 3);  // 67 steps
    NDArray out = bit_pack_cpu(src, bp);
    EXPECT_EQ(out.dtype, DType::I32);
    ASSERT_EQ(out.shape, (std::vector<int64_t>{8, 3}));
    int64_t ones = 0;
    for (int64_t r = 0; r < 8; ++r)
      for (int64_t w = 0; w < 3; ++w)
        for (int b = 0; b < 32; ++b) {
          const int64_t k = 3 + 32 * w + b;
          const bool in = r >= 2 && k < 70;
          const bool want = in && src.get_i64(k_minor ? r * Kx + k : k * R + r) != 0;
          const bool got = (uint32_t(out.as<int32_t>()[r * 3 + w]) >> b) & 1u;
          EXPECT_EQ(got, want) << "r " << r << " k " << k;
          ones += got;
        }
    EXPECT_GT(ones, 0);
    EXPECT_TRUE(holds_only_bits(src, k_minor, bp.rows, bp.k_range));
  }
}

TEST(BitpackOrand, PackKernelSourceCompilesWithNvrtc) {
#if GAMUT_HAVE_CUDA
  for (const char* arch : {"sm_90a", "sm_80"})
    for (DType t : {DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64}) {
      cuda::CompileOptions o;
      o.arch = arch;
      std::string log;
      EXPECT_NO_THROW(EXPECT_FALSE(cuda::nvrtc_compile(cuda::bit_pack_source(t), o, &log).empty()))
          << arch << " " << dtype_name(t) << "\n" << log;
    }
  EXPECT_THROW(cuda::bit_pack_source(DType::F32), Error);
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}
