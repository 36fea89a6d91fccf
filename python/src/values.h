// What a Python value binds as: a number, or an array gamut can import (values.cpp).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>

namespace gamut::py {

namespace nb = nanobind;

struct Value {
  enum Kind { Int, Float, Array } kind = Array;
  int64_t i = 0;
  double f = 0;
  // Array: the imported tensor, and the object it came from (the value itself, or what NumPy
  // made of it: a view, a byte-swapped copy), which must live until the call is over.
  nb::ndarray<nb::ro> nd;
  nb::object object;
  bool bf16 = false;   // 2-byte void elements (NumPy's bf16): read as bf16
  bool made = false;   // `object` is not the value itself but NumPy's view or copy of it
  std::string note;    // a copy that was made, and why (explain, stats["copies"])
};

// Classifies `v`, bound as `name`:
//  - Python numbers (bool, int, float), NumPy scalars (np.float32(2.5), ml_dtypes.bfloat16) and
//    0-d NumPy arrays (np.array(2.5)) are numbers;
//  - torch, CuPy and JAX tensors, and any other object that speaks DLPack, are imported as they are;
//  - NumPy arrays and their subclasses (np.memmap) are imported, with NumPy's help where DLPack
//    cannot carry them: big-endian arrays are byte-swapped (a copy, as the command line does for a
//    .npy file), 2-byte void arrays are bf16 (as on the command line);
//  - anything else that NumPy can view (the buffer protocol: ctypes arrays, memoryview,
//    array.array, bytes; __array_interface__, __array__) goes through numpy.asarray first.
// Errors name the binding: a masked array, an object / str / structured / other element type
// gamut does not have, something that is neither an array nor a number.
Value classify(const std::string& name, nb::handle v);

}  // namespace gamut::py
