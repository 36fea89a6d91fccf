// Hand-built typed plans for the code generator's tests (test_codegen, gpu/test_gpu_engine),
// shaped like sema's output: explicit Casts, operand types equal per operator.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "plan/plan.h"

namespace gamut::testplans {

class PlanBuilder {
 public:
  explicit PlanBuilder(const std::string& name, bool batched = false) {
    p.source_name = name;
    p.axes.push_back(axis_named("i", AxisRole::Row));
    p.axes.push_back(axis_named("j", AxisRole::Col));
    p.axes.push_back(axis_named("k", AxisRole::Red));
    if (batched) p.axes.push_back(axis_named("b", AxisRole::Batch));
    p.batched = batched;
  }

  int input(const std::string& name, DType t) {
    Operand o;
    o.name = name;
    o.dtype = t;
    o.kind = OperandKind::Mixed;
    p.operands.push_back(o);
    return int(p.operands.size()) - 1;
  }
  int access(int op, Pattern pat) {
    for (size_t a = 0; a < p.accesses.size(); ++a)
      if (p.accesses[a].operand == op && p.accesses[a].pattern == pat) return int(a);
    p.accesses.push_back({op, pat});
    p.operands[size_t(op)].accesses.push_back(int(p.accesses.size()) - 1);
    return int(p.accesses.size()) - 1;
  }
  ExprId load(int op, Pattern pat) {
    Expr e = make(ExprKind::Load, compute_type_of(*p.operands[size_t(op)].dtype));
    e.index = access(op, pat);
    return add(e);
  }
  // A load widened/converted to t (sema's Cast).
  ExprId load_as(int op, Pattern pat, CType t) { return cast(load(op, pat), t); }
  ExprId lit(CType t, double v) {
    Expr e = make(ExprKind::Const, t);
    e.value = is_float(t) ? Scalar::of_float(t, v) : Scalar::of_int(t, int64_t(v));
    return add(e);
  }
  ExprId param(const std::string& name, CType t, bool integer_only = false) {
    int idx = -1;
    for (size_t n = 0; n < p.params.size(); ++n)
      if (p.params[n].name == name) idx = int(n);
    if (idx < 0) {
      p.params.push_back({name, integer_only, {}});
      idx = int(p.params.size()) - 1;
    }
    Expr e = make(ExprKind::Param, t);
    e.index = idx;
    return add(e);
  }
  ExprId axis(AxisRole r) {
    Expr e = make(ExprKind::Axis, CType::I32);
    e.index = int(r);
    return add(e);
  }
  ExprId acc(int a) {
    Expr e = make(ExprKind::Acc, p.accs[size_t(a)].type);
    e.index = a;
    return add(e);
  }
  ExprId local(int l) {
    Expr e = make(ExprKind::Local, p.locals[size_t(l)].type);
    e.index = l;
    return add(e);
  }
  ExprId bin(BinOp op, ExprId a, ExprId b) {
    const bool boolean = op == BinOp::Lt || op == BinOp::Le || op == BinOp::Gt || op == BinOp::Ge ||
                         op == BinOp::Eq || op == BinOp::Ne || op == BinOp::LogAnd || op == BinOp::LogOr;
    Expr e = make(ExprKind::Binary, boolean ? CType::Bool : type(a));
    e.binop = op;
    e.a = a;
    e.b = b;
    return add(e);
  }
  ExprId un(UnOp op, ExprId a) {
    Expr e = make(ExprKind::Unary, op == UnOp::Not ? CType::Bool : type(a));
    e.unop = op;
    e.a = a;
    return add(e);
  }
  ExprId cast(ExprId a, CType t) {
    if (type(a) == t) return a;
    Expr e = make(ExprKind::Cast, t);
    e.a = a;
    return add(e);
  }
  ExprId call(Fn f, std::vector<ExprId> args) {
    Expr e = make(ExprKind::Call, type(args[0]));
    e.fn = f;
    e.args = std::move(args);
    return add(e);
  }
  ExprId select(ExprId c, ExprId a, ExprId b) {
    Expr e = make(ExprKind::Select, type(a));
    e.a = c;
    e.b = a;
    e.c = b;
    return add(e);
  }
  CType type(ExprId e) const { return p.exprs[size_t(e)].type; }

