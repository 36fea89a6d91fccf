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

// The framework of an array object by its type's module (cached per type).
Framework framework_of(nb::handle obj);

// An array argument as the library reads it. `keep` holds the imported DLPack tensor, which
// keeps the producer's memory alive until the run is over. Errors: a usage error for what is
// not an array, a data error for an element type gamut has no name for.
ArrayRef import_array(const std::string& name, nb::handle obj, std::vector<nb::ndarray<nb::ro>>& keep);

// Output memory from the framework that made the inputs, on their device: a torch tensor from
// PyTorch's caching allocator, a CuPy array from CuPy's memory pool. Allocations are remembered
// so that the output can be returned as that very object. Called with or without the GIL.
class FrameworkAllocator {
 public:
  explicit FrameworkAllocator(Framework f) : framework_(f) {}
  bool usable() const { return framework_ == Framework::Torch || framework_ == Framework::CuPy; }
  Allocation allocate(DType dtype, const std::vector<int64_t>& shape, Device device);
  // The framework object whose memory starts at `data` (or none).
  nb::object take(void* data);

 private:
  Framework framework_;
  std::vector<std::pair<void*, nb::object>> made_;
};

// An output array in the framework `f`: the allocator's own object where it made the memory,
// else a zero-copy view that owns a reference to the library's buffer.
nb::object export_array(const Array& a, Framework f, FrameworkAllocator* allocator);

}  // namespace gamut::py
