#include "rewrite/one_sided_sums.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include "core/error.h"
#include "rewrite/query_text.h"
#include "rewrite/reciprocal_norms.h"
#include "rewrite/summand_reader.h"
#include "sema/analyze.h"

namespace gamut {

namespace {

using namespace summand;  // (the reader and its limits, summand_reader.h)

// Terms with the same factors merged, zero ones dropped, cross products written row factor first.
std::vector<Term> merged(const std::vector<Term>& in) {
  std::map<std::vector<Factor>, Term> by;
  std::vector<std::vector<Factor>> order;
  for (const Term& t : in) {
    auto it = by.find(t.factors);
    if (it == by.end()) {
      by.emplace(t.factors, t);
      order.push_back(t.factors);
    } else {
      it->second.coef += t.coef;
    }
  }
  std::vector<Term> out;
  for (const auto& f : order)
    if (by[f].coef != 0) out.push_back(by[f]);
  return out;
}

std::string product_text(const Term& t) {
  std::string s;
  for (const Factor& f : t.factors) s += (s.empty() ? "" : " * ") + f.first;
  return s.empty() ? "1" : s;
}

// `+= c * f...;` (or -=) for one term, without the accumulator's name.
std::string update_text(const Term& t) {
  const double c = std::fabs(t.coef);
  return std::string(t.coef < 0 ? "-= " : "+= ") + (c == 1 ? "" : number_text(c) + " * ") + product_text(t) + ";\n";
}

// One stage's accumulators: name, declaration, updates.
struct StageSums {
  std::vector<std::string> decls, updates, stores;
  bool empty() const { return decls.empty(); }
};

}  // namespace

std::optional<OneSidedRewrite> one_sided_sums(const Plan& p, const Instance& inst, const Source& source,
                                              const Bindings& bindings, F32Math f32_math) {
  if (p.batched || !p.typed || p.k_sequential || p.accs.empty() || p.inner.empty()) return std::nullopt;
  if (inst.row.size() == 0 || inst.col.size() == 0 || inst.red.size() == 0) return std::nullopt;
  if (uses_prefix(p, "os_")) return std::nullopt;  // keep the stages' own names free
  if (let_depth(p) > kMaxLetDepth) return std::nullopt;
  for (const Accumulator& a : p.accs)
    if (a.monoid != Monoid::Sum) return std::nullopt;
  const InnerText it(p);
  // Each accumulator's updates (+= / -=; no `if`), and the axes its summand reads.
  std::vector<std::vector<const Stmt*>> updates(p.accs.size());
  std::vector<int> side(p.accs.size(), 0);
  for (const Stmt& s : p.inner) {
    if (s.kind == StmtKind::Let) continue;
    if (s.kind != StmtKind::Update || (s.update != UpdateOp::Add && s.update != UpdateOp::Sub)) return std::nullopt;
    const int t = it.side(s.value);
    if (t < 0 || it.text(s.value).empty()) return std::nullopt;
    updates[size_t(s.target)].push_back(&s);
    side[size_t(s.target)] |= t;
  }
  for (const auto& u : updates)
    if (u.empty()) return std::nullopt;  // (an accumulator the reduce body never updates)

  // Expansion (b): every two-sided accumulator as terms, their cross products one product of a
  // row-side and a column-side factor (per-k weights inside a cross product are not expanded).
  std::vector<std::vector<Term>> terms(p.accs.size());
  std::string cross;
  bool expand = true, expands_any = false;
  for (size_t a = 0; a < p.accs.size() && expand; ++a) {
    if (one_sided(side[a])) continue;
    std::vector<Term> all;
    expand = p.accs[a].type == CType::F32;
    for (size_t u = 0; u < updates[a].size() && expand; ++u) {
      const Stmt* s = updates[a][u];
      auto t = it.expand(s->value);
      expand = t && all.size() + t->size() <= kMaxTerms;
      if (expand)
        for (Term& x : *t) all.push_back(Term{s->update == UpdateOp::Sub ? -x.coef : x.coef, x.factors, x.side});
    }
    if (!expand) break;
    terms[a] = merged(all);
    for (Term& t : terms[a]) {
      if (one_sided(t.side)) {
        expands_any = true;
        continue;
      }
      if (t.factors.size() != 2 || !one_sided(t.factors[0].second) || !one_sided(t.factors[1].second)) {
        expand = false;
        break;
      }
      if (t.factors[0].second & kCol) std::swap(t.factors[0], t.factors[1]);
      const std::string key = t.factors[0].first + " * " + t.factors[1].first;
      if (cross.empty()) cross = key;
      expand = expand && cross == key;
    }
  }
  expand = expand && !cross.empty();

  const std::string I = p.axis(AxisRole::Row).name, J = p.axis(AxisRole::Col).name, K = p.axis(AxisRole::Red).name;
  std::optional<QueryText> q = split_query(source);
  if (!q) return std::nullopt;
  TypeEnv env;
  for (size_t o = 0; o < p.operands.size(); ++o) env.inputs[p.operands[o].name] = inst.inputs[o]->dtype;
  // (c) Where the main stage runs on the tensor cores, `num / sqrt(a * b)` of a row sum a and a
  // column sum b becomes `(num) * (os_rsq_a[i] * os_rsq_b[j])`, each factor `1 / sqrt(sum)` once
  // per row or column: two multiplications per pair instead of a square root and a division.
  // It changes the rounding by a few units in the last place, far below the tensor cores' own.
  std::vector<bool> row_sum(p.accs.size()), col_sum(p.accs.size());
  for (size_t a = 0; a < p.accs.size(); ++a) {
    row_sum[a] = one_sided(side[a]) && !(side[a] & kCol);
    col_sum[a] = one_sided(side[a]) && (side[a] & kCol);
  }
  const std::vector<NormQuotient> quotients = norm_quotients(p, source, row_sum, col_sum);

  // The program for one choice: with expansion (b), or hoisting whole accumulators only (a); with
  // or without the reciprocal norms (c).
  auto build = [&](bool expanded, bool norms) -> std::optional<OneSidedRewrite> {
    StageSums rows, cols;
    std::map<size_t, std::string> rsq;  // accumulator -> its `1 / sqrt` vector read
    std::vector<std::string> main_decls, main_updates, main_lets;
    bool cross_acc = false;
    // A one-sided sum into a stage: its accumulator os_s<n>, stored as os_row<n> / os_col<n>.
    auto add_sum = [&](bool row, const Accumulator& acc, const std::string& init, const std::vector<std::string>& ups) {
      StageSums& st = row ? rows : cols;
      const std::string n = std::to_string(rows.decls.size() + cols.decls.size());
      const std::string s = "os_s" + n, out = (row ? "os_row" : "os_col") + n;
      st.decls.push_back("  " + s + ": " + std::string(ctype_name(acc.type)) + " = " + init + ";\n");
      for (const std::string& u : ups) st.updates.push_back("    " + s + " " + u);
      st.stores.push_back("  " + out + "[" + (row ? I : J) + "] += " + s + ";\n");
      env.inputs[out] = storage_type_of(acc.type);
      return out + "[" + (row ? I : J) + "]";
    };
    for (size_t a = 0; a < p.accs.size(); ++a) {
      const Accumulator& acc = p.accs[a];
      if (one_sided(side[a])) {  // (a): the accumulator itself, from its initial value
        std::vector<std::string> ups;
        for (const Stmt* s : updates[a])
          ups.push_back(std::string(s->update == UpdateOp::Sub ? "-= " : "+= ") + it.text(s->value) + ";\n");
        const bool row = !(side[a] & kCol);
        main_lets.push_back("  let " + acc.name + " = " + add_sum(row, acc, scalar_text(acc.init), ups) + ";\n");
        const bool quotient = std::any_of(quotients.begin(), quotients.end(),
                                          [a](const NormQuotient& x) { return x.row_acc == a || x.col_acc == a; });
        if (norms && quotient) {
          const std::string n = std::to_string(rows.decls.size() + cols.decls.size() - 1);  // the sum just added
          const std::string out = "os_rsq" + n, at = "[" + (row ? I : J) + "]";
          (row ? rows : cols).stores.push_back("  " + out + at + " += 1.0 / sqrt(os_s" + n + ");\n");
          env.inputs[out] = storage_type_of(acc.type);
          rsq[a] = out + at;
        }
        continue;
      }
      if (!expanded) {  // kept as written
        main_decls.push_back("  " + acc.name + ": " + std::string(ctype_name(acc.type)) + " = " +
                             scalar_text(acc.init) + ";\n");
        for (const Stmt* s : updates[a])
          main_updates.push_back("    " + acc.name + (s->update == UpdateOp::Sub ? " -= " : " += ") +
                                 it.text(s->value) + ";\n");
        continue;
      }
      // (b): init + row terms + column terms + c * os_dot.
      std::vector<std::string> row_ups, col_ups;
      double c = 0;
      for (const Term& t : terms[a]) {
        if (!one_sided(t.side)) {
          c += t.coef;
          continue;
        }
        (t.side & kCol ? col_ups : row_ups).push_back(update_text(t));
      }
      std::string e = acc.init.f != 0 ? number_text(acc.init.f) : "";
      auto plus = [&e](const std::string& x) { e += (e.empty() ? "" : " + ") + x; };
      if (!row_ups.empty()) plus(add_sum(true, acc, "0", row_ups));
      if (!col_ups.empty()) plus(add_sum(false, acc, "0", col_ups));
      if (c != 0) {
        cross_acc = true;
        const std::string f = std::fabs(c) == 1 ? "os_dot" : number_text(std::fabs(c)) + " * os_dot";
        e = e.empty() ? (c < 0 ? "-" + f : f) : e + (c < 0 ? " - " : " + ") + f;
      }
      bool nonneg = acc.init.f >= 0;
      for (const Stmt* s : updates[a]) nonneg = nonneg && s->update == UpdateOp::Add && it.squares(s->value);
      if (e.empty()) e = "0.0";
      // (The clamp keeps NaN: `max` ignores it, and a NaN operand must give NaN as written.)
      if (nonneg) {
        main_lets.push_back("  let os_" + acc.name + " = " + e + ";\n");
        main_lets.push_back("  let " + acc.name + " = os_" + acc.name + " < 0.0 ? 0.0 : os_" + acc.name + ";\n");
      } else {
        main_lets.push_back("  let " + acc.name + " = " + e + ";\n");
      }
    }
    if (cross_acc) {
      main_decls.insert(main_decls.begin(), "  os_dot: f32 = 0;\n");
      main_updates.insert(main_updates.begin(), "    os_dot += " + cross + ";\n");
    }
    if (it.gave_up() || main_decls.empty() || (rows.empty() && cols.empty())) return std::nullopt;
    std::string output = q->output;
    if (norms) {
      std::vector<std::pair<Span, std::string>> reps;
      for (const NormQuotient& x : quotients)
        reps.push_back({x.span, "(" + x.num + ") * (" + rsq[x.row_acc] + " * " + rsq[x.col_acc] + ")"});
      const std::optional<Source> src = replaced(source, reps);
      const std::optional<QueryText> rq = src ? split_query(*src) : std::nullopt;
      if (!rq) return std::nullopt;
      output = rq->output;
    }

    PushdownProgram prog;
    auto stage = [&](const std::string& name, const std::string& text, const std::vector<std::string>& from,
                     std::vector<std::pair<std::string, std::vector<int64_t>>> dims) -> bool {
      Plan sp;
      try {
        sp = build_plan(Source{source.name + " [" + name + "]", text}, env);
      } catch (const Error&) {
        return false;
      }
      if (!sp.typed) return false;
      StageQuery st{name, text, {}, from, std::move(dims), std::nullopt, std::nullopt};
      for (const Operand& o : sp.operands)
        if (o.name.rfind("os_", 0) != 0) st.inputs.push_back(o.name);
      for (const Param& param : sp.params) {
        if (!bindings.scalars.count(param.name)) return false;  // a range symbol inferred from extents
        st.inputs.push_back(param.name);
      }
      prog.stages.push_back(std::move(st));
      return true;
    };
    const std::string kr = range_text(inst.red.begin, inst.red.end);
    std::vector<std::string> produced;
    for (int r = 0; r < 2; ++r) {
      const StageSums& st = r == 0 ? rows : cols;
      if (st.empty()) continue;
      std::ostringstream s;
      s << "where ("
        << (r == 0 ? I + " in " + range_text(inst.row.begin, inst.row.end) + ", os_j in [0, 1)"
                   : "os_i in [0, 1), " + J + " in " + range_text(inst.col.begin, inst.col.end))
        << ") {\n";
      for (const std::string& d : st.decls) s << d;
      s << "  reduce (" << K << " in " << kr << ") {\n";
      for (const std::string& u : st.updates) s << u;
      s << "  }\n";
      for (const std::string& o : st.stores) s << o;
      s << "}\n";
      std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
      for (const std::string& o : st.stores) {
        const std::string name = o.substr(2, o.find('[') - 2);
        dims.push_back({name, {r == 0 ? inst.row.end : inst.col.end}});
        produced.push_back(name);
      }
      if (!stage(r == 0 ? "one-sided sums per " + I : "one-sided sums per " + J, s.str(), {}, std::move(dims)))
        return std::nullopt;
    }
    std::ostringstream m;
    m << "where (" << I << " in " << range_text(inst.row.begin, inst.row.end) << ", " << J << " in "
      << range_text(inst.col.begin, inst.col.end) << ")" << (q->when.empty() ? "" : " " + q->when) << " {\n";
    for (const std::string& d : main_decls) m << d;
    m << "  reduce (" << K << " in " << kr << ") {\n";
    for (const std::string& u : main_updates) m << u;
    m << "  }\n";
    for (const std::string& l : main_lets) m << l;
    m << output << "}\n";
    std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
    for (size_t d = 0; d < p.dense.size(); ++d)
      if (!p.dense[d].is_project()) dims.push_back({p.dense[d].name, inst.dense_shapes[d]});
    const std::string main_name = expanded ? "the cross sum, the rest in the epilogue" : "the two-sided sums";
    if (!stage(main_name + (norms ? ", norms as reciprocal square roots" : ""), m.str(), produced, std::move(dims)))
      return std::nullopt;
    // It must produce the original's outputs, and (b) must put the cross sum on the tensor cores.
    const Plan main = build_plan(Source{source.name + " [main]", m.str()}, env);
    if (!same_outputs(p, main)) return std::nullopt;
    if ((expanded || norms) && !executed_math(main, f32_math).tensor_cores()) return std::nullopt;
    const double M = double(inst.row.size()), N = double(inst.col.size()), Kn = double(inst.red.size());
    prog.original_work = M * N * Kn * double(p.inner.size());
    prog.rewritten_work =
        M * N * Kn * double(main.inner.size()) + (M + N) * Kn * double(rows.updates.size() + cols.updates.size());
    prog.main_plan = std::make_shared<const Plan>(main);
    return OneSidedRewrite{std::move(prog), expanded && expands_any ? "expand-squares" : "hoist-one-sided"};
  };
  for (bool expanded : {true, false})
    for (bool norms : {true, false})
      if ((expand || !expanded) && (!quotients.empty() || !norms))
        if (auto r = build(expanded, norms)) return r;
  return std::nullopt;
}

}  // namespace gamut
