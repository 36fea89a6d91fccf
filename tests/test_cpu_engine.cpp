// The CPU engine against hand-written loops, on hand-built plans (no parser involved), and
// finalize_list's ordering rules on their own.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>

#include "cpu/engine.h"
#include "semantics/list_order.h"
#include "plan/list_rows.h"
#include "plan_builder.h"

namespace {

using namespace gamut;
using namespace gamut::test;
using Pt = Pattern;
using V = std::vector<double>;
using Shape = std::vector<int64_t>;

V rand_int(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  V v(n);
  for (auto& x : v) x = d(g);
  return v;
}
V rand_real(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  V v(n);
  for (auto& x : v) x = float(d(g));
  return v;
}

// accum (type t) += A[i,k] * B[k,j]; C[i,j] = accum.
PlanBuilder sgemm(DType ta, DType tb, CType t) {
  PlanBuilder b;
  b.input("A", ta);
  b.input("B", tb);
  int acc = b.accumulator("accum", t, Scalar::of_int(CType::I32, 0), Monoid::Sum);
  b.p.inner.push_back(b.update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load("A", Pt::RowRed), b.load("B", Pt::RedCol))));
  int C = b.dense("C", StoreOp::Assign, t, {PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)});
  b.p.outer.push_back(b.store(C, b.acc(acc)));
  return b;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, 8) == 0; }

double cell(const Table& t, size_t c, int64_t r) {
  Column col = t.columns[c];
  NDArray a;
  a.dtype = col.dtype;
  a.shape = {t.rows};
  a.data = col.data;
  return a.get_f64(r);
}

TEST(CpuEngine, SgemmF32MatchesTripleLoop) {
  for (auto [M, N, K] : {std::tuple<int64_t, int64_t, int64_t>{1, 1, 1}, {7, 13, 5}, {37, 300, 67}}) {
    for (int threads : {1, 3}) {
      PlanBuilder pb = sgemm(DType::F32, DType::F32, CType::F32);
      V A = rand_real(size_t(M * K), 1), B = rand_real(size_t(K * N), 2);
      Bind bd(pb.p, M, N, K);
      bd.array("A", make_array(DType::F32, {M, K}, A)).array("B", make_array(DType::F32, {K, N}, B)).shape(0, {M, N});
      Results r = run_cpu(bd.inst, threads);
      ASSERT_EQ(r.dense[0].shape, (Shape{M, N}));
      ASSERT_EQ(r.dense[0].dtype, DType::F32);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double ref = 0, mag = 0;
          for (int64_t k = 0; k < K; ++k) {
            ref += A[size_t(i * K + k)] * B[size_t(k * N + j)];
            mag += std::fabs(A[size_t(i * K + k)] * B[size_t(k * N + j)]);
          }
          ASSERT_LE(std::fabs(r.dense[0].get_f64(i * N + j) - ref), 1e-5 * mag) << i << "," << j;
        }
    }
  }
}

TEST(CpuEngine, SgemmIntegerValuedIsExact) {
  const int64_t M = 50, N = 200, K = 130;
  PlanBuilder pb = sgemm(DType::F32, DType::F32, CType::F32);
  V A = rand_int(M * K, 3, -8, 8), B = rand_int(K * N, 4, -8, 8);
  Bind bd(pb.p, M, N, K);
  bd.array("A", make_array(DType::F32, {M, K}, A)).array("B", make_array(DType::F32, {K, N}, B)).shape(0, {M, N});
  Results r = run_cpu(bd.inst, 2);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double ref = 0;
      for (int64_t k = 0; k < K; ++k) ref += A[size_t(i * K + k)] * B[size_t(k * N + j)];
      ASSERT_EQ(r.dense[0].get_f64(i * N + j), ref);
    }
}

TEST(CpuEngine, MaxPlusI32WithMinusInfIdentity) {
  PlanBuilder b;
  b.input("A", DType::I32);
  b.input("B", DType::I32);
  int acc = b.accumulator("accum", CType::I32, lowest_of(CType::I32), Monoid::Max);
  b.p.inner.push_back(b.update(acc, UpdateOp::Max, b.bin(BinOp::Add, b.load("A", Pt::RowRed), b.load("B", Pt::RedCol))));
  int C = b.dense("C", StoreOp::Assign, CType::I32, {PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)});
  b.p.outer.push_back(b.store(C, b.acc(acc)));
  for (int64_t K : {0, 1, 9}) {
    const int64_t M = 11, N = 140;
    V A = rand_int(M * K, 5, -1000, 1000), B = rand_int(K * N, 6, -1000, 1000);
    Bind bd(b.p, M, N, K);
    bd.array("A", make_array(DType::I32, {M, K}, A)).array("B", make_array(DType::I32, {K, N}, B)).shape(0, {M, N});
    Results r = run_cpu(bd.inst, 2);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t ref = std::numeric_limits<int32_t>::min();
        for (int64_t k = 0; k < K; ++k) ref = std::max<int64_t>(ref, int64_t(A[size_t(i * K + k)] + B[size_t(k * N + j)]));
        ASSERT_EQ(r.dense[0].get_i64(i * N + j), ref) << "K=" << K;
      }
  }
}

