#include "plan/plan.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace gamut {

int pattern_rank(Pattern p) {
  return p == Pattern::RowVec || p == Pattern::ColVec || p == Pattern::RedVec ? 1 : 2;
}
bool pattern_uses_red(Pattern p) {
  return p == Pattern::RowRed || p == Pattern::RedRow || p == Pattern::RedCol || p == Pattern::ColRed ||
         p == Pattern::RedVec;
}
const char* pattern_name(Pattern p) {
  switch (p) {
    case Pattern::RowRed: return "[r,k]"; case Pattern::RedRow: return "[k,r]";
    case Pattern::RedCol: return "[k,c]"; case Pattern::ColRed: return "[c,k]";
    case Pattern::RowVec: return "[r]"; case Pattern::ColVec: return "[c]";
    case Pattern::RedVec: return "[k]"; case Pattern::RowCol: return "[r,c]";
    case Pattern::ColRow: return "[c,r]";
  }
  return "?";
}
const char* unop_symbol(UnOp op) { return op == UnOp::Neg ? "-" : op == UnOp::Not ? "!" : "~"; }
const char* binop_symbol(BinOp op) {
  static const char* s[] = {"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^",
                            "<", "<=", ">", ">=", "==", "!=", "&&", "||"};
  return s[int(op)];
}
const char* fn_name(Fn fn) {
  static const char* s[] = {"abs", "min", "max", "clamp", "sqrt", "exp", "log", "pow", "floor", "ceil", "tanh"};
  return s[int(fn)];
}
const char* update_symbol(UpdateOp op) {
  static const char* s[] = {"=", "+=", "-=", "*=", "max=", "min=", "|=", "&=", "^="};
  return s[int(op)];
}
const char* store_symbol(StoreOp op) {
  static const char* s[] = {"=", "+=", "max=", "min=", "|=", "&="};
  return s[int(op)];
}
const char* monoid_name(Monoid m) {
  static const char* s[] = {"sum", "product", "max", "min", "or", "and", "xor", "sequential (k in order)"};
  return s[int(m)];
}

const Axis* Plan::find_axis(AxisRole r) const {
  for (const Axis& a : axes)
    if (a.role == r) return &a;
  return nullptr;
}
const Axis& Plan::axis(AxisRole r) const {
  const Axis* a = find_axis(r);
  if (!a) throw std::logic_error("plan has no such axis");
  return *a;
}

namespace {

const char* kind_name(OperandKind k) {
  static const char* s[] = {"row matrix", "column matrix", "row vector", "column vector",
                            "reduction vector", "output-shaped matrix", "index vector", "mixed"};
  return s[int(k)];
}

std::string scalar_text(const Scalar& v) {
  std::ostringstream o;
  if (is_float(v.type)) {
    if (std::isinf(v.f)) o << (v.f < 0 ? "-inf" : "inf");
    else o << v.f;
  } else {
    o << v.i;
  }
  return o.str();
}

struct Printer {
  const Plan& p;
  std::ostringstream out;

  std::string axis_name(AxisRole r) const { const Axis* a = p.find_axis(r); return a ? a->name : "?"; }

  std::string access(int id) const {
    const Access& a = p.accesses[size_t(id)];
    std::string pat = pattern_name(a.pattern);
    std::string s = p.operands[size_t(a.operand)].name + "[";
    if (p.batched) s += axis_name(AxisRole::Batch) + ",";
    for (char c : pat.substr(1, pat.size() - 2))
      s += c == 'r' ? axis_name(AxisRole::Row) : c == 'c' ? axis_name(AxisRole::Col) : c == 'k' ? axis_name(AxisRole::Red) : std::string(1, c);
    return s + "]";
  }

  std::string expr(ExprId id) const {
    if (id == kNoExpr) return "<none>";
    const Expr& e = p.expr(id);
    switch (e.kind) {
      case ExprKind::Const: return scalar_text(e.value) + ":" + std::string(ctype_name(e.type));
      case ExprKind::Param: return "$" + p.params[size_t(e.index)].name + ":" + std::string(ctype_name(e.type));
      case ExprKind::Axis: return axis_name(AxisRole(e.index));
      case ExprKind::Load: return access(e.index);
      case ExprKind::Acc: return p.accs[size_t(e.index)].name;
      case ExprKind::Local: return p.locals[size_t(e.index)].name;
      case ExprKind::Unary: return std::string(unop_symbol(e.unop)) + expr(e.a);
      case ExprKind::Binary: return "(" + expr(e.a) + " " + binop_symbol(e.binop) + " " + expr(e.b) + ")";
      case ExprKind::Select: return "(" + expr(e.a) + " ? " + expr(e.b) + " : " + expr(e.c) + ")";
      case ExprKind::Cast: return std::string(ctype_name(e.type)) + "(" + expr(e.a) + ")";
      case ExprKind::Output: return output_read(e.index);
      case ExprKind::Call: {
        std::string s = std::string(fn_name(e.fn)) + "(";
        for (size_t k = 0; k < e.args.size(); ++k) s += (k ? ", " : "") + expr(e.args[k]);
        return s + ")";
      }
    }
    return "?";
  }

