// Host arrays: dense n-d arrays (C order) and list results (columns of one length).
#pragma once
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/types.h"

namespace gamut {

// The bytes of an NDArray: its own buffer, or a read-only view of memory that someone else owns
// and keeps alive meanwhile (an array handed to the library is bound without a copy). Reads look
// the same either way; a view is never written (engines only read their inputs), and resizing
// one first copies it into an own buffer.
class Bytes {
 public:
  using value_type = std::byte;
  using iterator = std::byte*;
  using const_iterator = const std::byte*;

  Bytes() = default;
  Bytes(std::vector<std::byte> own) : own_(std::move(own)) {}
  Bytes(std::initializer_list<std::byte> bytes) : own_(bytes) {}
  static Bytes view(const void* data, size_t bytes) {
    Bytes b;
    b.view_ = static_cast<const std::byte*>(data);
    b.view_size_ = bytes;
    return b;
  }
  bool is_view() const { return view_ != nullptr; }

  std::byte* data() { return view_ ? const_cast<std::byte*>(view_) : own_.data(); }
  const std::byte* data() const { return view_ ? view_ : own_.data(); }
  size_t size() const { return view_ ? view_size_ : own_.size(); }
  bool empty() const { return size() == 0; }
  std::byte* begin() { return data(); }
  std::byte* end() { return data() + size(); }
  const std::byte* begin() const { return data(); }
  const std::byte* end() const { return data() + size(); }
  std::byte& operator[](size_t i) { return data()[i]; }
  const std::byte& operator[](size_t i) const { return data()[i]; }

  void assign(size_t n, std::byte v) { drop_view(); own_.assign(n, v); }
  void resize(size_t n) { own(); own_.resize(n); }
  // The own buffer (an owned copy of a view first).
  std::vector<std::byte>& own() {
    if (view_) {
      own_.assign(view_, view_ + view_size_);
      drop_view();
    }
    return own_;
  }
  // Only an own buffer converts (the .npy reader's helpers take vectors).
  operator const std::vector<std::byte>&() const {
    if (view_) throw std::logic_error("internal error: a borrowed array used as an owned buffer");
    return own_;
  }
  friend bool operator==(const Bytes& a, const Bytes& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  void drop_view() {
    view_ = nullptr;
    view_size_ = 0;
  }
  std::vector<std::byte> own_;
  const std::byte* view_ = nullptr;
  size_t view_size_ = 0;
};

struct NDArray {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;      // empty shape: a 0-d array (one element)
  Bytes data;                      // C order, native little-endian

  int64_t size() const;            // number of elements (1 for 0-d)
  size_t nbytes() const { return data.size(); }
  template <class T> T* as() { return reinterpret_cast<T*>(data.data()); }
  template <class T> const T* as() const { return reinterpret_cast<const T*>(data.data()); }
  static NDArray zeros(DType t, std::vector<int64_t> shape);
  // Element e as a double / int64 (any dtype; f16/bf16 converted).
  double get_f64(int64_t e) const;
  int64_t get_i64(int64_t e) const;
  // The smallest and largest get_i64 of elements [first, first + count) (count > 0): one pass
  // with the type resolved once (bind checks index vectors of every row; per element get_i64
  // cost ~0.2 ms per call for two 16K-row vectors).
  void i64_range(int64_t first, int64_t count, int64_t& lo, int64_t& hi) const;
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
