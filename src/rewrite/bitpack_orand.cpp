#include "rewrite/bitpack_orand.h"

#include <sstream>

#include "core/error.h"
#include "semantics/bit_pack.h"
#include "lang/token.h"
#include "plan/semiring.h"
#include "sema/analyze.h"

namespace gamut {

namespace {

// The parts of the query text the product stage keeps verbatim.
struct QueryText {
  std::string when;     // "when (...)" or ""
  std::string output;   // everything between the end of the reduce block and the closing brace
};

// Cut the query text at its tokens (the plan keeps only one-line spans); nothing when the text
// does not have the expected shape.
std::optional<QueryText> split_query(const Source& src) {
  Diagnostics diags(src);
  const std::vector<Token> toks = lex(src, diags);
  if (diags.any()) return std::nullopt;
  auto begin_of = [&](size_t t) { return toks[t].offset; };  // (columns count characters, not bytes)
  auto end_of = [&](size_t t) { return begin_of(t) + toks[t].text.size(); };
  // The token closing the bracket opened at `open`, or 0 when unmatched. Any closer closes the
  // innermost opener: a range `[0, N)` closes its `[` with `)`.
  auto closing = [&](size_t open) -> size_t {
    int depth = 0;
    for (size_t t = open; t < toks.size(); ++t) {
      const Tok k = toks[t].kind;
      depth += k == Tok::LParen || k == Tok::LBracket || k == Tok::LBrace ? 1
               : k == Tok::RParen || k == Tok::RBracket || k == Tok::RBrace ? -1 : 0;
      if (depth == 0) return t;
    }
    return 0;
  };
  auto is = [&](size_t t, Tok k) { return t < toks.size() && toks[t].kind == k; };

  size_t t = 0;
  while (t < toks.size() && toks[t].kind != Tok::KwWhere) ++t;
  if (!is(t + 1, Tok::LParen) || !(t = closing(t + 1))) return std::nullopt;
  QueryText q;
  if (is(t + 1, Tok::KwWhen)) {
    const size_t w = t + 1;
    if (!is(w + 1, Tok::LParen) || !(t = closing(w + 1))) return std::nullopt;
    q.when = src.text.substr(begin_of(w), end_of(t) - begin_of(w));
  }
  const size_t body = t + 1;
  if (!is(body, Tok::LBrace)) return std::nullopt;
  const size_t body_end = closing(body);
  size_t r = body + 1;
  while (r < body_end && toks[r].kind != Tok::KwReduce) ++r;
  if (r >= body_end || !is(r + 1, Tok::LParen)) return std::nullopt;
  const size_t red_args = closing(r + 1);
  if (!red_args || !is(red_args + 1, Tok::LBrace)) return std::nullopt;
  const size_t red_end = closing(red_args + 1);
  if (!red_end || red_end >= body_end) return std::nullopt;
  q.output = src.text.substr(end_of(red_end), begin_of(body_end) - end_of(red_end));
  return q;
}

// semiring_form sees `acc |= X & Y` only where the step has the accumulator's type; an i64
// accumulator over narrower data (or `X && Y`, a bool) casts it first. Every value of the step is
// 0 or 1 here, which any integer cast keeps.
Plan without_update_cast(const Plan& p) {
  Plan q = p;
  const Stmt& u = q.inner[0];
  const Expr& v = q.expr(u.value);
  if (u.kind == StmtKind::Update && v.kind == ExprKind::Cast && is_integer(v.type) && is_integer(q.expr(v.a).type))
    q.inner[0].value = v.a;
  return q;
}

std::string range(int64_t b, int64_t e) { return "[" + std::to_string(b) + ", " + std::to_string(e) + ")"; }

// Whether any name the query declares or uses starts with `prefix`.
bool uses_prefix(const Plan& p, const std::string& prefix) {
  auto has = [&](const std::string& n) { return n.rfind(prefix, 0) == 0; };
  for (const Axis& a : p.axes) if (has(a.name)) return true;
  for (const Operand& o : p.operands) if (has(o.name)) return true;
  for (const Param& q : p.params) if (has(q.name)) return true;
  for (const Accumulator& a : p.accs) if (has(a.name)) return true;
  for (const Local& l : p.locals) if (has(l.name)) return true;
  for (const DenseOutput& d : p.dense) if (has(d.name)) return true;
  for (const ListOutput& l : p.lists) if (has(l.name)) return true;
  return false;
}

// The product stage must produce exactly the original's outputs: same names, order and types.
bool same_outputs(const Plan& a, const Plan& b) {
  if (a.dense.size() != b.dense.size() || a.lists.size() != b.lists.size()) return false;
  for (size_t d = 0; d < a.dense.size(); ++d)
    if (a.dense[d].name != b.dense[d].name || a.dense[d].type != b.dense[d].type || a.dense[d].op != b.dense[d].op)
      return false;
  for (size_t l = 0; l < a.lists.size(); ++l) {
    const ListOutput &x = a.lists[l], &y = b.lists[l];
    if (x.name != y.name || x.columns.size() != y.columns.size()) return false;
    for (size_t c = 0; c < x.columns.size(); ++c)
      if (x.columns[c].name != y.columns[c].name || x.columns[c].type != y.columns[c].type) return false;
  }
  return true;
}

std::string pack_text(const BitPack& bp, const std::string& axis, bool row_side) {
  std::ostringstream s;
  s << "# " << bp.output << "[" << axis << ", w] bit b = " << bp.source
    << (bp.src_k_minor ? "[" + axis + ", k]" : "[k, " + axis + "]") << " != 0, k = " << bp.k_range.begin
    << " + 32 w + b < " << bp.k_range.end << "; " << axis << " in " << range(bp.rows.begin, bp.rows.end) << ", "
    << bp.words() << " words (" << (row_side ? "row" : "column") << " operand; a pack loop, not a query)\n";
  return s.str();
}

}  // namespace

std::optional<PushdownProgram> bitpack_orand(const Plan& p, const Instance& inst, const Source& source,
                                             const Bindings& bindings, const BitpackOptions& options) {
  // Shape: one i32/i64 accumulator from 0, updated only by `acc |= X & Y` (or &&).
  if (p.batched || !p.typed || p.accs.size() != 1 || p.inner.size() != 1 || p.inner[0].kind != StmtKind::Update ||
      p.inner[0].update != UpdateOp::Or)
    return std::nullopt;
  const SemiringForm form = semiring_form(without_update_cast(p));
  if (form.op != "or-and") return std::nullopt;
  const Accumulator& acc = p.accs[0];
  if ((acc.type != CType::I32 && acc.type != CType::I64) || acc.init.i != 0) return std::nullopt;
  if (inst.red.size() < std::max<int64_t>(options.min_k, 1) || inst.row.size() == 0 || inst.col.size() == 0)
    return std::nullopt;
  if (uses_prefix(p, "bp_")) return std::nullopt;  // keep the stage queries' own names free

  // The packs: exact only where every value they see is 0 or 1.
  const Access &xa = p.accesses[size_t(form.row_access)], &ya = p.accesses[size_t(form.col_access)];
  const std::string& X = p.operands[size_t(xa.operand)].name;
  const std::string& Y = p.operands[size_t(ya.operand)].name;
  BitPack pack_x{X, "bp_X", xa.pattern == Pattern::RowRed, inst.row, inst.red};
  BitPack pack_y{Y, "bp_Y", ya.pattern == Pattern::ColRed, inst.col, inst.red};
  for (const BitPack* bp : {&pack_x, &pack_y}) {
    const NDArray& a = *inst.inputs[size_t(bp == &pack_x ? xa.operand : ya.operand)];
    if (!holds_only_bits(a, bp->src_k_minor, bp->rows, bp->k_range)) return std::nullopt;
  }

  // The product over words, with the query's own `when` and output block.
  std::optional<QueryText> q = split_query(source);
  if (!q) return std::nullopt;
  const std::string& I = p.axis(AxisRole::Row).name;
  const std::string& J = p.axis(AxisRole::Col).name;
  const int64_t W = pack_x.words();
  const std::string acc_type(ctype_name(acc.type));
  std::ostringstream s3;
  s3 << "where (" << I << " in " << range(inst.row.begin, inst.row.end) << ", " << J << " in "
     << range(inst.col.begin, inst.col.end) << ")" << (q->when.empty() ? "" : " " + q->when) << " {\n"
     << "  bp_r: i32 = 0;\n  reduce (bp_w in " << range(0, W) << ") {\n"
     << "    bp_r |= bp_X[" << I << ", bp_w] & bp_Y[" << J << ", bp_w];\n  }\n"
     << "  let " << acc.name << " = " << acc_type << "(bp_r != 0);" << q->output << "}\n";

  // It must type as the original: the same outputs, inputs and parameters bound as before.
  TypeEnv env;
  for (size_t o = 0; o < p.operands.size(); ++o) env.inputs[p.operands[o].name] = inst.inputs[o]->dtype;
  env.inputs["bp_X"] = env.inputs["bp_Y"] = DType::I32;
  Plan stage;
  try {
    stage = build_plan(Source{source.name + " [bit-pack product]", s3.str()}, env);
  } catch (const Error&) {
    return std::nullopt;
  }
  if (!stage.typed || !same_outputs(p, stage)) return std::nullopt;
  std::vector<std::string> inputs;
  for (const Operand& o : stage.operands)
    if (o.name != "bp_X" && o.name != "bp_Y") inputs.push_back(o.name);
  for (const Param& param : stage.params) {
    if (!bindings.scalars.count(param.name)) return std::nullopt;  // a range symbol inferred from extents
    inputs.push_back(param.name);
  }
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims;
  for (size_t d = 0; d < p.dense.size(); ++d)
    if (!p.dense[d].is_project()) dims.push_back({p.dense[d].name, inst.dense_shapes[d]});

  PushdownProgram prog;
  const double M = double(inst.row.size()), N = double(inst.col.size()), K = double(inst.red.size());
  prog.original_work = M * N * K;
  prog.rewritten_work = M * N * double(W) + (M + N) * K;
  prog.stages.push_back({"bit-pack: rows of " + X, pack_text(pack_x, I, true), {X}, {}, {}, std::nullopt, pack_x});
  prog.stages.push_back({"bit-pack: columns of " + Y, pack_text(pack_y, J, false), {Y}, {}, {}, std::nullopt, pack_y});
  prog.stages.push_back({"bit-pack: or-and over 32-bit words", s3.str(), inputs, {"bp_X", "bp_Y"}, dims, std::nullopt,
                         std::nullopt});
  return prog;
}

}  // namespace gamut