  int accumulator(const std::string& name, CType t, double init, Monoid m) {
    Accumulator a;
    a.name = name;
    a.type = t;
    a.init = is_float(t) ? Scalar::of_float(t, init) : Scalar::of_int(t, int64_t(init));
    a.monoid = m;
    a.identity = a.init;
    p.accs.push_back(a);
    if (m == Monoid::Sequential) p.k_sequential = true;
    return int(p.accs.size()) - 1;
  }
  int new_local(const std::string& name, CType t, bool inner) {
    p.locals.push_back({name, t, inner});
    return int(p.locals.size()) - 1;
  }
  static Stmt let(int l, ExprId v) {
    Stmt s;
    s.kind = StmtKind::Let;
    s.target = l;
    s.value = v;
    return s;
  }
  static Stmt update(int a, UpdateOp op, ExprId v) {
    Stmt s;
    s.kind = StmtKind::Update;
    s.target = a;
    s.update = op;
    s.value = v;
    return s;
  }
  static Stmt if_(ExprId c, std::vector<Stmt> body) {
    Stmt s;
    s.kind = StmtKind::If;
    s.cond = c;
    s.body = std::move(body);
    return s;
  }
  OutIndex ax(AxisRole r) const { return OutIndex{OutIndex::Axis, r, -1}; }
  OutIndex lookup(int op, Pattern pat) {
    p.operands[size_t(op)].is_index = true;
    return OutIndex{OutIndex::Lookup, pat == Pattern::RowVec ? AxisRole::Row : AxisRole::Col, access(op, pat)};
  }
  int output(const std::string& name, StoreOp op, CType t, std::vector<OutIndex> idx) {
    DenseOutput d;
    d.name = name;
    d.op = op;
    d.type = t;
    d.index = std::move(idx);
    p.dense.push_back(d);
    return int(p.dense.size()) - 1;
  }
  static Stmt store(int out, ExprId v) {
    Stmt s;
    s.kind = StmtKind::Store;
    s.target = out;
    s.value = v;
    return s;
  }
  int list(const std::string& name, std::vector<ListColumn> cols, ListMode mode = ListMode::Plain,
           int64_t limit = 0, ExprId key = kNoExpr, PerGroup per = PerGroup::None) {
    ListOutput l;
    l.name = name;
    l.columns = std::move(cols);
    l.mode = mode;
    l.limit = limit;
    l.key = key;
    l.per = per;
    p.lists.push_back(l);
    return int(p.lists.size()) - 1;
  }
  static Stmt emit(int l, std::vector<ExprId> cols) {
    Stmt s;
    s.kind = StmtKind::Emit;
    s.target = l;
    s.columns = std::move(cols);
    return s;
  }
  Plan done() {
    p.typed = true;
    return p;
  }

  Plan p;

 private:
  static Axis axis_named(const std::string& n, AxisRole r) {
    Axis a;
    a.name = n;
    a.role = r;
    return a;
  }
  static Expr make(ExprKind k, CType t) {
    Expr e;
    e.kind = k;
    e.type = t;
    return e;
  }
  ExprId add(const Expr& e) {
    p.exprs.push_back(e);
    return ExprId(p.exprs.size()) - 1;
  }
};

// The type a product of two inputs computes in (C promotion of the widened types).
inline CType product_type(DType a, DType b) {
  auto w = [](DType t) { CType c = compute_type_of(t); return c == CType::Bool ? CType::I32 : c; };
  return std::max(w(a), w(b));
}

// C[i,j] = sum_k A * B, with any input types and orientations; `transposed`: C[j,i].
inline Plan product(DType ta = DType::F32, DType tb = DType::F32, Pattern pa = Pattern::RowRed,
                    Pattern pb = Pattern::RedCol, bool transposed = false) {
  PlanBuilder b("product");
  const CType t = product_type(ta, tb);
  const int A = b.input("A", ta), B = b.input("B", tb);
  const int acc = b.accumulator("accum", t, 0, Monoid::Sum);
  const ExprId a = b.load_as(A, pa, t);   // (in order: access 0 is A)
  const ExprId x = b.load_as(B, pb, t);
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, a, x)));
  const int C = b.output("C", StoreOp::Assign, t,
                         transposed ? std::vector<OutIndex>{b.ax(AxisRole::Col), b.ax(AxisRole::Row)}
                                    : std::vector<OutIndex>{b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(C, b.acc(acc)));
  return b.done();
}
inline Plan sgemm() { return product(); }

