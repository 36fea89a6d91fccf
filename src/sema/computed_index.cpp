// Computed output indices: an aggregate output position given by an integer expression of the
// pair's values (`Hist[b] += 1`, `H[g[i], i32(floor(d / w))] max= v`). The expression is
// lowered like any output statement's value and kept on its Store (Stmt::columns); its extent
// comes from the bindings, and a value outside it at run time is a data error
// (docs/language.md section 6, src/semantics/computed_index.h).
#include "sema/sema_impl.h"

namespace gamut::sema {

bool Analyzer::computed_index(const AstExpr& ix) const {
  auto axis = [&](const AstExpr& e) {
    if (e.kind != AstExpr::Ident) return false;
    for (const Axis& a : plan_.axes)
      if (a.name == e.name) return true;
    return false;
  };
  if (axis(ix)) return false;
  // g[r] (with a batch axis g[b, r]): an index vector, looked up by an axis.
  if (ix.kind == AstExpr::Index) {
    size_t spatial = ix.args.size() - (plan_.batched ? 1 : 0);
    return !(ix.args.size() > (plan_.batched ? 1u : 0u) && spatial == 1 && axis(*ix.args.back()));
  }
  return true;
}

ExprId Analyzer::lower_computed_index(const AstExpr& ix, const std::string& output, StoreOp op) {
  ExprId key = lower(ix, Ctx::Outer);
  if (op == StoreOp::Assign) {
    // (the caller's check names what '=' needs)
    return key;
  }
  const CType t = type(key);
  if (t == CType::Unknown) return key;  // typed when the inputs are bound
  if (is_float(t)) {
    diags_.error(ix.span, "a computed index of output '" + output + "' must be an integer, but this is " +
                              std::string(ctype_name(t)) + "; convert it, as i32(floor(x))");
    return kNoExpr;
  }
  if (t == CType::Bool) return coerce(key, CType::I32);
  return key;
}

}  // namespace gamut::sema
