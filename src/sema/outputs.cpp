// Output statements (project, aggregate, select, emit) and the `when` clause.
#include <functional>

#include "sema/sema_impl.h"

namespace gamut::sema {

namespace {
std::string pos(Span s) { return std::to_string(s.line) + ":" + std::to_string(s.col); }
const char* store_op_text(Tok t) {
  switch (t) {
    case Tok::Assign: return "="; case Tok::PlusAssign: return "+="; case Tok::MinusAssign: return "-=";
    case Tok::StarAssign: return "*="; case Tok::MaxAssign: return "max="; case Tok::MinAssign: return "min=";
    case Tok::OrAssign: return "|="; case Tok::AndAssign: return "&="; default: return "^=";
  }
}
}  // namespace

std::vector<Stmt> Analyzer::lower_outer(const std::vector<AstStmt>& stmts) {
  std::vector<Stmt> out;
  for (const AstStmt& s : stmts) {
    switch (s.kind) {
      case AstStmt::Let: out.push_back(lower_let(s, false)); break;
      case AstStmt::If: {
        Stmt st;
        st.kind = StmtKind::If;
        st.span = s.span;
        st.cond = to_bool(lower(*s.cond, Ctx::Outer));
        auto saved = local_index_;
        st.body = lower_outer(s.body);
        local_index_ = saved;
        out.push_back(std::move(st));
        break;
      }
      case AstStmt::Emit: {
        Stmt st = lower_emit(s);
        if (st.target >= 0) out.push_back(std::move(st));
        break;
      }
      case AstStmt::Update: {
        Stmt st = lower_store(s);
        if (st.target >= 0) out.push_back(std::move(st));
        break;
      }
    }
  }
  return out;
}

Stmt Analyzer::lower_store(const AstStmt& s) {
  Stmt st;
  st.kind = StmtKind::Store;
  st.span = s.span;
  const AstExpr& t = *s.target;
  st.value = lower(*s.value, Ctx::Outer);
  if (t.kind == AstExpr::Ident) {
    if (acc_index_.count(t.name)) {
      diags_.error(t.span, "accumulator '" + t.name + "' cannot be updated after 'reduce'; store it into an output");
      return st;
    }
    if (local_index_.count(t.name)) {
      diags_.error(t.span, "'" + t.name + "' is a 'let' value and cannot be updated");
      return st;
    }
    for (const Axis& a : plan_.axes)
      if (a.name == t.name) {
        diags_.error(t.span, "axis '" + t.name + "' cannot be assigned");
        return st;
      }
    if (operand_rank_.count(t.name)) {
      diags_.error(t.span, "'" + t.name + "' is an input array and cannot be written");
      return st;
    }
  }
  StoreOp op;
  switch (s.op) {
    case Tok::Assign: op = StoreOp::Assign; break;
    case Tok::PlusAssign: op = StoreOp::Add; break;
    case Tok::MaxAssign: op = StoreOp::Max; break;
    case Tok::MinAssign: op = StoreOp::Min; break;
    case Tok::OrAssign: op = StoreOp::Or; break;
    case Tok::AndAssign: op = StoreOp::And; break;
    default:
      diags_.error(s.op_span, std::string("'") + store_op_text(s.op) +
                                  "' is not an output operator; outputs take = += max= min= |= &=");
      return st;
  }
  if (t.kind == AstExpr::Ident && op == StoreOp::Assign) {
    diags_.error(s.op_span, "scalar output '" + t.name + "' needs an aggregate operator (+= max= min= |= &=)");
    return st;
  }
  // Index positions: axes or index vectors g[r] / h[c].
  std::vector<OutIndex> index;
  if (t.kind == AstExpr::Index) {
    if (operand_rank_.count(t.name)) {
      diags_.error(t.span, "'" + t.name + "' is read as an input and cannot also be an output");
      return st;
    }
    if (list_index_.count(t.name)) {
      diags_.error(t.span, "'" + t.name + "' is already an emitted list");
      return st;
    }
    size_t first = 0;
    if (plan_.batched) {
      const std::string& b = plan_.axis(AxisRole::Batch).name;
      if (t.args[0]->kind != AstExpr::Ident || t.args[0]->name != b) {
        diags_.error(t.span, "with 'batch (" + b + ")' every output starts with the batch axis: " + t.name + "[" + b + ", ...]");
        return st;
      }
      index.push_back({OutIndex::Axis, AxisRole::Batch, -1});
      first = 1;
    }
    for (size_t k = first; k < t.args.size(); ++k) {
      const AstExpr& ix = *t.args[k];
      if (computed_index(ix)) {
        // An integer expression of the pair's values (computed_index.cpp).
        const ExprId key = lower_computed_index(ix, t.name, op);
        if (key == kNoExpr) return st;
        index.push_back({OutIndex::Key, AxisRole::Red, -1});
        st.columns.push_back(key);
      } else if (ix.kind == AstExpr::Ident) {
        const Axis* ax = nullptr;
        for (const Axis& a : plan_.axes) if (a.name == ix.name) ax = &a;
        if (!ax || ax->role == AxisRole::Batch) {
          diags_.error(ix.span, "the batch axis '" + ix.name + "' indexes an output only first");
          return st;
        }
        if (ax->role == AxisRole::Red) {
          diags_.error(ix.span, "reduction axis '" + ix.name + "' cannot index an output (it is reduced away)");
          return st;
        }
        for (const OutIndex& o : index)
          if (o.kind == OutIndex::Axis && o.axis == ax->role) {
            diags_.error(ix.span, "axis '" + ix.name + "' indexes output '" + t.name + "' twice");
            return st;
          }
        index.push_back({OutIndex::Axis, ax->role, -1});
      } else if (ix.kind == AstExpr::Index) {
        int a = resolve_access(ix, Ctx::Outer);
        if (a < 0) return st;
        Pattern p = plan_.accesses[size_t(a)].pattern;
        if (p != Pattern::RowVec && p != Pattern::ColVec) {
          diags_.error(ix.span, "an output index vector is looked up by one 'where' axis, as g[" + plan_.axes[0].name + "]");
          return st;
        }
        Operand& o = plan_.operands[size_t(plan_.accesses[size_t(a)].operand)];
        o.is_index = true;
        if (o.dtype && is_float(*o.dtype))
          diags_.error(ix.span, "index vector '" + o.name + "' must hold integers, but it is " + std::string(dtype_name(*o.dtype)));
        index.push_back({OutIndex::Lookup, p == Pattern::RowVec ? AxisRole::Row : AxisRole::Col, a});
      }
    }
  }
  if (op == StoreOp::Assign) {
    size_t first = plan_.batched ? 1 : 0;
    bool ok = index.size() == first + 2 && index[first].kind == OutIndex::Axis && index[first + 1].kind == OutIndex::Axis;
    if (!ok) {
      diags_.error(s.op_span, "'=' stores need both spatial axes (" + t.name + "[" + plan_.axes[0].name + ", " +
                                  plan_.axes[1].name + "] or transposed); use an aggregate such as '+=' for '" + t.name + "'");
      return st;
    }
  }
  if ((op == StoreOp::Or || op == StoreOp::And) && type(st.value) != CType::Unknown && is_float(type(st.value))) {
    diags_.error(s.op_span, std::string("'") + store_op_text(s.op) + "' needs an integer value, but this is " +
                                std::string(ctype_name(type(st.value))));
    return st;
  }
  auto it = output_index_.find(t.name);
  if (it != output_index_.end()) {
    DenseOutput& prev = plan_.dense[size_t(it->second)];
    if (prev.op != op) {
      diags_.error(s.op_span, "output '" + t.name + "' is written with '" + store_op_text(s.op) + "' here but with '" +
                                  store_symbol(prev.op) + "' at " + pos(prev.span));
      return st;
    }
    bool same = prev.index.size() == index.size();
    for (size_t k = 0; same && k < index.size(); ++k)
      same = prev.index[k].kind == index[k].kind && prev.index[k].axis == index[k].axis &&
             (index[k].kind == OutIndex::Axis ||
              index[k].kind == OutIndex::Key ||
              plan_.accesses[size_t(prev.index[k].access)].operand == plan_.accesses[size_t(index[k].access)].operand);
    if (!same) {
      diags_.error(t.span, "output '" + t.name + "' is indexed differently here than at " + pos(prev.span));
      return st;
    }
    st.target = it->second;
    return st;
  }
  DenseOutput d;
  d.name = t.name;
  d.op = op;
  d.type = CType::Unknown;
  d.index = index;
  d.span = t.span;
  plan_.dense.push_back(d);
  output_index_[t.name] = int(plan_.dense.size() - 1);
  output_names_.emplace(t.name, t.span);
  st.target = int(plan_.dense.size() - 1);
  return st;
}

Stmt Analyzer::lower_emit(const AstStmt& s) {
  Stmt st;
  st.kind = StmtKind::Emit;
  st.span = s.span;
  if (list_index_.count(s.list)) {
    diags_.error(s.list_span, "list '" + s.list + "' is emitted twice; each list has one 'emit'");
    return st;
  }
  if (output_names_.count(s.list) || operand_rank_.count(s.list)) {
    diags_.error(s.list_span, "'" + s.list + "' is already an array; lists need a new name");
    return st;
  }
  ListOutput l;
  l.name = s.list;
  l.span = s.list_span;
  for (size_t c = 0; c < s.columns.size(); ++c) {
    const AstEmitColumn& col = s.columns[c];
    ExprId v = lower(*col.expr, Ctx::Outer);
    std::string name = !col.alias.empty() ? col.alias
                     : col.expr->kind == AstExpr::Ident ? col.expr->name : "c" + std::to_string(c);
    for (const ListColumn& prev : l.columns)
      if (prev.name == name)
        diags_.error(col.alias.empty() ? col.expr->span : col.alias_span,
                     "list '" + s.list + "' has two columns named '" + name + "'; rename one with 'as'");
    l.columns.push_back({name, type(v)});
    st.columns.push_back(v);
  }
  if (s.columns.empty()) diags_.error(s.list_span, "'emit " + s.list + "()' needs at least one column");
  if (s.mode == AstStmt::Distinct) l.mode = ListMode::Distinct;
  if (s.mode == AstStmt::Top || s.mode == AstStmt::Bottom) {
    l.mode = s.mode == AstStmt::Top ? ListMode::Top : ListMode::Bottom;
    const AstExpr& n = *s.limit;
    if (n.kind == AstExpr::Int) l.limit = n.ival;
    else if (n.kind == AstExpr::Ident && n.name != "inf" && !acc_index_.count(n.name) && !local_index_.count(n.name)) {
      l.limit_param = find_or_add_param(n.name, n.span);
      plan_.params[size_t(l.limit_param)].integer_only = true;
    } else {
      diags_.error(n.span, "N in 'top N' / 'bottom N' must be an integer literal or an integer parameter");
    }
    ExprId k = lower(*s.key, Ctx::Outer);
    if (type(k) == CType::Bool) k = coerce(k, CType::I32);
    l.key = k;
    if (!s.per.empty()) {
      const Axis* ax = nullptr;
      for (const Axis& a : plan_.axes) if (a.name == s.per) ax = &a;
      if (!ax || (ax->role != AxisRole::Row && ax->role != AxisRole::Col))
        diags_.error(s.per_span, "'per' must name a 'where' axis (" + plan_.axes[0].name + " or " + plan_.axes[1].name + ")");
      else
        l.per = ax->role == AxisRole::Row ? PerGroup::Row : PerGroup::Col;
    }
  }
  plan_.lists.push_back(l);
  list_index_[s.list] = int(plan_.lists.size() - 1);
  st.target = int(plan_.lists.size() - 1);
  return st;
}

// Output element types: the common type of every value stored (bools counted as i32 by
// aggregates); then every store's value is cast to it.
void Analyzer::finish_output_types() {
  std::vector<Stmt*> stores;
  std::function<void(std::vector<Stmt>&)> walk = [&](std::vector<Stmt>& ss) {
    for (Stmt& s : ss) {
      if (s.kind == StmtKind::Store && s.target >= 0) stores.push_back(&s);
      if (s.kind == StmtKind::If) walk(s.body);
    }
  };
  walk(plan_.outer);
  for (size_t o = 0; o < plan_.dense.size(); ++o) {
    DenseOutput& d = plan_.dense[o];
    ExprId acc = kNoExpr;
    for (Stmt* s : stores) {
      if (s->target != int(o)) continue;
      if (acc == kNoExpr) { acc = s->value; continue; }
      bool w;
      CType t = common(acc, s->value, &w);
      acc = constant(t, Scalar{}, w, d.span);
    }
    CType t = acc == kNoExpr ? CType::Unknown : type(acc);
    if (t == CType::Bool && !d.is_project()) t = CType::I32;
    d.type = t;
    for (Stmt* s : stores)
      if (s->target == int(o)) s->value = coerce(s->value, t);
  }
  for (ListOutput& l : plan_.lists)
    for (ListColumn& c : l.columns)
      if (c.type == CType::Unknown) c.type = CType::Unknown;
}

// `when`: top-level conjuncts `g[r] == h[c]` of integer index vectors are join keys; the
// rest is a mask.
void Analyzer::lower_when() {
  if (!ast_.when) return;
  std::vector<const AstExpr*> conj;
  std::function<void(const AstExpr&)> split = [&](const AstExpr& e) {
    if (e.kind == AstExpr::Binary && e.op == Tok::AmpAmp) {
      split(*e.args[0]);
      split(*e.args[1]);
    } else {
      conj.push_back(&e);
    }
  };
  split(*ast_.when);
  ExprId mask = kNoExpr;
  for (const AstExpr* c : conj) {
    if (c->kind == AstExpr::Binary && c->op == Tok::EqEq && c->args[0]->kind == AstExpr::Index &&
        c->args[1]->kind == AstExpr::Index) {
      int a = resolve_access(*c->args[0], Ctx::When), b = resolve_access(*c->args[1], Ctx::When);
      if (a < 0 || b < 0) continue;
      Pattern pa = plan_.accesses[size_t(a)].pattern, pb = plan_.accesses[size_t(b)].pattern;
      if (pa == Pattern::ColVec && pb == Pattern::RowVec) std::swap(a, b), std::swap(pa, pb);
      auto integer = [&](int acc) {
        const Operand& o = plan_.operands[size_t(plan_.accesses[size_t(acc)].operand)];
        return !o.dtype || !is_float(*o.dtype);
      };
      if (pa == Pattern::RowVec && pb == Pattern::ColVec && integer(a) && integer(b)) {
        plan_.when.keys.push_back({a, b});
        plan_.operands[size_t(plan_.accesses[size_t(a)].operand)].is_index = true;
        plan_.operands[size_t(plan_.accesses[size_t(b)].operand)].is_index = true;
        continue;
      }
    }
    ExprId m = to_bool(lower(*c, Ctx::When));
    if (mask == kNoExpr) {
      mask = m;
    } else {
      Expr x;
      x.kind = ExprKind::Binary;
      x.binop = BinOp::LogAnd;
      x.type = CType::Bool;
      x.a = mask;
      x.b = m;
      x.span = c->span;
      mask = add(std::move(x), false);
    }
  }
  plan_.when.mask = mask;
}

}  // namespace gamut::sema
