#include "partition/blocks.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "partition/partition.h"
#include "semantics/store_ops.h"

namespace gamut {
namespace {

const char* letter(AxisRole r) { return r == AxisRole::Row ? "i" : "j"; }

// The dimension of an access pattern that `axis` indexes (without the batch dimension), or -1.
int pattern_dim(Pattern p, AxisRole axis) {
  if (axis == AxisRole::Row) switch (p) {
      case Pattern::RowRed:
      case Pattern::RowVec:
      case Pattern::RowCol: return 0;
      case Pattern::RedRow:
      case Pattern::ColRow: return 1;
      default: return -1;
    }
  switch (p) {
    case Pattern::ColRed:
    case Pattern::ColVec:
    case Pattern::ColRow: return 0;
    case Pattern::RedCol:
    case Pattern::RowCol: return 1;
    default: return -1;
  }
}

// Whether expression `e` reads the value of `axis` anywhere in it.
bool reads_axis(const Plan& P, ExprId e, AxisRole axis) {
  if (e == kNoExpr) return false;
  const Expr& x = P.expr(e);
  if (x.kind == ExprKind::Axis && x.index == int(axis)) return true;
  if (reads_axis(P, x.a, axis) || reads_axis(P, x.b, axis) || reads_axis(P, x.c, axis)) return true;
  return std::any_of(x.args.begin(), x.args.end(), [&](ExprId a) { return reads_axis(P, a, axis); });
}

bool is_axis(const Plan& P, ExprId e, AxisRole axis) {
  return e != kNoExpr && P.expr(e).kind == ExprKind::Axis && P.expr(e).index == int(axis);
}

// Whether any statement reads the axis value other than as a whole emitted column (those are
// recorded in `columns`, per list).
bool statements_read_axis(const Plan& P, const std::vector<Stmt>& stmts, AxisRole axis,
                          std::vector<std::vector<int>>& columns) {
  bool any = false;
  for (const Stmt& s : stmts) {
    if (s.kind == StmtKind::Emit) {
      for (size_t c = 0; c < s.columns.size(); ++c) {
        if (is_axis(P, s.columns[c], axis))
          columns[size_t(s.target)].push_back(int(c));
        else
          any = any || reads_axis(P, s.columns[c], axis);
      }
    }
    if (s.kind == StmtKind::Store)  // computed output indices
      for (ExprId k : s.columns) any = any || reads_axis(P, k, axis);
    any = any || reads_axis(P, s.value, axis) || reads_axis(P, s.cond, axis);
    any = statements_read_axis(P, s.body, axis, columns) || any;
  }
  return any;
}

// Why `axis` cannot split into blocks ("" when it can); fills the operand dimensions.
std::string axis_obstacle(const Plan& P, AxisRole axis, std::vector<int>& operand_dim,
                          std::vector<std::vector<int>>& columns) {
  const std::string a = P.axis(axis).name;
  std::string why;
  if (P.axis(axis).has_range)
    why = "axis " + a + " has a range of its own ([" + P.axis(axis).begin.text + ", " + P.axis(axis).end.text + "))";
  columns.assign(P.lists.size(), {});
  // (Both statement lists are walked: each records its emitted axis columns.)
  const bool inner = statements_read_axis(P, P.inner, axis, columns);
  const bool outer = statements_read_axis(P, P.outer, axis, columns);
  bool reads = inner || outer || reads_axis(P, P.when.mask, axis);
  for (const ListOutput& l : P.lists) reads = reads || reads_axis(P, l.key, axis);
  if (why.empty() && reads)
    why = "the query reads the value of " + a + " (a block's " + a + " starts at 0), other than as a list column";
  operand_dim.assign(P.operands.size(), -1);
  const int batch = P.batched ? 1 : 0;
  for (size_t o = 0; o < P.operands.size(); ++o) {
    const Operand& op = P.operands[o];
    int dim = -2;  // not seen yet
    bool mixed = false;
    for (int acc : op.accesses) {
      const int d = pattern_dim(P.accesses[size_t(acc)].pattern, axis);
      if (dim != -2 && d != dim) mixed = true;
      dim = d;
    }
    if (mixed) {
      if (why.empty())
        why = op.name + " is read both along " + a + " and otherwise (a self-join): a block would need it split and whole";
      continue;
    }
    operand_dim[o] = dim < 0 ? -1 : dim + batch;
  }
  return why;
}

// Strides (elements) of a C-order shape.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

// Copies `in` into `out` (every dimension at least as long), at `at` along dimension `dim`
// (-1: at the origin).
void place(NDArray& out, const NDArray& in, int dim, int64_t at) {
  const size_t e = dtype_size(in.dtype), nd = in.shape.size();
  if (nd == 0) {
    std::memcpy(out.data.data(), in.data.data(), e);
    return;
  }
  const std::vector<int64_t> ost = strides_of(out.shape);
  const int64_t inner = in.shape.back();
  int64_t rows = 1;
  for (size_t k = 0; k + 1 < nd; ++k) rows *= in.shape[k];
  if (inner == 0 || rows == 0) return;
  std::vector<int64_t> idx(nd - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = dim == int(nd) - 1 ? at : 0;
    for (size_t k = 0; k + 1 < nd; ++k) off += (idx[k] + (int(k) == dim ? at : 0)) * ost[k];
    std::memcpy(out.data.data() + size_t(off) * e, in.data.data() + size_t(r * inner) * e, size_t(inner) * e);
    for (size_t k = nd - 1; k-- > 0;) {
      if (++idx[k] < in.shape[k]) break;
      idx[k] = 0;
    }
  }
}

NDArray identity_array(DType t, const std::vector<int64_t>& shape, const DenseOutput& d) {
  NDArray a = NDArray::zeros(t, shape);
  cpu::fill_identity(a, d.op, d.type);
  return a;
}

NDArray merge_dense(const DenseOutput& spec, int dim, std::vector<Results>& blocks, size_t d) {
  const NDArray& first = blocks[0].dense[d];
  std::vector<int64_t> shape = first.shape;
  for (const Results& b : blocks) {
    const NDArray& a = b.dense[d];
    if (a.shape.size() != shape.size() || a.dtype != first.dtype)
      throw_internal_error("merge_blocks: the blocks' " + spec.name + " differ in rank or type");
    for (size_t k = 0; k < shape.size(); ++k) shape[k] = int(k) == dim ? 0 : std::max(shape[k], a.shape[k]);
  }
  if (dim >= 0)
    for (const Results& b : blocks) shape[size_t(dim)] += b.dense[d].shape[size_t(dim)];
  if (dim < 0 && std::all_of(blocks.begin(), blocks.end(), [&](const Results& b) { return b.dense[d].shape == shape; })) {
    NDArray out = std::move(blocks[0].dense[d]);
    out.data.own();  // (a view is never written)
    for (size_t p = 1; p < blocks.size(); ++p) cpu::merge_partial(out, blocks[p].dense[d].data.data(), spec.op, spec.type);
    return out;
  }
  NDArray out = identity_array(first.dtype, shape, spec);
  int64_t at = 0;
  for (Results& b : blocks) {
    const NDArray& a = b.dense[d];
    if (dim >= 0) {
      place(out, a, dim, at);
      at += a.shape[size_t(dim)];
    } else {
      NDArray padded = identity_array(a.dtype, shape, spec);
      place(padded, a, -1, 0);
      cpu::merge_partial(out, padded.data.data(), spec.op, spec.type);
    }
    b.dense[d] = NDArray{};
  }
  return out;
}

void shift_column(Column& c, int64_t by, const std::string& list) {
  if (by == 0) return;
  if (c.dtype != DType::I32) throw_internal_error("to_whole_coordinates: column " + c.name + " of " + list + " is not i32");
  const size_t n = c.data.size() / sizeof(int32_t);
  for (size_t r = 0; r < n; ++r) {
    int32_t v;
    std::memcpy(&v, c.data.data() + r * sizeof v, sizeof v);
    const int64_t w = int64_t(v) + by;
    if (w > std::numeric_limits<int32_t>::max())
      throw_data_error(list, "a coordinate beyond the i32 range (" + std::to_string(w) + ")");
    v = int32_t(w);
    std::memcpy(c.data.data() + r * sizeof v, &v, sizeof v);
  }
}

}  // namespace

BlockLayout block_layout(const Plan& P) {
  BlockLayout L;
  L.row_why = axis_obstacle(P, AxisRole::Row, L.operand_row_dim, L.list_row_columns);
  L.col_why = axis_obstacle(P, AxisRole::Col, L.operand_col_dim, L.list_col_columns);
  L.row_splits = L.row_why.empty();
  L.col_splits = L.col_why.empty();
  for (const DenseOutput& d : P.dense) {
    L.dense_row_dim.push_back(output_axis_dim(P, d, AxisRole::Row));
    L.dense_col_dim.push_back(output_axis_dim(P, d, AxisRole::Col));
    L.dense_axes_only.push_back(
        std::all_of(d.index.begin(), d.index.end(), [](const OutIndex& x) { return x.kind == OutIndex::Axis; }));
  }
  return L;
}

void to_whole_coordinates(const Plan& P, const BlockLayout& L, Results& block, int64_t row0, int64_t col0) {
  if (block.lists.size() != P.lists.size()) throw_internal_error("to_whole_coordinates: one table per list");
  for (size_t l = 0; l < P.lists.size(); ++l) {
    Table& t = block.lists[l];
    for (int c : L.list_row_columns[l])
      if (size_t(c) < t.columns.size()) shift_column(t.columns[size_t(c)], row0, P.lists[l].name);
    for (int c : L.list_col_columns[l])
      if (size_t(c) < t.columns.size()) shift_column(t.columns[size_t(c)], col0, P.lists[l].name);
  }
}

Results merge_blocks(const Plan& P, const BlockLayout& L, const std::vector<int64_t>& limits, AxisRole axis,
                     std::vector<Results>&& blocks, const std::vector<bool>& present) {
  if (blocks.empty()) throw_internal_error("merge_blocks without blocks");
  if (limits.size() != P.lists.size()) throw_internal_error("merge_blocks: one limit per list");
  for (const Results& b : blocks)
    if (b.dense.size() != P.dense.size() || b.lists.size() != P.lists.size())
      throw_internal_error(std::string("merge_blocks: a block along ") + letter(axis) + " without every output");
  Results out;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    if (!present.empty() && !present[d]) {
      out.dense.emplace_back();
      continue;
    }
    const int dim = axis == AxisRole::Row ? L.dense_row_dim[d] : L.dense_col_dim[d];
    out.dense.push_back(merge_dense(P.dense[d], dim, blocks, d));
  }
  for (size_t l = 0; l < P.lists.size(); ++l) {
    const ListOutput& spec = P.lists[l];
    const bool disjoint = (spec.per == PerGroup::Row && axis == AxisRole::Row) ||
                          (spec.per == PerGroup::Col && axis == AxisRole::Col);
    out.lists.push_back(merge_list(P, l, limits[l], blocks, disjoint));
  }
  return out;
}

}  // namespace gamut
