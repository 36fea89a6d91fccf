// The dense outputs' kind (outputs/output_kind.h): project and aggregate outputs share their
// argument words (per output in Plan::dense order: pointer, strides, vector flag, elements;
// project.cpp) and their host side (host/dense_outputs.h). Their shared memory is the
// aggregates' tables; their operators are the project stores, then the aggregates.
#include "cuda/outputs/output_kind.h"
#include "cuda/outputs/output_operator.h"

namespace gamut::cuda::cg {

namespace {

class DenseKind final : public OutputKind {
 public:
  void args(ArgLayout& L, const Plan& plan, const Names& names) const override {
    for (size_t d = 0; d < plan.dense.size(); ++d) dense_output_args(L, plan, names, int(d));
  }
  size_t smem(const Plan& plan, const TileConfig&, size_t off, SmemPlan& s) const override {
    return plan_aggregate_tables(plan, off, s);
  }
  void operators(KernelContext& ctx, std::vector<std::unique_ptr<OutputOperator>>& out) const override {
    out.push_back(make_project_operator(ctx));
    out.push_back(make_aggregate_operator(ctx));
  }
};

}  // namespace

const OutputKind& dense_kind() {
  static const DenseKind kind;
  return kind;
}

}  // namespace gamut::cuda::cg
