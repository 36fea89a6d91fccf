// Arrays between Python frameworks and the gamut library: DLPack (or the buffer protocol) in,
// the caller's framework out.
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>

#include <gamut/gamut.h>

#include <string>
#include <vector>

namespace gamut::py {

namespace nb = nanobind;

enum class Framework { NumPy, Torch, CuPy, Jax, Other };

// What a Python object's type is to gamut (cached per type): its framework by the type's module,
// and whether NumPy sees it as an array, a masked array or a scalar.
enum class PyKind { Other, NumPyArray, NumPyMasked, NumPyScalar };
struct TypeInfo {
  Framework framework = Framework::Other;
  PyKind kind = PyKind::Other;
};
TypeInfo py_type_info(nb::handle obj);
inline Framework framework_of(nb::handle obj) { return py_type_info(obj).framework; }

// The object as a DLPack tensor (a torch tensor through torch's C function); false when it is not
// one (nanobind reads DLPack and the buffer protocol; values.cpp gives it only objects that speak
// DLPack, NumPy arrays, and what NumPy made of other objects).
bool try_import(nb::handle obj, nb::ndarray<nb::ro>& nd);

// An array argument as the library reads it. `keep` holds the imported DLPack tensor, which
// keeps the producer's memory alive until the run is over. `bf16`: 16-bit elements that are bf16
// (a NumPy 2-byte void array viewed as uint16). Errors: a data error for an element type gamut
// has no name for; the second form also a usage error for what is not an array.
ArrayRef import_array(const std::string& name, nb::ndarray<nb::ro> nd, std::vector<nb::ndarray<nb::ro>>& keep,
                      bool bf16);
ArrayRef import_array(const std::string& name, nb::handle obj, std::vector<nb::ndarray<nb::ro>>& keep);

// Output memory from the framework that made the inputs, on their device: a torch tensor from
// PyTorch's caching allocator, a CuPy array from CuPy's memory pool. Allocations are remembered
// so that the output can be returned as that very object. Called with or without the GIL.
class FrameworkAllocator {
 public:
  explicit FrameworkAllocator(Framework f) : framework_(f) {}
  bool usable() const { return framework_ == Framework::Torch || framework_ == Framework::CuPy; }
  Allocation allocate(DType dtype, const std::vector<int64_t>& shape, Device device);
  // The framework object made for `a`: its memory starts at a.data and it has a's element type
  // and shape (or none). Empty allocations all start at null, so the pointer alone is not enough.
  nb::object take(const Array& a);

 private:
  struct Made {
    void* ptr;
    DType dtype;
    std::vector<int64_t> shape;
    nb::object obj;
  };
  Framework framework_;
  std::vector<Made> made_;
};

// An output array in the framework `f`: the allocator's own object where it made the memory,
// else a zero-copy view that owns a reference to the library's buffer.
nb::object export_array(const Array& a, Framework f, FrameworkAllocator* allocator);

}  // namespace gamut::py
