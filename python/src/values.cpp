#include "values.h"

#include <gamut/gamut.h>

#include <cstring>

#include "arrays.h"

namespace gamut::py {

namespace {

const char* const kSupported = "(bool u8 i8 i16 i32 i64 f16 bf16 f32 f64)";

[[noreturn]] void usage(const std::string& m) { throw Error(ExitCode::Usage, "usage error: " + m); }
[[noreturn]] void data(const std::string& name, const std::string& m) {
  throw Error(ExitCode::Data, "data error: " + name + ": " + m);
}

std::string value_type_name(nb::handle o) { return nb::cast<std::string>(nb::handle(Py_TYPE(o.ptr())).attr("__name__")); }
std::string str(nb::handle o) { return nb::cast<std::string>(nb::str(o)); }

// A Python exception from NumPy while it reads or converts `name`: out of memory is a resource
// error (exit 4, as on the command line); anything else says what NumPy said.
[[noreturn]] void numpy_failed(const std::string& name, nb::python_error& e, const std::string& doing) {
  if (e.matches(PyExc_MemoryError))
    throw Error(ExitCode::Device, "resource error: out of host memory " + doing + " (binding '" + name + "')");
  usage(name + ": NumPy failed " + doing + ": " + str(e.value()));
}

nb::handle numpy_module(const std::string& name, nb::handle v) {
  static nb::handle np;   // (a released handle, kept for the process)
  if (!np.is_valid()) {
    try {
      np = nb::module_::import_("numpy").release();
    } catch (nb::python_error& e) {
      usage(name + ": a " + value_type_name(v) + " is read through NumPy, which cannot be imported: " + str(e.value()));
    }
  }
  return np;
}

// A Python number: bool and int (64 bits at most) or float.
bool number(const std::string& name, nb::handle v, Value& out) {
  if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr())) {
    int overflow = 0;
    const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
    if (overflow) data(name, "the integer does not fit in 64 bits");
    out.kind = Value::Int;
    out.i = int64_t(x);
    return true;
  }
  if (PyFloat_Check(v.ptr())) {
    out.kind = Value::Float;
    out.f = PyFloat_AsDouble(v.ptr());
    return true;
  }
  return false;
}

[[noreturn]] void unsupported(const std::string& name, nb::handle dtype) {
  data(name, "element type " + str(dtype.attr("name")) + " (NumPy dtype '" + str(dtype.attr("str")) + "') is not supported " +
                 kSupported);
}

// A NumPy array (or subclass: np.memmap) that DLPack cannot carry: a bf16 view of 2-byte void
// elements, a byte-swapped copy of a big-endian array, or an error naming the element type.
void numpy_fallback(const std::string& name, Value& out) {
  nb::object dt = out.object.attr("dtype");
  if (!dt.attr("fields").is_none()) {
    nb::object names = dt.attr("names");
    const std::string first = nb::len(names) ? str(names[0]) : "";
    data(name, "a structured array (NumPy dtype " + str(nb::repr(dt.attr("descr"))) + ") is not supported: bind one field at a time" +
                   (first.empty() ? "" : ", such as " + name + "['" + first + "']"));
  }
  const std::string kind = str(dt.attr("kind")), dname = str(dt.attr("name"));
  if (kind == "V") {
    // bf16: NumPy has none; np.save writes '<V2' for ml_dtypes.bfloat16, and (x.view(np.uint32)
    // >> 16).astype(np.uint16).view('V2') makes one. The command line reads both as bf16.
    if (nb::cast<int>(dt.attr("itemsize")) != 2 || (dname != "void16" && dname != "bfloat16")) unsupported(name, dt);
    try {
      out.object = out.object.attr("view")(numpy_module(name, out.object).attr("uint16"));
    } catch (nb::python_error& e) {
      numpy_failed(name, e, "viewing its 2-byte elements as bf16");
    }
    out.bf16 = out.made = true;
  } else if (std::strchr("OUSMmc", kind[0])) {   // object, str, bytes, datetime, timedelta, complex
    unsupported(name, dt);
  } else if (!nb::cast<bool>(dt.attr("isnative"))) {
    // Big-endian: byte-swapped to native order, as the command line does for a .npy file.
    const std::string from = str(dt.attr("str"));
    try {
      out.object = out.object.attr("astype")(dt.attr("newbyteorder")("="));
    } catch (nb::python_error& e) {
      numpy_failed(name, e, "byte-swapping it to native order");
    }
    out.made = true;
    out.note = name + ": big-endian '" + from + "': byte-swapped to native order (a copy)";
  } else {
    unsupported(name, dt);
  }
  if (!try_import(out.object, out.nd)) unsupported(name, out.object.attr("dtype"));
}

