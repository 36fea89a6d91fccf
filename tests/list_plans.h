// Plans with list outputs for the list epilogue tests (test_codegen_lists, gpu/test_gpu_list_epilogue):
// every list mode and grouping, keys of every type, emits under `if` and `when`, batch, and
// several lists in one query. The reduce is accum += P[i,k] * R[k,j] in the inputs' compute type.
#pragma once
#include <string>
#include <utility>
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

// A list query of mode and grouping `per`, N = 10, key `key` (Unknown: accum), inputs `in`.
inline ListQuery list_query_of(ListMode mode, PerGroup per, CType key = CType::Unknown, DType in = DType::F32) {
  ListQuery q;
  q.mode = mode;
  q.per = per;
  q.limit = 10;
  q.key = key;
  q.input = in;
  return q;
}

// Distinct lists of one column, several, and 64-bit / float / bool ones (6 row words).
inline std::vector<std::pair<std::string, DistinctQuery>> distinct_queries() {
  using C = DistinctCol;
  std::vector<std::pair<std::string, DistinctQuery>> v;
  DistinctQuery q;
  q.cols = {C::G};
  v.push_back({"distinct_one_column", q});
  q.cols = {C::AccPositive};
  v.push_back({"distinct_bool", q});
  q.cols = {C::G, C::H, C::I, C::J, C::Acc};
  v.push_back({"distinct_several", q});
  q.cols = {C::G, C::H, C::Acc, C::AccPositive};
  q.g = DType::I64;
  q.h = DType::F64;
  v.push_back({"distinct_wide", q});
  q = {};
  q.under_if = q.batched = true;
  v.push_back({"distinct_if_batched", q});
  q = {};
  q.aggregate = true;
  q.second = {C::H, C::AccPositive};
  v.push_back({"two_distinct_and_table", q});
  return v;
}

// Every list mode and grouping, keys of every type, emits under `if` and `when`, batch, several
// lists: what the list compile checks and the golden kernels cover.
inline std::vector<std::pair<std::string, Plan>> list_plans() {
  std::vector<std::pair<std::string, Plan>> v;
  ListQuery q = list_query_of(ListMode::Plain, PerGroup::None);
  v.push_back({"plain", list_query(q)});
  q.under_if = true;
  v.push_back({"plain_if", list_query(q)});
  q.when_mask = true;
  q.batched = true;
  v.push_back({"plain_if_when_batched", list_query(q)});
  v.push_back({"distinct", list_query(list_query_of(ListMode::Distinct, PerGroup::None))});
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
    for (ListMode m : {ListMode::Top, ListMode::Bottom})
      v.push_back({std::string(m == ListMode::Top ? "top" : "bottom") + "_per" + std::to_string(int(g)),
                   list_query(list_query_of(m, g))});
  v.push_back({"top_f64_key", list_query(list_query_of(ListMode::Top, PerGroup::Row, CType::F64))});
  v.push_back({"bottom_i64_key_i32_in",
               list_query(list_query_of(ListMode::Bottom, PerGroup::Col, CType::I64, DType::I32))});
  v.push_back({"top_i32", list_query(list_query_of(ListMode::Top, PerGroup::None, CType::Unknown, DType::I32))});
  v.push_back({"top_bool_key", list_query(list_query_of(ListMode::Top, PerGroup::Row, CType::Bool))});
  ListQuery w = list_query_of(ListMode::Bottom, PerGroup::Row);
  w.under_if = w.when_mask = w.batched = true;
  v.push_back({"bottom_if_when_batched", list_query(w)});
  for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col}) {
    ListQuery h = list_query_of(ListMode::Top, g, CType::F64);
    h.key_via_let = true;
    v.push_back({"top_let_key_per" + std::to_string(int(g)), list_query(h)});
  }
  v.push_back({"three_lists", three_lists()});
  v.push_back({"three_lists_batched", three_lists(true)});
  v.push_back({"masked_emit", masked_emit()});
  for (const auto& [name, q] : distinct_queries()) v.push_back({name, distinct_query(q)});
  return v;
}

}  // namespace gamut::testplans