// accum += P[i,k] * R[k,j]; C[Pzip[i], Rzip[j]] += accum; Cnt[Pzip[i], Rzip[j]] += accum > thres.
TEST(CpuEngine, AggregateWithIndexLookups) {
  PlanBuilder b;
  b.input("P", DType::F32);
  b.input("R", DType::F32);
  b.input("Pzip", DType::I32);
  b.input("Rzip", DType::I64);
  int acc = b.accumulator("accum", CType::F32, Scalar::of_int(CType::I32, 0), Monoid::Sum);
  b.p.inner.push_back(b.update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load("P", Pt::RowRed), b.load("R", Pt::RedCol))));
  std::vector<OutIndex> idx = {b.lookup("Pzip", Pt::RowVec), b.lookup("Rzip", Pt::ColVec)};
  int C = b.dense("C", StoreOp::Add, CType::F32, idx);
  int Cnt = b.dense("Cnt", StoreOp::Add, CType::I32, idx);
  b.p.outer.push_back(b.store(C, b.acc(acc)));
  b.p.outer.push_back(b.store(Cnt, b.cast(b.bin(BinOp::Gt, b.acc(acc), b.param("thres", CType::F32)), CType::I32)));
  const int64_t M = 45, N = 170, K = 19;
  V P = rand_int(M * K, 7, -3, 3), R = rand_int(K * N, 8, -3, 3);
  V Pz = rand_int(M, 9, 0, 2), Rz = rand_int(N, 10, 0, 3);
  for (int threads : {1, 2, 5}) {
    Bind bd(b.p, M, N, K);
    bd.array("P", make_array(DType::F32, {M, K}, P)).array("R", make_array(DType::F32, {K, N}, R));
    bd.array("Pzip", make_array(DType::I32, {M}, Pz)).array("Rzip", make_array(DType::I64, {N}, Rz));
    bd.param("thres", Scalar::of_float(CType::F64, 2.5)).shape(C, {3, 4}).shape(Cnt, {3, 4});
    Results r = run_cpu(bd.inst, threads);
    V refC(12, 0.0), refN(12, 0.0);
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += P[size_t(i * K + k)] * R[size_t(k * N + j)];
        size_t e = size_t(Pz[size_t(i)] * 4 + Rz[size_t(j)]);
        refC[e] += s;
        refN[e] += s > 2.5;
      }
    for (size_t e = 0; e < 12; ++e) {
      ASSERT_EQ(r.dense[size_t(C)].get_f64(int64_t(e)), refC[e]) << "threads " << threads;
      ASSERT_EQ(r.dense[size_t(Cnt)].get_i64(int64_t(e)), int64_t(refN[e]));
    }
    EXPECT_GT(refN[0] + refN[5] + refN[11], 0);  // the data exercises the threshold
  }
}

void expect_rows(const Table& t, const std::vector<std::vector<int64_t>>& rows) {
  ASSERT_EQ(t.rows, int64_t(rows.size()));
  for (size_t r = 0; r < rows.size(); ++r)
    for (size_t c = 0; c < rows[r].size(); ++c) ASSERT_EQ(cell(t, c, int64_t(r)), double(rows[r][c])) << "row " << r;
}

// Shared shape of the list tests: accum (i32) += A[i,k] * B[k,j] over small integers.
struct ListCase {
  PlanBuilder b;
  int acc;
  ListCase() {
    b.input("A", DType::I32);
    b.input("B", DType::I32);
    acc = b.accumulator("accum", CType::I32, Scalar::of_int(CType::I32, 0), Monoid::Sum);
    b.p.inner.push_back(b.update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load("A", Pt::RowRed), b.load("B", Pt::RedCol))));
  }
  std::vector<std::vector<int64_t>> ref;  // (i, j, accum) of every pair
  Results run(int64_t M, int64_t N, int64_t K, int threads, int64_t limit = -1) {
    V A = rand_int(M * K, 11, -2, 2), B = rand_int(K * N, 12, -2, 2);
    Bind bd(b.p, M, N, K);
    bd.array("A", make_array(DType::I32, {M, K}, A)).array("B", make_array(DType::I32, {K, N}, B));
    if (limit >= 0) bd.limit(0, limit);
    bd.param("thres", Scalar::of_int(CType::I64, 3));  // used by the plans that read it
    ref.clear();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += int64_t(A[size_t(i * K + k)] * B[size_t(k * N + j)]);
        ref.push_back({i, j, s});
      }
    return run_cpu(bd.inst, threads);
  }
};

