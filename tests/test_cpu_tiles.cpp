// The CPU engine's tiles and its cancellation (issue 34): thin shapes (M = 1 or N = 1, a few
// rows or columns) use several threads and give the one-thread result bit for bit (integer-valued
// data: every sum is exact, so a thread's share cannot change it); a run stops soon after its
// cancel flag is set, and through the library's interrupted() poll, and the query stays usable.
#include <gamut/gamut.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <thread>

#include "cpu/engine.h"
#include "driver/pipeline.h"
#include "integer_data.h"
#include "partition/partition.h"

namespace {

using namespace gamut;
using Clock = std::chrono::steady_clock;

std::unique_ptr<Prepared> prepared(const std::string& text, Bindings b) {
  return prepare(Source{"q.mmlt", text}, std::move(b), false);
}

void expect_same(const Results& want, const Results& got, const std::string& what) {
  ASSERT_EQ(want.dense.size(), got.dense.size()) << what;
  for (size_t d = 0; d < want.dense.size(); ++d) {
    EXPECT_EQ(want.dense[d].shape, got.dense[d].shape) << what << " output " << d;
    EXPECT_TRUE(want.dense[d].data.size() == got.dense[d].data.size() &&
                std::memcmp(want.dense[d].data.data(), got.dense[d].data.data(), want.dense[d].data.size()) == 0)
        << what << " output " << d;
  }
  ASSERT_EQ(want.lists.size(), got.lists.size()) << what;
  for (size_t l = 0; l < want.lists.size(); ++l) {
    ASSERT_EQ(want.lists[l].rows, got.lists[l].rows) << what << " list " << l;
    ASSERT_EQ(want.lists[l].columns.size(), got.lists[l].columns.size()) << what << " list " << l;
    for (size_t c = 0; c < want.lists[l].columns.size(); ++c)
      EXPECT_TRUE(want.lists[l].columns[c].data == got.lists[l].columns[c].data)
          << what << " list " << l << " column " << c;
  }
}

struct Shape {
  int64_t m, n, k;
};

// Thin and small shapes, and ones whose rows or columns split unevenly.
const Shape kShapes[] = {{20000, 1, 3}, {1, 20000, 3}, {3, 3000, 2}, {3000, 3, 2}, {1, 1, 1},
                         {2, 700, 40},  {700, 2, 40},  {5, 517, 1},  {1, 257, 5},  {9001, 1, 1}};

Bindings operands(const Shape& s, unsigned seed) {
  Bindings b;
  b.arrays["A"] = testdata::integer_valued(DType::F32, {s.m, s.k}, -3, 3, seed);
  b.arrays["B"] = testdata::integer_valued(DType::F32, {s.k, s.n}, -3, 3, seed + 1);
  return b;
}

// Every kind of output: a projection, aggregates by row, by column and over all pairs (shared by
// the threads' partials), lists of each ordering rule.
const char* const kQueries[] = {
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; R[i] += a; S[j] max= a; "
    "total += a; }",
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } if (a > 1) emit Pairs(i, j, a); }",
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Best(i, j, a) top 7 by a; }",
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Near(i, j, a) bottom 2 by a per i; }",
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Far(i, j, a) top 3 by a per j; }",
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Values(a) distinct; }",
};

TEST(CpuTiles, ThinShapesGiveTheOneThreadResultOnSeveralThreads) {
  unsigned seed = 1;
  for (const Shape& s : kShapes)
    for (const char* q : kQueries) {
      auto p = prepared(q, operands(s, seed += 2));
      const Results one = run_cpu(p->instance, 1);
      for (int t : {2, 3, 8}) {
        const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k) + ", " +
                                 std::to_string(t) + " threads: " + q;
        expect_same(one, run_cpu(p->instance, t), what);
      }
    }
}