  std::string output_read(int id) const {
    const OutputRead& r = p.output_reads[size_t(id)];
    const std::string& name = r.finished ? p.finish[size_t(r.output)].name : p.dense[size_t(r.output)].name;
    if (r.sum) return "sum(" + name + ")";
    if (r.dims.empty()) return name;
    std::string s = name + "[";
    for (size_t k = 0; k < r.dims.size(); ++k) s += (k ? ", " : "") + p.finish[size_t(r.step)].index[size_t(r.dims[k])];
    return s + "]";
  }

  // The output's target; a computed position prints its expression from `keys` (a Store's
  // columns), or `#` where there is no statement.
  std::string out_index(const DenseOutput& d, const std::vector<ExprId>* keys = nullptr) const {
    std::string s = d.name;
    if (d.index.empty()) return s;
    s += "[";
    size_t key = 0;
    for (size_t k = 0; k < d.index.size(); ++k) {
      if (k) s += ", ";
      const OutIndex& x = d.index[k];
      if (x.kind == OutIndex::Key)
        s += keys && key < keys->size() ? expr((*keys)[key++]) : "#";
      else
        s += x.kind == OutIndex::Axis ? axis_name(x.axis) : access(x.access);
    }
    return s + "]";
  }

  void stmts(const std::vector<Stmt>& ss, int depth) {
    std::string ind(size_t(depth) * 2, ' ');
    for (const Stmt& s : ss) {
      switch (s.kind) {
        case StmtKind::Let:
          out << ind << "let " << p.locals[size_t(s.target)].name << ": "
              << ctype_name(p.locals[size_t(s.target)].type) << " = " << expr(s.value) << "\n";
          break;
        case StmtKind::Update:
          out << ind << p.accs[size_t(s.target)].name << " " << update_symbol(s.update) << " " << expr(s.value) << "\n";
          break;
        case StmtKind::If:
          out << ind << "if " << expr(s.cond) << ":\n";
          stmts(s.body, depth + 1);
          break;
        case StmtKind::Store: {
          const DenseOutput& d = p.dense[size_t(s.target)];
          out << ind << out_index(d, &s.columns) << " " << store_symbol(d.op) << " " << expr(s.value) << "\n";
          break;
        }
        case StmtKind::Emit: {
          out << ind << "emit " << p.lists[size_t(s.target)].name << "(";
          for (size_t k = 0; k < s.columns.size(); ++k) out << (k ? ", " : "") << expr(s.columns[k]);
          out << ")\n";
          break;
        }
      }
    }
  }

