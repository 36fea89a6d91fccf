#include "arrays.h"

#include "core/host_phases.h"

#include <cstring>
#include <unordered_map>

namespace gamut::py {

using namespace nb::literals;

namespace {

// Python objects cached in function statics are released handles, kept for the process: a static
// nb::object would be released after the interpreter is gone.

[[noreturn]] void usage(const std::string& m) { throw Error(ExitCode::Usage, "usage error: " + m); }
[[noreturn]] void data(const std::string& name, const std::string& m) {
  throw Error(ExitCode::Data, "data error: " + name + ": " + m);
}

std::string py_type_name(nb::handle o) { return nb::cast<std::string>(nb::handle(Py_TYPE(o.ptr())).attr("__name__")); }

std::string dl_name(const nb::dlpack::dtype& t) {
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string s = t.code < 7 ? codes[t.code] : "code" + std::to_string(int(t.code));
  return s + std::to_string(int(t.bits)) + (t.lanes != 1 ? "x" + std::to_string(int(t.lanes)) : "");
}

bool to_dtype(const nb::dlpack::dtype& t, DType& out) {
  if (t.lanes != 1) return false;
  using C = nb::dlpack::dtype_code;
  switch (C(t.code)) {
    case C::Int:
      if (t.bits == 8) out = DType::I8;
      else if (t.bits == 16) out = DType::I16;
      else if (t.bits == 32) out = DType::I32;
      else if (t.bits == 64) out = DType::I64;
      else return false;
      return true;
    case C::UInt:
      if (t.bits != 8) return false;
      out = DType::U8;
      return true;
    case C::Float:
      if (t.bits == 16) out = DType::F16;
      else if (t.bits == 32) out = DType::F32;
      else if (t.bits == 64) out = DType::F64;
      else return false;
      return true;
    case C::Bfloat:
      if (t.bits != 16) return false;
      out = DType::BF16;
      return true;
    case C::Bool:
      if (t.bits != 8) return false;
      out = DType::Bool;
      return true;
    default: return false;
  }
}

nb::dlpack::dtype to_dl(DType t) {
  using C = nb::dlpack::dtype_code;
  auto make = [](C c, int bits) { return nb::dlpack::dtype{uint8_t(c), uint8_t(bits), 1}; };
  switch (t) {
    case DType::Bool: return make(C::Bool, 8);
    case DType::U8: return make(C::UInt, 8);
    case DType::I8: return make(C::Int, 8);
    case DType::I16: return make(C::Int, 16);
    case DType::I32: return make(C::Int, 32);
    case DType::I64: return make(C::Int, 64);
    case DType::F16: return make(C::Float, 16);
    case DType::BF16: return make(C::Bfloat, 16);
    case DType::F32: return make(C::Float, 32);
    case DType::F64: return make(C::Float, 64);
  }
  return make(C::Float, 32);
}

// numpy / torch spellings of the output types.
const char* np_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::U8: return "uint8";
    case DType::I8: return "int8";
    case DType::I16: return "int16";
    case DType::I32: return "int32";
    case DType::I64: return "int64";
    case DType::F16: return "float16";
    case DType::BF16: return "bfloat16";
    case DType::F32: return "float32";
    case DType::F64: return "float64";
  }
  return "float32";
}

nb::tuple shape_tuple(const std::vector<int64_t>& shape) {
  nb::list l;
  for (int64_t d : shape) l.append(d);
  return nb::tuple(l);
}

// An owner handle that drops a Python reference (taking the GIL: it may go on any thread).
std::shared_ptr<void> py_owner(void* data, nb::object obj) {
  auto* held = new nb::object(std::move(obj));
  return std::shared_ptr<void>(data, [held](void*) {
    nb::gil_scoped_acquire gil;
    delete held;
  });
}

}  // namespace

namespace {

// numpy.ndarray, numpy.generic, and numpy.ma.MaskedArray where NumPy has loaded it (none when
// NumPy is not loaded: then nothing is an instance of them).
PyTypeObject* numpy_type(const char* module, const char* name) {
  nb::object modules = nb::module_::import_("sys").attr("modules");
  nb::object mod = modules.attr("get")(module);
  if (mod.is_none()) return nullptr;
  nb::object t = nb::getattr(mod, name, nb::none());
  return PyType_Check(t.ptr()) ? (PyTypeObject*)t.ptr() : nullptr;
}

bool subtype(PyTypeObject* tp, PyTypeObject* base) { return base && PyType_IsSubtype(tp, base); }

}  // namespace

