// Plan -> Module: lowers the typed expression arena and statements to lane instructions.
//
// Every operator gets its operands in one type (sema's Casts, plus a conversion here wherever
// a type still differs), so each kernel is instantiated for exactly one lane type.
#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "core/error.h"
#include "cpu/program.h"

namespace gamut::cpu {

void internal_error(const std::string& what) {
  throw Error(ExitCode::Query, "internal error: cpu engine: " + what);
}

Strides access_strides(const Instance& inst, int access) {
  const Plan& P = *inst.plan;
  const Access& a = P.accesses[size_t(access)];
  const NDArray& x = *inst.inputs[size_t(a.operand)];
  const bool two_d = a.pattern == Pattern::RowRed || a.pattern == Pattern::RedRow ||
                     a.pattern == Pattern::RedCol || a.pattern == Pattern::ColRed ||
                     a.pattern == Pattern::RowCol || a.pattern == Pattern::ColRow;
  const size_t lead = P.batched ? 1 : 0;
  if (x.shape.size() != lead + (two_d ? 2 : 1))
    internal_error("operand " + P.operands[size_t(a.operand)].name + " has the wrong rank");
  Strides st;
  if (P.batched) {
    st.b = 1;
    for (size_t d = 1; d < x.shape.size(); ++d) st.b *= x.shape[d];
  }
  const int64_t ld = two_d ? x.shape[lead + 1] : 1;  // row length of a matrix
  switch (a.pattern) {
    case Pattern::RowRed: st.i = ld; st.k = 1; break;
    case Pattern::RedRow: st.k = ld; st.i = 1; break;
    case Pattern::RedCol: st.k = ld; st.j = 1; break;
    case Pattern::ColRed: st.j = ld; st.k = 1; break;
    case Pattern::RowVec: st.i = 1; break;
    case Pattern::ColVec: st.j = 1; break;
    case Pattern::RedVec: st.k = 1; break;
    case Pattern::RowCol: st.i = ld; st.j = 1; break;
    case Pattern::ColRow: st.j = ld; st.i = 1; break;
  }
  return st;
}

namespace {

Kern kern_of(BinOp op) {
  switch (op) {
    case BinOp::Add: return Kern::Add; case BinOp::Sub: return Kern::Sub;
    case BinOp::Mul: return Kern::Mul; case BinOp::Div: return Kern::Div;
    case BinOp::Mod: return Kern::Mod; case BinOp::Shl: return Kern::Shl;
    case BinOp::Shr: return Kern::Shr; case BinOp::BitAnd: return Kern::BitAnd;
    case BinOp::BitOr: return Kern::BitOr; case BinOp::BitXor: return Kern::BitXor;
    case BinOp::Lt: return Kern::Lt; case BinOp::Le: return Kern::Le;
    case BinOp::Gt: return Kern::Gt; case BinOp::Ge: return Kern::Ge;
    case BinOp::Eq: return Kern::Eq; case BinOp::Ne: return Kern::Ne;
    case BinOp::LogAnd: return Kern::LogAnd; case BinOp::LogOr: return Kern::LogOr;
  }
  return Kern::Add;
}

bool is_comparison(BinOp op) {
  return op == BinOp::Lt || op == BinOp::Le || op == BinOp::Gt || op == BinOp::Ge ||
         op == BinOp::Eq || op == BinOp::Ne;
}
bool is_bitwise(BinOp op) {
  return op == BinOp::BitAnd || op == BinOp::BitOr || op == BinOp::BitXor;
}
// CType's order is the promotion order: Bool < I32 < I64 < F32 < F64.
CType promote(CType a, CType b) { return std::max(a, b); }

struct Compiler {
  const Instance& I;
  const Plan& P;
  Module& M;
  std::vector<int> local_slot;
  const std::vector<FinishRead>* reads = nullptr;  // compile_finish: per Plan::output_reads

  using Steps = std::vector<Step>;