// Joins (`when` keys), masks, lookups in outputs and reads of vectors of both sides.
const char* const kJoinQueries[] = {
    "where (i, j) when (g[i] == h[j]) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; "
    "T[g[i]] += a; emit P(i, j, a) bottom 3 by a per i; }",
    "where (i, j) when (u[i] < v[j]) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * u[i] + j; "
    "total += a; if (a > 0) emit Q(i, j, a - v[j]); }",
};

// The operands and whichever of g, h, u, v and T's extent the query reads.
Bindings join_operands(const char* q, const Shape& s, unsigned seed) {
  Bindings b = operands(s, seed);
  if (std::strstr(q, "g[")) b.arrays["g"] = testdata::integer_valued(DType::I32, {s.m}, 0, 3, seed + 7);
  if (std::strstr(q, "h[")) b.arrays["h"] = testdata::integer_valued(DType::I32, {s.n}, 0, 3, seed + 8);
  if (std::strstr(q, "u[")) b.arrays["u"] = testdata::integer_valued(DType::F32, {s.m}, -5, 5, seed + 9);
  if (std::strstr(q, "v[")) b.arrays["v"] = testdata::integer_valued(DType::F32, {s.n}, -5, 5, seed + 10);
  if (std::strstr(q, "T[")) b.dims["T"] = {4};
  return b;
}

TEST(CpuTiles, JoinsAndMasksOnThinShapes) {
  unsigned seed = 100;
  for (const Shape& s : kShapes)
    for (const char* q : kJoinQueries) {
      auto p = prepared(q, join_operands(q, s, seed += 2));
      const Results one = run_cpu(p->instance, 1);
      for (int t : {2, 5})
        expect_same(one, run_cpu(p->instance, t), std::to_string(s.m) + "x" + std::to_string(s.n) + ": " + q);
    }
}

// Few columns and many rows run transposed; a run one row at a time (parts of one row, which do
// not) gives the same results, lists and their order included.
TEST(CpuTiles, TransposedRunsMatchRunsRowByRow) {
  const Shape shapes[] = {{2000, 1, 3}, {1500, 3, 2}, {700, 2, 40}, {257, 31, 2}, {64, 16, 1}};
  std::vector<const char*> queries(std::begin(kQueries), std::end(kQueries));
  queries.insert(queries.end(), std::begin(kJoinQueries), std::end(kJoinQueries));
  queries.push_back(
      "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[j, i] = a + i * 100 - j; "
      "emit L(j, i, a) top 4 by a per i; }");
  unsigned seed = 300;
  for (const Shape& s : shapes)
    for (const char* q : queries) {
      auto p = prepared(q, join_operands(q, s, seed += 2));
      const std::string what = std::to_string(s.m) + "x" + std::to_string(s.n) + ": " + q;
      // (not an equi-join: its key index would be built over the many rows)
      ASSERT_EQ(cpu_runs_transposed(p->instance), !std::strstr(q, "g[i] == h[j]")) << what;
      const Results by_rows = run_in_parts(p->instance, int(s.m), [&](const Instance& part) {
        EXPECT_FALSE(cpu_runs_transposed(part));
        return run_cpu(part, 1);
      });
      expect_same(by_rows, run_cpu(p->instance, 1), what + " (1 thread)");
      expect_same(by_rows, run_cpu(p->instance, 3), what + " (3 threads)");
    }
  // Not transposed: as many rows as columns, a wide problem, or too few rows.
  for (const Shape& s : {Shape{31, 31, 1}, Shape{1, 20000, 1}, Shape{12, 4, 1}, Shape{300, 40, 1}})
    EXPECT_FALSE(cpu_runs_transposed(prepared(kQueries[0], operands(s, 1))->instance)) << s.m << "x" << s.n;
}

