// The kernel argument layout (kernel_args.h): every word's position, field name and meaning.
#include "cuda/codegen/kernel_args.h"

#include <set>

#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"
#include "cuda/codegen/outputs/output_operator.h"

namespace gamut::cuda {

ArgLayout::ArgLayout() {
  add("row_begin", "rows i in [row_begin, row_end)");
  add("row_end", "");
  add("col_begin", "columns j in [col_begin, col_end)");
  add("col_end", "");
  add("red_begin", "reduction k in [red_begin, red_end)");
  add("red_end", "");
  add("batch", "batch instances");
}

int ArgLayout::add(const std::string& name, const std::string& comment) {
  slots.push_back({name, comment});
  count = int(slots.size());
  return count - 1;
}

int ArgLayout::add_aligned(const std::string& name, const std::string& comment, int words) {
  while (count % 8 != 0) add("pad" + std::to_string(count), "");
  const int first = add(name, comment);
  slots.back().words = words;
  for (int w = 1; w < words; ++w) add("", "");
  return first;
}

ArgLayout arg_layout(const Plan& plan, bool tma) {
  using std::to_string;
  ArgLayout L;
  const cg::Names N(plan);
  for (size_t a = 0; a < plan.accesses.size(); ++a) {
    const Access& acc = plan.accesses[a];
    const std::string what = plan.operands[size_t(acc.operand)].name + pattern_name(acc.pattern);
    ArgLayout::AccessSlots s;
    s.ptr = L.add(N.access(int(a), "ptr"), what + ": device pointer");
    s.ld = L.add(N.access(int(a), "ld"), "elements between rows");
    s.bstride = L.add(N.access(int(a), "batch_stride"), "elements between batch instances");
    s.vec = L.add(N.access(int(a), "vec4"), "1: its 4-element chunks are aligned");
    L.access.push_back(s);
  }
  std::set<std::pair<int, CType>> ps = cg::params_in(plan, true);
  for (const auto& p : cg::params_in(plan, false)) ps.insert(p);
  for (const auto& [param, type] : ps)
    L.params.push_back(
        {param, type,
         L.add(N.param(param, type), "parameter " + plan.params[size_t(param)].name + ", the bits of its " +
                                         std::string(ctype_name(type)) + " value")});
  // The output operators' words, in output order (outputs/output_operator.h).
  for (size_t d = 0; d < plan.dense.size(); ++d) cg::dense_output_args(L, plan, N, int(d));
  for (size_t l = 0; l < plan.lists.size(); ++l) cg::list_output_args(L, plan, N, int(l));
  if (!plan.when.keys.empty()) {  // key-grouped joins (codegen/join_groups.h); unused by masked launches
    L.join_tiles = L.add("join_tiles", "int32 [blocks][4]: row and column position ranges of each tile");
    L.join_rows = L.add("join_rows", "int32: key-ordered position -> row index");
    L.join_cols = L.add("join_cols", "int32: key-ordered position -> column index");
  }
  if (tma) {
    L.tma_a = L.add_aligned("tma_a", "CUtensorMap of the row operand (TMA)", 16);
    L.tma_b = L.add_aligned("tma_b", "CUtensorMap of the column operand (TMA)", 16);
  }
  return L;
}

}  // namespace gamut::cuda
