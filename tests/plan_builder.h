// Hand-built typed Plans and bound Instances for engine tests, independent of the parser.
//
// PlanBuilder types expressions as sema does (C promotion, explicit Cast nodes), so the plans
// it makes are the fully typed form engines receive. Bind turns arrays and parameters into an
// Instance (the caller states ranges and output shapes, as binding would compute them).
#pragma once
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "plan/plan.h"

namespace gamut::test {

// An array of dtype t from double values (converted as .npy data would be).
inline NDArray make_array(DType t, std::vector<int64_t> shape, const std::vector<double>& v) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  for (size_t e = 0; e < v.size() && int64_t(e) < a.size(); ++e) {
    std::byte* p = a.data.data() + e * dtype_size(t);
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (t) {
      case DType::Bool: put(uint8_t(v[e] != 0)); break;
      case DType::U8: put(uint8_t(v[e])); break;
      case DType::I8: put(int8_t(v[e])); break;
      case DType::I16: put(int16_t(v[e])); break;
      case DType::I32: put(int32_t(v[e])); break;
      case DType::I64: put(int64_t(v[e])); break;
      case DType::F16: put(float_to_half(float(v[e]))); break;
      case DType::BF16: put(float_to_bf16(float(v[e]))); break;
      case DType::F32: put(float(v[e])); break;
      case DType::F64: put(v[e]); break;
    }
  }
  return a;
}

class PlanBuilder {
 public:
  Plan p;

  explicit PlanBuilder(bool batched = false) {
    p.source_name = "test";
    p.axes.push_back(Axis{"i", AxisRole::Row, false, {}, {}, {}});
    p.axes.push_back(Axis{"j", AxisRole::Col, false, {}, {}, {}});
    p.axes.push_back(Axis{"k", AxisRole::Red, false, {}, {}, {}});
    if (batched) p.axes.push_back(Axis{"b", AxisRole::Batch, false, {}, {}, {}});
    p.batched = batched;
    p.typed = true;
  }

  int input(const std::string& name, DType t) {
    Operand o;
    o.name = name;
    o.dtype = t;
    o.kind = OperandKind::Mixed;
    p.operands.push_back(o);
    return int(p.operands.size()) - 1;
  }
  int operand(const std::string& name) const {
    for (size_t n = 0; n < p.operands.size(); ++n)
      if (p.operands[n].name == name) return int(n);
    return -1;
  }
  int access(const std::string& name, Pattern pat) {
    int op = operand(name);
    for (size_t n = 0; n < p.accesses.size(); ++n)
      if (p.accesses[n].operand == op && p.accesses[n].pattern == pat) return int(n);
    p.accesses.push_back(Access{op, pat});
    p.operands[size_t(op)].accesses.push_back(int(p.accesses.size()) - 1);
    return int(p.accesses.size()) - 1;
  }

  ExprId add(Expr e) {
    p.exprs.push_back(std::move(e));
    return ExprId(p.exprs.size() - 1);
  }
  CType type(ExprId e) const { return p.expr(e).type; }

