// Plans with list outputs for the list epilogue tests (test_codegen_lists, gpu/test_gpu_list_epilogue):
// every list mode and grouping, keys of every type, emits under `if` and `when`, batch, and
// several lists in one query. The reduce is accum += P[i,k] * R[k,j] in the inputs' compute type.
#pragma once
#include <string>
#include <vector>

#include "codegen_plans.h"

namespace gamut::testplans {

struct ListQuery {
  ListMode mode = ListMode::Plain;
  PerGroup per = PerGroup::None;
  int64_t limit = 0;             // N of top/bottom (the Instance's list_limits decide at run time)
  DType input = DType::F32;      // P and R; accum is their compute type
  CType key = CType::Unknown;    // top/bottom key: accum converted to it (Bool: accum > 0); Unknown: accum
  bool under_if = false;         // if (accum > thres) emit
  bool when_mask = false;        // when (i != j)
  bool batched = false;          // P[b,i,k], R[b,k,j]; the rows get a column b
  bool key_via_let = false;      // let t = key; ... by t (the key is then rendered with the statements)
  bool join_keys = false;        // when (g[i] == h[j]): a key-grouped join where the engine can (no batch)
};

inline int product_acc(PlanBuilder& b, DType in, int& P, int& R) {
  P = b.input("P", in);
  R = b.input("R", in);
  const CType t = compute_type_of(in) == CType::Bool ? CType::I32 : compute_type_of(in);
  const int acc = b.accumulator("accum", t, 0, Monoid::Sum);
  b.p.inner.push_back(PlanBuilder::update(
      acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load_as(P, Pattern::RowRed, t), b.load_as(R, Pattern::RedCol, t))));
  return acc;
}

// emit L(i, j, accum[, b]) with q's mode, grouping and key.
inline Plan list_query(const ListQuery& q) {
  PlanBuilder b("list_query", q.batched);
  int P, R;
  const int acc = product_acc(b, q.input, P, R);
  const CType at = b.p.accs[size_t(acc)].type;
  std::vector<ListColumn> cols = {{"i", CType::I32}, {"j", CType::I32}, {"accum", at}};
  std::vector<ExprId> vals = {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)};
  if (q.batched) {
    cols.push_back({"b", CType::I32});
    vals.push_back(b.axis(AxisRole::Batch));
  }
  ExprId key = kNoExpr;
  if (q.mode == ListMode::Top || q.mode == ListMode::Bottom) {
    if (q.key == CType::Bool) key = b.bin(BinOp::Gt, b.acc(acc), b.lit(at, 0));
    else key = b.cast(b.acc(acc), q.key == CType::Unknown ? at : q.key);
  }
  if (key != kNoExpr && q.key_via_let) {
    const int t = b.new_local("t", b.type(key), false);
    b.p.outer.push_back(PlanBuilder::let(t, key));
    key = b.local(t);
  }
  const int L = b.list("L", cols, q.mode, q.limit, key, q.per);
  Stmt emit = PlanBuilder::emit(L, vals);
  if (q.under_if) {
    const ExprId thres = b.param("thres", at);
    b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, b.acc(acc), thres), {emit}));
  } else {
    b.p.outer.push_back(emit);
  }
  if (q.when_mask) b.p.when.mask = b.bin(BinOp::Ne, b.axis(AxisRole::Row), b.axis(AxisRole::Col));
  if (q.join_keys) {
    const int g = b.input("g", DType::I32), h = b.input("h", DType::I32);
    b.p.when.keys.push_back({b.access(g, Pattern::RowVec), b.access(h, Pattern::ColVec)});
  }
  return b.done();
}