// A NumPy array: imported, or a number where it is 0-d (np.array(2.5), as np.float32(2.5)).
Value numpy_array(const std::string& name, nb::object arr, bool made) {
  Value out;
  out.object = std::move(arr);
  out.made = made;
  if (!try_import(out.object, out.nd)) numpy_fallback(name, out);
  if (out.nd.ndim() != 0) return out;
  if (out.bf16) {   // the bits of a bf16 are the high half of an f32's
    uint32_t bits = uint32_t(*static_cast<const uint16_t*>(out.nd.data())) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    out.kind = Value::Float;
    out.f = f;
    return out;
  }
  nb::object x;
  try {
    x = out.object.attr("item")();
  } catch (nb::python_error&) {
  }
  Value n;
  if (x.is_valid() && number(name, x, n)) return n;
  return out;   // (complex, ...: the element type is the error, import_array says so)
}

nb::object asarray(const std::string& name, nb::handle v) {
  nb::handle np = numpy_module(name, v);
  try {
    return np.attr("asarray")(v);
  } catch (nb::python_error& e) {
    numpy_failed(name, e, "reading a " + value_type_name(v) + " as an array");
  }
}

}  // namespace

Value classify(const std::string& name, nb::handle v) {
  Value out;
  if (number(name, v, out)) return out;
  if (v.is_none()) usage(name + ": None is neither an array nor a number");
  const TypeInfo t = py_type_info(v);
  switch (t.kind) {
    case PyKind::NumPyArray: return numpy_array(name, nb::borrow(v), false);
    case PyKind::NumPyMasked:
      usage(name + ": a masked array (numpy.ma.MaskedArray) is not supported: gamut would read the masked elements "
                   "too; bind " + name + ".filled(value), or " + name + ".data to ignore the mask");
    case PyKind::NumPyScalar: {   // np.float32(2.5), np.int64(3), ml_dtypes.bfloat16(1.5)
      nb::object x;
      try {
        x = v.attr("item")();
      } catch (nb::python_error&) {
      }
      if (x.is_valid() && number(name, x, out)) return out;
      return numpy_array(name, asarray(name, v), true);   // (complex, str, ...: its element type is the error)
    }
    case PyKind::Other: break;
  }
  out.object = nb::borrow(v);
  if (t.framework == Framework::Torch || t.framework == Framework::CuPy || t.framework == Framework::Jax) {
    if (!try_import(v, out.nd)) usage(name + ": a " + value_type_name(v) + " is neither an array (DLPack) nor a number");
    return out;
  }
  if (nb::hasattr(v, "__dlpack__") && try_import(v, out.nd)) return out;
  // What NumPy can view: the buffer protocol (ctypes arrays, memoryview, array.array), the array
  // interface, __array__. (Not nanobind's own buffer-protocol import, which misreads ctypes arrays.)
  if (PyObject_CheckBuffer(v.ptr()) || nb::hasattr(v, "__array_interface__") || nb::hasattr(v, "__array_struct__") ||
      nb::hasattr(v, "__array__"))
    return numpy_array(name, asarray(name, v), true);
  const bool sequence = PyList_Check(v.ptr()) || PyTuple_Check(v.ptr());
  usage(name + ": a " + value_type_name(v) + " is neither an array (DLPack, the buffer protocol or __array__) nor a number" +
        (sequence ? "; convert it with numpy.asarray" : ""));
}

}  // namespace gamut::py
