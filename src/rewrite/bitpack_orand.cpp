#include "rewrite/bitpack_orand.h"

#include <sstream>

#include "core/error.h"
#include "semantics/bit_pack.h"
#include "lang/token.h"
#include "plan/semiring.h"
#include "rewrite/query_text.h"
#include "sema/analyze.h"

namespace gamut {

namespace {

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

std::string pack_text(const BitPack& bp, const std::string& axis, bool row_side) {
  std::ostringstream s;
  s << "# " << bp.output << "[" << axis << ", w] bit b = " << bp.source
    << (bp.src_k_minor ? "[" + axis + ", k]" : "[k, " + axis + "]") << " != 0, k = " << bp.k_range.begin
    << " + 32 w + b < " << bp.k_range.end << "; " << axis << " in " << range_text(bp.rows.begin, bp.rows.end) << ", "
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
  s3 << "where (" << I << " in " << range_text(inst.row.begin, inst.row.end) << ", " << J << " in "
     << range_text(inst.col.begin, inst.col.end) << ")" << (q->when.empty() ? "" : " " + q->when) << " {\n"
     << "  bp_r: i32 = 0;\n  reduce (bp_w in " << range_text(0, W) << ") {\n"
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
