// gamut._gamut.Blocks: the library's blocks (src/partition/blocks.h) for Python task schedulers
// (gamut/dask.py). A Blocks is a query typed for its inputs' element types, with list
// provenance, as every block runs it (q.run(..., provenance=True)): its layout says which
// operands split along which dimension, and it moves block results to whole coordinates and
// merges them. Results go in and out as q(...) returns them, on the host (NumPy): a dense
// output as an array, a list as a dict of its columns (the hidden __key, __b, __i, __j too).
#include "blocks.h"

#include <gamut/gamut.h>
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstring>
#include <memory>

#include "arrays.h"
#include "cpu/finish.h"
#include "driver/pipeline.h"
#include "partition/blocks.h"
#include "partition/partition.h"
#include "rewrite/list_provenance.h"

namespace gamut::py {

namespace {

using namespace nb::literals;

[[noreturn]] void usage(const std::string& m) { throw Error(ExitCode::Usage, "usage error: " + m); }

class Blocks {
 public:
  Blocks(const Query& q, nb::dict dtypes) {
    TypeEnv env;
    for (auto [k, v] : dtypes) {
      const std::string name = nb::cast<std::string>(k), t = nb::cast<std::string>(v);
      const std::optional<DType> d = dtype_from_name(t);
      if (!d) usage(name + ": element type '" + t + "' is not one of bool u8 i8 i16 i32 i64 f16 bf16 f32 f64");
      env.inputs[name] = *d;
    }
    plan_ = with_list_provenance(plan_with_rewrites(Source{q.info().name, q.text()}, env));
    layout_ = block_layout(plan_);
  }

  nb::dict layout() const {
    nb::dict out, operands, dense, lists;
    out["row_splits"] = layout_.row_splits;
    out["col_splits"] = layout_.col_splits;
    out["row_why"] = layout_.row_why;
    out["col_why"] = layout_.col_why;
    out["batched"] = plan_.batched;
    for (size_t o = 0; o < plan_.operands.size(); ++o)
      operands[plan_.operands[o].name.c_str()] = nb::make_tuple(layout_.operand_row_dim[o], layout_.operand_col_dim[o]);
    for (size_t d = 0; d < plan_.dense.size(); ++d) {
      nb::list axes;  // per dimension "b", "i" or "j", where every dimension is an axis
      if (layout_.dense_axes_only[d]) {
        const bool has_b = std::any_of(plan_.dense[d].index.begin(), plan_.dense[d].index.end(),
                                       [](const OutIndex& x) { return x.axis == AxisRole::Batch; });
        if (plan_.batched && !has_b) axes.append("b");
        for (const OutIndex& x : plan_.dense[d].index)
          axes.append(x.axis == AxisRole::Row ? "i" : x.axis == AxisRole::Col ? "j" : "b");
      }
      nb::dict one;
      one["row_dim"] = layout_.dense_row_dim[d];
      one["col_dim"] = layout_.dense_col_dim[d];
      one["axes"] = layout_.dense_axes_only[d] ? nb::object(axes) : nb::none();
      one["dtype"] = std::string(dtype_name(storage_type_of(plan_.dense[d].type)));
      one["project"] = plan_.dense[d].is_project();
      dense[plan_.dense[d].name.c_str()] = one;
    }
    nb::list finish;
    for (const FinishStep& f : plan_.finish) finish.append(f.name);
    out["finish"] = finish;
    for (const ListOutput& l : plan_.lists) {
      nb::list own;
      const size_t n = l.columns.size() - (has_provenance(l) ? size_t(kProvenanceColumnCount) : 0);
      for (size_t c = 0; c < n; ++c) own.append(l.columns[c].name);
      lists[l.name.c_str()] = own;
    }
    out["operands"] = operands;
    out["dense"] = dense;
    out["lists"] = lists;
    return out;
  }