TEST(CpuEngine, SelectIntoListWithThreshold) {
  ListCase lc;
  PlanBuilder& b = lc.b;
  int L = b.list("Pairs", {{"accum", CType::I32}, {"j", CType::I32}, {"i", CType::I32}});
  b.p.outer.push_back(PlanBuilder::when_if(b.bin(BinOp::Gt, b.acc(lc.acc), b.param("thres", CType::I32)),
                                           {b.emit(L, {b.acc(lc.acc), b.axis(AxisRole::Col), b.axis(AxisRole::Row)})}));
  for (int threads : {1, 2}) {
    Results r = lc.run(23, 150, 9, threads);
    std::vector<std::vector<int64_t>> want;
    for (auto& row : lc.ref)
      if (row[2] > 3) want.push_back({row[2], row[1], row[0]});
    std::sort(want.begin(), want.end());
    ASSERT_GT(want.size(), 10u);
    EXPECT_EQ(r.lists[0].columns[0].name, "accum");
    expect_rows(r.lists[0], want);
  }
}

TEST(CpuEngine, TopNGlobalBreaksTiesByRowThenColumn) {
  ListCase lc;
  PlanBuilder& b = lc.b;
  int L = b.list("Top", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::I32}}, ListMode::Top,
                 PerGroup::None, 25, kNoExpr);
  b.p.lists[size_t(L)].key = b.acc(lc.acc);
  b.p.outer.push_back(b.emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(lc.acc)}));
  for (int64_t limit : {25, 0, 1000000}) {
    for (int threads : {1, 3}) {
      Results r = lc.run(31, 140, 3, threads, limit);  // K = 3: few distinct keys, many ties
      auto want = lc.ref;
      std::stable_sort(want.begin(), want.end(), [](auto& x, auto& y) { return x[2] > y[2]; });
      want.resize(std::min<size_t>(want.size(), size_t(limit)));
      expect_rows(r.lists[0], want);
    }
  }
}

TEST(CpuEngine, BottomNPerRowAndTopNPerColumn) {
  for (PerGroup per : {PerGroup::Row, PerGroup::Col}) {
    ListCase lc;
    PlanBuilder& b = lc.b;
    ListMode mode = per == PerGroup::Row ? ListMode::Bottom : ListMode::Top;
    int L = b.list("Near", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::I32}}, mode, per, 3, kNoExpr);
    b.p.lists[size_t(L)].key = b.acc(lc.acc);
    b.p.outer.push_back(b.emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(lc.acc)}));
    Results r = lc.run(17, 133, 2, 2);
    auto want = lc.ref;
    size_t g = per == PerGroup::Row ? 0 : 1, o = 1 - g;
    std::sort(want.begin(), want.end(), [&](auto& x, auto& y) {
      if (x[g] != y[g]) return x[g] < y[g];
      if (x[2] != y[2]) return mode == ListMode::Top ? x[2] > y[2] : x[2] < y[2];
      return x[o] < y[o];
    });
    std::vector<std::vector<int64_t>> kept;
    for (size_t n = 0, run = 0; n < want.size(); ++n) {
      run = n > 0 && want[n][g] == want[n - 1][g] ? run + 1 : 0;
      if (run < 3) kept.push_back(want[n]);
    }
    expect_rows(r.lists[0], kept);
  }
}

TEST(CpuEngine, DistinctRemovesDuplicateRows) {
  ListCase lc;
  PlanBuilder& b = lc.b;
  int L = b.list("D", {{"g", CType::I32}, {"pos", CType::Bool}}, ListMode::Distinct);
  ExprId g = b.bin(BinOp::Mod, b.axis(AxisRole::Row), b.cnst(CType::I32, 3));
  b.p.outer.push_back(b.emit(L, {g, b.bin(BinOp::Gt, b.acc(lc.acc), b.cnst(CType::I32, 0))}));
  Results r = lc.run(10, 40, 4, 2);
  std::vector<std::vector<int64_t>> want;
  for (auto& row : lc.ref) want.push_back({row[0] % 3, row[2] > 0});
  std::sort(want.begin(), want.end());
  want.erase(std::unique(want.begin(), want.end()), want.end());
  ASSERT_EQ(want.size(), 6u);
  EXPECT_EQ(r.lists[0].columns[1].dtype, DType::Bool);
  expect_rows(r.lists[0], want);
}

