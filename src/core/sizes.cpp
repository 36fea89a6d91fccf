#include "core/sizes.h"

#include <cstdio>

#include "core/error.h"

namespace gamut {

std::optional<int64_t> size_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> size_add(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

std::optional<int64_t> size_product(const std::vector<int64_t>& factors) {
  std::optional<int64_t> p = 1;
  for (int64_t f : factors)
    if (!(p = size_mul(*p, f))) return std::nullopt;
  return p;
}

// The product of the non-zero extents times `scale`; 0 when an extent is 0.
static std::optional<int64_t> scaled_elements(const std::vector<int64_t>& shape, int64_t scale) {
  std::optional<int64_t> nonzero = scale;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) empty = true;
    else if (!(nonzero = size_mul(*nonzero, d))) return std::nullopt;
  }
  return empty ? 0 : *nonzero;
}

std::optional<int64_t> shape_elements(const std::vector<int64_t>& shape) { return scaled_elements(shape, 1); }

std::optional<int64_t> shape_bytes(const std::vector<int64_t>& shape, size_t element_size) {
  if (element_size > size_t(INT64_MAX)) return std::nullopt;
  return scaled_elements(shape, int64_t(element_size));
}

int64_t size_mul_or_throw(int64_t a, int64_t b, const std::string& what) {
  std::optional<int64_t> r = size_mul(a, b);
  if (!r) throw_resource_error(what + " needs more than 2^63-1 bytes (" + std::to_string(a) + " x " + std::to_string(b) + ")");
  return *r;
}

int64_t size_add_or_throw(int64_t a, int64_t b, const std::string& what) {
  std::optional<int64_t> r = size_add(a, b);
  if (!r) throw_resource_error(what + " needs more than 2^63-1 bytes (" + std::to_string(a) + " + " + std::to_string(b) + ")");
  return *r;
}

int64_t size_mul_saturated(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  std::optional<int64_t> r = size_mul(a, b);
  return r ? *r : INT64_MAX;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string bytes_text(int64_t bytes) {
  char buf[48];
  const double b = double(bytes);
  if (bytes < 1024) std::snprintf(buf, sizeof buf, "%lld bytes", (long long)bytes);
  else if (b < 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.2f KiB", b / 1024);
  else if (b < 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024));
  else if (b < 1024.0 * 1024 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.2f GiB", b / (1024.0 * 1024 * 1024));
  else std::snprintf(buf, sizeof buf, "%.2f TiB", b / (1024.0 * 1024 * 1024 * 1024));
  return buf;
}

}  // namespace gamut
