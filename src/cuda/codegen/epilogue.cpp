// The epilogue (epilogue.h): the pair loop over the accumulator map and the output operators'
// hooks in the order of outputs/output_operator.h. With lists, the accumulators are read through
// gm::opaque: nothing computed here is carried into the lists' pass 2. When the aggregates'
// direct-table loop applies, it runs instead of the pair loop where its run-time condition holds.
#include "cuda/codegen/epilogue.h"

#include "cuda/outputs/output_kind.h"
#include "cuda/outputs/output_operator.h"

namespace gamut::cuda::cg {

namespace {

class OperatorEpilogue final : public Epilogue {
 public:
  explicit OperatorEpilogue(KernelContext& ctx) : X(ctx), P(ctx.P) {
    for (const OutputKind* kind : output_kinds()) kind->operators(ctx, owned_);
    for (const auto& op : owned_) ops_.push_back(op.get());
  }

  std::vector<std::string> headers() const override {
    std::vector<std::string> out;
    for (const OutputOperator* op : ops_)
      for (const std::string& h : op->headers()) out.push_back(h);
    return out;
  }

  void render(Code& c) override {
    for (OutputOperator* op : ops_) op->declare(c);
    for (OutputOperator* op : ops_)
      if (const std::string why = op->barrier_after_declare(); !why.empty()) {
        c.line("gm::tile_sync<Shape::THREADS>();  // " + why);
        break;
      }
    // A direct loop where an operator offers one (the aggregates' direct tables, lists on seen
    // tables), under its run-time condition; the pair loop otherwise.
    OutputOperator* direct_op = nullptr;
    std::string direct;
    for (OutputOperator* op : ops_) {
      direct = op->direct_condition();
      if (!direct.empty()) {
        direct_op = op;
        break;
      }
    }
    if (!direct.empty()) {
      c.open("if (" + direct + ")");
      direct_op->direct_loop(c);
      c.close();
      c.open("else");
    }
    pair_loops(c);
    if (!direct.empty()) c.close();  // else
    for (OutputOperator* op : ops_) op->finish(c);
  }

 private:
  // Inside tiles take a copy of the pair loop without the bounds tests (inside_and_edge) where
  // the outputs are lists: with projects alone the products were slightly slower, and
  // aggregates have their direct loop (split likewise) for the case that matters; copying their
  // general loop too made a SIMT aggregate kernel spill.
  void pair_loops(Code& c) {
    bool lists_only = !P.lists.empty();
    for (const DenseOutput& d : P.dense) lists_only = lists_only && d.is_project();
    if (!X.coords->positions_are_indices() || !lists_only) return pair_loop(c, true);
    X.inside_and_edge(c, [&](bool bounds) { pair_loop(c, bounds); });
  }

  void pair_loop(Code& c, bool bounds) {
    const AccumulatorMap& M = X.map;
    const TileCoordinates& tc = *X.coords;
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < " + M.rows + "; ++m)");
    c.line("const int i = " + tc.row_at(M.tile_row0 + " + " + M.row("m")) + ";");
    c.line("#pragma unroll");
    c.open("for (int c = 0; c < " + M.cols + " / " + M.col_run + "; ++c)");
    for (OutputOperator* op : ops_) op->run_begin(c);
    c.line("#pragma unroll");
    c.open("for (int v = 0; v < " + M.col_run + "; ++v)");
    c.line("const int n = c * " + M.col_run + " + v;");
    c.line("const int j = " + tc.col_at(M.tile_col0 + " + " + M.col("n")) + ";");
    for (OutputOperator* op : ops_) op->pair_begin(c);
    const std::string test = X.pair_test(bounds);
    if (!test.empty()) c.open("if (" + test + ")");
    const bool lists = !P.lists.empty();
    for (size_t n = 0; n < P.accs.size(); ++n)
      c.line((lists ? "" : "const ") + X.acc_type(int(n)) + " " + X.acc(int(n)) + " = " + M.value(int(n)) + ";" +
             (lists ? " gm::opaque(" + X.acc(int(n)) + ");" : ""));
    X.locals(false, c);
    X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind == StmtKind::Update) unsupported("an accumulator update outside reduce");
      for (OutputOperator* op : ops_)
        if (op->leaf(s, out)) return;
      unsupported("an output statement of an unknown kind");
    });
    if (!test.empty()) c.close();
    for (OutputOperator* op : ops_) op->pair_end(c);
    c.close();  // v
    for (OutputOperator* op : ops_) op->run_end(c);
    c.close();  // c
    c.close();  // m
  }

  KernelContext& X;
  const Plan& P;
  std::vector<std::unique_ptr<OutputOperator>> owned_;  // project, aggregate, list
  std::vector<OutputOperator*> ops_;
};

}  // namespace

std::unique_ptr<Epilogue> make_epilogue(KernelContext& ctx) { return std::make_unique<OperatorEpilogue>(ctx); }

}  // namespace gamut::cuda::cg