// Q1: let m = S*W; accum += m + f32(m > thres[i]) * (m - thres[i]).
inline Plan q1() {
  PlanBuilder b("q1");
  const int S = b.input("S", DType::F32), W = b.input("W", DType::F32), T = b.input("thres", DType::F32);
  const int acc = b.accumulator("accum", CType::F32, 0, Monoid::Sum);
  const int m = b.new_local("m", CType::F32, true);
  b.p.inner.push_back(PlanBuilder::let(m, b.bin(BinOp::Mul, b.load(S, Pattern::RowRed), b.load(W, Pattern::RedCol))));
  const ExprId cmp = b.cast(b.bin(BinOp::Gt, b.local(m), b.load(T, Pattern::RowVec)), CType::F32);
  const ExprId extra = b.bin(BinOp::Mul, cmp, b.bin(BinOp::Sub, b.local(m), b.load(T, Pattern::RowVec)));
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Add, b.local(m), extra)));
  const int out = b.output("Out", StoreOp::Assign, CType::F32, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(out, b.acc(acc)));
  return b.done();
}

// Max-plus over i32: accum = -inf; accum max= A[i,k] + B[k,j].
inline Plan maxplus_i32() {
  PlanBuilder b("maxplus");
  const int A = b.input("A", DType::I32), B = b.input("B", DType::I32);
  const int acc = b.accumulator("accum", CType::I32, double(std::numeric_limits<int32_t>::min()), Monoid::Max);
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Max, b.bin(BinOp::Add, b.load(A, Pattern::RowRed), b.load(B, Pattern::RedCol))));
  const int C = b.output("C", StoreOp::Assign, CType::I32, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(C, b.acc(acc)));
  return b.done();
}

// Batched min-plus over f32: d = inf; d min= D[b,i,k] + E[b,k,j]; Out[b,i,j] = d.
inline Plan minplus_batched() {
  PlanBuilder b("minplus_batched", true);
  const int D = b.input("D", DType::F32), E = b.input("E", DType::F32);
  const int acc = b.accumulator("d", CType::F32, INFINITY, Monoid::Min);
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Min, b.bin(BinOp::Add, b.load(D, Pattern::RowRed), b.load(E, Pattern::RedCol))));
  const int out = b.output("Out", StoreOp::Assign, CType::F32,
                           {b.ax(AxisRole::Batch), b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(out, b.acc(acc)));
  return b.done();
}

// Or-and over i32, one operand under two patterns: r |= Adj[i,k] & Adj[k,j].
inline Plan or_and_i32(DType adj = DType::I32) {
  PlanBuilder b("reachability");
  const int A = b.input("Adj", adj);
  const int acc = b.accumulator("r", CType::I32, 0, Monoid::Or);
  b.p.inner.push_back(PlanBuilder::update(
      acc, UpdateOp::Or, b.bin(BinOp::BitAnd, b.load_as(A, Pattern::RowRed, CType::I32), b.load_as(A, Pattern::RedCol, CType::I32))));
  const int R = b.output("Reach", StoreOp::Assign, CType::I32, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(R, b.acc(acc)));
  return b.done();
}

// f32 sum of products P[i,k] * R[k,j] into accumulator 0 of a fresh builder.
inline int preference(PlanBuilder& b, int& P, int& R) {
  P = b.input("P", DType::F32);
  R = b.input("R", DType::F32);
  const int acc = b.accumulator("accum", CType::F32, 0, Monoid::Sum);
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.load(P, Pattern::RowRed), b.load(R, Pattern::RedCol))));
  return acc;
}