// when (Pzip[i] == Rzip[j]) (and optionally a mask i < j && Y[j] > 0): every pair that runs
// is emitted, and counted into a per-area aggregate and a scalar total.
TEST(CpuEngine, JoinKeysAndMaskSkipPairs) {
  for (int variant = 0; variant < 3; ++variant) {  // 0: keys, 1: mask, 2: both
    PlanBuilder b;
    b.input("A", DType::I32);
    b.input("B", DType::I32);
    b.input("Pzip", DType::I16);
    b.input("Rzip", DType::I32);
    b.input("Y", DType::F32);
    int acc = b.accumulator("accum", CType::I32, Scalar::of_int(CType::I32, 1), Monoid::Sum);
    b.p.inner.push_back(b.update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load("B", Pt::RedCol), b.load("A", Pt::RowRed))));
    if (variant != 1) b.join_key("Pzip", "Rzip");
    if (variant != 0)
      b.p.when.mask = b.bin(BinOp::LogAnd, b.bin(BinOp::Lt, b.axis(AxisRole::Row), b.axis(AxisRole::Col)),
                            b.bin(BinOp::Gt, b.load("Y", Pt::ColVec), b.cnst(CType::F32, 0)));
    int L = b.list("Pairs", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::I32}});
    int T = b.dense("Total", StoreOp::Add, CType::I64, {});
    int Area = b.dense("Area", StoreOp::Max, CType::I32, {b.lookup("Pzip", Pt::RowVec)});
    b.p.outer.push_back(b.emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)}));
    b.p.outer.push_back(b.store(T, b.acc(acc)));
    b.p.outer.push_back(b.store(Area, b.acc(acc)));
    const int64_t M = 40, N = 300, K = 6;
    V A = rand_int(M * K, 13, -4, 4), B = rand_int(K * N, 14, -4, 4);
    V Pz = rand_int(M, 15, 0, 4), Rz = rand_int(N, 16, 0, 5), Y = rand_real(N, 17);
    Bind bd(b.p, M, N, K);
    bd.array("A", make_array(DType::I32, {M, K}, A)).array("B", make_array(DType::I32, {K, N}, B));
    bd.array("Pzip", make_array(DType::I16, {M}, Pz)).array("Rzip", make_array(DType::I32, {N}, Rz));
    bd.array("Y", make_array(DType::F32, {N}, Y)).shape(T, {}).shape(Area, {5});
    Results r = run_cpu(bd.inst, 3);
    std::vector<std::vector<int64_t>> want;
    int64_t total = 0;
    std::vector<int64_t> area(5, std::numeric_limits<int32_t>::min());
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        if (variant != 1 && Pz[size_t(i)] != Rz[size_t(j)]) continue;
        if (variant != 0 && !(i < j && Y[size_t(j)] > 0)) continue;
        int64_t s = 1;
        for (int64_t k = 0; k < K; ++k) s += int64_t(A[size_t(i * K + k)] * B[size_t(k * N + j)]);
        want.push_back({i, j, s});
        total += s;
        area[size_t(Pz[size_t(i)])] = std::max(area[size_t(Pz[size_t(i)])], s);
      }
    ASSERT_GT(want.size(), 20u);
    ASSERT_LT(want.size(), size_t(M * N * 6 / 10));
    expect_rows(r.lists[0], want);
    EXPECT_EQ(r.dense[size_t(T)].shape, Shape{});
    EXPECT_EQ(r.dense[size_t(T)].get_i64(0), total);
    for (int64_t a = 0; a < 5; ++a) EXPECT_EQ(r.dense[size_t(Area)].get_i64(a), area[size_t(a)]) << a;
  }
}

TEST(CpuEngine, EmptyRangesGiveEmptyOutputs) {
  ListCase lc;
  PlanBuilder& b = lc.b;
  int C = b.dense("C", StoreOp::Assign, CType::I32, {PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)});
  int L = b.list("Pairs", {{"i", CType::I32}, {"accum", CType::I32}});
  b.p.outer.push_back(b.store(C, b.acc(lc.acc)));
  b.p.outer.push_back(b.emit(L, {b.axis(AxisRole::Row), b.acc(lc.acc)}));
  for (auto [M, N] : {std::pair<int64_t, int64_t>{0, 9}, {4, 0}}) {
    Bind bd(b.p, M, N, 5);
    bd.array("A", make_array(DType::I32, {M, 5}, {})).array("B", make_array(DType::I32, {5, N}, {})).shape(C, {M, N});
    Results r = run_cpu(bd.inst);
    EXPECT_EQ(r.dense[0].shape, (Shape{M, N}));
    EXPECT_EQ(r.lists[0].rows, 0);
    ASSERT_EQ(r.lists[0].columns.size(), 2u);
    EXPECT_EQ(r.lists[0].columns[1].name, "accum");
  }
}

TEST(CpuEngine, WidensF16Bf16U8I16Loads) {
  PlanBuilder b;
  b.input("A", DType::F16);
  b.input("B", DType::BF16);
  b.input("U", DType::U8);
  b.input("W", DType::I16);
  int f = b.accumulator("f", CType::F32, Scalar::of_int(CType::I32, 0), Monoid::Sum);
  int n = b.accumulator("n", CType::I32, Scalar::of_int(CType::I32, 0), Monoid::Sum);
  b.p.inner.push_back(b.update(f, UpdateOp::Add, b.bin(BinOp::Mul, b.load("A", Pt::RowRed), b.load("B", Pt::ColRed))));
  b.p.inner.push_back(b.update(n, UpdateOp::Add, b.bin(BinOp::Mul, b.load("U", Pt::RedRow), b.load("W", Pt::RedCol))));
  std::vector<OutIndex> ij = {PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)};
  int F = b.dense("F", StoreOp::Assign, CType::F32, ij), Nn = b.dense("N", StoreOp::Assign, CType::I32, ij);
  b.p.outer.push_back(b.store(F, b.acc(f)));
  b.p.outer.push_back(b.store(Nn, b.acc(n)));
  const int64_t M = 9, N = 135, K = 7;
  V A = rand_int(M * K, 18, -64, 64), B = rand_int(N * K, 19, -64, 64);
  V U = rand_int(K * M, 20, 100, 255), W = rand_int(K * N, 21, -3000, 3000);
  for (auto& x : A) x *= 0.5;     // halves: exact in f16
  for (auto& x : B) x *= 0.25;    // quarters: exact in bf16
  Bind bd(b.p, M, N, K);
  bd.array("A", make_array(DType::F16, {M, K}, A)).array("B", make_array(DType::BF16, {N, K}, B));
  bd.array("U", make_array(DType::U8, {K, M}, U)).array("W", make_array(DType::I16, {K, N}, W));
  bd.shape(F, {M, N}).shape(Nn, {M, N});
  Results r = run_cpu(bd.inst, 2);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double sf = 0, sn = 0;
      for (int64_t k = 0; k < K; ++k) {
        sf += A[size_t(i * K + k)] * B[size_t(j * K + k)];
        sn += U[size_t(k * M + i)] * W[size_t(k * N + j)];
      }
      ASSERT_EQ(r.dense[size_t(F)].get_f64(i * N + j), sf);
      ASSERT_EQ(r.dense[size_t(Nn)].get_i64(i * N + j), int64_t(sn));
    }
}

