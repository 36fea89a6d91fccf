#include "partition/partition.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "plan/list_rows.h"
#include "rewrite/list_provenance.h"
#include "semantics/list_order.h"
#include "semantics/store_ops.h"

namespace gamut {
namespace {

const char* axis_letter(AxisRole r) { return r == AxisRole::Row ? "i" : "j"; }

// The output's index as the engines lay it out: batched outputs without b take it first.
std::vector<OutIndex> laid_out_index(const Plan& plan, const DenseOutput& d) {
  std::vector<OutIndex> idx = d.index;
  const bool has_batch = std::any_of(
      idx.begin(), idx.end(), [](const OutIndex& x) { return x.kind == OutIndex::Axis && x.axis == AxisRole::Batch; });
  if (plan.batched && !has_batch) idx.insert(idx.begin(), OutIndex{OutIndex::Axis, AxisRole::Batch, -1});
  return idx;
}

// The dimension of output d that `axis` indexes, or -1.
int axis_dim(const Plan& plan, const DenseOutput& d, AxisRole axis) {
  const std::vector<OutIndex> idx = laid_out_index(plan, d);
  for (size_t k = 0; k < idx.size(); ++k)
    if (idx[k].kind == OutIndex::Axis && idx[k].axis == axis) return int(k);
  return -1;
}

// Why `axis` cannot be split, or "" when it can.
std::string cannot_split(const Instance& inst, AxisRole axis, int parts) {
  const Plan& P = *inst.plan;
  for (const DenseOutput& d : P.dense)
    if (d.is_project() && axis_dim(P, d, axis) < 0)
      return "output " + d.name + " is a projection that " + axis_letter(axis) +
             " does not index (its last writer would depend on the order of the parts)";
  if (inst.range(axis).size() < 2 || parts < 2)
    return std::string("axis ") + axis_letter(axis) + " is too short to split";
  return "";
}

std::vector<AxisRange> even_ranges(const AxisRange& r, int parts) {
  const int64_t n = r.size(), base = n / parts, extra = n % parts;
  std::vector<AxisRange> out;
  int64_t at = r.begin;
  for (int p = 0; p < parts; ++p) {
    const int64_t len = base + (p < extra ? 1 : 0);
    out.push_back({at, at + len});
    at += len;
  }
  return out;
}

void copy_slice(NDArray& into, const NDArray& from, const SliceBytes& s) {
  for (size_t r = 0; r < s.rows; ++r)
    std::memcpy(into.data.data() + s.offset + r * s.pitch, from.data.data() + s.offset + r * s.pitch, s.row_bytes);
}

void append_column(Column& into, const Column& from) {
  into.data.insert(into.data.end(), from.data.begin(), from.data.end());
}

std::vector<int32_t> int32_column(const Column& c) {
  std::vector<int32_t> v(c.data.size() / sizeof(int32_t));
  if (!v.empty()) std::memcpy(v.data(), c.data.data(), v.size() * sizeof(int32_t));
  return v;
}

// Whether list `spec`'s groups are whole in every part: `per i` lists split along i, `per j`
// along j. Each part's rows are then final already, in the spec's order of (b, group, key).
bool groups_disjoint(const ListOutput& spec, const Partition& part) {
  return (spec.per == PerGroup::Row && part.axis == AxisRole::Row) ||
         (spec.per == PerGroup::Col && part.axis == AxisRole::Col);
}

// The parts' final rows of a list whose groups are disjoint, in the spec's order without a sort:
// the groups of one batch b are ordered by the part ranges, so the result takes, for each b in
// turn, every part's run of rows of that b (each part's rows are ordered by b first). The hidden
// provenance columns (after the `own` columns) are dropped unless `spec` has them as its own.
Table concatenate_groups(const ListOutput& spec, size_t own, std::vector<Results>& parts, size_t l) {
  const size_t kept = spec.columns.size();
  Table out;
  for (size_t c = 0; c < kept; ++c) {
    out.columns.push_back(parts[0].lists[l].columns[c]);
    out.columns.back().data.clear();
  }
  std::vector<std::vector<int32_t>> batch;
  std::vector<int64_t> at(parts.size(), 0);
  for (Results& r : parts) {
    batch.push_back(int32_column(r.lists[l].columns[own + 1]));
    out.rows += r.lists[l].rows;
  }
  for (Column& c : out.columns) c.data.reserve(size_t(out.rows) * dtype_size(c.dtype));
  for (;;) {
    int32_t b = 0;
    bool any = false;
    for (size_t p = 0; p < parts.size(); ++p)
      if (at[p] < parts[p].lists[l].rows && (!any || batch[p][size_t(at[p])] < b)) {
        b = batch[p][size_t(at[p])];
        any = true;
      }
    if (!any) break;
    for (size_t p = 0; p < parts.size(); ++p) {
      int64_t end = at[p];
      while (end < parts[p].lists[l].rows && batch[p][size_t(end)] == b) ++end;
      for (size_t c = 0; c < kept; ++c) {
        const Column& from = parts[p].lists[l].columns[c];
        const size_t w = dtype_size(from.dtype);
        out.columns[c].data.insert(out.columns[c].data.end(), from.data.begin() + int64_t(size_t(at[p]) * w),
                                   from.data.begin() + int64_t(size_t(end) * w));
      }
      at[p] = end;
    }
  }
  for (Results& r : parts) r.lists[l] = Table{};
  return out;
}

}  // namespace

int output_axis_dim(const Plan& plan, const DenseOutput& d, AxisRole axis) { return axis_dim(plan, d, axis); }

SliceBytes projection_slice(const Plan& plan, size_t d, const std::vector<int64_t>& shape, const Partition& part,
                            int p) {
  const int dim = axis_dim(plan, plan.dense[d], part.axis);
  if (dim < 0) throw_internal_error("projection_slice: output " + plan.dense[d].name + " not indexed by the axis");
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < dim; ++k) outer *= shape[size_t(k)];
  for (size_t k = size_t(dim) + 1; k < shape.size(); ++k) inner *= shape[k];
  const size_t row = size_t(inner) * dtype_size(storage_type_of(plan.dense[d].type));
  const int64_t extent = shape[size_t(dim)];
  const AxisRange& r = part.ranges[size_t(p)];
  const int64_t b = std::min(r.begin, extent), e = std::min(r.end, extent);
  SliceBytes out;
  out.offset = size_t(b) * row;
  out.rows = e > b ? size_t(outer) : 0;
  out.row_bytes = size_t(e - b) * row;
  out.pitch = size_t(extent) * row;
  return out;
}