// Q2: C[Pzip[i], Rzip[j]] += accum (index vectors of two integer types).
inline Plan zip_aggregate(DType rzip = DType::I64) {
  PlanBuilder b("q2");
  int P, R;
  const int acc = preference(b, P, R);
  const int pz = b.input("Pzip", DType::I32), rz = b.input("Rzip", rzip);
  const int C = b.output("C", StoreOp::Add, CType::F32, {b.lookup(pz, Pattern::RowVec), b.lookup(rz, Pattern::ColVec)});
  b.p.outer.push_back(PlanBuilder::store(C, b.acc(acc)));
  return b.done();
}

// Q4: when (Pzip[i] == Rzip[j]) { ... AreaTotal[Pzip[i]] += accum }.
inline Plan join_area() {
  PlanBuilder b("q4");
  int P, R;
  const int acc = preference(b, P, R);
  const int pz = b.input("Pzip", DType::I32), rz = b.input("Rzip", DType::I32);
  b.p.when.keys.push_back({b.access(pz, Pattern::RowVec), b.access(rz, Pattern::ColVec)});
  const int T = b.output("AreaTotal", StoreOp::Add, CType::F32, {b.lookup(pz, Pattern::RowVec)});
  b.p.outer.push_back(PlanBuilder::store(T, b.acc(acc)));
  return b.done();
}

// Q5: if (accum > thres) emit Pairs(i, j, accum).
inline Plan select_list() {
  PlanBuilder b("q5");
  int P, R;
  const int acc = preference(b, P, R);
  const int L = b.list("Pairs", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::F32}});
  b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, b.acc(acc), b.param("thres", CType::F32)),
                                       {PlanBuilder::emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)})}));
  return b.done();
}

// Q7: emit Top(i, j, accum) top N by accum.
inline Plan topk(int64_t n = 128) {
  PlanBuilder b("q7");
  int P, R;
  const int acc = preference(b, P, R);
  const int L = b.list("Top", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::F32}}, ListMode::Top, n, b.acc(acc));
  b.p.outer.push_back(PlanBuilder::emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)}));
  return b.done();
}

// k-nearest neighbours: let t = Q[i,k] - X[j,k]; dist += t*t; emit bottom 10 by dist per i.
inline Plan knn(int64_t n = 10) {
  PlanBuilder b("knn");
  const int Q = b.input("Q", DType::F32), X = b.input("X", DType::F32);
  const int acc = b.accumulator("dist", CType::F32, 0, Monoid::Sum);
  const int t = b.new_local("t", CType::F32, true);
  b.p.inner.push_back(PlanBuilder::let(t, b.bin(BinOp::Sub, b.load(Q, Pattern::RowRed), b.load(X, Pattern::ColRed))));
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.local(t), b.local(t))));
  const int L = b.list("Nearest", {{"i", CType::I32}, {"j", CType::I32}, {"dist", CType::F32}}, ListMode::Bottom, n,
                       b.acc(acc), PerGroup::Row);
  b.p.outer.push_back(PlanBuilder::emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)}));
  return b.done();
}

// Q6-style self-join: let m = max(A[i,k], A[j,k]); accum += m*m; if (accum > thres) emit.
inline Plan selfjoin() {
  PlanBuilder b("q6");
  const int A = b.input("A", DType::F32);
  const int acc = b.accumulator("accum", CType::F32, 0, Monoid::Sum);
  const int m = b.new_local("m", CType::F32, true);
  b.p.inner.push_back(PlanBuilder::let(m, b.call(Fn::Max, {b.load(A, Pattern::RowRed), b.load(A, Pattern::ColRed)})));
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, b.local(m), b.local(m))));
  const int L = b.list("Pairs", {{"i", CType::I32}, {"j", CType::I32}, {"accum", CType::F32}});
  b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, b.acc(acc), b.param("thres", CType::F32)),
                                       {PlanBuilder::emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col), b.acc(acc)})}));
  return b.done();
}