  int slot(CType t, bool uniform, SlotKind kind = SlotKind::Temp) {
    SlotInfo s;
    s.type = t;
    s.uniform = uniform;
    s.kind = kind;
    M.slots.push_back(s);
    return int(M.slots.size()) - 1;
  }
  CType type(int s) const { return M.slots[size_t(s)].type; }
  bool uni(int s) const { return M.slots[size_t(s)].uniform; }

  int op(Steps& out, OpFn fn, CType t, bool uniform, int a, int b = -1, int c = -1) {
    if (!fn) internal_error("unsupported operation on " + std::string(ctype_name(t)));
    Step s;
    s.kind = StepKind::Op;
    s.op.fn = fn;
    s.op.dst = slot(t, uniform);
    s.op.a = a;
    s.op.b = b;
    s.op.c = c;
    out.push_back(std::move(s));
    return out.back().op.dst;
  }

  int cast(Steps& out, int s, CType to) {
    if (type(s) == to) return s;
    return op(out, cast_fn(type(s), to, uni(s)), to, uni(s), s);
  }

  // One slot per distinct constant (a query of many lets repeats its literals).
  int constant(const Scalar& v, CType t) {
    uint64_t bits = 0;
    std::memcpy(&bits, &v.f, sizeof bits);
    const auto key = std::make_tuple(int(t), int(v.type), v.i, bits);
    auto it = constants.find(key);
    if (it != constants.end()) return it->second;
    int s = slot(t, true, SlotKind::Const);
    M.slots[size_t(s)].value = v;
    constants.emplace(key, s);
    return s;
  }
  std::map<std::tuple<int, int, int64_t, uint64_t>, int> constants = {};

  int load(int access, Steps& out) {
    const Access& a = P.accesses[size_t(access)];
    const NDArray* x = I.inputs[size_t(a.operand)];
    Strides st = access_strides(I, access);
    bool u = st.j == 0;
    Step s;
    s.kind = StepKind::Op;
    s.op.fn = load_fn(x->dtype, u);
    s.op.dst = slot(compute_type_of(x->dtype), u);
    s.op.data = x->data.data();
    s.op.st = st;
    out.push_back(std::move(s));
    return out.back().op.dst;
  }

  // An output element (a load over the finishing step's b, i, j) or a sum (a constant).
  int output_read(int id, Steps& out) {
    if (!reads || size_t(id) >= reads->size()) internal_error("an output read outside a finishing step");
    const OutputRead& r = P.output_reads[size_t(id)];
    const FinishRead& f = (*reads)[size_t(id)];
    if (r.sum) return constant(f.sum, f.sum.type);
    if (!f.data && !r.dims.empty()) internal_error("output read without its array");
    const bool u = f.st.j == 0;
    Step s;
    s.kind = StepKind::Op;
    s.op.fn = load_fn(f.dtype, u);
    s.op.dst = slot(compute_type_of(f.dtype), u);
    s.op.data = f.data;
    s.op.st = f.st;
    out.push_back(std::move(s));
    return out.back().op.dst;
  }

  int binary(Steps& out, Kern k, CType t, int a, int b) {
    a = cast(out, a, t);
    b = cast(out, b, t);
    CType rt = k >= Kern::Lt && k <= Kern::LogOr ? CType::Bool : t;
    return op(out, binary_fn(k, t, uni(a), uni(b)), rt, uni(a) && uni(b), a, b);
  }

  int unary(Steps& out, UKern k, CType t, int a) {
    a = cast(out, a, t);
    CType rt = k == UKern::Not ? CType::Bool : t;
    return op(out, unary_fn(k, t, uni(a)), rt, uni(a), a);
  }