Partition choose_partition(const Instance& inst, int parts) {
  Partition out;
  const int64_t m = inst.row.size(), n = inst.col.size();
  const std::string row_no = cannot_split(inst, AxisRole::Row, parts);
  const std::string col_no = cannot_split(inst, AxisRole::Col, parts);
  const bool prefer_col = col_no.empty() && (n >= 4 * m || !row_no.empty());
  if (row_no.empty() && !prefer_col) {
    out.axis = AxisRole::Row;
  } else if (col_no.empty()) {
    out.axis = AxisRole::Col;
  } else {
    out.ranges = {inst.row};
    out.why = parts < 2 ? "one part asked" : row_no;
    return out;
  }
  const AxisRange& r = inst.range(out.axis);
  out.ranges = even_ranges(r, int(std::min<int64_t>(parts, r.size())));
  return out;
}

Instance part_instance(const Instance& inst, const Partition& part, int p, const Plan* part_plan) {
  Instance x = inst;
  x.plan = part_plan;
  (part.axis == AxisRole::Row ? x.row : x.col) = part.ranges[size_t(p)];
  return x;
}

Table concatenate_disjoint(const ListOutput& spec, const std::vector<std::vector<ColumnView>>& parts,
                           const std::vector<int64_t>& rows) {
  if (rows.size() != parts.size()) throw_internal_error("concatenate_disjoint: one row count per part");
  Table out;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (parts[p].size() != spec.columns.size())
      throw_internal_error("concatenate_disjoint: part without every column of " + spec.name);
    out.rows += rows[p];
  }
  for (size_t c = 0; c < spec.columns.size(); ++c) {
    Column col{spec.columns[c].name, storage_type_of(spec.columns[c].type), {}};
    const size_t width = dtype_size(col.dtype);
    col.data.reserve(size_t(out.rows) * width);
    for (size_t p = 0; p < parts.size(); ++p) {
      const ColumnView& v = parts[p][c];
      if (v.bytes != size_t(rows[p]) * width)
        throw_internal_error("concatenate_disjoint: column " + col.name + " of part " + std::to_string(p) +
                             " is not its rows long");
      if (v.bytes) col.data.insert(col.data.end(), v.data, v.data + v.bytes);
    }
    out.columns.push_back(std::move(col));
  }
  return out;
}