TEST(CpuTiles, BatchedThinShapes) {
  const char* q =
      "batch (b) where (i, j) { a = 0; reduce (k) { a += A[b, i, k] * B[b, k, j]; } C[b, i, j] = a; "
      "R[b, i] += a; total += a; }";
  for (const Shape& s : {Shape{1, 50000, 2}, Shape{50000, 1, 2}, Shape{3, 600, 3}}) {
    Bindings b;
    b.arrays["A"] = testdata::integer_valued(DType::F32, {3, s.m, s.k}, -3, 3, 11);
    b.arrays["B"] = testdata::integer_valued(DType::F32, {3, s.k, s.n}, -3, 3, 12);
    auto p = prepared(q, b);
    const Results one = run_cpu(p->instance, 1);
    for (int t : {2, 7})
      expect_same(one, run_cpu(p->instance, t), "batched " + std::to_string(s.m) + "x" + std::to_string(s.n));
  }
}

TEST(CpuTiles, OneRowAndOneColumnUseEveryThread) {
  const char* q = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";
  for (const Shape& s : {Shape{1, 100000, 1}, Shape{100000, 1, 1}}) {
    auto p = prepared(q, operands(s, 5));
    EXPECT_EQ(cpu_thread_count(p->instance, 4), 4) << s.m << "x" << s.n;
  }
  // A tiny one keeps a thread per tile of 2 rows, as before.
  auto tiny = prepared(q, operands(Shape{6, 5, 3}, 5));
  EXPECT_EQ(cpu_thread_count(tiny->instance, 8), 3);
}

// A product of about 2^31 multiply-adds: seconds on the CPU engine.
Bindings long_run() {
  Bindings b;
  b.arrays["A"] = NDArray::zeros(DType::F32, {512, 8192});
  b.arrays["B"] = NDArray::zeros(DType::F32, {8192, 512});
  return b;
}
const char* kProduct = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";

TEST(CpuCancel, ASetFlagStopsTheRunBeforeItStarts) {
  auto p = prepared(kProduct, long_run());
  std::atomic<bool> stop{true};
  EXPECT_THROW(run_cpu(p->instance, 2, nullptr, {}, &stop), Cancelled);
}

TEST(CpuCancel, StopsSoonAfterTheFlagIsSet) {
  auto p = prepared(kProduct, long_run());
  for (int threads : {1, 2}) {
    std::atomic<bool> stop{false};
    Clock::time_point set_at;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      set_at = Clock::now();
      stop = true;
    });
    bool cancelled = false;
    try {
      run_cpu(p->instance, threads, nullptr, {}, &stop);
    } catch (const Cancelled& e) {
      cancelled = true;
      EXPECT_EQ(e.code(), ExitCode::Device);
    }
    const Clock::time_point ended = Clock::now();
    setter.join();
    ASSERT_TRUE(cancelled) << threads << " threads: the run finished before the flag";
    const double ms = std::chrono::duration<double, std::milli>(ended - set_at).count();
    EXPECT_LT(ms, 100.0) << threads << " threads";
    std::printf("[ cancel ] %d threads: stopped %.1f ms after the flag\n", threads, ms);
  }
  // The instance runs again to the end.
  Bindings small;
  small.arrays["A"] = testdata::integer_valued(DType::F32, {4, 3}, -3, 3, 1);
  small.arrays["B"] = testdata::integer_valued(DType::F32, {3, 5}, -3, 3, 2);
  auto q = prepared(kProduct, small);
  std::atomic<bool> stop{false};
  EXPECT_EQ(run_cpu(q->instance, 2, nullptr, {}, &stop).dense[0].shape, (std::vector<int64_t>{4, 5}));
}

