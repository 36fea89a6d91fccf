// Finishing steps (docs/language.md section 9, "Finishing steps"): `finish { NAME[x, y] = EXPR;
// ... }` after the query body. Each step is a new dense output; its target names one index per
// dimension, and its value may read the query's dense outputs and the steps before it
// (OUT[x, y] with the step's index names, in any order; a 0-dimensional output by its name;
// sum(OUT)), scalar parameters and literals, typed as every expression is (C promotion,
// docs/language.md section 5).
#include "sema/sema_impl.h"

namespace gamut::sema {

namespace {
std::string pos(Span s) { return std::to_string(s.line) + ":" + std::to_string(s.col); }

// Dimensions of a dense output as laid out: a batched query's outputs lead with b.
int layout_rank(const Plan& p, const DenseOutput& d) {
  bool has_batch = false;
  for (const OutIndex& x : d.index) has_batch |= x.kind == OutIndex::Axis && x.axis == AxisRole::Batch;
  return int(d.index.size()) + (p.batched && !has_batch ? 1 : 0);
}

std::string dims_text(int n) { return std::to_string(n) + (n == 1 ? " dimension" : " dimensions"); }
}  // namespace

void Analyzer::lower_finish() {
  local_index_.clear();
  for (const AstStmt& s : ast_.finish) {
    const AstExpr& t = *s.target;
    FinishStep step;
    step.name = t.name;
    step.span = t.span;
    bool ok = true;
    auto clash = [&](const std::string& what) {
      diags_.error(t.span, "'" + t.name + "' is " + what + "; a finishing step makes a new output, name it anew");
      ok = false;
    };
    if (auto it = output_names_.find(t.name); it != output_names_.end())
      clash("already an output (at " + pos(it->second) + ")");
    else if (auto f = finish_index_.find(t.name); f != finish_index_.end())
      clash("already a finishing step (at " + pos(plan_.finish[size_t(f->second)].span) + ")");
    else if (list_index_.count(t.name))
      clash("a list output");
    else if (operand_rank_.count(t.name))
      clash("an input");
    else if (acc_index_.count(t.name))
      clash("an accumulator");
    for (const Axis& a : plan_.axes)
      if (a.name == t.name && ok) clash("an axis");
    step_index_.clear();
    std::vector<Span> index_span;
    if (t.kind == AstExpr::Index) {
      for (const auto& x : t.args) {
        if (x->kind != AstExpr::Ident || x->name == "inf") {
          diags_.error(x->span, "a finishing step's target is indexed by names, one per dimension (" + t.name +
                                    "[x, y] = ...), not by '" + src_.slice(x->span) + "'");
          ok = false;
          continue;
        }
        bool reused = false;
        for (const std::string& n : step_index_) reused |= n == x->name;
        if (reused) {
          diags_.error(x->span, "index '" + x->name + "' appears twice in the target of '" + t.name + "'");
          ok = false;
          continue;
        }
        if (output_names_.count(x->name) || finish_index_.count(x->name) || list_index_.count(x->name)) {
          diags_.error(x->span, "index '" + x->name + "' of '" + t.name + "' is the name of an output; choose another");
          ok = false;
          continue;
        }
        step_index_.push_back(x->name);
        index_span.push_back(x->span);
      }
      if (t.args.size() > 3) {
        diags_.error(t.span, "a finishing step has at most 3 dimensions (as outputs do), '" + t.name + "' has " +
                                 std::to_string(t.args.size()));
        ok = false;
      }
    }
    step_index_read_.assign(step_index_.size(), false);
    const int id = int(plan_.finish.size());
    plan_.finish.push_back(step);  // (reads record the step they belong to)
    const ExprId v = lower(*s.value, Ctx::Finish);
    for (const Param& p : plan_.params)  // (after the value, which may read it)
      if (p.name == t.name && ok) clash("a parameter");
    for (size_t x = 0; x < step_index_.size(); ++x)
      if (!step_index_read_[x]) {
        diags_.error(index_span[x], "index '" + step_index_[x] + "' of '" + t.name +
                                        "' reads no output, so its extent is unknown; index an output with it (" +
                                        t.name + "[" + step_index_[x] + "] = OUT[" + step_index_[x] + "] ...)");
        ok = false;
      }
    FinishStep& f = plan_.finish[size_t(id)];
    f.index = step_index_;
    f.value = v;
    f.type = type(v);
    if (ok) finish_index_[t.name] = id;
  }
  step_index_.clear();
}

std::pair<bool, int> Analyzer::finish_source(const AstExpr& e) {
  const std::string& n = e.name;
  if (auto it = output_index_.find(n); it != output_index_.end()) return {false, it->second};
  if (auto it = finish_index_.find(n); it != finish_index_.end()) return {true, it->second};
  if (list_index_.count(n)) {
    diags_.error(e.span, "list '" + n + "' cannot be read in 'finish'; finishing steps read dense outputs");
  } else if (operand_rank_.count(n)) {
    diags_.error(e.span, "input '" + n + "' cannot be read in 'finish'; finishing steps read outputs and parameters");
  } else {
    bool later = false;
    for (const AstStmt& s : ast_.finish) later |= s.target->name == n && int(plan_.finish.size()) > 0;
    std::vector<std::string> names;
    for (const auto& [name, d] : output_index_) names.push_back(name);
    for (const auto& [name, d] : finish_index_) names.push_back(name);
    std::string m = later ? "'" + n + "' is a finishing step after this one; a step reads only the steps before it"
                          : "unknown output '" + n + "' in 'finish'";
    if (!later)
      if (std::string g = closest_name(n, names); !g.empty()) m += "; did you mean '" + g + "'?";
    diags_.error(e.span, m);
  }
  return {false, -1};
}

ExprId Analyzer::output_read(OutputRead r, CType t, Span span) {
  r.step = int(plan_.finish.size()) - 1;
  r.span = span;
  plan_.output_reads.push_back(std::move(r));
  Expr x;
  x.kind = ExprKind::Output;
  x.index = int(plan_.output_reads.size()) - 1;
  x.type = t;
  x.span = span;
  return add(std::move(x), false);
}

ExprId Analyzer::lower_finish_read(const AstExpr& e) {
  const auto [finished, o] = finish_source(e);
  if (o < 0) return error_expr(e.span);
  const int rank = finished ? int(plan_.finish[size_t(o)].index.size()) : layout_rank(plan_, plan_.dense[size_t(o)]);
  if (int(e.args.size()) != rank) {
    diags_.error(e.span,
                 "'" + e.name + "' has " + dims_text(rank) + ", indexed here with " + std::to_string(e.args.size()) +
                     (plan_.batched && !finished ? " (in a batched query outputs lead with the batch index)" : ""));
    return error_expr(e.span);
  }
  OutputRead r;
  r.finished = finished;
  r.output = o;
  for (const auto& x : e.args) {
    int found = -1;
    if (x->kind == AstExpr::Ident)
      for (size_t k = 0; k < step_index_.size(); ++k)
        if (step_index_[k] == x->name) found = int(k);
    if (found < 0) {
      diags_.error(x->span, "an output in 'finish' is indexed by the step's own index names (" +
                                (step_index_.empty() ? std::string("this step has none") : [&] {
                                  std::string s;
                                  for (const std::string& n : step_index_) s += (s.empty() ? "" : ", ") + n;
                                  return s;
                                }()) +
                                "), not by '" + src_.slice(x->span) + "'");
      return error_expr(e.span);
    }
    step_index_read_[size_t(found)] = true;
    r.dims.push_back(found);
  }
  const CType t = finished ? plan_.finish[size_t(o)].type : plan_.dense[size_t(o)].type;
  return output_read(std::move(r), t, e.span);
}

ExprId Analyzer::lower_finish_ident(const AstExpr& e) {
  const std::string& n = e.name;
  for (const std::string& x : step_index_)
    if (x == n) {
      diags_.error(e.span, "index '" + n + "' only names a position in 'finish'; its value cannot be read");
      return error_expr(e.span);
    }
  if (output_index_.count(n) || finish_index_.count(n)) {
    const auto [finished, o] = finish_source(e);
    const int rank = finished ? int(plan_.finish[size_t(o)].index.size()) : layout_rank(plan_, plan_.dense[size_t(o)]);
    if (rank > 0) {
      diags_.error(e.span, "'" + n + "' has " + dims_text(rank) + "; read it as " + n +
                               "[...] with the step's index names, or as sum(" + n + ")");
      return error_expr(e.span);
    }
    OutputRead r;
    r.finished = finished;
    r.output = o;
    return output_read(std::move(r), finished ? plan_.finish[size_t(o)].type : plan_.dense[size_t(o)].type, e.span);
  }
  if (list_index_.count(n) || operand_rank_.count(n)) {
    finish_source(e);
    return error_expr(e.span);
  }
  if (acc_index_.count(n)) {
    diags_.error(e.span, "accumulator '" + n + "' exists per pair, not in 'finish'; read the output it is stored into");
    return error_expr(e.span);
  }
  for (const Local& l : plan_.locals)
    if (l.name == n) {
      diags_.error(e.span, "'" + n + "' is a 'let' of the query body (per pair), not visible in 'finish'");
      return error_expr(e.span);
    }
  for (const Axis& a : plan_.axes)
    if (a.name == n) {
      diags_.error(e.span,
                   "axis '" + n + "' has no value in 'finish'; a step runs over its own indices, named in its target");
      return error_expr(e.span);
    }
  // Any other name is a scalar parameter, as everywhere: a weak number.
  const int p = find_or_add_param(n, e.span);
  Expr x;
  x.kind = ExprKind::Param;
  x.index = p;
  x.type = CType::F64;
  x.span = e.span;
  return add(std::move(x), true);
}

ExprId Analyzer::lower_finish_sum(const AstExpr& e) {
  if (e.args.size() != 1 || e.args[0]->kind != AstExpr::Ident) {
    diags_.error(e.span, "'sum' takes one output's name (sum(H)): the sum of all its elements");
    return error_expr(e.span);
  }
  const AstExpr& a = *e.args[0];
  const auto [finished, o] = finish_source(a);
  if (o < 0) return error_expr(e.span);
  const CType ot = finished ? plan_.finish[size_t(o)].type : plan_.dense[size_t(o)].type;
  OutputRead r;
  r.finished = finished;
  r.output = o;
  r.sum = true;
  const CType t = ot == CType::Unknown ? ot : is_integer(ot) ? CType::I64 : ot;
  return output_read(std::move(r), t, e.span);
}

}  // namespace gamut::sema