  ExprId load(const std::string& name, Pattern pat) {
    Expr e{};
    e.kind = ExprKind::Load;
    e.index = access(name, pat);
    e.type = compute_type_of(*p.operands[size_t(operand(name))].dtype);
    return add(e);
  }
  ExprId cnst(CType t, double v) {
    Expr e{};
    e.kind = ExprKind::Const;
    e.type = t;
    e.value = is_float(t) ? Scalar::of_float(t, v) : Scalar::of_int(t, int64_t(v));
    return add(e);
  }
  ExprId cnst_scalar(Scalar s) {
    Expr e{};
    e.kind = ExprKind::Const;
    e.type = s.type;
    e.value = s;
    return add(e);
  }
  ExprId param(const std::string& name, CType t) {
    int idx = -1;
    for (size_t n = 0; n < p.params.size(); ++n)
      if (p.params[n].name == name) idx = int(n);
    if (idx < 0) {
      p.params.push_back(Param{name, false, {}});
      idx = int(p.params.size()) - 1;
    }
    Expr e{};
    e.kind = ExprKind::Param;
    e.index = idx;
    e.type = t;
    return add(e);
  }
  ExprId axis(AxisRole r) {
    Expr e{};
    e.kind = ExprKind::Axis;
    e.index = int(r);
    e.type = CType::I32;
    return add(e);
  }
  ExprId acc(int a) {
    Expr e{};
    e.kind = ExprKind::Acc;
    e.index = a;
    e.type = p.accs[size_t(a)].type;
    return add(e);
  }
  ExprId local(int l) {
    Expr e{};
    e.kind = ExprKind::Local;
    e.index = l;
    e.type = p.locals[size_t(l)].type;
    return add(e);
  }
  ExprId cast(ExprId a, CType t) {
    if (type(a) == t) return a;
    Expr e{};
    e.kind = ExprKind::Cast;
    e.a = a;
    e.type = t;
    return add(e);
  }
  // C promotion: bool counts as i32 in arithmetic; comparisons and && || give bool.
  ExprId bin(BinOp op, ExprId a, ExprId b) {
    CType t = std::max(type(a), type(b));
    bool logical = op == BinOp::LogAnd || op == BinOp::LogOr;
    bool compare = op >= BinOp::Lt && op <= BinOp::Ne;
    bool bitwise = op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor;
    if (t == CType::Bool && !logical && !compare && !bitwise) t = CType::I32;
    if (logical) t = CType::Bool;
    Expr e{};
    e.kind = ExprKind::Binary;
    e.binop = op;
    e.a = cast(a, t);
    e.b = cast(b, t);
    e.type = compare || logical ? CType::Bool : t;
    return add(e);
  }
  ExprId un(UnOp op, ExprId a) {
    Expr e{};
    e.kind = ExprKind::Unary;
    e.unop = op;
    CType t = type(a) == CType::Bool ? CType::I32 : type(a);
    e.a = op == UnOp::Not ? a : cast(a, t);
    e.type = op == UnOp::Not ? CType::Bool : t;
    return add(e);
  }
  ExprId call(Fn fn, std::vector<ExprId> args) {
    CType t = CType::Bool;
    for (ExprId x : args) t = std::max(t, type(x));
    if (t == CType::Bool) t = CType::I32;
    bool math = fn != Fn::Abs && fn != Fn::Min && fn != Fn::Max && fn != Fn::Clamp;
    if (math && !is_float(t)) t = CType::F64;
    Expr e{};
    e.kind = ExprKind::Call;
    e.fn = fn;
    for (ExprId x : args) e.args.push_back(cast(x, t));
    e.type = t;
    return add(e);
  }
  ExprId select(ExprId c, ExprId a, ExprId b) {
    CType t = std::max(type(a), type(b));
    Expr e{};
    e.kind = ExprKind::Select;
    e.a = c;
    e.b = cast(a, t);
    e.c = cast(b, t);
    e.type = t;
    return add(e);
  }

  int accumulator(const std::string& name, CType t, Scalar init, Monoid m = Monoid::Sequential) {
    Accumulator a;
    a.name = name;
    a.type = t;
    a.init = convert_scalar(init, t);
    a.monoid = m;
    a.identity = a.init;
    a.declared_type = true;
    p.accs.push_back(a);
    if (m == Monoid::Sequential) p.k_sequential = true;
    return int(p.accs.size()) - 1;
  }
  int new_local(const std::string& name, CType t, bool inner) {
    p.locals.push_back(Local{name, t, inner});
    return int(p.locals.size()) - 1;
  }