TEST(ApiCancel, InterruptedStopsTheRunAndTheQueryStaysUsable) {
  Query q = Query::compile(kProduct);
  // 8.6 G multiply-adds on two threads: seconds on any host, so the 300 ms poll comes first.
  std::vector<float> a(1024 * 8192, 1.0f), b(8192 * 1024, 1.0f);
  Inputs in;
  in.array("A", ArrayRef::host(a.data(), DType::F32, {1024, 8192}))
      .array("B", ArrayRef::host(b.data(), DType::F32, {8192, 1024}));
  Options o;
  o.backend = "cpu";
  o.threads = 2;  // (one per hardware thread finished a smaller run within 300 ms on a 16-core host)
  const std::thread::id caller = std::this_thread::get_id();
  const Clock::time_point t0 = Clock::now();
  Clock::time_point asked;
  int polls = 0;
  bool on_caller = true;
  o.interrupted = [&] {
    ++polls;
    on_caller = on_caller && std::this_thread::get_id() == caller;
    if (Clock::now() - t0 < std::chrono::milliseconds(300)) return false;
    asked = Clock::now();
    return true;
  };
  EXPECT_THROW(q.run(in, o), Cancelled);
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - asked).count();
  EXPECT_GE(polls, 4) << "every 50 ms for 300 ms";
  EXPECT_TRUE(on_caller) << "interrupted() runs on the calling thread";
  EXPECT_LT(ms, 100.0);
  std::printf("[ cancel ] Query::run stopped %.1f ms after interrupted() said so (%d polls)\n", ms, polls);

  // The same query again, small: on the calling thread, never polled, and right.
  std::vector<float> a2 = {1, 2, 3, 4}, b2 = {5, 6, 7, 8};
  Inputs small;
  small.array("A", ArrayRef::host(a2.data(), DType::F32, {2, 2}))
      .array("B", ArrayRef::host(b2.data(), DType::F32, {2, 2}));
  polls = 0;
  gamut::Result r = q.run(small, o);
  EXPECT_EQ(polls, 0);
  const float* c = r["C"].array.as<float>();
  EXPECT_EQ(c[0], 19.0f);
  EXPECT_EQ(c[3], 50.0f);

  // A caller's own flag stops a run too (here set before it starts).
  std::atomic<bool> stop{true};
  Options f;
  f.backend = "cpu";
  f.cancel = &stop;
  EXPECT_THROW(q.run(in, f), Cancelled);
}

}  // namespace

// A float aggregate over many pairs is summed in chunks (src/cpu/engine.cpp): one running f32 sum
// over 5e5 pairs had drifted 1.1e-3 from the exact sum (fuzz seed 527926172); chunks keep it within a
// few units of f32's rounding, on one thread and on several.
TEST(CpuTiles, LongFloatSumsStayAccurate) {
  const int64_t M = 1031, N = 517, K = 3;
  auto fractional = [](int64_t rows, int64_t cols, unsigned seed) {
    NDArray a = NDArray::zeros(DType::F32, {rows, cols});
    unsigned s = seed;
    for (int64_t e = 0; e < a.size(); ++e) {
      s = s * 1103515245u + 12345u;
      a.as<float>()[e] = 1.0f + float((s >> 8) % 65536u) / 65536.0f;   // [1, 2): no cancellation
    }
    return a;
  };
  Bindings b;
  b.arrays["A"] = fractional(M, K, 11);
  b.arrays["B"] = fractional(K, N, 12);
  b.arrays["g"] = testdata::integer_valued(DType::I32, {M}, 0, 3, 13);
  const float* A = b.arrays["A"].as<float>();
  const float* B = b.arrays["B"].as<float>();
  const int32_t* g = b.arrays["g"].as<int32_t>();
  double exact = 0, by_group[4] = {0, 0, 0, 0};
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float a = 0;
      for (int64_t k = 0; k < K; ++k) a += A[i * K + k] * B[k * N + j];   // the query's own f32 sum over k
      exact += a;
      by_group[g[i]] += a;
    }
  auto p = prepared("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } total += a; T[g[i]] += a; }",
                    std::move(b));
  for (int t : {1, 2, 5}) {
    const Results r = run_cpu(p->instance, t);
    ASSERT_EQ(r.dense.size(), 2u);
    const double total = r.dense[0].as<float>()[0];
    EXPECT_GT(total, 0.0);
    EXPECT_NEAR(total, exact, 1e-6 * exact) << t << " threads";
    for (int c = 0; c < 4; ++c)
      EXPECT_NEAR(r.dense[1].as<float>()[c], by_group[c], 1e-6 * by_group[c]) << t << " threads, group " << c;
  }
}

