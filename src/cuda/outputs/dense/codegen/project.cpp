// Project outputs (C[i, j] = v): each value stored at its position, or, where the output's last
// index is j (and positions are the indices themselves), collected over a run of the map's
// consecutive columns and stored with one vector access (gm::store_run). Also the argument
// words and kernel pointers of every dense output, project or aggregate.
#include <algorithm>

#include "cuda/outputs/output_operator.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

class ProjectOperator final : public OutputOperator {
 public:
  explicit ProjectOperator(KernelContext& ctx) : X(ctx), P(ctx.P) {}

  std::vector<std::string> headers() const override {
    for (const DenseOutput& d : P.dense)
      if (d.is_project()) return {"gamut_project.cuh"};
    return {};
  }

  void run_begin(Code& c) override {
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (X.runs_along_j(int(d)))
        c.line(X.out_type(int(d)) + " " + X.N.dense(int(d), "run") + "[" + X.map.col_run + "]; bool " +
               X.N.dense(int(d), "set") + "[" + X.map.col_run + "];");
  }
  void pair_begin(Code& c) override {
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (X.runs_along_j(int(d)))
        c.line(X.N.dense(int(d), "run") + "[v] = " + X.out_type(int(d)) + "(0); " + X.N.dense(int(d), "set") +
               "[v] = false;");
  }
  bool leaf(const Stmt& s, Code& out) override {
    if (s.kind != StmtKind::Store || !P.dense[size_t(s.target)].is_project()) return false;
    const int d = s.target;
    const std::string v = X.outer_r.expr_as(s.value, P.dense[size_t(d)].type);
    if (X.runs_along_j(d)) {
      out.line(X.N.dense(d, "run") + "[v] = " + v + ";");
      out.line(X.N.dense(d, "set") + "[v] = true;");
    } else {
      out.line(X.N.dense(d) + "[" + X.out_offset(d, "j") + "] = " + v + ";");
    }
    return true;
  }
  void run_end(Code& c) override {
    const AccumulatorMap& M = X.map;
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (X.runs_along_j(int(d)))
        c.line("gm::store_run<" + X.out_type(int(d)) + ", " + M.col_run + ">(" + X.N.dense(int(d)) + " + " +
               X.out_offset(int(d), M.tile_col0 + " + " + M.col("c * " + M.col_run)) + ", " + X.N.dense(int(d), "run") +
               ", " + X.N.dense(int(d), "set") + ", " + X.N.dense(int(d), "vec4") + ");");
  }

 private:
  KernelContext& X;
  const Plan& P;
};

}  // namespace

std::unique_ptr<OutputOperator> make_project_operator(KernelContext& ctx) {
  return std::make_unique<ProjectOperator>(ctx);
}

void dense_output_args(ArgLayout& L, const Plan& plan, const Names& N, int d) {
  ArgLayout::OutputSlots s;
  s.ptr = L.add(N.dense(d, "ptr"),
                plan.dense[size_t(d)].name + ": " + std::string(ctype_name(plan.dense[size_t(d)].type)) + " output");
  const std::vector<OutIndex> idx = output_index(plan, d);
  for (size_t p = 0; p < idx.size(); ++p)
    s.stride.push_back(L.add(N.dense(d, "stride" + to_string(p)), "elements per step of index " + to_string(p)));
  s.vec = L.add(N.dense(d, "vec4"), "1: runs along j may be stored as vectors");
  s.elems = L.add(N.dense(d, "elems"), "elements of the (padded) array");
  s.extent.assign(idx.size(), -1);
  for (size_t p = 0; p < idx.size(); ++p)
    if (idx[p].kind == OutIndex::Key)
      s.extent[p] = L.add(N.dense(d, "extent" + to_string(p)), "extent of computed index " + to_string(p));
  if (std::any_of(idx.begin(), idx.end(), [](const OutIndex& x) { return x.kind == OutIndex::Key; }))
    s.misses = L.add(N.dense(d, "misses"), "gm::KeyMisses per computed index: values out of range");
  L.dense.push_back(s);
}

void dense_output_pointers(const KernelContext& X, Code& c) {
  for (size_t d = 0; d < X.P.dense.size(); ++d) {
    const auto& s = X.A.dense[d];
    const std::string& n = X.N.dense(int(d));
    c.line(X.out_type(int(d)) + "* " + n + " = reinterpret_cast<" + X.out_type(int(d)) + "*>(" + X.arg(s.ptr) + ");");
    for (size_t p = 0; p < s.stride.size(); ++p)
      c.line("const gm::i64 " + X.N.dense(int(d), "stride" + to_string(p)) + " = gm::arg_i64(" + X.arg(s.stride[p]) +
             ");");
    if (X.runs_along_j(int(d))) c.line("const bool " + X.N.dense(int(d), "vec4") + " = " + X.arg(s.vec) + " != 0;");
    for (size_t p = 0; p < s.extent.size(); ++p)
      if (s.extent[p] >= 0)
        c.line("const gm::i64 " + X.N.dense(int(d), "extent" + to_string(p)) + " = gm::arg_i64(" + X.arg(s.extent[p]) +
               ");");
    if (s.misses >= 0)
      c.line("gm::KeyMisses* " + X.N.dense(int(d), "misses") + " = reinterpret_cast<gm::KeyMisses*>(" +
             X.arg(s.misses) + ");");
  }
}

}  // namespace gamut::cuda::cg
