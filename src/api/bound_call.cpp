#include "api/bound_call.h"

namespace gamut::api {

// Which bound rewrites a call may take: those that read the data only on host inputs; the
// one-sided sums (types and math only) on device inputs too.
static RewriteChoice rewrite_choice(const Options& o, bool in_place) {
  RewriteChoice c;
  c.data = o.rewrites && !in_place;
  c.one_sided = o.rewrites && !o.as_written;
  c.f32_math = f32_math_from_name(o.f32_math).value_or(F32Math::Ieee);
  return c;
}

BoundCall::BoundCall(QueryMemo& memo, const Source& source, StagedInputs& staged, const Options& options) {
  const std::shared_ptr<TypedPlan> plain = memo.typed_plan(source, staged.bindings);
  typed_ = options.list_provenance ? memo.provenance_plan(plain) : plain;
  const bool provenance = typed_ != plain;
  const bool in_place = !staged.device.empty();
  bindings_ = std::move(staged.bindings);
  bound_ = bind(typed_->plan, bindings_);
  RewriteChoice rewrites = rewrite_choice(options, in_place);
  if (provenance) rewrites.data = false;
  // Data rewrites read the data on every call; the one-sided rewrite, which only the types, math
  // and shape decide, is made once per shape, of the plan without provenance.
  std::optional<BoundRewrite> rewrite;
  if (rewrites.data) rewrite = bound_rewrite(typed_->plan, bound_, source, bindings_, {true, false, rewrites.f32_math});
  if (!rewrite && rewrites.one_sided) {
    rewrite = memo.one_sided(*plain, source, bound_, bindings_, rewrites.f32_math);
    if (rewrite && provenance && !carry_list_provenance(*rewrite, plain->plan)) rewrite.reset();
  }
  if (rewrite) prep_ = prepare(source, std::move(bindings_), typed_->plan, std::move(*rewrite));
  if (in_place) {
    Instance& inst = instance();
    inst.device_inputs.resize(plan().operands.size());
    for (size_t o = 0; o < plan().operands.size(); ++o)
      if (auto it = staged.device.find(plan().operands[o].name); it != staged.device.end())
        inst.device_inputs[o] = it->second;
  }
}

std::unique_ptr<Prepared> BoundCall::take_prepared(const Source& source) {
  if (prep_) return std::move(prep_);
  auto p = prepare(source, std::move(bindings_), typed_->plan, RewriteChoice{false, false});
  p->instance.device_inputs = bound_.device_inputs;
  return p;
}

}  // namespace gamut::api
