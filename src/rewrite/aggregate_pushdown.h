// Aggregate push-down: a sum of products grouped by g[i] and h[j] becomes (G^T A)(B H).
//
//   C[g[i], h[j]] += sum_k A[i,k] B[k,j]   ==   C = (G^T A) (B H)
//   T[g[i]] += sum_k A[i,k] B[k,j]  when g[i] == h[j]   ==   T[a] = sum_k (G^T A)[a,k] (B H)[k,a]
//
// The rewrite produces three gamut queries, run in order: two segment sums (each itself an MMLT
// with a one-hot mask) and one small product. It applies only where it is exact in the query's
// arithmetic (a ring: integer wrap-around or float sums, which engines may reassociate anyway)
// and cheaper than the original product.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "rewrite/bit_pack_stage.h"

namespace gamut {

// What a segment-sum stage computes, for engines with a dedicated kernel (the GPU):
//   output[g, k] (group_rows) or output[k, g] = sum over i in group_range with index[i] == g of
//   source[i, k] (src_k_minor) or source[k, i]; output shape (groups, k_range.end) or
//   (k_range.end, groups), entries for k below k_range.begin 0, element type storage of `type`.
struct SegmentSum {
  std::string source, index, output;
  bool group_rows = true;
  bool src_k_minor = true;
  int64_t groups = 0;
  AxisRange group_range, k_range;
  CType type = CType::F32;                // the accumulator: the stage query's pd_s type
};

struct StageQuery {
  std::string name;                       // "pushdown: segment sum of P by Pzip"
  std::string text;                       // a complete query
  std::vector<std::string> inputs;        // names bound from the original bindings
  std::vector<std::string> from_stages;   // names bound from earlier stages' outputs
  std::vector<std::pair<std::string, std::vector<int64_t>>> dims;  // --dim of its outputs
  std::optional<SegmentSum> segment;      // set on the two segment-sum stages
  std::optional<BitPack> bitpack;         // set on bit-pack stages (rewrite/bitpack_orand.h): no query to run
  // Run with list provenance (rewrite/list_provenance.h): set on the last stage of a program
  // whose caller asked for the hidden columns (driver/pipeline.h, carry_list_provenance).
  bool list_provenance = false;
};

struct PushdownProgram {
  std::vector<StageQuery> stages;         // the last stage writes the original output
  double original_work = 0, rewritten_work = 0;  // multiply-adds
  // The last stage's typed plan where the rewrite keeps it: the math explain and the run
  // statistics report is that stage's (rewrite/one_sided_sums.h puts it on the tensor cores).
  std::shared_ptr<const Plan> main_plan;
};

// The rewritten program for a bound plan, or nothing when the rewrite does not apply.
std::optional<PushdownProgram> aggregate_pushdown(const Plan& plan, const Instance& inst);

}  // namespace gamut