// C[i, j] = X[i] OP Y[j] for the integer corner cases of docs/semantics.md.
TEST(CpuEngine, IntegerAndConversionSemantics) {
  const int32_t kMin = std::numeric_limits<int32_t>::min(), kMax = std::numeric_limits<int32_t>::max();
  V X = {double(kMin), -7, -1, 0, 5, 1 << 20, double(kMax)}, Y = {-1, 0, 2, -3, 33, 31, -31};
  const double nan = std::nan("");
  V Fx = {nan, -1e10, 1e10, -2.7, -0.0, 0.0, 3e9}, Fy = {1, nan, -0.0, 0.5, 2, 0.0, 1e-3};
  PlanBuilder b;
  b.input("X", DType::I32);
  b.input("Y", DType::I32);
  b.input("Fx", DType::F64);
  b.input("Fy", DType::F32);
  std::vector<OutIndex> ij = {PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)};
  ExprId x = b.load("X", Pt::RowVec), y = b.load("Y", Pt::ColVec);
  ExprId fx = b.load("Fx", Pt::RowVec), fy = b.cast(b.load("Fy", Pt::ColVec), CType::F64);
  std::vector<std::pair<int, ExprId>> outs;
  for (BinOp op : {BinOp::Div, BinOp::Mod, BinOp::Shl, BinOp::Shr, BinOp::Add, BinOp::Mul})
    outs.push_back({b.dense("I", StoreOp::Assign, CType::I32, ij), b.bin(op, x, y)});
  outs.push_back({b.dense("T", StoreOp::Assign, CType::I32, ij), b.cast(b.bin(BinOp::Mul, fx, fy), CType::I32)});
  outs.push_back({b.dense("Mx", StoreOp::Assign, CType::F64, ij), b.call(Fn::Max, {fx, fy})});
  outs.push_back({b.dense("Ab", StoreOp::Assign, CType::I32, ij), b.call(Fn::Abs, {b.bin(BinOp::Sub, x, y)})});
  outs.push_back({b.dense("Mn", StoreOp::Assign, CType::F64, ij), b.call(Fn::Min, {fx, fy})});
  for (auto& [out, e] : outs) b.p.outer.push_back(b.store(out, e));
  Bind bd(b.p, 7, 7, 0);
  bd.array("X", make_array(DType::I32, {7}, X)).array("Y", make_array(DType::I32, {7}, Y));
  bd.array("Fx", make_array(DType::F64, {7}, Fx)).array("Fy", make_array(DType::F32, {7}, Fy));
  for (auto& o : outs) bd.shape(o.first, {7, 7});
  Results r = run_cpu(bd.inst, 2);
  auto wrap = [](int64_t v) { return int64_t(int32_t(uint32_t(uint64_t(v)))); };
  auto sat = [](double v) -> int64_t {
    if (std::isnan(v)) return 0;
    return int64_t(std::clamp(std::trunc(v), -2147483648.0, 2147483647.0));
  };
  for (int64_t i = 0; i < 7; ++i)
    for (int64_t j = 0; j < 7; ++j) {
      int64_t a = int64_t(X[size_t(i)]), c = int64_t(Y[size_t(j)]), e = i * 7 + j;
      double fa = Fx[size_t(i)], fb = double(float(Fy[size_t(j)]));
      EXPECT_EQ(r.dense[0].get_i64(e), c == 0 ? 0 : wrap(a / c)) << a << "/" << c;
      EXPECT_EQ(r.dense[1].get_i64(e), c == 0 ? 0 : wrap(a % c)) << a << "%" << c;
      EXPECT_EQ(r.dense[2].get_i64(e), wrap(int64_t(uint64_t(uint32_t(a)) << (c & 31)))) << a << "<<" << c;
      EXPECT_EQ(r.dense[3].get_i64(e), a >> (c & 31)) << a << ">>" << c;
      EXPECT_EQ(r.dense[4].get_i64(e), wrap(a + c));
      EXPECT_EQ(r.dense[5].get_i64(e), wrap(a * c));
      EXPECT_EQ(r.dense[6].get_i64(e), sat(fa * fb)) << fa << "*" << fb;
      // NaN is ignored; -0.0 orders below +0.0, so max/min of a zero pair is +0.0 / -0.0.
      bool zeros = fa == 0 && fb == 0;
      double mx = std::isnan(fa) ? fb : std::isnan(fb) ? fa : zeros ? (std::signbit(fa) ? fb : fa) : std::max(fa, fb);
      double mn = std::isnan(fa) ? fb : std::isnan(fb) ? fa : zeros ? (std::signbit(fa) ? fa : fb) : std::min(fa, fb);
      double gx = r.dense[7].get_f64(e), gn = r.dense[9].get_f64(e);
      EXPECT_TRUE(same_bits(gx, mx) || (std::isnan(mx) && std::isnan(gx))) << fa << " max " << fb;
      EXPECT_TRUE(same_bits(gn, mn) || (std::isnan(mn) && std::isnan(gn))) << fa << " min " << fb;
      EXPECT_EQ(r.dense[8].get_i64(e), wrap(std::llabs(wrap(a - c)))) << a << "-" << c;
    }
  EXPECT_EQ(r.dense[0].get_i64(0), kMin);  // INT_MIN / -1 wraps
}

