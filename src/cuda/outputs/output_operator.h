// One protocol for the output operators: each output kind (project stores, aggregates, lists)
// is a generator with the same small interface, and the kernel generator (epilogue.cpp)
// composes them. After the mainloop it calls the hooks of every operator in this order
// (operators in the order project, aggregate, list):
//
//   declare                           before the pair loop: sinks, run combiners, list marks
//   [one barrier when an operator asks for it: barrier_after_declare()]
//   for m < Map::kRows                i = tile_row0 + map.row(m)
//     for each run of map columns     run_begin
//       for n in the run              j = tile_col0 + map.col(n)
//         pair_begin                  the pair's variables
//         if (the pair exists) { accumulators; the output statements, each through leaf() }
//         pair_end                    after the statements: commit, mark
//       run_end                       (a run's vector stores)
//   finish                            after the loop: flush tables, append list rows
//
// leaf() renders one output statement (a Store or an Emit) when it is the operator's own and
// returns true. The operators see the pairs through the accumulator map only
// (accumulator_map.h), never the mainloop. Variants are strategies inside an operator (an
// aggregate's shared table or global atomics and its direct-table loop; a list's rows plain,
// pre-selected per tile (or against a persistent block's own thresholds) for top / bottom, or
// de-duplicated per tile for distinct). The argument words and shared memory each kind needs
// are laid out by its functions below, called in output order through its OutputKind
// (output_kind.h) by arg_layout (kernel_args.cpp) and smem_plan (layout.cpp).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cuda/codegen/context.h"

namespace gamut::cuda::cg {

class OutputOperator {
 public:
  virtual ~OutputOperator() = default;
  // The device headers its code uses, none when the plan has no output of its kind.
  virtual std::vector<std::string> headers() const { return {}; }
  virtual void declare(Code&) {}
  // A comment for a __syncthreads() after every operator's declarations, or "" for none.
  virtual std::string barrier_after_declare() const { return ""; }
  virtual void run_begin(Code&) {}
  virtual void pair_begin(Code&) {}
  virtual bool leaf(const Stmt&, Code&) { return false; }
  virtual void pair_end(Code&) {}
  virtual void run_end(Code&) {}
  virtual void finish(Code&) {}
  // A direct loop: the run-time condition under which direct_loop() replaces the pair loop, or
  // "" when the plan has no such form for this operator (at most one operator offers one).
  virtual std::string direct_condition() const { return ""; }
  virtual void direct_loop(Code&) {}
};

// Project outputs (C[i, j] = v): runs of consecutive j stored as vectors (outputs/dense/codegen/project.cpp).
std::unique_ptr<OutputOperator> make_project_operator(KernelContext& ctx);
// Lists (`emit`): pass 1 marks the pairs whose row reached the emit, pass 2 appends the rows with
// one reservation per block (outputs/list/codegen/lists.cpp, top_bottom.cpp, distinct.cpp).
std::unique_ptr<OutputOperator> make_list_operator(KernelContext& ctx);

// Aggregates (C[...] op= v): a per-thread run combiner into a sink per output, a shared-memory
// table or global atomics (outputs/dense/codegen/aggregate.cpp); with the direct-table loop as a second pair
// loop for outputs that fit their tables.
std::unique_ptr<OutputOperator> make_aggregate_operator(KernelContext& ctx);

// Argument words of dense output d (pointer, strides, vector flag, elements) and of list l
// (counter, capacity, columns, b, i, j, key, thresholds), in that order (kernel_args.h).
void dense_output_args(ArgLayout& L, const Plan& plan, const Names& names, int d);
void list_output_args(ArgLayout& L, const Plan& plan, const Names& names, int l);
// The dense outputs' pointers and strides in the kernel (C, C_stride<p>, C_vec4).
void dense_output_pointers(const KernelContext& ctx, Code& c);

// Shared memory after the mainloop (smem_plan, through OutputKind::smem): the aggregates'
// tables, then the distinct lists' region (one list at a time). Each starts at `off` and
// returns where it ends.
size_t plan_aggregate_tables(const Plan& plan, size_t off, SmemPlan& s);
size_t plan_distinct_tables(const Plan& plan, const TileConfig& tile, size_t off, SmemPlan& s);

}  // namespace gamut::cuda::cg
