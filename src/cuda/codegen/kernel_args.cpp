// The kernel argument layout (kernel_args.h): every word's position, field name and meaning.
#include "cuda/codegen/kernel_args.h"

#include <set>

#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"

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

ArgLayout arg_layout(const Plan& plan) {
  using std::to_string;
  ArgLayout L;
  for (size_t a = 0; a < plan.accesses.size(); ++a) {
    const Access& acc = plan.accesses[a];
    const std::string x = "x" + to_string(a), what = plan.operands[size_t(acc.operand)].name + pattern_name(acc.pattern);
    ArgLayout::AccessSlots s;
    s.ptr = L.add(x + "_ptr", what + ": device pointer");
    s.ld = L.add(x + "_ld", "elements between rows");
    s.bstride = L.add(x + "_batch_stride", "elements between batch instances");
    s.vec = L.add(x + "_vec4", "1: its 4-element chunks are aligned");
    L.access.push_back(s);
  }
  std::set<std::pair<int, CType>> ps = cg::params_in(plan, true);
  for (const auto& p : cg::params_in(plan, false)) ps.insert(p);
  for (const auto& [param, type] : ps)
    L.params.push_back({param, type,
                        L.add(cg::Renderer::param_name(param, type),
                              "parameter " + plan.params[size_t(param)].name + ", the bits of its " +
                                  std::string(ctype_name(type)) + " value")});
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    const std::string o = "out" + to_string(d);
    ArgLayout::OutputSlots s;
    s.ptr = L.add(o + "_ptr", plan.dense[d].name + ": " + std::string(ctype_name(plan.dense[d].type)) + " output");
    for (size_t p = 0; p < output_index(plan, int(d)).size(); ++p)
      s.stride.push_back(L.add(o + "_stride" + to_string(p), "elements per step of index " + to_string(p)));
    s.vec = L.add(o + "_vec4", "1: runs along j may be stored as vectors");
    s.elems = L.add(o + "_elems", "elements of the (padded) array");
    L.dense.push_back(s);
  }
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    const ListOutput& lo = plan.lists[l];
    const std::string n = "list" + to_string(l);
    ArgLayout::ListSlots s;
    s.counter = L.add(n + "_counter", lo.name + ": u64 [rows that reached the emit, N]");
    s.capacity = L.add(n + "_capacity", "rows the buffers hold");
    for (size_t c = 0; c < lo.columns.size(); ++c)
      s.cols.push_back(L.add(n + "_col" + to_string(c), "column " + lo.columns[c].name + " (" +
                                                            std::string(ctype_name(lo.columns[c].type)) + ")"));
    s.b = L.add(n + "_b", "int32 b of each row");
    s.i = L.add(n + "_i", "int32 i of each row");
    s.j = L.add(n + "_j", "int32 j of each row");
    if (lo.key != kNoExpr) s.key = L.add(n + "_key", "the key of each row");
    if (lo.key != kNoExpr && (lo.mode == ListMode::Top || lo.mode == ListMode::Bottom)) {
      s.threshold = L.add(n + "_threshold", "u32 rank per group, lowered by the tiles");
      s.reservoir = L.add(n + "_reservoir", "u32 [groups][slots] ranks of kept rows, or 0");
    }
    L.lists.push_back(s);
  }
  if (!plan.when.keys.empty()) {   // key-grouped joins (codegen/join_groups.h); unused by masked launches
    L.join_tiles = L.add("join_tiles", "int32 [blocks][4]: row and column position ranges of each tile");
    L.join_rows = L.add("join_rows", "int32: key-ordered position -> row index");
    L.join_cols = L.add("join_cols", "int32: key-ordered position -> column index");
  }
  return L;
}

}  // namespace gamut::cuda