TypeInfo py_type_info(nb::handle obj) {
  static std::unordered_map<PyTypeObject*, TypeInfo> known;   // under the GIL
  PyTypeObject* tp = Py_TYPE(obj.ptr());
  if (auto it = known.find(tp); it != known.end()) return it->second;
  TypeInfo info;
  nb::object mod = nb::getattr(nb::handle((PyObject*)tp), "__module__", nb::none());
  if (nb::isinstance<nb::str>(mod)) {
    const std::string m = nb::cast<std::string>(mod);
    auto starts = [&](const char* p) { return m.compare(0, std::strlen(p), p) == 0; };
    if (starts("numpy")) info.framework = Framework::NumPy;
    else if (starts("torch")) info.framework = Framework::Torch;
    else if (starts("cupy")) info.framework = Framework::CuPy;
    else if (starts("jax")) info.framework = Framework::Jax;
  }
  // (numpy.memmap, numpy.matrix and other ndarray subclasses are arrays; a masked array is not
  // one gamut can read: its mask would be ignored.)
  if (subtype(tp, numpy_type("numpy.ma", "MaskedArray"))) info.kind = PyKind::NumPyMasked;
  else if (subtype(tp, numpy_type("numpy", "ndarray"))) info.kind = PyKind::NumPyArray;
  else if (subtype(tp, numpy_type("numpy", "generic"))) info.kind = PyKind::NumPyScalar;   // also ml_dtypes' scalars
  Py_INCREF(tp);   // the cache outlives the objects; keep the type alive as its key
  known.emplace(tp, info);
  return info;
}

// A torch tensor's DLPack capsule from torch's C function: Tensor.__dlpack__ is Python code
// that also orders a stream against the current one, which costs microseconds per array, and
// gamut runs on the current stream anyway. Invalid where this torch has no such function.
nb::object torch_capsule(nb::handle obj) {
  static nb::handle to_dlpack = [] {
    nb::object c = nb::module_::import_("torch").attr("_C");
    return nb::object(nb::getattr(c, "_to_dlpack", nb::none())).release();
  }();
  if (to_dlpack.is_none()) return nb::object();
  try {
    return to_dlpack(obj);
  } catch (const nb::python_error&) {   // (requires grad, conjugate views: the general path says why)
    return nb::object();
  }
}

bool try_import(nb::handle obj, nb::ndarray<nb::ro>& nd) {
  const bool torch = framework_of(obj) == Framework::Torch;
  if (torch)
    if (nb::object capsule = torch_capsule(obj); capsule.is_valid() && nb::try_cast(capsule, nd, false)) return true;
  if (nb::try_cast(obj, nd, false)) return true;
  // A tensor that requires grad refuses DLPack export: read its data (gamut makes no graph).
  return torch && nb::hasattr(obj, "detach") && nb::try_cast(obj.attr("detach")(), nd, false);
}

ArrayRef import_array(const std::string& name, nb::ndarray<nb::ro> nd, std::vector<nb::ndarray<nb::ro>>& keep,
                      bool bf16) {
  ArrayRef a;
  if (bf16) a.dtype = DType::BF16;   // 2-byte void elements, viewed as uint16 (values.cpp)
  else if (!to_dtype(nd.dtype(), a.dtype))
    data(name, "element type " + dl_name(nd.dtype()) + " is not supported (bool u8 i8 i16 i32 i64 f16 bf16 f32 f64)");
  const size_t nd_ = nd.ndim();
  a.shape.resize(nd_);
  a.strides.resize(nd_);
  for (size_t d = 0; d < nd_; ++d) {
    a.shape[d] = int64_t(nd.shape(d));
    a.strides[d] = nd.stride(d);
  }
  a.data = nd.data();
  switch (nd.device_type()) {
    case nb::device::cpu::value: a.device.kind = DeviceKind::Cpu; break;
    case nb::device::cuda::value: a.device.kind = DeviceKind::Cuda; break;
    case nb::device::cuda_host::value: a.device.kind = DeviceKind::CudaHost; break;
    case nb::device::cuda_managed::value: a.device.kind = DeviceKind::CudaManaged; break;
    default: usage(name + ": arrays on DLPack device type " + std::to_string(nd.device_type()) + " are not supported (CPU or CUDA)");
  }
  a.device.id = nd.device_id();
  keep.push_back(std::move(nd));
  return a;
}

