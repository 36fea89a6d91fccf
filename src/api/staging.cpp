#include "api/staging.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

#include "api/device_memory.h"
#include "core/error.h"

namespace gamut::api {

namespace {

std::string dims_text(const std::vector<int64_t>& v) {
  std::string t = "(";
  for (size_t k = 0; k < v.size(); ++k) t += (k ? ", " : "") + std::to_string(v[k]);
  return t + (v.size() == 1 ? ",)" : ")");
}

bool valid_dtype(DType t) { return uint8_t(t) <= uint8_t(DType::F64); }

// Elements of `shape`, or a data error when the product (or its bytes) does not fit.
int64_t checked_elements(const std::string& name, const std::vector<int64_t>& shape, size_t elem) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw_data_error(name, "negative extent in shape " + dims_text(shape));
    if (__builtin_mul_overflow(n, d, &n))
      throw_data_error(name, "shape " + dims_text(shape) + " has too many elements");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, int64_t(elem), &bytes))
    throw_data_error(name, "shape " + dims_text(shape) + " has too many bytes");
  return n;
}

bool c_contiguous(const ArrayRef& a, int64_t elements) {
  if (a.strides.empty() || elements == 0) return true;
  int64_t expect = 1;
  for (size_t d = a.shape.size(); d-- > 0;) {
    if (a.shape[d] != 1 && a.strides[d] != expect) return false;
    expect *= a.shape[d];
  }
  return true;
}

// The lowest and one past the highest element offset a strided array touches.
void span_of(const ArrayRef& a, int64_t& lo, int64_t& hi) {
  lo = 0;
  hi = 1;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const int64_t reach = (a.shape[d] - 1) * a.strides[d];
    (reach < 0 ? lo : hi) += reach;
  }
}

// Gather a strided array (element offsets relative to `base`) into C order.
void gather_c_order(const ArrayRef& a, const std::byte* base, std::byte* out, int64_t elements) {
  const size_t e = dtype_size(a.dtype), nd = a.shape.size();
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t n = 0; n < elements; ++n) {
    std::memcpy(out + size_t(n) * e, base + off * int64_t(e), e);
    for (size_t d = nd; d-- > 0;) {  // odometer over the index, last dimension fastest
      if (++idx[d] < a.shape[d]) {
        off += a.strides[d];
        break;
      }
      off -= (a.shape[d] - 1) * a.strides[d];
      idx[d] = 0;
    }
  }
}

// Rows contiguous, no negative strides: what the GPU engine reads in place (it takes any row
// and batch stride).
bool device_readable(const ArrayRef& a) {
  if (a.strides.empty()) return true;
  for (size_t d = 0; d < a.strides.size(); ++d)
    if (a.strides[d] < 0 || (d + 1 == a.strides.size() && a.strides[d] != 1 && a.shape[d] > 1)) return false;
  return true;
}

