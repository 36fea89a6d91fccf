#include "cli/bindings.h"

#include "core/error.h"
#include "data/npy.h"
#include "driver/pipeline.h"   // the NAME=VALUE and --dim syntax the tools share
#include "lang/diagnostics.h"

namespace gamut::cli {

namespace {

const BindingInfo* find(const std::vector<BindingInfo>& v, const std::string& name) {
  for (const BindingInfo& b : v)
    if (b.name == name) return &b;
  return nullptr;
}

}  // namespace

ArrayRef host_view(const NDArray& a) { return ArrayRef::host(a.data.data(), a.dtype, a.shape); }

CliInputs read_inputs(const QueryArgs& q, const Query& query) {
  const QueryInfo& info = query.info();
  CliInputs in;
  if (!q.file.empty()) in.files.push_back(q.file);
  std::vector<std::string> all;   // the names a mistyped one is compared with
  for (const BindingInfo& p : info.param_info) all.push_back(p.name);
  for (const BindingInfo& a : info.input_info) all.push_back(a.name);
  for (const std::string& a : q.bindings) {
    size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage_error("binding '" + a + "' is not NAME=VALUE");
    std::string name = a.substr(0, eq), value = a.substr(eq + 1);
    if (in.arrays.count(name) || in.inputs.scalars.count(name)) throw_usage_error("'" + name + "' is bound twice");
    if (const BindingInfo* p = find(info.param_info, name)) {
      if (!looks_numeric(value))
        throw_data_error(name, "'" + value + "' is not a number (" + name + " is a scalar parameter of the query, " +
                                   p->location + ")");
      in.inputs.scalar_text(name, value);
      continue;
    }
    const BindingInfo* arr = find(info.input_info, name);
    if (!arr) {
      std::string near = closest_name(name, all);
      throw_usage_error("binding '" + name + "' matches no input or parameter of the query" +
                        (near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
    if (looks_numeric(value)) {   // the engine says that an array wants a file
      in.inputs.scalar_text(name, value);
      continue;
    }
    NDArray x = read_npy(value, name);
    if (arr->output_index && is_float(x.dtype))
      throw_data_error(name, "an index vector must hold integers, got " + std::string(dtype_name(x.dtype)) + " (" + value +
                                 "; used as an output index at " + arr->location + ")");
    in.arrays[name] = std::move(x);
    in.files.push_back(value);
  }
  for (const std::string& d : q.dims) {
    size_t eq = d.find('=');
    if (eq == std::string::npos || eq == 0) throw_usage_error("--dim '" + d + "' is not NAME=D1[,D2]");
    std::string name = d.substr(0, eq);
    if (in.inputs.extents.count(name)) throw_usage_error("--dim " + name + " is given twice");
    in.inputs.extent(name, parse_dim_extents(name, d.substr(eq + 1)));
  }
  for (const auto& [name, a] : in.arrays) in.inputs.array(name, host_view(a));
  return in;
}

}  // namespace gamut::cli