  int expr(ExprId id, Steps& out) {
    const Expr& e = P.expr(id);
    switch (e.kind) {
      case ExprKind::Const: return constant(e.value, e.type);
      case ExprKind::Param:
        if (e.index < 0 || size_t(e.index) >= I.params.size()) internal_error("unbound parameter");
        return constant(I.params[size_t(e.index)], e.type);
      case ExprKind::Axis: {
        AxisRole r = AxisRole(e.index);
        int s = r == AxisRole::Row ? M.row : r == AxisRole::Col ? M.col : r == AxisRole::Red ? M.red : M.batch;
        return cast(out, s, e.type);
      }
      case ExprKind::Load: return cast(out, load(e.index, out), e.type);
      case ExprKind::Acc: return cast(out, M.acc_slot[size_t(e.index)], e.type);
      case ExprKind::Local:
        if (local_slot[size_t(e.index)] < 0) internal_error("local read before its let");
        return cast(out, local_slot[size_t(e.index)], e.type);
      case ExprKind::Unary: return unary_expr(e, out);
      case ExprKind::Binary: return binary_expr(e, out);
      case ExprKind::Select: {
        int c = cast(out, expr(e.a, out), CType::Bool);
        int x = cast(out, expr(e.b, out), e.type);
        int y = cast(out, expr(e.c, out), e.type);
        return op(out, select_fn(e.type, uni(c), uni(x), uni(y)), e.type,
                  uni(c) && uni(x) && uni(y), c, x, y);
      }
      case ExprKind::Call: return call_expr(e, out);
      case ExprKind::Cast: return cast(out, expr(e.a, out), e.type);
      case ExprKind::Output: return cast(out, output_read(e.index, out), e.type);
    }
    internal_error("unknown expression kind");
  }

  int unary_expr(const Expr& e, Steps& out) {
    int a = expr(e.a, out);
    if (e.unop == UnOp::Not)
      return cast(out, unary(out, UKern::Not, CType::Bool, cast(out, a, CType::Bool)), e.type);
    CType t = e.type == CType::Bool ? CType::I32 : e.type;  // C: -b and ~b compute in int
    return cast(out, unary(out, e.unop == UnOp::Neg ? UKern::Neg : UKern::BitNot, t, a), e.type);
  }

  int binary_expr(const Expr& e, Steps& out) {
    int a = expr(e.a, out), b = expr(e.b, out);
    CType t;
    if (is_comparison(e.binop)) t = promote(type(a), type(b));
    else if (e.binop == BinOp::LogAnd || e.binop == BinOp::LogOr) t = CType::Bool;
    else if (e.type == CType::Bool && !is_bitwise(e.binop)) t = CType::I32;
    else t = e.type;
    Kern k = kern_of(e.binop);
    if (e.inf_sum != InfSum::None) k = e.inf_sum == InfSum::MaxPlus ? Kern::AddInfMax : Kern::AddInfMin;
    return cast(out, binary(out, k, t, a, b), e.type);
  }

  int call_expr(const Expr& e, Steps& out) {
    const auto& args = e.args;
    auto need = [&](size_t n, bool at_least) {
      if (at_least ? args.size() < n : args.size() != n) internal_error("bad arity of call " + std::to_string(int(e.fn)));
    };
    // abs/min/max/clamp keep the argument type; the rest compute in a float type (f64 for ints).
    CType t = e.type == CType::Bool ? CType::I32 : e.type;
    CType ft = is_float(e.type) ? e.type : CType::F64;
    switch (e.fn) {
      case Fn::Abs: need(1, false); return cast(out, unary(out, UKern::Abs, t, expr(args[0], out)), e.type);
      case Fn::Min: case Fn::Max: {
        need(2, true);
        Kern k = e.fn == Fn::Min ? Kern::Min : Kern::Max;
        int r = cast(out, expr(args[0], out), e.type);
        for (size_t n = 1; n < args.size(); ++n) r = binary(out, k, e.type, r, expr(args[n], out));
        return r;
      }
      case Fn::Clamp: {
        need(3, false);
        int r = binary(out, Kern::Max, e.type, expr(args[0], out), expr(args[1], out));
        return binary(out, Kern::Min, e.type, r, expr(args[2], out));
      }
      case Fn::Pow:
        need(2, false);
        return cast(out, binary(out, Kern::Pow, ft, expr(args[0], out), expr(args[1], out)), e.type);
      default: break;
    }
    need(1, false);
    UKern k = e.fn == Fn::Sqrt ? UKern::Sqrt : e.fn == Fn::Exp ? UKern::Exp : e.fn == Fn::Log ? UKern::Log
            : e.fn == Fn::Floor ? UKern::Floor : e.fn == Fn::Ceil ? UKern::Ceil : UKern::Tanh;
    return cast(out, unary(out, k, ft, expr(args[0], out)), e.type);
  }