NDArray stage_one(const std::string& name, const ArrayRef& a, void* stream, std::vector<std::string>& copies,
                  bool gpu_engine, bool is_index, std::map<std::string, Instance::DeviceInput>& device) {
  if (!valid_dtype(a.dtype)) throw_data_error(name, "unknown element type code " + std::to_string(int(a.dtype)));
  if (!a.strides.empty() && a.strides.size() != a.shape.size())
    throw_data_error(
        name, std::to_string(a.strides.size()) + " strides for " + std::to_string(a.shape.size()) + " dimensions");
  if (a.shape.size() > 32) throw_data_error(name, std::to_string(a.shape.size()) + " dimensions");
  const size_t e = dtype_size(a.dtype);
  const int64_t elements = checked_elements(name, a.shape, e);
  if (elements > 0 && !a.data)
    throw_data_error(name, "null data pointer for " + std::to_string(elements) + " elements");
  const bool contiguous = c_contiguous(a, elements);
  const bool on_host = a.device.kind == DeviceKind::Cpu || a.device.kind == DeviceKind::CudaHost ||
                       a.device.kind == DeviceKind::CudaManaged;
  if (!on_host && a.device.kind != DeviceKind::Cuda)
    throw_usage_error(name + ": arrays on device type " + std::to_string(int(a.device.kind)) +
                      " are not supported (CPU or CUDA)");

  NDArray x;
  x.dtype = a.dtype;
  x.shape = a.shape;
  if (on_host && contiguous) {
    x.data = Bytes::view(a.data, size_t(elements) * e);
  } else if (!on_host && gpu_engine && !is_index && device_readable(a) && elements > 0) {
    // The GPU engine reads it where it is; the host never touches these bytes.
    x.data = Bytes::view(a.data, size_t(elements) * e);
    device[name] = Instance::DeviceInput{a.data, a.strides.empty() ? c_strides(a.shape) : a.strides};
  } else {
    std::vector<std::byte> c(size_t(elements) * e);
    if (contiguous) {
      copy_bytes(c.data(), a.data, c.size(), stream);
    } else {
      int64_t lo = 0, hi = 0;
      span_of(a, lo, hi);
      const auto* base = static_cast<const std::byte*>(a.data);
      std::vector<std::byte> span;
      if (!on_host) {  // the bytes the view reaches, then the gather on the host
        span.resize(size_t(hi - lo) * e);
        copy_bytes(span.data(), base + lo * int64_t(e), span.size(), stream);
        base = span.data() - lo * int64_t(e);
      }
      gather_c_order(a, base, c.data(), elements);
    }
    x.data = std::move(c);
    // An index vector's host copy serves bind's checks (and the host's planning); the GPU
    // engine still reads the caller's array in place rather than uploading the copy again.
    const bool index_in_place = !on_host && gpu_engine && is_index && device_readable(a) && elements > 0;
    if (index_in_place)
      device[name] = Instance::DeviceInput{a.data, a.strides.empty() ? c_strides(a.shape) : a.strides};
    std::string why = on_host ? "" : "in device memory (cuda:" + std::to_string(a.device.id) + "): read to the host";
    if (!on_host && gpu_engine && is_index)
      why += index_in_place ? " (an index vector: bind checks its values there; the kernel reads it in place)"
                            : " (an index vector: bind checks its values there)";
    else if (!on_host && gpu_engine && elements > 0)
      why += " (rows not contiguous: " + dims_text(a.strides) + ")";
    if (!contiguous)
      why += (why.empty() ? "" : "; ") + std::string("strides ") + dims_text(a.strides) +
             " are not C order: copied to C order";
    copies.push_back(name + ": " + why);
  }
  // Engines read bool as 0 / 1; other bytes (a u8 view cast to bool) become 1 in a copy.
  if (a.dtype == DType::Bool && on_host) {
    bool clean = true;
    for (std::byte b : x.data) clean = clean && uint8_t(b) <= 1;
    if (!clean) {
      std::vector<std::byte>& own = x.data.own();
      for (std::byte& b : own) b = std::byte(uint8_t(b) != 0);
      copies.push_back(name + ": bool values other than 0 and 1: copied as 0 / 1");
    }
  }
  return x;
}

}  // namespace

std::vector<int64_t> c_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) st[d - 1] = st[d] * shape[d];
  return st;
}