// Three lists in one query (each its own counter): Near = bottom N by accum per i, Big =
// if (accum > thres) emit (i, j, accum), Values = distinct (accum, accum > 0); plus a dense
// output C[i,j] = accum so that list rows and stores share the epilogue.
inline Plan three_lists(bool batched = false) {
  PlanBuilder b("three_lists", batched);
  int P, R;
  const int acc = product_acc(b, DType::F32, P, R);
  const ExprId a = b.acc(acc);
  const int near = b.list("Near", {{"i", CType::I32}, {"j", CType::I32}, {"d", CType::F32}}, ListMode::Bottom, 5, a,
                          PerGroup::Row);
  const int big = b.list("Big", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::F32}});
  const int vals = b.list("Values", {{"v", CType::F32}, {"pos", CType::Bool}}, ListMode::Distinct);
  std::vector<OutIndex> idx = {b.ax(AxisRole::Row), b.ax(AxisRole::Col)};
  if (batched) idx.insert(idx.begin(), b.ax(AxisRole::Batch));
  const int C = b.output("C", StoreOp::Assign, CType::F32, idx);
  b.p.outer.push_back(PlanBuilder::store(C, a));
  b.p.outer.push_back(PlanBuilder::emit(near, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), a}));
  b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, a, b.param("thres", CType::F32)),
                                       {PlanBuilder::emit(big, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), a})}));
  b.p.outer.push_back(PlanBuilder::emit(vals, {a, b.bin(BinOp::Gt, a, b.lit(CType::F32, 0))}));
  return b.done();
}

// emit S(...) distinct (and T(...) distinct), their columns picked from g[i] and h[j] (row /
// column vectors of types g and h), i, j, accum (f32, from P[i,k] * R[k,j]) and accum > 0.
enum class DistinctCol { G, H, I, J, Acc, AccPositive };
struct DistinctQuery {
  std::vector<DistinctCol> cols = {DistinctCol::G, DistinctCol::H};
  DType g = DType::I32, h = DType::I32;
  bool under_if = false;    // if (accum > thres) emit
  bool batched = false;     // every operand gets a leading batch axis
  bool join_keys = false;   // when (g[i] == h[j]) (g and h of one type)
  bool aggregate = false;   // also Cnt[g[i]] += 1 (a shared-memory table; g holds indices)
  std::vector<DistinctCol> second;   // columns of a second distinct list T, emitted after S
};

inline Plan distinct_query(const DistinctQuery& q) {
  PlanBuilder b("distinct_query", q.batched);
  int P, R;
  const int acc = product_acc(b, DType::F32, P, R);
  const int G = b.input("g", q.g), H = b.input("h", q.h);
  auto list = [&](const std::string& name, const std::vector<DistinctCol>& picked) {
    std::vector<ListColumn> cols;
    std::vector<ExprId> vals;
    for (DistinctCol c : picked) {
      ExprId v = kNoExpr;
      switch (c) {
        case DistinctCol::G: v = b.load(G, Pattern::RowVec); break;
        case DistinctCol::H: v = b.load(H, Pattern::ColVec); break;
        case DistinctCol::I: v = b.axis(AxisRole::Row); break;
        case DistinctCol::J: v = b.axis(AxisRole::Col); break;
        case DistinctCol::Acc: v = b.acc(acc); break;
        case DistinctCol::AccPositive: v = b.bin(BinOp::Gt, b.acc(acc), b.lit(CType::F32, 0)); break;
      }
      cols.push_back({"c" + std::to_string(cols.size()), b.type(v)});
      vals.push_back(v);
    }
    return PlanBuilder::emit(b.list(name, cols, ListMode::Distinct), vals);
  };
  std::vector<Stmt> emits = {list("S", q.cols)};
  if (!q.second.empty()) emits.push_back(list("T", q.second));
  if (q.aggregate) {
    std::vector<OutIndex> idx = {b.lookup(G, Pattern::RowVec)};
    const int cnt = b.output("Cnt", StoreOp::Add, CType::I32, idx);
    b.p.outer.push_back(PlanBuilder::store(cnt, b.lit(CType::I32, 1)));
  }
  if (q.under_if)
    b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, b.acc(acc), b.param("thres", CType::F32)), emits));
  else
    b.p.outer.insert(b.p.outer.end(), emits.begin(), emits.end());
  if (q.join_keys) b.p.when.keys.push_back({b.access(G, Pattern::RowVec), b.access(H, Pattern::ColVec)});
  return b.done();
}

}  // namespace gamut::testplans