// Conditional updates (varying and uniform conditions), a sequential `acc = acc * 3 + x`
// update that needs increasing k, lets, sqrt, a batch axis and a range that does not start at 0.
TEST(CpuEngine, IfLetsSequentialBatchAndRangeOffset) {
  PlanBuilder b(true);
  b.input("A", DType::I64);
  b.input("B", DType::I64);
  int s = b.accumulator("s", CType::I64, Scalar::of_int(CType::I64, 0), Monoid::Sum);
  int h = b.accumulator("h", CType::I64, Scalar::of_int(CType::I64, 7));
  int m = b.accumulator("m", CType::F64, Scalar::of_float(CType::F64, 0.5), Monoid::Min);
  int c2 = b.accumulator("c2", CType::I64, Scalar::of_int(CType::I64, 0), Monoid::Sum);
  int g = b.accumulator("g", CType::I64, Scalar::of_int(CType::I64, 0), Monoid::Sum);
  int t = b.new_local("t", CType::I64, true), q = b.new_local("q", CType::F64, false);
  int prev = b.new_local("prev", CType::I64, true);
  ExprId a = b.load("A", Pt::RowRed), bb = b.load("B", Pt::RedCol);
  b.p.inner.push_back(PlanBuilder::let(t, b.bin(BinOp::Sub, a, bb)));
  b.p.inner.push_back(PlanBuilder::let(prev, b.acc(h)));  // h before this k's update
  b.p.inner.push_back(PlanBuilder::when_if(b.bin(BinOp::Gt, b.load("A", Pt::RowRed), b.cnst(CType::I64, 2)),
                                           {b.update(c2, UpdateOp::Add, b.bin(BinOp::Mul, a, a))}));
  b.p.inner.push_back(PlanBuilder::when_if(b.bin(BinOp::Gt, b.local(t), b.cnst(CType::I64, 0)),
                                           {b.update(s, UpdateOp::Add, b.bin(BinOp::Mul, b.local(t), b.local(t)))}));
  b.p.inner.push_back(PlanBuilder::when_if(b.bin(BinOp::Ne, b.load("A", Pt::RowRed), b.cnst(CType::I64, 0)),
                                           {b.update(m, UpdateOp::Min, b.load("B", Pt::RedCol))}));
  b.p.inner.push_back(b.update(h, UpdateOp::Assign, b.bin(BinOp::Add, b.bin(BinOp::Mul, b.acc(h), b.cnst(CType::I64, 3)), b.local(t))));
  b.p.inner.push_back(b.update(g, UpdateOp::Add, b.local(prev)));
  b.p.outer.push_back(PlanBuilder::let(q, b.call(Fn::Sqrt, {b.acc(s)})));
  std::vector<OutIndex> bij = {PlanBuilder::ax(AxisRole::Batch), PlanBuilder::ax(AxisRole::Row), PlanBuilder::ax(AxisRole::Col)};
  int Q = b.dense("Q", StoreOp::Assign, CType::F64, bij), H = b.dense("H", StoreOp::Assign, CType::I64, bij);
  int Mn = b.dense("Mn", StoreOp::Assign, CType::F64, bij);
  int Ax = b.dense("Ax", StoreOp::Add, CType::I32, bij);
  int C2 = b.dense("C2", StoreOp::Assign, CType::I64, bij), G = b.dense("G", StoreOp::Assign, CType::I64, bij);
  b.p.outer.push_back(b.store(C2, b.acc(c2)));
  b.p.outer.push_back(b.store(G, b.acc(g)));
  b.p.outer.push_back(b.store(Q, b.local(q)));
  b.p.outer.push_back(b.store(H, b.acc(h)));
  b.p.outer.push_back(b.store(Mn, b.acc(m)));
  b.p.outer.push_back(b.store(Ax, b.bin(BinOp::Add, b.bin(BinOp::Mul, b.axis(AxisRole::Batch), b.cnst(CType::I32, 10000)),
                                        b.bin(BinOp::Add, b.bin(BinOp::Mul, b.axis(AxisRole::Row), b.cnst(CType::I32, 100)), b.axis(AxisRole::Col)))));
  const int64_t Bn = 3, M = 6, N = 140, K = 45;
  V A = rand_int(Bn * M * K, 22, -5, 5), Bv = rand_int(Bn * K * N, 23, -5, 5);
  Bind bd(b.p, M, N, K, Bn);
  bd.inst.row = {2, 6};
  bd.inst.col = {1, 137};
  bd.inst.red = {3, 44};
  bd.array("A", make_array(DType::I64, {Bn, M, K}, A)).array("B", make_array(DType::I64, {Bn, K, N}, Bv));
  for (int out : {Q, H, Mn, Ax, C2, G}) bd.shape(out, {Bn, M, N});
  Results r = run_cpu(bd.inst, 2);
  for (int64_t bi = 0; bi < Bn; ++bi)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int64_t e = (bi * M + i) * N + j;
        bool in = i >= 2 && j >= 1 && j < 137;
        int64_t ss = 0;
        uint64_t hh = 7, gg = 0;
        double mm = 0.5;
        int64_t cc = 0;
        for (int64_t k = 3; k < 44 && in; ++k) {
          int64_t av = int64_t(A[size_t((bi * M + i) * K + k)]), bv = int64_t(Bv[size_t((bi * K + k) * N + j)]);
          if (av - bv > 0) ss += (av - bv) * (av - bv);
          if (av != 0) mm = std::min(mm, double(bv));
          if (av > 2) cc += av * av;
          gg += hh;
          hh = hh * 3 + uint64_t(av - bv);
        }
        ASSERT_EQ(r.dense[size_t(Q)].get_f64(e), in ? std::sqrt(double(ss)) : 0.0);
        ASSERT_EQ(r.dense[size_t(H)].get_i64(e), in ? int64_t(hh) : 0);
        ASSERT_EQ(r.dense[size_t(Mn)].get_f64(e), in ? mm : 0.0);
        ASSERT_EQ(r.dense[size_t(Ax)].get_i64(e), in ? bi * 10000 + i * 100 + j : 0);
        ASSERT_EQ(r.dense[size_t(C2)].get_i64(e), cc);
        ASSERT_EQ(r.dense[size_t(G)].get_i64(e), int64_t(gg));
      }
}

