// Queries whose inner operation is a sum of products, for the tensor-core mainloop in the
// generated kernels: every output operator, both operand orientations, batched, constant
// factors. Shared by the NVRTC compile checks (tests/test_codegen_tensor.cpp, no GPU) and the
// GPU tests against the CPU engine (tests/gpu/test_tensor_queries.cpp). Data are small integers:
// products and sums are exact in every tensor-core math (bf16, f16, tf32 hold them exactly), so
// the GPU must match the CPU engine bit for bit.
#pragma once
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "bind/bind.h"
#include "core/array.h"
#include "core/types.h"
#include "plan/math_choice.h"

namespace gamut::testtcq {

struct TcQuery {
  const char* name;
  const char* text;
  bool p_ki = false;          // P is P[k, i] (else P[i, k])
  bool r_jk = false;          // R is R[j, k] (else R[k, j])
  bool batched = false;       // P[b, ...], R[b, ...]
  bool masked_joins = false;  // run `when` keys as a mask (GpuRunOptions::masked_joins)
};

// Every output operator over `accum`, the sum of P x R over k.
inline const std::vector<TcQuery>& operator_queries() {
  static const std::vector<TcQuery> q = {
      {"project", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } C[i, j] = s; }"},
      {"aggregate",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  Cnt[Pzip[i], Rzip[j]] += accum > thres; S[Pzip[i]] += accum; }"},
      {"select",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  if (accum > thres) emit Pairs(i, j, accum); }"},
      {"top",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  emit Top(i, j, accum) top 128 by accum; }"},
      {"bottom_per_i",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  emit Near(i, j, accum) bottom 5 by accum per i; }"},
      {"distinct",
       "where (i, j) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  if (accum > thres) emit Areas(Pzip[i] as pz, Rzip[j] as rz) distinct; }"},
      {"knn_expanded",
       "where (i, j) { dot = 0; reduce (k) { dot += P[i, k] * R[j, k]; }\n"
       "  let dist = qn[i] + xn[j] - 2 * dot;\n"
       "  emit Nearest(i, j, dist) bottom 10 by dist per i; }",
       false, true},
      // `when`: the pass bits over the map; a key join runs masked (a key-grouped join keeps SIMT).
      {"when_filter",
       "where (i, j) when (Pzip[i] != Rzip[j]) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  S[Pzip[i]] += accum; }"},
      {"join_masked",
       "where (i, j) when (Pzip[i] == Rzip[j]) { accum = 0; reduce (k) { accum += P[i, k] * R[k, j]; }\n"
       "  AreaTotal[Pzip[i]] += accum; }",
       false, false, false, true},
  };
  return q;
}

// Both orientations of each operand, with a constant factor and an initial value (the value
// handed to the operators is init + factor * sum), and a batched product.
inline const std::vector<TcQuery>& layout_queries() {
  static const std::vector<TcQuery> q = {
      {"scaled_ki_kj", "where (i, j) { s = 3; reduce (k) { s -= 2 * P[k, i] * R[k, j]; } C[i, j] = s; }", true, false},
      {"scaled_ik_jk", "where (i, j) { s = 3; reduce (k) { s -= 2 * P[i, k] * R[j, k]; } C[i, j] = s; }", false, true},
      {"scaled_ki_jk", "where (i, j) { s = 3; reduce (k) { s -= 2 * P[k, i] * R[j, k]; } C[i, j] = s; }", true, true},
      {"batched", "batch (b) where (i, j) { s = 0; reduce (k) { s += P[b, i, k] * R[b, k, j]; } C[b, i, j] = s; }",
       false, false, true},
  };
  return q;
}

