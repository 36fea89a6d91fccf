// List rows for the ordering tests (CPU: tests/test_list_order_keys.cpp, GPU:
// tests/gpu/test_gpu_list_order.cpp): columns of any storage type with many repeats and the
// values the order treats specially (+-0, +-inf, NaNs of both signs and several payloads,
// subnormals, extremes), so that ties and the raw-bits tie-break are exercised.
#pragma once
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "plan/list_rows.h"

namespace gamut::testdata {

// Raw bit patterns of `t` that the order must place with care.
inline std::vector<uint64_t> special_bits(DType t) {
  switch (t) {
    case DType::Bool: return {0, 1};
    case DType::U8: return {0, 1, 0x7f, 0x80, 0xff};
    case DType::I8: return {0, 1, 0x7f, 0x80, 0xff, 0xfe};
    case DType::I16: return {0, 1, 0x7fff, 0x8000, 0xffff, 0x8001};
    case DType::I32: return {0, 1, 0x7fffffff, 0x80000000, 0xffffffff, 0x80000001};
    case DType::I64: return {0, 1, 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, 0x8000000000000001};
    case DType::F16: return {0, 0x8000, 0x0001, 0x8001, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7c01, 0x7e00,
                             0x7fff, 0xfc01, 0xfe00, 0xffff};
    case DType::BF16: return {0, 0x8000, 0x0001, 0x8001, 0x3f80, 0xbf80, 0x7f7f, 0xff7f, 0x7f80, 0xff80, 0x7f81, 0x7fc0,
                              0x7fff, 0xff81, 0xffc0, 0xffff};
    case DType::F32: return {0, 0x80000000, 0x00000001, 0x80000001, 0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff,
                             0x7f800000, 0xff800000, 0x7f800001, 0x7fc00000, 0x7fffffff, 0xff800001, 0xffc00000,
                             0xffffffff, 0x00800000, 0x007fffff};
    case DType::F64: return {0, 0x8000000000000000, 1, 0x8000000000000001, 0x3ff0000000000000, 0xbff0000000000000,
                             0x7fefffffffffffff, 0xffefffffffffffff, 0x7ff0000000000000, 0xfff0000000000000,
                             0x7ff0000000000001, 0x7ff8000000000000, 0x7fffffffffffffff, 0xfff0000000000001,
                             0xfff8000000000000, 0xffffffffffffffff};
  }
  return {0};
}

// The bits of the small integer v (|v| small) in type t.
inline uint64_t small_value_bits(DType t, int v) {
  uint64_t bits = 0;
  switch (t) {
    case DType::Bool: return uint64_t(v & 1);
    case DType::F16: case DType::BF16: {
      // Exact small integers in both half formats: build them from the float's bits.
      float f = float(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      if (t == DType::BF16) return u >> 16;
      if (v == 0) return 0;
      const uint32_t sign = (u >> 16) & 0x8000u, exp = ((u >> 23) & 0xffu) - 127 + 15, mant = (u >> 13) & 0x3ffu;
      return sign | (exp << 10) | mant;
    }
    case DType::F32: { float f = float(v); std::memcpy(&bits, &f, 4); return bits; }
    case DType::F64: { double d = v; std::memcpy(&bits, &d, 8); return bits; }
    default: return uint64_t(int64_t(v)) & (dtype_size(t) == 8 ? ~uint64_t(0) : (uint64_t(1) << (8 * dtype_size(t))) - 1);
  }
}

// n rows of `types`: each value a small integer in [-range, range] (many repeats, many equal
// rows), a special pattern, or (with `random_bits`) any pattern, mixed per value.
inline ListCandidates mixed_rows(const std::vector<DType>& types, int64_t n, uint32_t seed, int range,
                                 bool random_bits = true) {
  ListCandidates c;
  std::mt19937_64 rng(seed);
  for (size_t k = 0; k < types.size(); ++k) {
    Column col;
    col.name = "c" + std::to_string(k);
    col.dtype = types[k];
    const size_t w = dtype_size(types[k]);
    const std::vector<uint64_t> special = special_bits(types[k]);
    col.data.resize(size_t(n) * w);
    for (int64_t r = 0; r < n; ++r) {
      const uint64_t pick = rng() % 8;
      uint64_t bits;
      if (pick < 5) bits = small_value_bits(types[k], int(rng() % uint64_t(2 * range + 1)) - range);
      else if (pick < 7 || !random_bits) bits = special[rng() % special.size()];
      else bits = rng();
      if (types[k] == DType::Bool) bits &= 1;   // bools are stored as 0 or 1
      std::memcpy(col.data.data() + size_t(r) * w, &bits, w);
    }
    c.table.columns.push_back(std::move(col));
  }
  c.table.rows = n;
  c.b.assign(size_t(n), 0);
  c.i.assign(size_t(n), 0);
  c.j.assign(size_t(n), 0);
  for (int64_t r = 0; r < n; ++r) {
    c.i[size_t(r)] = int32_t(r % 97);
    c.j[size_t(r)] = int32_t(r / 97);
  }
  return c;
}

// A plain or distinct list spec with one column per table column.
inline ListOutput list_spec(const Table& t, ListMode mode) {
  ListOutput spec;
  spec.name = "rows";
  spec.mode = mode;
  for (const Column& c : t.columns) spec.columns.push_back({c.name, compute_type_of(c.dtype)});
  return spec;
}

}  // namespace gamut::testdata
