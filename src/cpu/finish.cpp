// Finishing steps on the host: each step's value compiled to the CPU engine's lane program
// (compile_finish) and run over the step's elements, the last index as the lanes.
#include "cpu/finish.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "cpu/program.h"

namespace gamut {

namespace {

std::string place(const Plan& plan, Span s) {
  return plan.source_name + ":" + std::to_string(s.line) + ":" + std::to_string(s.col);
}

// sum(OUT): integers (and bool) in i64, wrapping as every integer sum does; floats in f64, in
// element order, then rounded once to the output's type.
Scalar sum_of(const NDArray& a, CType t) {
  const int64_t n = a.size();
  if (is_integer(t)) {
    uint64_t s = 0;
    for (int64_t e = 0; e < n; ++e) s += uint64_t(a.get_i64(e));
    return Scalar::of_int(CType::I64, int64_t(s));
  }
  double s = 0;
  for (int64_t e = 0; e < n; ++e) s += a.get_f64(e);
  return convert_scalar(Scalar::of_float(CType::F64, s), t);
}

std::vector<int64_t> c_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

}  // namespace

std::vector<NDArray> run_finish(const Plan& plan, const std::vector<Scalar>& params,
                                const std::vector<const NDArray*>& dense) {
  std::vector<NDArray> done;
  done.reserve(plan.finish.size());
  Instance inst;
  inst.plan = &plan;
  inst.params = params;
  for (size_t s = 0; s < plan.finish.size(); ++s) {
    const FinishStep& step = plan.finish[s];
    const size_t rank = step.index.size();
    if (rank > 3) throw_internal_error("finishing step " + step.name + " has more than 3 indices");
    // Each index's extent: that of every output dimension it reads.
    std::vector<int64_t> extent(rank, -1);
    std::vector<std::string> seen(rank);
    std::vector<cpu::FinishRead> reads(plan.output_reads.size());
    for (size_t r = 0; r < plan.output_reads.size(); ++r) {
      const OutputRead& rd = plan.output_reads[r];
      if (rd.step != int(s)) continue;
      const NDArray& a = rd.finished ? done[size_t(rd.output)] : *dense[size_t(rd.output)];
      const std::string& name = rd.finished ? plan.finish[size_t(rd.output)].name : plan.dense[size_t(rd.output)].name;
      const CType t = rd.finished ? plan.finish[size_t(rd.output)].type : plan.dense[size_t(rd.output)].type;
      if (rd.sum) {
        reads[r].sum = sum_of(a, t);
        continue;
      }
      if (a.shape.size() != rd.dims.size())
        throw_internal_error("output " + name + " has " + std::to_string(a.shape.size()) + " dimensions, read with " +
                             std::to_string(rd.dims.size()));
      const std::vector<int64_t> st = c_strides(a.shape);
      cpu::FinishRead& f = reads[r];
      f.data = a.data.data();
      f.dtype = a.dtype;
      for (size_t d = 0; d < rd.dims.size(); ++d) {
        const size_t x = size_t(rd.dims[d]);
        const std::string here =
            name + " (dimension " + std::to_string(d) + ", extent " + std::to_string(a.shape[d]) + ")";
        if (extent[x] < 0) {
          extent[x] = a.shape[d];
          seen[x] = here;
        } else if (extent[x] != a.shape[d]) {
          throw_data_error(step.name, place(plan, rd.span) + ": index '" + step.index[x] + "' runs over " + seen[x] +
                                          " and " + here + "; give the outputs one extent (--dim / dims=)");
        }
        // The step's last index is the lanes (j), the one before the rows (i), the first of three b.
        const size_t role = rank - 1 - x;
        (role == 0 ? f.st.j : role == 1 ? f.st.i : f.st.b) += st[d];
      }
    }
    for (size_t x = 0; x < rank; ++x)
      if (extent[x] > std::numeric_limits<int32_t>::max())
        throw_resource_error("finishing step " + step.name + ": index '" + step.index[x] + "' runs over " +
                             std::to_string(extent[x]) + " elements, more than 2^31 - 1");
    NDArray out;
    out.dtype = storage_type_of(step.type);
    out.shape = extent;
    const int64_t n = out.size();
    const size_t width = dtype_size(out.dtype);
    out.data = std::vector<std::byte>(size_t(n) * width);
    int value = -1;
    const cpu::Module mod = cpu::compile_finish(inst, step, reads, &value);
    cpu::Ctx c(mod);
    const int64_t nb = rank >= 3 ? extent[rank - 3] : 1, ni = rank >= 2 ? extent[rank - 2] : 1;
    const int64_t nj = rank >= 1 ? extent[rank - 1] : 1;
    std::vector<int32_t> lanes(static_cast<size_t>(cpu::kLanes));
    std::byte* to = out.data.data();
    const bool uniform = mod.slots[size_t(value)].uniform;
    for (int64_t b = 0; b < nb; ++b) {
      c.set_batch(int32_t(b));
      for (int64_t i = 0; i < ni; ++i) {
        c.set_row(int32_t(i));
        for (int64_t j0 = 0; j0 < nj; j0 += cpu::kLanes) {
          const int count = int(std::min<int64_t>(cpu::kLanes, nj - j0));
          for (int l = 0; l < count; ++l) lanes[size_t(l)] = int32_t(j0 + l);
          c.set_lanes(lanes.data(), count, true);
          cpu::run_steps(c, mod.outer);
          const std::byte* v = static_cast<const std::byte*>(c.ptr[size_t(value)]);
          std::byte* at = to + size_t(((b * ni) + i) * nj + j0) * width;
          if (uniform)
            for (int l = 0; l < count; ++l) std::memcpy(at + size_t(l) * width, v, width);
          else
            std::memcpy(at, v, size_t(count) * width);
        }
      }
    }
    done.push_back(std::move(out));
  }
  return done;
}

}  // namespace gamut
