#include "bind/bind.h"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "core/error.h"
#include "core/sizes.h"
#include "lang/diagnostics.h"

namespace gamut {

namespace {

std::string at(const Plan& p, Span s) {
  return " (" + p.source_name + ":" + std::to_string(s.line) + ":" + std::to_string(s.col) + ")";
}

// Which axis each dimension of an access pattern runs along (batch first when batched).
std::vector<AxisRole> dims_of(Pattern p, bool batched) {
  std::vector<AxisRole> d;
  if (batched) d.push_back(AxisRole::Batch);
  switch (p) {
    case Pattern::RowRed: d.insert(d.end(), {AxisRole::Row, AxisRole::Red}); break;
    case Pattern::RedRow: d.insert(d.end(), {AxisRole::Red, AxisRole::Row}); break;
    case Pattern::RedCol: d.insert(d.end(), {AxisRole::Red, AxisRole::Col}); break;
    case Pattern::ColRed: d.insert(d.end(), {AxisRole::Col, AxisRole::Red}); break;
    case Pattern::RowVec: d.push_back(AxisRole::Row); break;
    case Pattern::ColVec: d.push_back(AxisRole::Col); break;
    case Pattern::RedVec: d.push_back(AxisRole::Red); break;
    case Pattern::RowCol: d.insert(d.end(), {AxisRole::Row, AxisRole::Col}); break;
    case Pattern::ColRow: d.insert(d.end(), {AxisRole::Col, AxisRole::Row}); break;
  }
  return d;
}

// A bound parameter takes the type of each operation it is used in, as a literal does
// (docs/semantics.md); a value that would overflow there is an error, as the same literal in the
// query is (sema/typing.cpp, check_literal), not a silent inf or a wrapped integer.
void check_params_fit(const Plan& plan, const std::vector<Scalar>& params) {
  for (const Expr& e : plan.exprs) {
    if (e.kind != ExprKind::Param || e.index < 0 || size_t(e.index) >= params.size()) continue;
    const Scalar& v = params[size_t(e.index)];
    const std::string& name = plan.params[size_t(e.index)].name;
    const std::string where = at(plan, e.span);   // " (FILE:LINE:COL)"
    const std::string used = ", the type it takes at " + where.substr(2, where.size() - 3);
    if (e.type == CType::F32 && is_float(v.type) && std::isfinite(v.f) && std::isinf(float(v.f))) {
      char buf[32];
      const auto r = std::to_chars(buf, buf + sizeof buf, v.f);
      throw_data_error(name, std::string(buf, r.ptr) + " is too large for f32" + used + " (it would become inf)");
    }
    if (e.type == CType::I32 && !is_float(v.type) &&
        (v.i < std::numeric_limits<int32_t>::min() || v.i > std::numeric_limits<int32_t>::max()))
      throw_data_error(name, std::to_string(v.i) + " does not fit in i32" + used);
  }
}

}  // namespace

TypeEnv type_env(const Bindings& b) {
  TypeEnv env;
  for (const auto& [n, a] : b.arrays) env.inputs[n] = a.dtype;
  return env;
}

Scalar parse_scalar(const std::string& name, const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s, &end, 10);
  if (!text.empty() && *end == '\0' && errno == 0) return Scalar::of_int(CType::I64, v);
  errno = 0;
  double d = std::strtod(s, &end);
  if (text.empty() || *end != '\0') {
    if (text == "inf" || text == "-inf") return Scalar::of_float(CType::F64, text[0] == '-' ? -INFINITY : INFINITY);
    throw_data_error(name, "'" + text + "' is not a number (bind arrays as " + name + "=FILE.npy)");
  }
  // As for a literal in the query: a number past f64's range is an error, not infinity.
  if (errno == ERANGE && std::isinf(d))
    throw_data_error(name, "'" + text + "' is out of the range of f64 (write inf for infinity)");
  return Scalar::of_float(CType::F64, d);
}