// ---- finalize_list -------------------------------------------------------------------------

struct Rows {
  ListOutput spec;
  ListCandidates c;
  Rows(ListMode mode, PerGroup per, std::vector<DType> types) {
    spec.name = "L";
    spec.mode = mode;
    spec.per = per;
    for (size_t n = 0; n < types.size(); ++n) {
      c.table.columns.push_back(Column{"c" + std::to_string(n), types[n], {}});
      spec.columns.push_back({"c" + std::to_string(n), compute_type_of(types[n])});
    }
    c.key.dtype = DType::F32;
  }
  void add(int32_t b, int32_t i, int32_t j, V vals, double key = 0) {
    for (size_t n = 0; n < vals.size(); ++n) {
      NDArray one = make_array(c.table.columns[n].dtype, {1}, {vals[n]});
      c.table.columns[n].data.insert(c.table.columns[n].data.end(), one.data.begin(), one.data.end());
    }
    NDArray k = make_array(DType::F32, {1}, {key});
    c.key.data.insert(c.key.data.end(), k.data.begin(), k.data.end());
    c.b.push_back(b); c.i.push_back(i); c.j.push_back(j);
    c.table.rows++;
  }
  Table finish(int64_t limit = 0) { return finalize_list(spec, limit, std::move(c)); }
};

std::vector<V> rows_of(const Table& t) {
  std::vector<V> out(size_t(t.rows));
  for (int64_t r = 0; r < t.rows; ++r)
    for (size_t c = 0; c < t.columns.size(); ++c) out[size_t(r)].push_back(cell(t, c, r));
  return out;
}

TEST(FinalizeList, PlainSortsByValueWithNaNLastAndDistinctKeepsSignedZeros) {
  const double nan = std::nan(""), inf = INFINITY;
  for (ListMode mode : {ListMode::Plain, ListMode::Distinct}) {
    Rows r(mode, PerGroup::None, {DType::F32, DType::I32});
    for (V v : {V{nan, 1}, V{1, 2}, V{0.0, 5}, V{-0.0, 5}, V{-inf, 9}, V{1, 2}, V{1, -3}, V{0.0, 5}, V{nan, 0}})
      r.add(0, 0, 0, v);
    std::vector<V> got = rows_of(r.finish());
    std::vector<V> want = {{-inf, 9}, {0.0, 5}, {0.0, 5}, {-0.0, 5}, {1, -3}, {1, 2}, {1, 2}, {nan, 0}, {nan, 1}};
    if (mode == ListMode::Distinct) want = {{-inf, 9}, {0.0, 5}, {-0.0, 5}, {1, -3}, {1, 2}, {nan, 0}, {nan, 1}};
    ASSERT_EQ(got.size(), want.size());
    for (size_t n = 0; n < want.size(); ++n) {
      EXPECT_TRUE(same_bits(got[n][0], want[n][0]) || (std::isnan(got[n][0]) && std::isnan(want[n][0]))) << n;
      EXPECT_EQ(got[n][1], want[n][1]) << n;
    }
  }
}

