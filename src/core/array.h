// Host arrays: dense n-d arrays (C order) and list results (columns of one length).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/types.h"

namespace gamut {

struct NDArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;      // empty shape: a 0-d array (one element)
  std::vector<std::byte> data;     // C order, native little-endian

  int64_t size() const;            // number of elements (1 for 0-d)
  size_t nbytes() const { return data.size(); }
  template <class T> T* as() { return reinterpret_cast<T*>(data.data()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
  static NDArray zeros(DType t, std::vector<int64_t> shape);
  // Element e as a double / int64 (any dtype; f16/bf16 converted).
  double get_f64(int64_t e) const;
  int64_t get_i64(int64_t e) const;
};

struct Column {
  std::string name;
  DType dtype = DType::F32;
  std::vector<std::byte> data;     // rows * dtype_size(dtype) bytes
};

// A list output (`emit`): one-dimensional structured array on disk, columns in memory.
struct Table {
  std::vector<Column> columns;
  int64_t rows = 0;
};

}  // namespace gamut