ArrayRef import_array(const std::string& name, nb::handle obj, std::vector<nb::ndarray<nb::ro>>& keep) {
  nb::ndarray<nb::ro> nd;
  if (!try_import(obj, nd))
    usage(name + ": a " + py_type_name(obj) + " is neither an array (DLPack or the buffer protocol) nor a number");
  return import_array(name, std::move(nd), keep, false);
}

Allocation FrameworkAllocator::allocate(DType dtype, const std::vector<int64_t>& shape, Device device) {
  nb::gil_scoped_acquire gil;
  host_phase("py alloc: the GIL");
  nb::object obj;
  void* ptr = nullptr;
  if (framework_ == Framework::Torch) {
    static nb::handle torch = nb::object(nb::module_::import_("torch")).release();
    static nb::handle empty = nb::object(torch.attr("empty")).release();
    static std::unordered_map<int, nb::handle> devices;   // torch.device per GPU (-1: the CPU)
    nb::handle& dev = devices[device.is_gpu() ? device.id : -1];
    if (!dev.is_valid())
      dev = (device.is_gpu() ? torch.attr("device")("cuda", device.id) : torch.attr("device")("cpu")).release();
    static std::unordered_map<int, nb::handle> dtypes;   // torch.float32, ... per DType
    nb::handle& dt = dtypes[int(dtype)];
    if (!dt.is_valid()) dt = nb::object(torch.attr(np_name(dtype))).release();
    obj = empty(shape_tuple(shape), "dtype"_a = dt, "device"_a = dev);
    host_phase("py alloc: torch.empty");
    ptr = reinterpret_cast<void*>(nb::cast<uintptr_t>(obj.attr("data_ptr")()));
    host_phase("py alloc: data_ptr()");
  } else if (framework_ == Framework::CuPy) {
    static nb::handle cupy = nb::object(nb::module_::import_("cupy")).release();
    nb::object ctx = cupy.attr("cuda").attr("Device")(device.id);
    ctx.attr("__enter__")();
    obj = cupy.attr("empty")(shape_tuple(shape), "dtype"_a = np_name(dtype));
    ctx.attr("__exit__")(nb::none(), nb::none(), nb::none());
    ptr = reinterpret_cast<void*>(nb::cast<uintptr_t>(obj.attr("data").attr("ptr")));
  } else {
    throw Error(ExitCode::Device, "device error: no framework allocator");
  }
  made_.push_back(Made{ptr, dtype, shape, obj});
  return Allocation{ptr, py_owner(ptr, obj)};
}

nb::object FrameworkAllocator::take(const Array& a) {
  for (Made& m : made_)
    if (m.ptr == a.data && m.dtype == a.dtype && m.shape == a.shape && m.obj.is_valid()) return std::move(m.obj);
  return nb::object();
}

nb::object export_array(const Array& a, Framework f, FrameworkAllocator* allocator) {
  if (allocator)
    if (nb::object o = allocator->take(a); o.is_valid()) return o;
  auto* held = new std::shared_ptr<void>(a.owner);
  nb::capsule owner(held, [](void* p) noexcept { delete static_cast<std::shared_ptr<void>*>(p); });
  std::vector<size_t> shape(a.shape.begin(), a.shape.end());
  const bool gpu = a.device.is_gpu();
  const int dev = gpu ? nb::device::cuda::value : nb::device::cpu::value;
  const int id = gpu ? a.device.id : 0;
  const nb::dlpack::dtype t = to_dl(a.dtype);
  const size_t nd = shape.size();
  if (f == Framework::Torch)
    return nb::cast(nb::ndarray<nb::pytorch>(a.data, nd, shape.data(), owner, a.strides.data(), t, dev, id));
  if (f == Framework::Jax)
    return nb::cast(nb::ndarray<nb::jax>(a.data, nd, shape.data(), owner, a.strides.data(), t, dev, id));
  if (gpu)   // CuPy, or another framework's device array: CuPy reads DLPack
    return nb::cast(nb::ndarray<nb::cupy>(a.data, nd, shape.data(), owner, a.strides.data(), t, dev, id));
  return nb::cast(nb::ndarray<nb::numpy>(a.data, nd, shape.data(), owner, a.strides.data(), t, dev, id));
}

}  // namespace gamut::py