  // The positions of output d's target; a computed one's slot is evaluated into `out` from the
  // Store `s` (null: the positions' shape only).
  std::vector<OutDim> out_dims(int d, const Stmt* s = nullptr, Steps* out = nullptr) {
    const DenseOutput& o = P.dense[size_t(d)];
    const std::vector<int64_t>& shape = I.dense_shapes[size_t(d)];
    std::vector<OutIndex> idx = o.index;
    bool has_batch = std::any_of(idx.begin(), idx.end(), [](const OutIndex& x) {
      return x.kind == OutIndex::Axis && x.axis == AxisRole::Batch;
    });
    if (P.batched && !has_batch) idx.insert(idx.begin(), OutIndex{OutIndex::Axis, AxisRole::Batch, -1});
    if (idx.size() != shape.size()) internal_error("output " + o.name + " has the wrong rank");
    std::vector<OutDim> dims(idx.size());
    int64_t stride = 1;
    int keys = 0, slot0 = first_key_slot(P, d);
    for (const OutIndex& x : idx) keys += x.kind == OutIndex::Key;
    for (size_t n = idx.size(); n-- > 0;) {
      OutDim& od = dims[n];
      od.stride = stride;
      stride *= shape[n];
      if (idx[n].kind == OutIndex::Key) {
        // (positions run backwards here: this is computed index number --keys)
        --keys;
        od.axis = SlotKind::Temp;
        od.extent = shape[n];
        od.key_slot = slot0 + keys;
        if (s && out) {
          if (size_t(keys) >= s->columns.size()) internal_error("store of " + o.name + " lacks a computed index");
          od.key = cast(*out, expr(s->columns[size_t(keys)], *out), CType::I64);
        }
      } else if (idx[n].kind == OutIndex::Axis) {
        od.axis = idx[n].axis == AxisRole::Row ? SlotKind::Row
                : idx[n].axis == AxisRole::Col ? SlotKind::Col : SlotKind::Batch;
      } else {
        const Access& a = P.accesses[size_t(idx[n].access)];
        const NDArray* x = I.inputs[size_t(a.operand)];
        od.axis = SlotKind::Temp;
        od.data = x->data.data();
        od.read = index_fn(x->dtype);
        od.st = access_strides(I, idx[n].access);
        if (!od.read) internal_error("index vector " + P.operands[size_t(a.operand)].name + " is not integer");
      }
    }
    return dims;
  }