// Vectors in the inner op: acc += A[i,k] * w[k] * B[k,j] + r[i] - c[j] (i32, exact), plus
// an output-shaped input in the epilogue: C[i,j] = acc + X[i,j] * X2[j,i].
inline Plan vectors_i32() {
  PlanBuilder b("vectors");
  const int A = b.input("A", DType::I16), B = b.input("B", DType::I8), w = b.input("w", DType::U8);
  const int r = b.input("r", DType::I32), c = b.input("c", DType::I32);
  const int X = b.input("X", DType::I32), X2 = b.input("X2", DType::I16);
  const CType t = CType::I32;
  const int acc = b.accumulator("acc", t, 0, Monoid::Sum);
  const ExprId prod = b.bin(BinOp::Mul, b.bin(BinOp::Mul, b.load(A, Pattern::RedRow), b.load(w, Pattern::RedVec)), b.load(B, Pattern::ColRed));
  b.p.inner.push_back(PlanBuilder::update(acc, UpdateOp::Add,
                                          b.bin(BinOp::Sub, b.bin(BinOp::Add, prod, b.load(r, Pattern::RowVec)), b.load(c, Pattern::ColVec))));
  const int C = b.output("C", StoreOp::Assign, t, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(
      C, b.bin(BinOp::Add, b.acc(acc), b.bin(BinOp::Mul, b.load(X, Pattern::RowCol), b.load(X2, Pattern::ColRow)))));
  return b.done();
}

// A general `=` update (k in order) over f64: acc = acc * 0.5 + A[i,k] * B[k,j]; plus integer
// division / remainder / shifts in the epilogue, which must give 0 for a zero divisor.
inline Plan sequential_f64() {
  PlanBuilder b("sequential");
  const int A = b.input("A", DType::F64), B = b.input("B", DType::F64);
  const int acc = b.accumulator("acc", CType::F64, 1, Monoid::Sequential);
  b.p.inner.push_back(PlanBuilder::update(
      acc, UpdateOp::Assign,
      b.bin(BinOp::Add, b.bin(BinOp::Mul, b.acc(acc), b.lit(CType::F64, 0.5)),
            b.bin(BinOp::Mul, b.load(A, Pattern::RowRed), b.load(B, Pattern::RedCol)))));
  const int C = b.output("C", StoreOp::Assign, CType::F64, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(C, b.acc(acc)));
  // D[i,j] = i64(acc) / (i - j) + i64(acc) % (j - i) + (i << j) >> 3
  const ExprId ia = b.cast(b.acc(acc), CType::I64);
  const ExprId di = b.cast(b.bin(BinOp::Sub, b.axis(AxisRole::Row), b.axis(AxisRole::Col)), CType::I64);
  const ExprId dj = b.cast(b.bin(BinOp::Sub, b.axis(AxisRole::Col), b.axis(AxisRole::Row)), CType::I64);
  const ExprId sh = b.cast(b.bin(BinOp::Shr, b.bin(BinOp::Shl, b.axis(AxisRole::Row), b.axis(AxisRole::Col)), b.lit(CType::I32, 3)), CType::I64);
  const int D = b.output("D", StoreOp::Assign, CType::I64, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(D, b.bin(BinOp::Add, b.bin(BinOp::Add, b.bin(BinOp::Div, ia, di), b.bin(BinOp::Mod, ia, dj)), sh)));
  return b.done();
}

