// Checked arithmetic for sizes: extents, element counts and byte counts that come from user input
// (scalar parameters, --dim, index-vector values, .npy headers, top N). A product or sum of them
// is computed here, never with a bare `*`, so it cannot wrap into a small buffer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace gamut {

// The engines address rows, columns, k and batch with 32-bit integers (CPU lanes, GPU thread
// coordinates), and a GPU tile computes indices up to a tile (at most 256) past the range end
// before it masks them: an axis range may end at most here, 2^31 - 2^16, on every backend.
constexpr int64_t kMaxAxisEnd = (int64_t(1) << 31) - (int64_t(1) << 16);

// a * b and a + b for sizes: nullopt when an operand is negative or the result exceeds INT64_MAX.
std::optional<int64_t> size_mul(int64_t a, int64_t b);
std::optional<int64_t> size_add(int64_t a, int64_t b);
// The product of all factors (1 for none), as size_mul.
std::optional<int64_t> size_product(const std::vector<int64_t>& factors);

// Elements of an array of this shape (1 for a 0-d array). As in NumPy, the product of the
// non-zero extents must fit even when some extent is 0, so that no partial product of the shape
// (strides, row counts) can wrap either.
std::optional<int64_t> shape_elements(const std::vector<int64_t>& shape);
// shape_elements(shape) * element_size.
std::optional<int64_t> shape_bytes(const std::vector<int64_t>& shape, size_t element_size);

// a * b and a + b where the result must fit (sizes derived from validated ones: paddings, buffers,
// temporaries). On overflow: a resource error (exit 4), "WHAT needs more than 2^63-1 bytes".
int64_t size_mul_or_throw(int64_t a, int64_t b, const std::string& what);
int64_t size_add_or_throw(int64_t a, int64_t b, const std::string& what);

// a * b, or INT64_MAX when that does not fit: for capacities and heuristics that are capped later.
int64_t size_mul_saturated(int64_t a, int64_t b);

// "(4, 3)", "(5,)", "()": a shape as NumPy prints it.
std::string shape_text(const std::vector<int64_t>& shape);
// "1.50 GiB": a byte count for people (binary units, two decimals).
std::string bytes_text(int64_t bytes);

}  // namespace gamut