  void stmt(const Stmt& s, Steps& out) {
    switch (s.kind) {
      case StmtKind::Let: {
        CType lt = P.locals[size_t(s.target)].type;
        int v = cast(out, expr(s.value, out), lt);
        // An accumulator changes within the same block: a local must keep the value it had.
        if (M.slots[size_t(v)].kind == SlotKind::Acc) v = op(out, cast_fn(lt, lt, false), lt, false, v);
        local_slot[size_t(s.target)] = v;
        return;
      }
      case StmtKind::Update: {
        CType at = P.accs[size_t(s.target)].type;
        const Expr& ve = P.expr(s.value);
        if (s.update == UpdateOp::Add && ve.kind == ExprKind::Binary && ve.binop == BinOp::Mul &&
            ve.type == at && muladd_fn(at)) {
          Step st;
          st.kind = StepKind::MulAdd;
          st.value = cast(out, expr(ve.a, out), at);
          st.value2 = cast(out, expr(ve.b, out), at);
          st.target = M.acc_slot[size_t(s.target)];
          st.muladd = muladd_fn(at);
          out.push_back(std::move(st));
          return;
        }
        Step st;
        st.kind = StepKind::Update;
        st.value = cast(out, expr(s.value, out), at);
        st.target = M.acc_slot[size_t(s.target)];
        st.update = update_fn(s.update, at);
        if (!st.update) internal_error("update op " + std::to_string(int(s.update)) + " on " + std::string(ctype_name(at)));
        out.push_back(std::move(st));
        return;
      }
      case StmtKind::If: {
        Step st;
        st.kind = StepKind::If;
        st.cond = cast(out, expr(s.cond, out), CType::Bool);
        st.mask = slot(CType::Bool, false, SlotKind::Mask);
        for (const Stmt& b : s.body) stmt(b, st.body);
        out.push_back(std::move(st));
        return;
      }
      case StmtKind::Store: {
        const DenseOutput& o = P.dense[size_t(s.target)];
        Step st;
        st.kind = StepKind::Store;
        st.target = s.target;
        st.value = cast(out, expr(s.value, out), o.type);
        st.dims = out_dims(s.target, &s, &out);
        st.computed = std::any_of(st.dims.begin(), st.dims.end(), [](const OutDim& x) { return x.key >= 0; });
        st.store = store_fn(o.op, o.type);
        if (!st.store) internal_error("store op " + std::to_string(int(o.op)) + " on " + std::string(ctype_name(o.type)));
        out.push_back(std::move(st));
        return;
      }
      case StmtKind::Emit: {
        const ListOutput& l = P.lists[size_t(s.target)];
        if (s.columns.size() != l.columns.size()) internal_error("emit column count of " + l.name);
        Step st;
        st.kind = StepKind::Emit;
        st.target = s.target;
        st.one_nan = !l.ranked();
        for (size_t c = 0; c < s.columns.size(); ++c)
          st.cols.push_back(cast(out, expr(s.columns[c], out), l.columns[c].type));
        if (l.key != kNoExpr) st.key = cast(out, expr(l.key, out), M.key_type[size_t(s.target)]);
        out.push_back(std::move(st));
        return;
      }
    }
  }
};

}  // namespace

Module compile_module(const Instance& inst) {
  const Plan& P = *inst.plan;
  if (!P.typed) internal_error("plan is not fully typed");
  Module M;
  Compiler C{inst, P, M, std::vector<int>(P.locals.size(), -1)};
  M.row = C.slot(CType::I32, true, SlotKind::Row);
  M.col = C.slot(CType::I32, false, SlotKind::Col);
  M.red = C.slot(CType::I32, true, SlotKind::Red);
  M.batch = C.slot(CType::I32, true, SlotKind::Batch);
  for (const Accumulator& a : P.accs) M.acc_slot.push_back(C.slot(a.type, false, SlotKind::Acc));
  M.key_slots = key_slots(P).size();
  for (const ListOutput& l : P.lists)
    M.key_type.push_back(l.key != kNoExpr ? P.expr(l.key).type : CType::I32);
  for (size_t d = 0; d < P.dense.size(); ++d) {
    std::vector<OutDim> dims = C.out_dims(int(d));
    auto has = [&](SlotKind k) {
      return std::any_of(dims.begin(), dims.end(), [&](const OutDim& x) { return x.axis == k; });
    };
    M.dense_unique.push_back(has(SlotKind::Row) && has(SlotKind::Col) && (!P.batched || has(SlotKind::Batch)));
  }
  if (P.when.mask != kNoExpr) M.mask_value = C.cast(M.mask, C.expr(P.when.mask, M.mask), CType::Bool);
  for (const Stmt& s : P.inner) C.stmt(s, M.inner);
  for (const Stmt& s : P.outer) C.stmt(s, M.outer);
  share_temp_storage(M);
  return M;
}

Module compile_finish(const Instance& inst, const FinishStep& step, const std::vector<FinishRead>& reads, int* value) {
  const Plan& P = *inst.plan;
  Module M;
  Compiler C{inst, P, M, {}, &reads};
  M.row = C.slot(CType::I32, true, SlotKind::Row);
  M.col = C.slot(CType::I32, false, SlotKind::Col);
  M.red = C.slot(CType::I32, true, SlotKind::Red);
  M.batch = C.slot(CType::I32, true, SlotKind::Batch);
  *value = C.cast(M.outer, C.expr(step.value, M.outer), step.type);
  return M;
}

}  // namespace gamut::cpu