// Every aggregate operator and type: counts, max (f32 CAS), min (i64), |= &= (i32), a scalar total.
inline Plan aggregates() {
  PlanBuilder b("aggregates");
  int P, R;
  const int acc = preference(b, P, R);
  const int g = b.input("g", DType::I32), h = b.input("h", DType::I16);
  const ExprId thres = b.param("thres", CType::F32);
  const int cnt = b.output("Cnt", StoreOp::Add, CType::I32, {b.lookup(g, Pattern::RowVec), b.lookup(h, Pattern::ColVec)});
  b.p.outer.push_back(PlanBuilder::store(cnt, b.cast(b.bin(BinOp::Gt, b.acc(acc), thres), CType::I32)));
  const int mx = b.output("Mx", StoreOp::Max, CType::F32, {b.lookup(g, Pattern::RowVec), b.ax(AxisRole::Col)});
  b.p.outer.push_back(PlanBuilder::store(mx, b.acc(acc)));
  const int mn = b.output("Mn", StoreOp::Min, CType::I64, {b.lookup(h, Pattern::ColVec)});
  b.p.outer.push_back(PlanBuilder::store(mn, b.cast(b.acc(acc), CType::I64)));
  const ExprId bits = b.bin(BinOp::Shl, b.lit(CType::I32, 1), b.bin(BinOp::BitAnd, b.axis(AxisRole::Col), b.lit(CType::I32, 31)));
  const int orr = b.output("Or", StoreOp::Or, CType::I32, {b.ax(AxisRole::Row)});
  b.p.outer.push_back(PlanBuilder::if_(b.bin(BinOp::Gt, b.acc(acc), thres), {PlanBuilder::store(orr, bits)}));
  const int andd = b.output("And", StoreOp::And, CType::I32, {b.lookup(g, Pattern::RowVec)});
  b.p.outer.push_back(PlanBuilder::store(andd, b.un(UnOp::BitNot, bits)));
  const int total = b.output("Total", StoreOp::Add, CType::F64, {});
  b.p.outer.push_back(PlanBuilder::store(total, b.cast(b.acc(acc), CType::F64)));
  return b.done();
}

// A `when` mask (not a join): pairs with i != j and r[i] + c[j] > 0, emitted with a bool column.
inline Plan masked_emit() {
  PlanBuilder b("masked");
  int P, R;
  const int acc = preference(b, P, R);
  const int r = b.input("r", DType::I32), c = b.input("c", DType::I64);
  b.p.when.mask = b.bin(BinOp::LogAnd, b.bin(BinOp::Ne, b.axis(AxisRole::Row), b.axis(AxisRole::Col)),
                        b.bin(BinOp::Gt, b.bin(BinOp::Add, b.load_as(r, Pattern::RowVec, CType::I64), b.load(c, Pattern::ColVec)),
                              b.lit(CType::I64, 0)));
  const int L = b.list("L", {{"i", CType::I32}, {"j", CType::I32}, {"pos", CType::Bool}, {"v", CType::F64}});
  b.p.outer.push_back(PlanBuilder::emit(L, {b.axis(AxisRole::Row), b.axis(AxisRole::Col),
                                            b.bin(BinOp::Gt, b.acc(acc), b.lit(CType::F32, 0)), b.cast(b.acc(acc), CType::F64)}));
  return b.done();
}

// Every plan above, by name: what the NVRTC compile checks and the golden kernels cover.
inline std::vector<std::pair<std::string, std::function<Plan()>>> all_plans() {
  return {
      {"sgemm", [] { return sgemm(); }},
      {"q1", [] { return q1(); }},
      {"maxplus_i32", [] { return maxplus_i32(); }},
      {"minplus_batched", [] { return minplus_batched(); }},
      {"or_and_i32", [] { return or_and_i32(); }},
      {"or_and_bool", [] { return or_and_i32(DType::Bool); }},
      {"zip_aggregate", [] { return zip_aggregate(); }},
      {"join_area", [] { return join_area(); }},
      {"select_list", [] { return select_list(); }},
      {"topk", [] { return topk(); }},
      {"knn", [] { return knn(); }},
      {"selfjoin", [] { return selfjoin(); }},
      {"vectors_i32", [] { return vectors_i32(); }},
      {"sequential_f64", [] { return sequential_f64(); }},
      {"aggregates", [] { return aggregates(); }},
      {"masked_emit", [] { return masked_emit(); }},
      {"f16_bf16_transposed", [] { return product(DType::F16, DType::BF16, Pattern::RedRow, Pattern::ColRed, true); }},
      {"i8_u8", [] { return product(DType::I8, DType::U8); }},
      {"i64_f64", [] { return product(DType::I64, DType::F64, Pattern::RowRed, Pattern::ColRed); }},
      {"bool_i16", [] { return product(DType::Bool, DType::I16, Pattern::RedRow, Pattern::RedCol); }},
  };
}

}  // namespace gamut::testplans