  // N of each top/bottom list (0 for the others), from its literal or its bound parameter.
  std::vector<int64_t> limits(nb::dict scalars) const {
    std::vector<int64_t> out;
    for (const ListOutput& l : plan_.lists) {
      if (l.limit_param < 0) {
        out.push_back(l.limit);
        continue;
      }
      const std::string& p = plan_.params[size_t(l.limit_param)].name;
      if (!scalars.contains(p.c_str())) usage("parameter '" + p + "' (N of list " + l.name + ") is not bound");
      nb::handle v = scalars[p.c_str()];
      if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr()))
        throw Error(ExitCode::Data, "data error: " + p + ": N of list " + l.name + " must be an integer");
      out.push_back(nb::cast<int64_t>(v));
    }
    return out;
  }

  nb::dict to_whole(nb::dict outputs, int64_t row0, int64_t col0) const {
    std::vector<bool> present;
    Results r = results_of(outputs, present);
    to_whole_coordinates(plan_, layout_, r, row0, col0);
    return dict_of(std::move(r), present);
  }

  // `own_only` (the last merge of a run): lists without their hidden provenance columns.
  nb::dict merge(const std::string& axis, nb::list blocks, const std::vector<int64_t>& limits, bool own_only) const {
    if (axis != "i" && axis != "j") usage("merge along '" + axis + "': give 'i' or 'j'");
    if (nb::len(blocks) == 0) usage("merge of no blocks");
    if (limits.size() != plan_.lists.size()) usage("merge: give one limit per list");
    if (nb::dict out; merge_disjoint(axis == "i" ? AxisRole::Row : AxisRole::Col, blocks, own_only, out)) return out;
    std::vector<Results> rs;
    std::vector<bool> present;
    for (nb::handle b : blocks) {
      std::vector<bool> mine;
      rs.push_back(results_of(nb::borrow<nb::dict>(b), mine));
      if (!present.empty() && mine != present) usage("merge: the blocks hold different outputs");
      present = mine;
    }
    Results out;
    {
      nb::gil_scoped_release nogil;
      const std::vector<bool> dense(present.begin(), present.begin() + int64_t(plan_.dense.size()));
      out = merge_blocks(plan_, layout_, limits, axis == "i" ? AxisRole::Row : AxisRole::Col, std::move(rs), dense);
    }
    if (own_only)
      for (size_t l = 0; l < plan_.lists.size(); ++l)
        if (has_provenance(plan_.lists[l]))
          out.lists[l].columns.resize(plan_.lists[l].columns.size() - size_t(kProvenanceColumnCount));
    return dict_of(std::move(out), present);
  }

  // The merge where it is a concatenation read in place (concatenate_disjoint): an unbatched
  // plan, blocks holding lists only, each a top / bottom list whose groups this axis keeps whole
  // (kNN's `per i` along i). False (nothing done) otherwise. One copy of each column, not three:
  // kNN's blocks hold 10 rows a query point, megabytes a merge.
  bool merge_disjoint(AxisRole axis, nb::list blocks, bool own_only, nb::dict& out) const {
    if (plan_.batched) return false;
    const nb::dict first = nb::borrow<nb::dict>(blocks[0]);
    for (const DenseOutput& d : plan_.dense)
      if (first.contains(d.name.c_str())) return false;
    std::vector<size_t> lists;
    for (size_t l = 0; l < plan_.lists.size(); ++l) {
      const ListOutput& spec = plan_.lists[l];
      if (!first.contains(spec.name.c_str())) continue;
      const bool ranked = spec.mode == ListMode::Top || spec.mode == ListMode::Bottom;
      const bool disjoint =
          (spec.per == PerGroup::Row && axis == AxisRole::Row) || (spec.per == PerGroup::Col && axis == AxisRole::Col);
      if (!ranked || !disjoint) return false;
      lists.push_back(l);
    }
    if (lists.empty()) return false;
    std::vector<nb::ndarray<nb::ro>> keep;
    for (size_t l : lists) {
      const ListOutput& spec = plan_.lists[l];
      std::vector<std::vector<ColumnView>> parts;
      std::vector<int64_t> rows;
      for (nb::handle b : blocks) {
        const nb::dict block = nb::borrow<nb::dict>(b);
        if (!block.contains(spec.name.c_str())) usage("merge: the blocks hold different outputs");
        for (const DenseOutput& d : plan_.dense)
          if (block.contains(d.name.c_str())) usage("merge: the blocks hold different outputs");
        nb::handle cols = block[spec.name.c_str()];
        parts.emplace_back();
        for (const ListColumn& c : spec.columns) {
          const ArrayRef a = list_column(spec, c, cols, keep);
          if (parts.back().empty()) rows.push_back(a.shape[0]);
          if (a.shape[0] != rows.back()) usage(spec.name + ": columns of different lengths");
          parts.back().push_back(
              ColumnView{static_cast<const std::byte*>(a.data), size_t(a.shape[0]) * dtype_size(a.dtype)});
        }
      }
      // (The last merge copies only the list's own columns: kNN's are 3 of 7.)
      const size_t kept =
          own_only && has_provenance(spec) ? spec.columns.size() - size_t(kProvenanceColumnCount) : spec.columns.size();
      ListOutput shown = spec;
      shown.columns.resize(kept);
      for (auto& part : parts) part.resize(kept);
      Table t;
      {
        nb::gil_scoped_release nogil;
        t = concatenate_disjoint(shown, parts, rows);
      }
      out[spec.name.c_str()] = columns_dict(std::move(t));
    }
    return true;
  }