struct TcMath {
  const char* name;
  DType type;  // of P (and of R unless r_type says otherwise)
  F32Math f32_math;
  InnerMath math;
  std::optional<DType> r_type = std::nullopt;
};
inline const std::vector<TcMath>& maths() {
  static const std::vector<TcMath> m = {
      {"bf16", DType::BF16, F32Math::Ieee, InnerMath::BF16}, {"f16", DType::F16, F32Math::Ieee, InnerMath::F16},
      {"i8", DType::I8, F32Math::Ieee, InnerMath::Int8},     {"tf32x3", DType::F32, F32Math::Tf32x3, InnerMath::Tf32x3},
      {"tf32", DType::F32, F32Math::Tf32, InnerMath::Tf32},
  };
  return m;
}
// Mixed 8-bit operands (gm::tc::MathI8<unsigned char, signed char> and the reverse).
inline const std::vector<TcMath>& mixed_8bit() {
  static const std::vector<TcMath> m = {
      {"u8xi8", DType::U8, F32Math::Ieee, InnerMath::Int8, DType::I8},
      {"i8xu8", DType::I8, F32Math::Ieee, InnerMath::Int8, DType::U8},
  };
  return m;
}

struct Sizes {
  int64_t m, n, k, batch = 2;
};

inline void put(NDArray& a, int64_t e, double v) {
  switch (a.dtype) {
    case DType::BF16: a.as<uint16_t>()[e] = float_to_bf16(float(v)); break;
    case DType::F16: a.as<uint16_t>()[e] = float_to_half(float(v)); break;
    case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
    case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
    case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
    case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
    case DType::F64: a.as<double>()[e] = v; break;
    default: a.as<float>()[e] = float(v); break;
  }
}

// Small integers: [-4, 4] for 16-bit and f32 operands (every sum exact in f32 for K below 2^18),
// the full range for 8-bit ones (i32 sums exact); zip codes mod 5; norms 0 .. 49.
inline Bindings bindings(const TcQuery& q, DType t, DType rt, const Sizes& s, uint32_t seed = 11) {
  std::mt19937 rng(seed);
  auto fill = [&](NDArray& a, int lo, int hi) {
    std::uniform_int_distribution<int> d(lo, hi);
    for (int64_t e = 0; e < a.size(); ++e) put(a, e, d(rng));
  };
  auto lo = [](DType d) { return d == DType::I8 ? -128 : d == DType::U8 ? 0 : -4; };
  auto hi = [](DType d) { return d == DType::I8 ? 127 : d == DType::U8 ? 255 : 4; };
  auto shape = [&](int64_t a, int64_t b) {
    return q.batched ? std::vector<int64_t>{s.batch, a, b} : std::vector<int64_t>{a, b};
  };
  const std::string text = q.text;
  Bindings b;
  b.arrays["P"] = NDArray::zeros(t, q.p_ki ? shape(s.k, s.m) : shape(s.m, s.k));
  b.arrays["R"] = NDArray::zeros(rt, q.r_jk ? shape(s.n, s.k) : shape(s.k, s.n));
  fill(b.arrays["P"], lo(t), hi(t));
  fill(b.arrays["R"], lo(rt), hi(rt));
  if (text.find("Pzip") != std::string::npos) {
    b.arrays["Pzip"] = NDArray::zeros(DType::I32, {s.m});
    b.arrays["Rzip"] = NDArray::zeros(DType::I32, {s.n});
    fill(b.arrays["Pzip"], 0, 9);  // 10 x 10 counts: past the direct table's first 128-byte row
    fill(b.arrays["Rzip"], 0, 9);
  }
  if (text.find("qn") != std::string::npos) {
    b.arrays["qn"] = NDArray::zeros(DType::F32, {s.m});
    b.arrays["xn"] = NDArray::zeros(DType::F32, {s.n});
    fill(b.arrays["qn"], 0, 49);
    fill(b.arrays["xn"], 0, 49);
  }
  if (text.find("thres") != std::string::npos) b.scalars["thres"] = "0";
  return b;
}
inline Bindings bindings(const TcQuery& q, const TcMath& m, const Sizes& s, uint32_t seed = 11) {
  return bindings(q, m.type, m.r_type.value_or(m.type), s, seed);
}

}  // namespace gamut::testtcq