TEST(FinalizeList, TopAndBottomOrderTiesByBatchRowColumnAndNaNLast) {
  const double nan = std::nan("");
  for (ListMode mode : {ListMode::Top, ListMode::Bottom}) {
    Rows r(mode, PerGroup::None, {DType::I32});
    // (b, i, j, key); the column holds the row's id.
    std::vector<std::tuple<int, int, int, double>> in = {
        {1, 0, 0, 5}, {0, 2, 1, 5}, {0, 1, 9, 5}, {0, 1, 3, 5}, {0, 0, 0, nan}, {2, 0, 0, 7}, {0, 5, 5, -1}, {0, 4, 4, 7}};
    for (size_t n = 0; n < in.size(); ++n) r.add(std::get<0>(in[n]), std::get<1>(in[n]), std::get<2>(in[n]), {double(n)}, std::get<3>(in[n]));
    std::vector<V> got = rows_of(r.finish(mode == ListMode::Top ? 6 : 8));
    std::vector<double> want = mode == ListMode::Top ? std::vector<double>{7, 5, 3, 2, 1, 0}
                                                     : std::vector<double>{6, 3, 2, 1, 0, 7, 5, 4};
    ASSERT_EQ(got.size(), want.size());
    for (size_t n = 0; n < want.size(); ++n) EXPECT_EQ(got[n][0], want[n]) << n;
  }
}

TEST(FinalizeList, PerGroupLimitsAndOrder) {
  for (PerGroup per : {PerGroup::Row, PerGroup::Col}) {
    Rows r(ListMode::Bottom, per, {DType::I32});
    // keys for (b, i, j): key = (i + j) % 3 gives ties inside groups
    int id = 0;
    for (int b = 1; b >= 0; --b)
      for (int i = 3; i >= 0; --i)
        for (int j = 4; j >= 0; --j) r.add(b, i, j, {double(id++)}, double((i + j) % 3));
    Table t = r.finish(2);
    ASSERT_EQ(t.rows, per == PerGroup::Row ? 2 * 4 * 2 : 2 * 5 * 2);
    // Recover (b, g, key, o) of each result row from its id and check the order.
    std::vector<std::tuple<int, int, double, int>> seen;
    for (int64_t n = 0; n < t.rows; ++n) {
      size_t src = size_t(cell(t, 0, n));
      int b = 1 - int(src / 20), i = 3 - int(src % 20 / 5), j = 4 - int(src % 5);
      int g = per == PerGroup::Row ? i : j, o = per == PerGroup::Row ? j : i;
      seen.push_back({b, g, double((i + j) % 3), o});
    }
    std::vector<std::tuple<int, int, double, int>> want, all;
    for (int b = 0; b < 2; ++b)
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j)
          all.push_back({b, per == PerGroup::Row ? i : j, double((i + j) % 3), per == PerGroup::Row ? j : i});
    std::sort(all.begin(), all.end());
    for (size_t n = 0; n < all.size(); ++n)
      if (n < 2 || std::get<1>(all[n - 2]) != std::get<1>(all[n]) || std::get<0>(all[n - 2]) != std::get<0>(all[n]))
        want.push_back(all[n]);
    EXPECT_EQ(seen, want);
  }
}

// Pruning a candidate set in pieces (what the engine's threads do) never changes the result.
TEST(FinalizeList, PruneInPiecesMatchesFinalizeOnce) {
  for (PerGroup per : {PerGroup::None, PerGroup::Row, PerGroup::Col}) {
    V keys = rand_int(3000, 31, 0, 20);
    Rows all(ListMode::Top, per, {DType::I32}), a(ListMode::Top, per, {DType::I32}), b2(ListMode::Top, per, {DType::I32});
    for (int n = 0; n < 3000; ++n) {
      int b = n % 2, i = n / 2 % 37, j = n / 74;
      all.add(b, i, j, {double(n)}, keys[size_t(n)]);
      (n % 3 ? a : b2).add(b, i, j, {double(n)}, keys[size_t(n)]);
    }
    int64_t limit = 7;
    cpu::prune_candidates(a.spec, limit, a.c);
    cpu::prune_candidates(b2.spec, limit, b2.c);
    EXPECT_LT(a.c.table.rows, 2000);
    cpu::append_candidates(a.c, b2.c);
    std::vector<V> x = rows_of(all.finish(limit)), y = rows_of(a.finish(limit));
    EXPECT_EQ(x, y);
  }
}

}  // namespace