// A per-row aggregate over many columns (`R[i] += a`, more cells than a chunk partial takes): a
// block of columns is summed first, then added to the row's cell (src/cpu/ops.cpp store_kernel),
// not 20,000 additions into one running value (measured: 2.9e-6 off before, 2.3e-7 after).
TEST(CpuTiles, LongRowSumsStayAccurate) {
  const int64_t M = 4100, N = 20000;   // (more cells than a chunk partial takes)
  NDArray u = NDArray::zeros(DType::F32, {M, 1}), v = NDArray::zeros(DType::F32, {1, N});
  unsigned s = 21;
  for (NDArray* a : {&u, &v})
    for (int64_t e = 0; e < a->size(); ++e) {
      s = s * 1103515245u + 12345u;
      a->as<float>()[e] = 1.0f + float((s >> 8) % 65536u) / 65536.0f;
    }
  Bindings b;
  b.arrays["A"] = u;
  b.arrays["B"] = v;
  auto p = prepared("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } R[i] += a; }", std::move(b));
  for (int t : {1, 2}) {
    const Results r = run_cpu(p->instance, t);
    for (int64_t i = 0; i < 4; ++i) {
      double exact = 0;
      for (int64_t j = 0; j < N; ++j) exact += double(u.as<float>()[i] * v.as<float>()[j]);   // f32 products, as the query
      EXPECT_NEAR(r.dense[0].as<float>()[i], exact, 1e-6 * exact) << t << " threads, row " << i;
    }
  }
}

// Plain and distinct lists hold one NaN, the quiet NaN (docs/semantics.md): an input NaN with a
// payload, a negative one and x86's inf * 0 (0xffc00000) are one distinct row, and every NaN of a
// plain list has the same bits, on one thread and on several.
TEST(ListNan, PlainAndDistinctListsHoldOneNan) {
  auto bits_nan = [](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  };
  NDArray A = NDArray::zeros(DType::F32, {5, 1}), B = NDArray::zeros(DType::F32, {1, 3});
  const float a[5] = {bits_nan(0x7fc00123u), bits_nan(0xffc00000u), std::numeric_limits<float>::infinity(), 1.0f,
                      bits_nan(0x7f800001u)};
  std::memcpy(A.as<float>(), a, sizeof a);
  const float b[3] = {0.0f, 1.0f, 2.0f};
  std::memcpy(B.as<float>(), b, sizeof b);
  Bindings bind;
  bind.arrays["A"] = A;
  bind.arrays["B"] = B;
  auto p = prepared("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit D(a) distinct; emit L(a, i, j); }",
                    std::move(bind));
  for (int t : {1, 3}) {
    const Results r = run_cpu(p->instance, t);
    ASSERT_EQ(r.lists.size(), 2u);
    // D: 0, 1, 2, inf, and one NaN (inf * 0 and the three input NaNs).
    ASSERT_EQ(r.lists[0].rows, 5) << t << " threads";
    const float* d = reinterpret_cast<const float*>(r.lists[0].columns[0].data.data());
    uint32_t last;
    std::memcpy(&last, d + 4, 4);
    EXPECT_EQ(last, 0x7fc00000u);
    const float* l = reinterpret_cast<const float*>(r.lists[1].columns[0].data.data());
    int nans = 0;
    for (int64_t row = 0; row < r.lists[1].rows; ++row) {
      uint32_t bits;
      std::memcpy(&bits, l + row, 4);
      if (std::isnan(l[row])) {
        ++nans;
        EXPECT_EQ(bits, 0x7fc00000u) << "row " << row;
      }
    }
    EXPECT_EQ(nans, 3 * 3 + 1);   // the three NaN rows of A times three columns, and inf * 0
  }
}