  // The finishing steps on the merged dense outputs, with the call's scalars as the parameters.
  nb::dict finish(nb::dict outputs, nb::dict scalars) const {
    nb::dict out;
    if (plan_.finish.empty()) return out;
    std::vector<NDArray> dense;
    dense.reserve(plan_.dense.size());
    for (const DenseOutput& d : plan_.dense) {
      if (!outputs.contains(d.name.c_str())) usage("finish: the merged outputs lack '" + d.name + "'");
      dense.push_back(host_copy(d.name, outputs[d.name.c_str()]));
      if (dense.back().dtype != storage_type_of(d.type)) usage("finish: " + d.name + " is not of the output's type");
    }
    std::vector<Scalar> params;
    for (const Param& p : plan_.params) {
      if (!scalars.contains(p.name.c_str())) usage("finish: parameter '" + p.name + "' is not bound");
      nb::handle v = scalars[p.name.c_str()];
      if (PyLong_Check(v.ptr()) && !PyBool_Check(v.ptr()))
        params.push_back(Scalar::of_int(CType::I64, nb::cast<int64_t>(v)));
      else if (PyFloat_Check(v.ptr()))
        params.push_back(Scalar::of_float(CType::F64, nb::cast<double>(v)));
      else
        throw Error(ExitCode::Data, "data error: " + p.name + ": a parameter is a Python int or float");
    }
    std::vector<const NDArray*> at;
    for (const NDArray& a : dense) at.push_back(&a);
    std::vector<NDArray> done;
    {
      nb::gil_scoped_release nogil;
      done = run_finish(plan_, params, at);
    }
    for (size_t f = 0; f < done.size(); ++f) out[plan_.finish[f].name.c_str()] = numpy_of(std::move(done[f]));
    return out;
  }

 private:
  // A block result as it lies on the host, C-contiguous (held by `keep`).
  static ArrayRef host_view(const std::string& name, nb::handle v, std::vector<nb::ndarray<nb::ro>>& keep) {
    const ArrayRef a = import_array(name, v, keep);
    if (a.device.is_gpu()) usage(name + ": block results are merged on the host (copy device arrays there first)");
    // (An empty block result has no layout to check: NumPy gives 0 rows stride 0.)
    int64_t expect = 1, elements = 1;
    for (int64_t n : a.shape) elements *= n;
    for (size_t d = a.shape.size(); d-- > 0 && elements > 0;) {
      if (a.shape[d] != 1 && a.strides[d] != expect) usage(name + ": a block result must be C-contiguous");
      expect *= a.shape[d];
    }
    return a;
  }

  static NDArray host_copy(const std::string& name, nb::handle v) {
    std::vector<nb::ndarray<nb::ro>> keep;
    const ArrayRef a = host_view(name, v, keep);
    NDArray x = NDArray::zeros(a.dtype, a.shape);
    if (x.nbytes()) std::memcpy(x.data.data(), a.data, x.nbytes());
    return x;
  }