  static Stmt let(int l, ExprId v) { Stmt s{}; s.kind = StmtKind::Let; s.target = l; s.value = v; return s; }
  Stmt update(int a, UpdateOp op, ExprId v) {
    Stmt s{};
    s.kind = StmtKind::Update;
    s.target = a;
    s.update = op;
    s.value = cast(v, p.accs[size_t(a)].type);
    return s;
  }
  static Stmt when_if(ExprId cond, std::vector<Stmt> body) {
    Stmt s{};
    s.kind = StmtKind::If;
    s.cond = cond;
    s.body = std::move(body);
    return s;
  }
  Stmt store(int out, ExprId v) {
    Stmt s{};
    s.kind = StmtKind::Store;
    s.target = out;
    s.value = cast(v, p.dense[size_t(out)].type);
    return s;
  }
  Stmt emit(int list, std::vector<ExprId> cols) {
    Stmt s{};
    s.kind = StmtKind::Emit;
    s.target = list;
    for (size_t c = 0; c < cols.size(); ++c) s.columns.push_back(cast(cols[c], p.lists[size_t(list)].columns[c].type));
    return s;
  }

  static OutIndex ax(AxisRole r) { return OutIndex{OutIndex::Axis, r, -1}; }
  OutIndex lookup(const std::string& name, Pattern pat) {
    p.operands[size_t(operand(name))].is_index = true;
    return OutIndex{OutIndex::Lookup, pat == Pattern::RowVec ? AxisRole::Row : AxisRole::Col, access(name, pat)};
  }
  int dense(const std::string& name, StoreOp op, CType t, std::vector<OutIndex> index) {
    DenseOutput d;
    d.name = name;
    d.op = op;
    d.type = t;
    d.index = std::move(index);
    p.dense.push_back(d);
    return int(p.dense.size()) - 1;
  }
  // Columns take the types of the expressions they will be given.
  int list(const std::string& name, std::vector<ListColumn> cols, ListMode mode = ListMode::Plain,
           PerGroup per = PerGroup::None, int64_t limit = 0, ExprId key = kNoExpr) {
    ListOutput l;
    l.name = name;
    l.columns = std::move(cols);
    l.mode = mode;
    l.per = per;
    l.limit = limit;
    l.key = key;
    p.lists.push_back(l);
    return int(p.lists.size()) - 1;
  }
  void join_key(const std::string& row_name, const std::string& col_name) {
    p.operands[size_t(operand(row_name))].is_index = true;
    p.operands[size_t(operand(col_name))].is_index = true;
    p.when.keys.push_back(JoinKey{access(row_name, Pattern::RowVec), access(col_name, Pattern::ColVec)});
  }
};

// Arrays, parameters and extents bound to a plan.
class Bind {
 public:
  Instance inst;

  Bind(const Plan& plan, int64_t M, int64_t N, int64_t K, int64_t batch = 1) {
    inst.plan = &plan;
    inst.row = {0, M};
    inst.col = {0, N};
    inst.red = {0, K};
    inst.batch = batch;
    inst.inputs.assign(plan.operands.size(), nullptr);
    inst.params.assign(plan.params.size(), Scalar::of_int(CType::I64, 0));
    inst.dense_shapes.assign(plan.dense.size(), {});
    inst.list_limits.assign(plan.lists.size(), 0);
    for (size_t l = 0; l < plan.lists.size(); ++l) inst.list_limits[l] = plan.lists[l].limit;
  }
  Bind& array(const std::string& name, NDArray a) {
    store_.push_back(std::move(a));
    for (size_t n = 0; n < inst.plan->operands.size(); ++n)
      if (inst.plan->operands[n].name == name) inst.inputs[n] = &store_.back();
    return *this;
  }
  Bind& param(const std::string& name, Scalar v) {
    for (size_t n = 0; n < inst.plan->params.size(); ++n)
      if (inst.plan->params[n].name == name) inst.params[n] = v;
    return *this;
  }
  Bind& shape(int out, std::vector<int64_t> s) {
    inst.dense_shapes[size_t(out)] = std::move(s);
    return *this;
  }
  Bind& limit(int list, int64_t n) {
    inst.list_limits[size_t(list)] = n;
    return *this;
  }

 private:
  std::deque<NDArray> store_;
};

}  // namespace gamut::test