  void run() {
    out << "plan " << p.source_name << (p.typed ? "" : "  (input types unknown: bind inputs to type it)") << "\n";
    out << "axes:\n";
    for (const Axis& a : p.axes) {
      static const char* role[] = {"row", "column", "reduction", "batch"};
      out << "  " << a.name << ": " << role[int(a.role)] << ", range ";
      if (a.has_range) out << "[" << a.begin.text << ", " << a.end.text << ")";
      else out << "inferred from operand extents";
      out << "\n";
    }
    out << "operands:\n";
    for (const Operand& o : p.operands) {
      out << "  " << o.name << ": " << kind_name(o.kind) << ", "
          << (o.dtype ? std::string(dtype_name(*o.dtype)) : std::string("type unknown")) << ", accessed as";
      for (int a : o.accesses) out << " " << access(a);
      out << "\n";
    }
    if (!p.params.empty()) {
      out << "parameters:";
      for (const Param& q : p.params) out << " " << q.name << (q.integer_only ? " (integer)" : "");
      out << "\n";
    }
    out << "accumulators:\n";
    for (const Accumulator& a : p.accs)
      out << "  " << a.name << ": " << ctype_name(a.type) << (a.declared_type ? "" : " (inferred)") << ", init "
          << scalar_text(a.init) << ", monoid " << monoid_name(a.monoid) << ", identity " << scalar_text(a.identity) << "\n";
    if (p.when.present()) {
      out << "when:\n";
      for (const JoinKey& k : p.when.keys)
        out << "  join key: " << access(k.row_access) << " == " << access(k.col_access) << " (equi-join: only matching pairs do work)\n";
      if (p.when.mask != kNoExpr) out << "  mask: " << expr(p.when.mask) << "\n";
    }
    out << "inner (per " << axis_name(AxisRole::Row) << ", " << axis_name(AxisRole::Col) << ", "
        << axis_name(AxisRole::Red) << (p.k_sequential ? "; k strictly in order" : "; k order free") << "):\n";
    stmts(p.inner, 1);
    out << "outputs (per " << axis_name(AxisRole::Row) << ", " << axis_name(AxisRole::Col) << "):\n";
    stmts(p.outer, 1);
    out << "output operators:\n";
    for (const DenseOutput& d : p.dense) {
      bool lookup = false, key = false;
      for (const OutIndex& x : d.index) lookup |= x.kind == OutIndex::Lookup, key |= x.kind == OutIndex::Key;
      std::string cls = d.is_project() ? "project (dense)" : d.index.empty() ? "aggregate to a scalar"
                      : key ? "aggregate (computed index: a histogram)"
                      : lookup ? "aggregate (group by, direct mapping)" : "aggregate (direct)";
      out << "  " << out_index(d) << ": " << cls << ", " << store_symbol(d.op) << ", " << ctype_name(d.type) << "\n";
    }
    for (const ListOutput& l : p.lists) {
      out << "  " << l.name << "(";
      for (size_t k = 0; k < l.columns.size(); ++k)
        out << (k ? ", " : "") << l.columns[k].name << ": " << ctype_name(l.columns[k].type);
      out << "): ";
      std::string n = l.limit_param >= 0 ? p.params[size_t(l.limit_param)].name : std::to_string(l.limit);
      switch (l.mode) {
        case ListMode::Plain: out << "select into a list (rows in ascending order)"; break;
        case ListMode::Distinct:
          out << (distinct_lookup_columns(p, size_t(&l - p.lists.data())).empty()
                      ? "distinct (hash set)"
                      : "distinct (on the GPU a seen table where the values lie in a small box, else a hash set)");
          break;
        case ListMode::Top: case ListMode::Bottom:
          out << (l.mode == ListMode::Top ? "top " : "bottom ") << n << " by " << expr(l.key)
              << (l.per == PerGroup::None ? " (global heap)" : l.per == PerGroup::Row ? " per " + axis_name(AxisRole::Row) + " (per-group heap)"
                                                                                       : " per " + axis_name(AxisRole::Col) + " (per-group heap)");
          break;
      }
      out << "\n";
    }
    if (!p.finish.empty()) {
      out << "finish (per element, on the host once every output is final):\n";
      for (const FinishStep& f : p.finish) {
        out << "  " << f.name;
        for (size_t k = 0; k < f.index.size(); ++k) out << (k ? ", " : "[") << f.index[k];
        out << (f.index.empty() ? "" : "]") << ": " << ctype_name(f.type) << " = " << expr(f.value) << "\n";
      }
    }
    if (!p.rewrites.empty()) {
      out << "rewrites applied:";
      for (const auto& r : p.rewrites) out << " " << r;
      out << "\n";
    }
  }
};

}  // namespace

std::string print_plan(const Plan& plan) {
  Printer pr{plan, {}};
  pr.run();
  return pr.out.str();
}

std::string print_stmt(const Plan& plan, const Stmt& s) {
  Stmt head = s;
  head.body.clear();
  Printer pr{plan, {}};
  pr.stmts({head}, 0);
  std::string r = pr.out.str();
  while (!r.empty() && r.back() == '\n') r.pop_back();
  return r;
}

namespace {
const Stmt* emit_in(const std::vector<Stmt>& body, size_t l) {
  for (const Stmt& st : body) {
    if (st.kind == StmtKind::Emit && st.target == int(l)) return &st;
    if (st.kind == StmtKind::If)
      if (const Stmt* e = emit_in(st.body, l)) return e;
  }
  return nullptr;
}
}  // namespace

const Stmt* emit_of(const Plan& plan, size_t l) { return emit_in(plan.outer, l); }

std::vector<int> distinct_lookup_columns(const Plan& plan, size_t l) {
  const ListOutput& lo = plan.lists[l];
  if (lo.mode != ListMode::Distinct || lo.key != kNoExpr || lo.columns.empty()) return {};
  const Stmt* e = emit_of(plan, l);
  if (!e || e->columns.size() != lo.columns.size()) return {};
  std::vector<int> access;
  for (size_t k = 0; k < lo.columns.size(); ++k) {
    const Expr& x = plan.expr(e->columns[k]);
    if (x.kind != ExprKind::Load || !is_integer(x.type) || x.type != lo.columns[k].type) return {};
    const Pattern p = plan.accesses[size_t(x.index)].pattern;
    if (p != Pattern::RowVec && p != Pattern::ColVec) return {};
    access.push_back(x.index);
  }
  return access;
}

}  // namespace gamut