  // Column c of list `spec` in a block's dict of columns `cols`, checked: there, on the host,
  // contiguous, of the column's type, one-dimensional.
  static ArrayRef list_column(const ListOutput& spec, const ListColumn& c, nb::handle cols,
                              std::vector<nb::ndarray<nb::ro>>& keep) {
    const std::string what = spec.name + "['" + c.name + "']";
    if (!nb::isinstance<nb::dict>(cols) || !nb::borrow<nb::dict>(cols).contains(c.name.c_str()))
      usage("block result without column " + what + " (blocks run with provenance=True)");
    const ArrayRef a = host_view(what, cols[c.name.c_str()], keep);
    if (a.dtype != storage_type_of(c.type) || a.shape.size() != 1) usage(what + ": not the column's type or rank");
    return a;
  }

  // `present`: per dense output, then per list, whether the dict has it (a caller merges some
  // outputs and places others itself).
  Results results_of(nb::dict outputs, std::vector<bool>& present) const {
    Results r;
    for (const DenseOutput& d : plan_.dense) {
      present.push_back(outputs.contains(d.name.c_str()));
      r.dense.push_back(present.back() ? host_copy(d.name, outputs[d.name.c_str()]) : NDArray{});
    }
    for (const ListOutput& l : plan_.lists) {
      Table t;
      if (!outputs.contains(l.name.c_str())) {  // (merged as an empty list, left out of the result)
        present.push_back(false);
        for (const ListColumn& c : l.columns) t.columns.push_back(Column{c.name, storage_type_of(c.type), {}});
        r.lists.push_back(std::move(t));
        continue;
      }
      present.push_back(true);
      nb::handle cols = outputs[l.name.c_str()];
      for (const ListColumn& c : l.columns) {
        std::vector<nb::ndarray<nb::ro>> keep;
        const ArrayRef a = list_column(l, c, cols, keep);
        if (t.columns.empty()) t.rows = a.shape[0];
        if (a.shape[0] != t.rows) usage(l.name + ": columns of different lengths");
        const auto* from = static_cast<const std::byte*>(a.data);
        t.columns.push_back(
            Column{c.name, a.dtype, std::vector<std::byte>(from, from + size_t(a.shape[0]) * dtype_size(a.dtype))});
      }
      r.lists.push_back(std::move(t));
    }
    return r;
  }

  static nb::object numpy_of(NDArray&& a) {
    auto held = std::make_shared<NDArray>(std::move(a));
    Array out;
    out.data = held->data.data();
    out.dtype = held->dtype;
    out.shape = held->shape;
    out.owner = held;
    return export_array(out, Framework::NumPy, nullptr);
  }

  nb::dict dict_of(Results&& r, const std::vector<bool>& present) const {
    nb::dict out;
    for (size_t d = 0; d < plan_.dense.size(); ++d)
      if (present[d]) out[plan_.dense[d].name.c_str()] = numpy_of(std::move(r.dense[d]));
    for (size_t l = 0; l < plan_.lists.size(); ++l) {
      if (!present[plan_.dense.size() + l]) continue;
      out[plan_.lists[l].name.c_str()] = columns_dict(std::move(r.lists[l]));
    }
    return out;
  }

  // A list's table as a dict of NumPy columns (each column's bytes moved, not copied).
  static nb::dict columns_dict(Table&& t) {
    nb::dict cols;
    for (Column& c : t.columns) {
      NDArray a;
      a.dtype = c.dtype;
      a.shape = {t.rows};
      a.data = Bytes(std::move(c.data));
      cols[c.name.c_str()] = numpy_of(std::move(a));
    }
    return cols;
  }

  Plan plan_;
  BlockLayout layout_;
};

}  // namespace

void register_blocks(nb::module_& m) {
  nb::class_<Blocks>(m, "Blocks", "A query split into blocks of its inputs (src/partition/blocks.h).")
      .def(nb::init<const Query&, nb::dict>(), "query"_a, "dtypes"_a)
      .def("layout", &Blocks::layout)
      .def("limits", &Blocks::limits, "scalars"_a)
      .def("to_whole", &Blocks::to_whole, "outputs"_a, "row0"_a, "col0"_a)
      .def("merge", &Blocks::merge, "axis"_a, "blocks"_a, "limits"_a, "own_only"_a = false)
      .def("finish", &Blocks::finish, "outputs"_a, "scalars"_a);
}

}  // namespace gamut::py