Table merge_list(const Plan& P, size_t l, int64_t limit, std::vector<Results>& parts, bool disjoint) {
  const ListOutput& spec = P.lists[l];
  const bool ranked = spec.mode == ListMode::Top || spec.mode == ListMode::Bottom;
  const CType key_type = ranked ? P.expr(spec.key).type : CType::I32;
  ListCandidates all = cpu::empty_candidates(spec, key_type);
  // A plan with list provenance keeps the hidden columns in the result (a merge of merges).
  const size_t kept = spec.columns.size();
  const size_t own = has_provenance(spec) ? kept - size_t(kProvenanceColumnCount) : kept;
  for (const Results& r : parts)
    if (r.lists.size() <= l || r.lists[l].columns.size() != own + (ranked ? size_t(kProvenanceColumnCount) : 0))
      throw_internal_error("merge_list: list " + spec.name + " without its provenance columns");
  if (ranked && disjoint) return concatenate_groups(spec, own, parts, l);
  for (Results& r : parts) {
    const Table& t = r.lists[l];
    if (!ranked && all.table.rows > 0) all.sorted_runs.push_back(all.table.rows);  // each part's rows are final
    for (size_t c = 0; c < kept; ++c) append_column(all.table.columns[c], t.columns[c]);
    if (ranked) {
      append_column(all.key, t.columns[own]);
      const std::vector<int32_t> b = int32_column(t.columns[own + 1]), i = int32_column(t.columns[own + 2]),
                                 j = int32_column(t.columns[own + 3]);
      all.b.insert(all.b.end(), b.begin(), b.end());
      all.i.insert(all.i.end(), i.begin(), i.end());
      all.j.insert(all.j.end(), j.begin(), j.end());
    } else {
      all.b.resize(all.b.size() + size_t(t.rows), 0);
      all.i.resize(all.i.size() + size_t(t.rows), 0);
      all.j.resize(all.j.size() + size_t(t.rows), 0);
    }
    all.table.rows += t.rows;
    r.lists[l] = Table{};  // its rows are in `all` now
  }
  return finalize_list(spec, limit, std::move(all));
}

Results merge_parts(const Instance& inst, const Partition& part, std::vector<Results>&& parts,
                    const std::vector<bool>* merged) {
  const Plan& P = *inst.plan;
  if (parts.size() != size_t(part.parts()) || parts.empty()) throw_internal_error("merge_parts: one result per part");
  Results out;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    NDArray whole = std::move(parts[0].dense[d]);
    const bool done = merged && d < merged->size() && (*merged)[d];
    for (size_t p = 1; p < parts.size() && !done; ++p) {
      const NDArray& mine = parts[p].dense[d];
      if (mine.shape != whole.shape || mine.dtype != whole.dtype)
        throw_internal_error("merge_parts: part shapes differ");
      if (P.dense[d].is_project())
        copy_slice(whole, mine, projection_slice(P, d, whole.shape, part, int(p)));
      else
        cpu::merge_partial(whole, mine.data.data(), P.dense[d].op, P.dense[d].type);
    }
    out.dense.push_back(std::move(whole));
  }
  for (size_t l = 0; l < P.lists.size(); ++l)
    out.lists.push_back(merge_list(P, l, inst.list_limits[l], parts, groups_disjoint(P.lists[l], part)));
  return out;
}

Results run_in_parts(const Instance& inst, int parts, const std::function<Results(const Instance&)>& run_part,
                     Partition* used) {
  Partition part = choose_partition(inst, parts);
  if (used) *used = part;
  if (part.parts() <= 1) return run_part(inst);
  const Plan part_plan = with_list_provenance(*inst.plan);
  std::vector<Results> results;
  for (int p = 0; p < part.parts(); ++p) results.push_back(run_part(part_instance(inst, part, p, &part_plan)));
  return merge_parts(inst, part, std::move(results));
}

std::string describe_partition(const Partition& part) {
  if (part.parts() <= 1) return "partition: one part (" + part.why + ")\n";
  std::string s = "partition: " + std::to_string(part.parts()) + " parts along " + axis_letter(part.axis) + " (";
  for (int p = 0; p < part.parts(); ++p) {
    if (p == 3 && part.parts() > 4) {
      s += ", ...";
      break;
    }
    s += (p ? ", " : "") + std::to_string(part.ranges[size_t(p)].begin) + ".." +
         std::to_string(part.ranges[size_t(p)].end);
  }
  return s + ")\n";
}

}  // namespace gamut
