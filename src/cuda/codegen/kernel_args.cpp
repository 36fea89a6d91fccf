// The kernel argument layout (kernel_args.h): every word's position, field name and meaning.
#include "cuda/codegen/kernel_args.h"

#include <set>

#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"
#include "cuda/outputs/output_kind.h"

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
  // The output kinds' words, in output order (outputs/output_kind.h).
  for (const cg::OutputKind* kind : cg::output_kinds()) kind->args(L, plan, N);
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

ArgLayout read_layout(const ArgLayout& full, const std::set<std::string>& read) {
  ArgLayout L;  // (the ranges and the batch count)
  std::vector<int> at(full.slots.size(), -1);
  for (int s = 0; s < L.count; ++s) at[size_t(s)] = s;
  for (size_t s = size_t(L.count); s < full.slots.size(); ++s) {
    const ArgLayout::Slot& f = full.slots[s];
    if (f.name.empty() || !read.count(f.name)) continue;  // (pads and the rest of an array too)
    at[s] = f.words > 1 ? L.add_aligned(f.name, f.comment, f.words) : L.add(f.name, f.comment);
  }
  auto map = [&](int s) { return s < 0 ? -1 : at[size_t(s)]; };
  for (const ArgLayout::AccessSlots& a : full.access)
    L.access.push_back({map(a.ptr), map(a.ld), map(a.bstride), map(a.vec)});
  for (const ArgLayout::ParamSlot& p : full.params) L.params.push_back({p.param, p.type, map(p.slot)});
  for (const ArgLayout::OutputSlots& d : full.dense) {
    ArgLayout::OutputSlots o{map(d.ptr), {}, map(d.vec), map(d.elems), {}, -1};
    for (int s : d.stride) o.stride.push_back(map(s));
    for (int s : d.extent) o.extent.push_back(map(s));
    o.misses = map(d.misses);
    L.dense.push_back(o);
  }
  for (const ArgLayout::ListSlots& l : full.lists) {
    ArgLayout::ListSlots o = l;
    for (int* s :
         {&o.counter, &o.capacity, &o.b, &o.i, &o.j, &o.key, &o.threshold, &o.reservoir, &o.seen, &o.seen_words})
      *s = map(*s);
    for (std::vector<int>* v : {&o.cols, &o.seen_lo, &o.seen_stride})
      for (int& s : *v) s = map(s);
    L.lists.push_back(o);
  }
  L.join_tiles = map(full.join_tiles);
  L.join_rows = map(full.join_rows);
  L.join_cols = map(full.join_cols);
  L.tma_a = map(full.tma_a);
  L.tma_b = map(full.tma_b);
  return L;
}

}  // namespace gamut::cuda