Instance bind(const Plan& plan, const Bindings& b) {
  Instance inst;
  inst.plan = &plan;
  // Every binding must name something the query has.
  std::set<std::string> known;
  for (const Operand& o : plan.operands) known.insert(o.name);
  for (const Param& p : plan.params) known.insert(p.name);
  for (const auto& [n, _] : b.arrays)
    if (!known.count(n)) throw_usage_error("binding '" + n + "' matches no input or parameter of the query");
  for (const auto& [n, _] : b.scalars)
    if (!known.count(n)) throw_usage_error("binding '" + n + "' matches no input or parameter of the query");
  for (const auto& [n, _] : b.dims) {
    bool ok = false;
    std::vector<std::string> aggregates;
    for (const DenseOutput& d : plan.dense)
      if (!d.is_project()) {
        ok |= d.name == n;
        aggregates.push_back(d.name);
      }
    if (!ok) {
      const std::string near = closest_name(n, aggregates);
      throw_usage_error("--dim " + n + ": the query has no aggregate output named '" + n + "'" +
                        (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
  }

  // Inputs: bound, with the right number of dimensions.
  for (const Operand& o : plan.operands) {
    auto it = b.arrays.find(o.name);
    if (it == b.arrays.end()) {
      if (b.scalars.count(o.name)) throw_data_error(o.name, "is an array in the query" + at(plan, o.span) + "; bind a .npy file");
      throw_data_error(o.name, "input array is not bound; pass " + o.name + "=FILE.npy" + at(plan, o.span));
    }
    const NDArray& a = it->second;
    int want = pattern_rank(plan.accesses[size_t(o.accesses[0])].pattern) + (plan.batched ? 1 : 0);
    if (int(a.shape.size()) != want)
      throw_data_error(o.name, "expected " + std::to_string(want) + " dimensions, got shape " + shape_text(a.shape));
    inst.inputs.push_back(&a);
  }

  // Scalar parameters.
  inst.params.resize(plan.params.size());
  std::vector<bool> bound(plan.params.size(), false);
  for (size_t p = 0; p < plan.params.size(); ++p) {
    const Param& q = plan.params[p];
    if (b.arrays.count(q.name)) throw_data_error(q.name, "is a scalar parameter in the query" + at(plan, q.span) + "; bind a number, " + q.name + "=VALUE");
    auto it = b.scalars.find(q.name);
    if (it == b.scalars.end()) continue;
    Scalar v = parse_scalar(q.name, it->second);
    if (q.integer_only && v.type != CType::I64)
      throw_data_error(q.name, "must be an integer (it is used as one at " + at(plan, q.span).substr(2, at(plan, q.span).size() - 3) + "), got '" + it->second + "'");
    inst.params[p] = v;
    bound[p] = true;
  }

  // Axis extents: every operand dimension along an axis.
  struct Seen { std::string operand; int64_t extent; };
  std::map<AxisRole, std::vector<Seen>> seen;
  for (size_t o = 0; o < plan.operands.size(); ++o) {
    const Operand& op = plan.operands[o];
    for (int ai : op.accesses) {
      std::vector<AxisRole> d = dims_of(plan.accesses[size_t(ai)].pattern, plan.batched);
      for (size_t k = 0; k < d.size(); ++k) seen[d[k]].push_back({op.name, inst.inputs[o]->shape[k]});
    }
  }
  auto resolve = [&](AxisRole role) -> AxisRange {
    const Axis& ax = plan.axis(role);
    const auto& s = seen[role];
    std::optional<Seen> inferred;
    for (const Seen& x : s) {
      if (!inferred) inferred = x;
      else if (!ax.has_range && x.extent != inferred->extent)
        throw_data_error(x.operand, "extent " + std::to_string(x.extent) + " along axis '" + ax.name + "' disagrees with " +
                                        inferred->operand + "'s extent " + std::to_string(inferred->extent));
    }
    AxisRange r;
    if (!ax.has_range) {
      if (!inferred)
        throw_data_error(ax.name, "cannot infer the range of axis '" + ax.name + "': no input is indexed by it; give it a range" + at(plan, ax.span));
      r.begin = 0;
      r.end = inferred->extent;
    } else {
      auto value = [&](const Bound& bd) -> int64_t {
        if (bd.param < 0) return bd.offset;
        size_t p = size_t(bd.param);
        if (!bound[p]) {
          // An unbound range symbol stands for the extent of the operands along this axis.
          if (!inferred)
            throw_data_error(plan.params[p].name, "range symbol is not bound and no input is indexed by axis '" + ax.name + "'; pass " +
                                                      plan.params[p].name + "=VALUE");
          int64_t smallest = inferred->extent;
          for (const Seen& x : s) smallest = std::min(smallest, x.extent);
          inst.params[p] = Scalar::of_int(CType::I64, smallest);
          bound[p] = true;
        }
        int64_t v;
        if (__builtin_mul_overflow(bd.scale, inst.params[p].i, &v) || __builtin_add_overflow(v, bd.offset, &v))
          throw_data_error(plan.params[p].name, "range bound " + bd.text + " of axis '" + ax.name + "' overflows 64 bits with " +
                                                    plan.params[p].name + " = " + std::to_string(inst.params[p].i));
        return v;
      };
      r.begin = value(ax.begin);
      r.end = value(ax.end);
      if (r.begin < 0 || r.end < r.begin)
        throw_data_error(ax.name, "range [" + std::to_string(r.begin) + ", " + std::to_string(r.end) + ") of axis '" + ax.name + "' is invalid");
      for (const Seen& x : s)
        if (x.extent < r.end)
          throw_data_error(x.operand, "extent " + std::to_string(x.extent) + " along axis '" + ax.name + "' is smaller than its range end " +
                                          std::to_string(r.end));
    }
    // Both engines index an axis with 32-bit integers.
    if (r.end > kMaxAxisEnd) {
      const Bound& e = ax.end;
      std::string who = !ax.has_range && inferred ? inferred->operand : e.param >= 0 ? plan.params[size_t(e.param)].name : ax.name;
      throw_data_error(who, "axis '" + ax.name + "' would run to " + std::to_string(r.end) + "; gamut supports axis ranges up to " +
                                std::to_string(kMaxAxisEnd) + " (2^31 - 2^16)");
    }
    return r;
  };
  inst.row = resolve(AxisRole::Row);
  inst.col = resolve(AxisRole::Col);
  inst.red = resolve(AxisRole::Red);
  if (plan.batched) {
    AxisRange br = resolve(AxisRole::Batch);
    if (br.begin != 0) throw_data_error(plan.axis(AxisRole::Batch).name, "a batch range must start at 0");
    inst.batch = br.end;
  }
  for (size_t p = 0; p < plan.params.size(); ++p)
    if (!bound[p]) {
      const Param& q = plan.params[p];
      throw_data_error(q.name, "parameter is not bound; pass " + q.name + "=VALUE" + at(plan, q.span));
    }
  check_params_fit(plan, inst.params);

  // Dense output shapes; every index value checked before anything runs.
  for (const DenseOutput& d : plan.dense) {
    std::vector<int64_t> shape;
    const std::vector<int64_t>* given = nullptr;
    if (auto it = b.dims.find(d.name); it != b.dims.end()) given = &it->second;
    size_t nb = plan.batched ? 1 : 0;
    if (given && given->size() != d.index.size() && given->size() + nb != d.index.size())
      throw_data_error(d.name, "--dim gives " + std::to_string(given->size()) + " extents but the output has " +
                                   std::to_string(d.index.size() - nb));
    for (size_t k = 0; k < d.index.size(); ++k) {
      const OutIndex& x = d.index[k];
      std::optional<int64_t> dim;
      if (given) {
        size_t g = given->size() == d.index.size() ? k : k - nb;
        if (k >= nb || given->size() == d.index.size()) dim = (*given)[g];
        if (dim && *dim < 0) throw_data_error(d.name, "--dim extents must not be negative");
      }
      if (x.kind == OutIndex::Axis) {
        int64_t need = x.axis == AxisRole::Batch ? inst.batch : inst.range(x.axis).end;
        if (dim && *dim < need)
          throw_data_error(d.name, "--dim extent " + std::to_string(*dim) + " is smaller than axis end " + std::to_string(need));
        shape.push_back(dim ? *dim : need);
        continue;
      }
      if (x.kind == OutIndex::Key) {
        // No data holds a computed index before the run: its extent is given.
        if (!dim)
          throw_data_error(d.name, "an index computed in the query" + at(plan, d.span) +
                                       " has no extent before the run; give it: --dim " + d.name +
                                       "=D (Python: dims={\"" + d.name + "\": [D]}, C++: Inputs::extent)");
        shape.push_back(*dim);
        continue;
      }
      const Access& acc = plan.accesses[size_t(x.access)];
      const Operand& g = plan.operands[size_t(acc.operand)];
      const NDArray& ga = *inst.inputs[size_t(acc.operand)];
      if (is_float(ga.dtype))
        throw_data_error(g.name, "an index vector must hold integers, got " + std::string(dtype_name(ga.dtype)));
      const AxisRange& r = inst.range(x.axis);
      int64_t len = ga.shape.back();
      int64_t maxv = -1;
      // One typed pass for the range; the per-element loop below only names the first bad value.
      bool bad = false;
      for (int64_t bi = 0; bi < inst.batch && r.size() > 0; ++bi) {
        int64_t lo = 0, hi = 0;
        ga.i64_range(bi * len + r.begin, r.size(), lo, hi);
        bad = bad || lo < 0 || (dim && hi >= *dim);
        maxv = std::max(maxv, hi);
      }
      for (int64_t bi = 0; bad && bi < inst.batch; ++bi)
        for (int64_t v = r.begin; v < r.end; ++v) {
          int64_t e = bi * len + v, val = ga.get_i64(e);
          if (val < 0)
            throw_data_error(g.name, "index value " + std::to_string(val) + " at position " + std::to_string(v) + " is negative");
          if (dim && val >= *dim)
            throw_data_error(g.name, "index value " + std::to_string(val) + " at position " + std::to_string(v) +
                                         " is not below the extent " + std::to_string(*dim) + " of output " + d.name);
        }
      if (!dim && maxv == INT64_MAX)
        throw_data_error(g.name, "index value " + std::to_string(maxv) + " leaves no room for an output extent (it is the largest int64)");
      shape.push_back(dim ? *dim : maxv + 1);
    }
    // A scalar aggregate in a batched query (`total += e`) holds one value per batch instance:
    // both engines address it with b first (spec section 1: with batch every output takes b).
    if (plan.batched && d.index.empty()) shape.insert(shape.begin(), inst.batch);
    // The output is allocated from this shape: its byte count must fit before anything multiplies it.
    const DType st = storage_type_of(d.type);
    if (!shape_bytes(shape, dtype_size(st)))
      throw_data_error(d.name, "output shape " + shape_text(shape) + " of " + std::string(dtype_name(st)) +
                                   " needs more than 2^63-1 bytes" + (given ? " (extents from --dim)" : ""));
    inst.dense_shapes.push_back(shape);
  }
  for (const ListOutput& l : plan.lists) {
    int64_t n = 0;
    if (l.mode == ListMode::Top || l.mode == ListMode::Bottom) {
      n = l.limit_param >= 0 ? inst.params[size_t(l.limit_param)].i : l.limit;
      if (n < 0) throw_data_error(l.limit_param >= 0 ? plan.params[size_t(l.limit_param)].name : l.name, "N of top/bottom must not be negative");
    }
    inst.list_limits.push_back(n);
  }
  return inst;
}

}  // namespace gamut
