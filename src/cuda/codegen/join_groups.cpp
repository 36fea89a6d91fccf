#include "cuda/codegen/join_groups.h"

#include <algorithm>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "cuda/codegen/internal.h"
#include "semantics/join_key.h"

namespace gamut::cuda {

bool join_grouping_form(const Plan& plan) {
  if (plan.when.keys.empty() || plan.batched) return false;
  for (const JoinKey& k : plan.when.keys)
    if (plan.accesses[size_t(k.row_access)].pattern != Pattern::RowVec ||
        plan.accesses[size_t(k.col_access)].pattern != Pattern::ColVec)
      return false;
  // top/bottom per i / per j keep a global threshold per row / column, indexed by the row or
  // column of the tile (gm::TileSelect): those stay with the masked launch.
  for (const ListOutput& l : plan.lists)
    if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per != PerGroup::None) return false;
  bool reads_axis = false;
  cg::walk_stmts(plan, plan.inner, [&](const Expr& e) { reads_axis = reads_axis || e.kind == ExprKind::Axis; });
  return !reads_axis;
}

namespace {

// The sides' keys: per index of [begin, end), nkeys values; `valid` false where a key is NaN.
struct SideKeys {
  std::vector<int64_t> key;    // (index - begin) * nkeys + n
  std::vector<int32_t> order;  // indices with valid keys, sorted by (key, index)
};

SideKeys side_keys(const Plan& plan, const Instance& inst, bool row) {
  const size_t nk = plan.when.keys.size();
  const AxisRange& r = row ? inst.row : inst.col;
  SideKeys s;
  s.key.assign(size_t(r.size()) * nk, 0);
  std::vector<char> valid(size_t(r.size()), 1);
  for (size_t n = 0; n < nk; ++n) {
    const JoinKey& k = plan.when.keys[n];
    const NDArray* mine = inst.inputs[size_t(plan.accesses[size_t(row ? k.row_access : k.col_access)].operand)];
    const NDArray* other = inst.inputs[size_t(plan.accesses[size_t(row ? k.col_access : k.row_access)].operand)];
    if (!mine || !other) throw_device_error("internal error: a join key without data");
    const CType t = std::max(compute_type_of(mine->dtype), compute_type_of(other->dtype));
    for (int64_t x = r.begin; x < r.end; ++x) {
      int64_t v = 0;
      if (!join_key_value(*mine, x, t, v)) valid[size_t(x - r.begin)] = 0;
      s.key[size_t(x - r.begin) * nk + n] = v;
    }
  }
  for (int64_t x = r.begin; x < r.end; ++x)
    if (valid[size_t(x - r.begin)]) s.order.push_back(int32_t(x));
  auto key_of = [&](int32_t x) { return s.key.data() + size_t(x - r.begin) * nk; };
  std::stable_sort(s.order.begin(), s.order.end(), [&](int32_t a, int32_t b) {
    return std::lexicographical_compare(key_of(a), key_of(a) + nk, key_of(b), key_of(b) + nk);
  });
  return s;
}

}  // namespace

JoinGroups group_join(const Plan& plan, const Instance& inst, int bm, int bn) {
  const size_t nk = plan.when.keys.size();
  const SideKeys R = side_keys(plan, inst, true), C = side_keys(plan, inst, false);
  auto rkey = [&](size_t p) { return R.key.data() + size_t(R.order[p] - inst.row.begin) * nk; };
  auto ckey = [&](size_t p) { return C.key.data() + size_t(C.order[p] - inst.col.begin) * nk; };
  auto cmp = [&](const int64_t* a, const int64_t* b) {
    for (size_t n = 0; n < nk; ++n)
      if (a[n] != b[n]) return a[n] < b[n] ? -1 : 1;
    return 0;
  };
  JoinGroups g;
  size_t r = 0, c = 0;
  while (r < R.order.size() && c < C.order.size()) {
    const int d = cmp(rkey(r), ckey(c));
    if (d < 0) {
      ++r;
      continue;
    }
    if (d > 0) {
      ++c;
      continue;
    }
    size_t r1 = r + 1, c1 = c + 1;
    while (r1 < R.order.size() && cmp(rkey(r1), rkey(r)) == 0) ++r1;
    while (c1 < C.order.size() && cmp(ckey(c1), ckey(c)) == 0) ++c1;
    // Positions of this group in the permuted spaces, then its tiles. Groups start at multiples
    // of 4 positions (-1 fills the gaps), so the loaders' 4-element chunks stay aligned.
    while (g.row_perm.size() % 4 != 0) g.row_perm.push_back(-1);
    while (g.col_perm.size() % 4 != 0) g.col_perm.push_back(-1);
    const int64_t p0 = int64_t(g.row_perm.size()), q0 = int64_t(g.col_perm.size());
    g.row_perm.insert(g.row_perm.end(), R.order.begin() + int64_t(r), R.order.begin() + int64_t(r1));
    g.col_perm.insert(g.col_perm.end(), C.order.begin() + int64_t(c), C.order.begin() + int64_t(c1));
    const int64_t p1 = int64_t(g.row_perm.size()), q1 = int64_t(g.col_perm.size());
    for (int64_t a = p0; a < p1; a += bm)
      for (int64_t b = q0; b < q1; b += bn) {
        g.tiles.insert(g.tiles.end(), {int32_t(a), int32_t(std::min<int64_t>(a + bm, p1)), int32_t(b),
                                       int32_t(std::min<int64_t>(b + bn, q1))});
      }
    ++g.groups;
    g.pairs += (p1 - p0) * (q1 - q0);
    r = r1;
    c = c1;
  }
  if (g.tile_count() > INT32_MAX) throw_device_error("the join needs more than 2^31-1 thread blocks");
  return g;
}

NDArray gather_along(const NDArray& x, bool p_is_first_dim, const std::vector<int32_t>& perm) {
  if (x.shape.size() != 2)
    throw_device_error("internal error: gathering a matrix of rank " + std::to_string(x.shape.size()));
  const int64_t rows = x.shape[0], cols = x.shape[1], q = int64_t(perm.size());
  const size_t e = dtype_size(x.dtype);
  NDArray out = NDArray::zeros(x.dtype, p_is_first_dim ? std::vector<int64_t>{q, cols} : std::vector<int64_t>{rows, q});
  // (Positions holding -1 are gaps between groups: they stay 0.)
  if (p_is_first_dim) {
    for (int64_t a = 0; a < q; ++a)
      if (perm[size_t(a)] >= 0)
        std::memcpy(out.data.data() + size_t(a * cols) * e, x.data.data() + size_t(int64_t(perm[size_t(a)]) * cols) * e,
                    size_t(cols) * e);
  } else {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t a = 0; a < q; ++a)
        if (perm[size_t(a)] >= 0)
          std::memcpy(out.data.data() + size_t(r * q + a) * e, x.data.data() + size_t(r * cols + perm[size_t(a)]) * e,
                      e);
  }
  return out;
}

}  // namespace gamut::cuda