std::string number_text(const Number& n) {
  if (!n.text.empty()) return n.text;
  if (n.integer) return std::to_string(n.i);
  if (std::isinf(n.f)) return n.f < 0 ? "-inf" : "inf";
  if (std::isnan(n.f)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", n.f);
  std::string t = buf;
  if (t.find_first_of(".eE") == std::string::npos) t += ".0";  // 3.0 stays a float
  return t;
}

StagedInputs stage_inputs(const Inputs& inputs, void* stream, bool gpu_engine,
                          const std::vector<std::string>& index_operands) {
  StagedInputs s;
  bool gpu_seen = false;
  for (const auto& [name, a] : inputs.arrays) {
    if (inputs.scalars.count(name)) throw_usage_error("'" + name + "' is bound twice (an array and a scalar)");
    if (a.device.is_gpu()) {
      if (gpu_seen && a.device.id != s.output_device.id)
        throw_usage_error("inputs on cuda:" + std::to_string(s.output_device.id) +
                          " and cuda:" + std::to_string(a.device.id) + ": one run uses one GPU");
      gpu_seen = true;
      s.output_device = a.device;
    }
    bool is_index = false;
    for (const std::string& n : index_operands) is_index |= n == name;
    if (gpu_engine && a.device.is_gpu() && a.device.id != 0)
      throw_usage_error(name + " is on cuda:" + std::to_string(a.device.id) + "; gamut's GPU backend runs on cuda:0");
    s.bindings.arrays.emplace(name, stage_one(name, a, stream, s.copies, gpu_engine, is_index, s.device));
  }
  for (const auto& [name, v] : inputs.scalars) s.bindings.scalars.emplace(name, number_text(v));
  for (const auto& [name, d] : inputs.extents) s.bindings.dims.emplace(name, d);
  return s;
}

namespace {

// One output array from host bytes the engine made (`keep` owns them).
Array place(DType t, std::vector<int64_t> shape, std::byte* host, std::shared_ptr<void> keep, Device device,
            const Options& options) {
  Array a;
  a.dtype = t;
  a.strides = c_strides(shape);
  a.shape = std::move(shape);
  a.device = device;
  const size_t bytes = a.nbytes();
  if (!options.allocator && !device.is_gpu()) {  // the engine's buffer itself
    a.data = host;
    a.owner = std::move(keep);
    return a;
  }
  if (options.allocator) {
    Allocation m = options.allocator(t, a.shape, device);
    if (!m.data && bytes > 0)
      throw_device_error("the output allocator returned no memory for " + std::to_string(bytes) + " bytes");
    a.data = m.data;
    a.owner = std::move(m.owner);
  } else {
    DeviceAllocation m = device_alloc(bytes, device.id, options.stream);
    a.data = m.data;
    a.owner = std::move(m.owner);
  }
  if (device.is_gpu())
    copy_bytes(a.data, host, bytes, options.stream, false);
  else if (bytes)
    std::memcpy(a.data, host, bytes);
  return a;
}

}  // namespace

std::vector<Output> finished_outputs(const Plan& plan, std::vector<NDArray>&& finished, Device device,
                                     const Options& options) {
  std::vector<Output> out;
  for (size_t f = 0; f < finished.size(); ++f) {
    auto keep = std::make_shared<NDArray>(std::move(finished[f]));
    Output o;
    o.name = plan.finish[f].name;
    o.array = place(keep->dtype, keep->shape, keep->data.data(), keep, device, options);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<Output> make_outputs(const Plan& plan, Results&& results, Device device, const Options& options,
                                 const std::vector<Allocation>* written,
                                 const std::vector<std::vector<Allocation>>* written_lists) {
  std::vector<Output> out;
  out.reserve(plan.dense.size() + plan.lists.size());
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    if (written) {  // the GPU engine wrote it there
      Output o;
      o.name = plan.dense[d].name;
      Array& a = o.array;
      a.dtype = results.dense[d].dtype;
      a.shape = results.dense[d].shape;
      a.strides = c_strides(a.shape);
      a.device = device;
      a.data = (*written)[d].data;
      a.owner = (*written)[d].owner;
      out.push_back(std::move(o));
      continue;
    }
    auto keep = std::make_shared<NDArray>(std::move(results.dense[d]));
    Output o;
    o.name = plan.dense[d].name;
    o.array = place(keep->dtype, keep->shape, keep->data.data(), keep, device, options);
    out.push_back(std::move(o));
  }
  for (size_t l = 0; l < plan.lists.size(); ++l) {
    Table& t = results.lists[l];
    Output o;
    o.name = plan.lists[l].name;
    o.is_list = true;
    o.rows = t.rows;
    if (written_lists && l < written_lists->size() && !(*written_lists)[l].empty()) {  // the GPU engine wrote it there
      const std::vector<Allocation>& at = (*written_lists)[l];
      if (at.size() != t.columns.size()) throw_device_error("internal error: list " + o.name + " written in part");
      for (size_t c = 0; c < at.size(); ++c) {
        Array a;
        a.dtype = t.columns[c].dtype;
        a.shape = {t.rows};
        a.strides = c_strides(a.shape);
        a.device = device;
        a.data = at[c].data;
        a.owner = at[c].owner;
        o.columns.emplace_back(t.columns[c].name, std::move(a));
      }
      out.push_back(std::move(o));
      continue;
    }
    for (Column& c : t.columns) {
      auto keep = std::make_shared<Column>(std::move(c));
      o.columns.emplace_back(keep->name, place(keep->dtype, {t.rows}, keep->data.data(), keep, device, options));
    }
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace gamut::api
