// List results: order, limit and de-duplicate the rows every engine collects (spec section 6,
// docs/semantics.md). Independent of how the rows were produced, so the GPU engine shares it.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/error.h"
#include "semantics/list_order.h"
#include "plan/list_rows.h"

namespace gamut {
namespace {

double read_f(DType t, const std::byte* p) {
  switch (t) {
    case DType::F16: { uint16_t h; std::memcpy(&h, p, 2); return half_to_float(h); }
    case DType::BF16: { uint16_t h; std::memcpy(&h, p, 2); return bf16_to_float(h); }
    case DType::F32: { float f; std::memcpy(&f, p, 4); return f; }
    default: { double d; std::memcpy(&d, p, 8); return d; }
  }
}

int64_t read_i(DType t, const std::byte* p) {
  switch (t) {
    case DType::Bool: case DType::U8: return int64_t(uint8_t(p[0]));
    case DType::I8: return int64_t(int8_t(p[0]));
    case DType::I16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    default: { int64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

int sign3(bool less, bool greater) { return less ? -1 : greater ? 1 : 0; }

// Value order of one column: numbers ascending, NaN after every number (NaNs equal here).
int cmp_value(const Column& c, int64_t x, int64_t y) {
  size_t sz = dtype_size(c.dtype);
  const std::byte* px = c.data.data() + size_t(x) * sz;
  const std::byte* py = c.data.data() + size_t(y) * sz;
  if (is_float(c.dtype)) {
    double a = read_f(c.dtype, px), b = read_f(c.dtype, py);
    bool na = std::isnan(a), nb = std::isnan(b);
    if (na || nb) return na == nb ? 0 : na ? 1 : -1;
    return sign3(a < b, a > b);
  }
  int64_t a = read_i(c.dtype, px), b = read_i(c.dtype, py);
  return sign3(a < b, a > b);
}

// Raw bits as an unsigned number: the tie-break that makes the order total (-0.0 vs 0.0, NaNs).
int cmp_bits(const Column& c, int64_t x, int64_t y) {
  size_t sz = dtype_size(c.dtype);
  uint64_t a = 0, b = 0;
  std::memcpy(&a, c.data.data() + size_t(x) * sz, sz);
  std::memcpy(&b, c.data.data() + size_t(y) * sz, sz);
  return sign3(a < b, a > b);
}

// Lexicographic row order; 0 exactly when the rows are bit-identical.
int cmp_row(const Table& t, int64_t x, int64_t y) {
  for (const Column& c : t.columns) {
    if (int r = cmp_value(c, x, y)) return r;
    if (int r = cmp_bits(c, x, y)) return r;
  }
  return 0;
}

void check_shape(const ListOutput& spec, const ListCandidates& rows) {
  size_t n = size_t(rows.table.rows);
  bool ok = rows.b.size() == n && rows.i.size() == n && rows.j.size() == n;
  for (const Column& c : rows.table.columns) ok = ok && c.data.size() == n * dtype_size(c.dtype);
  if (spec.mode == ListMode::Top || spec.mode == ListMode::Bottom)
    ok = ok && rows.key.data.size() == n * dtype_size(rows.key.dtype);
  if (!ok) throw Error(ExitCode::Device, "internal error: malformed list candidates for " + spec.name);
}

// Key rank: < 0 when row x is better (larger for top, smaller for bottom). NaN keys rank after
// every number for both, so a NaN is never preferred to a number. Every row's key is decoded
// once (a number, or a NaN flag), not at each comparison.
class KeyRank {
 public:
  KeyRank(const Column& key, bool top) : top_(top), float_(is_float(key.dtype)) {
    const size_t n = key.data.size() / dtype_size(key.dtype), sz = dtype_size(key.dtype);
    if (float_) {
      f_.resize(n);
      nan_.resize(n);
      for (size_t r = 0; r < n; ++r) {
        f_[r] = read_f(key.dtype, key.data.data() + r * sz);
        nan_[r] = std::isnan(f_[r]);
      }
    } else {
      i_.resize(n);
      for (size_t r = 0; r < n; ++r) i_[r] = read_i(key.dtype, key.data.data() + r * sz);
    }
  }
  int operator()(int64_t x, int64_t y) const {
    if (float_) {
      if (nan_[size_t(x)] || nan_[size_t(y)]) return nan_[size_t(x)] == nan_[size_t(y)] ? 0 : nan_[size_t(x)] ? 1 : -1;
      const int v = sign3(f_[size_t(x)] < f_[size_t(y)], f_[size_t(x)] > f_[size_t(y)]);
      return top_ ? -v : v;
    }
    const int v = sign3(i_[size_t(x)] < i_[size_t(y)], i_[size_t(x)] > i_[size_t(y)]);
    return top_ ? -v : v;
  }

 private:
  bool top_, float_;
  std::vector<double> f_;
  std::vector<uint8_t> nan_;
  std::vector<int64_t> i_;
};

// Indices of the rows a top/bottom list keeps, in result order.
std::vector<int64_t> select_best(const ListOutput& spec, int64_t limit, const ListCandidates& rows) {
  int64_t n = rows.table.rows;
  limit = std::max<int64_t>(limit, 0);
  std::vector<int64_t> perm(static_cast<size_t>(n));
  std::iota(perm.begin(), perm.end(), 0);
  bool top = spec.mode == ListMode::Top;
  const auto& B = rows.b; const auto& I = rows.i; const auto& J = rows.j;
  const KeyRank key(rows.key, top);
  auto by_key = [&](int64_t x, int64_t y) {
    if (int r = key(x, y)) return r < 0;
    if (B[x] != B[y]) return B[x] < B[y];
    if (I[x] != I[y]) return I[x] < I[y];
    return J[x] < J[y];
  };
  if (spec.per == PerGroup::None) {
    if (limit < n) {
      std::partial_sort(perm.begin(), perm.begin() + limit, perm.end(), by_key);
      perm.resize(size_t(limit));
    } else {
      std::sort(perm.begin(), perm.end(), by_key);
    }
    return perm;
  }
  // Groups (b, i) for `per i`, (b, j) for `per j`; inside a group: key, then the other axis.
  const auto& G = spec.per == PerGroup::Row ? I : J;
  const auto& O = spec.per == PerGroup::Row ? J : I;
  auto by_group = [&](int64_t x, int64_t y) {
    if (B[x] != B[y]) return B[x] < B[y];
    if (G[x] != G[y]) return G[x] < G[y];
    if (int r = key(x, y)) return r < 0;
    return O[x] < O[y];
  };
  // Rows into their groups by a counting sort where the groups' (b, g) box is small next to the
  // rows (what the GPU hands over: N per group plus ties, in no order), then each group's few
  // rows ordered: one comparison sort of all rows took 30 ms for 16384 groups of 10 on the
  // device host, most of a kNN call (bench/NOTES.md, session 6).
  if (n > 0) {
    const auto bs = std::minmax_element(B.begin(), B.end()), gs = std::minmax_element(G.begin(), G.end());
    const int64_t bmin = *bs.first, gmin = *gs.first;
    const int64_t gspan = int64_t(*gs.second) - gmin + 1, box = (int64_t(*bs.second) - bmin + 1) * gspan;
    if (box <= 4 * n + 1024) {
      std::vector<int64_t> start(size_t(box) + 1, 0);
      auto slot = [&](int64_t r) { return size_t((B[size_t(r)] - bmin) * gspan + (G[size_t(r)] - gmin)); };
      for (int64_t r = 0; r < n; ++r) ++start[slot(r) + 1];
      for (size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
      std::vector<int64_t> next(start.begin(), start.end() - 1);
      for (int64_t r = 0; r < n; ++r) perm[size_t(next[slot(r)]++)] = r;
      for (size_t s = 0; s + 1 < start.size(); ++s)
        if (start[s + 1] - start[s] > 1) std::sort(perm.begin() + start[s], perm.begin() + start[s + 1], by_group);
    } else {
      std::sort(perm.begin(), perm.end(), by_group);
    }
  }
  std::vector<int64_t> kept;
  int64_t in_group = 0;
  for (size_t p = 0; p < perm.size(); ++p) {
    bool same = p > 0 && B[perm[p]] == B[perm[p - 1]] && G[perm[p]] == G[perm[p - 1]];
    in_group = same ? in_group + 1 : 0;
    if (in_group < limit) kept.push_back(perm[p]);
  }
  return kept;
}

Column gather(const Column& c, const std::vector<int64_t>& perm) {
  Column out;
  out.name = c.name;
  out.dtype = c.dtype;
  size_t sz = dtype_size(c.dtype);
  out.data.resize(perm.size() * sz);
  for (size_t r = 0; r < perm.size(); ++r)
    std::memcpy(out.data.data() + r * sz, c.data.data() + size_t(perm[r]) * sz, sz);
  return out;
}

template <class T>
std::vector<T> gather_vec(const std::vector<T>& v, const std::vector<int64_t>& perm) {
  std::vector<T> out(perm.size());
  for (size_t r = 0; r < perm.size(); ++r) out[r] = v[size_t(perm[r])];
  return out;
}

}  // namespace

Table finalize_list(const ListOutput& spec, int64_t limit, ListCandidates&& rows) {
  check_shape(spec, rows);
  const Table& t = rows.table;
  std::vector<int64_t> perm;
  if (spec.mode == ListMode::Top || spec.mode == ListMode::Bottom) {
    perm = select_best(spec, limit, rows);
  } else {
    perm.resize(size_t(t.rows));
    std::iota(perm.begin(), perm.end(), 0);
    const auto before = [&](int64_t x, int64_t y) { return cmp_row(t, x, y) < 0; };
    if (rows.sorted_runs.empty()) {
      std::sort(perm.begin(), perm.end(), before);
    } else {  // runs in order already: merged pairwise, log2(runs) passes over the rows
      std::vector<int64_t> bounds = {0};
      for (int64_t s : rows.sorted_runs)
        if (s > bounds.back() && s < t.rows) bounds.push_back(s);
      bounds.push_back(t.rows);
      const size_t runs = bounds.size() - 1;
      for (size_t width = 1; width < runs; width *= 2)
        for (size_t k = 0; k + width < runs; k += 2 * width)
          std::inplace_merge(perm.begin() + bounds[k], perm.begin() + bounds[k + width],
                             perm.begin() + bounds[std::min(k + 2 * width, runs)], before);
    }
    if (spec.mode == ListMode::Distinct) {
      auto end = std::unique(perm.begin(), perm.end(),
                             [&](int64_t x, int64_t y) { return cmp_row(t, x, y) == 0; });
      perm.erase(end, perm.end());
    }
  }
  Table out;
  out.rows = int64_t(perm.size());
  for (size_t c = 0; c < t.columns.size(); ++c) {
    out.columns.push_back(gather(t.columns[c], perm));
    if (c < spec.columns.size()) out.columns.back().name = spec.columns[c].name;
  }
  return out;
}

namespace cpu {

ListCandidates empty_candidates(const ListOutput& spec, CType key_type) {
  ListCandidates c;
  for (const ListColumn& col : spec.columns) {
    Column out;
    out.name = col.name;
    out.dtype = storage_type_of(col.type);
    c.table.columns.push_back(std::move(out));
  }
  c.key.name = "key";
  c.key.dtype = storage_type_of(key_type);
  return c;
}

void append_candidates(ListCandidates& dst, const ListCandidates& src) {
  for (size_t c = 0; c < dst.table.columns.size(); ++c) {
    auto& d = dst.table.columns[c].data;
    const auto& s = src.table.columns[c].data;
    d.insert(d.end(), s.begin(), s.end());
  }
  dst.key.data.insert(dst.key.data.end(), src.key.data.begin(), src.key.data.end());
  dst.b.insert(dst.b.end(), src.b.begin(), src.b.end());
  dst.i.insert(dst.i.end(), src.i.begin(), src.i.end());
  dst.j.insert(dst.j.end(), src.j.begin(), src.j.end());
  dst.table.rows += src.table.rows;
}

void prune_candidates(const ListOutput& spec, int64_t limit, ListCandidates& rows) {
  if (spec.mode != ListMode::Top && spec.mode != ListMode::Bottom) return;
  check_shape(spec, rows);
  std::vector<int64_t> keep = select_best(spec, limit, rows);
  if (int64_t(keep.size()) == rows.table.rows) return;
  for (Column& c : rows.table.columns) c = gather(c, keep);
  rows.key = gather(rows.key, keep);
  rows.b = gather_vec(rows.b, keep);
  rows.i = gather_vec(rows.i, keep);
  rows.j = gather_vec(rows.j, keep);
  rows.table.rows = int64_t(keep.size());
}

}  // namespace cpu
}  // namespace gamut
