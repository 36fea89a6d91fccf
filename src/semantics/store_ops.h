// The store operators of dense outputs (spec section 6, docs/semantics.md) on one element of
// each storage type, their identities, and whole-array fills and merges: what the CPU engine
// stores with and what merges the parts of a partitioned run (partition/), so both combine
// values the same way.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "core/array.h"
#include "core/types.h"
#include "plan/plan.h"

namespace gamut::cpu {

template <class T>
constexpr bool kFloat = std::is_floating_point_v<T>;
template <class T>
constexpr bool kBool = std::is_same_v<T, uint8_t>;

// Bool lanes hold 0 or 1; integer arithmetic on them is normalised back.
template <class T>
inline T norm(T x) {
  if constexpr (kBool<T>)
    return T(x != 0);
  else
    return x;
}

// Integer arithmetic wraps (two's complement): compute in the unsigned type.
template <class T>
inline T add(T a, T b) {
  if constexpr (kFloat<T>)
    return a + b;
  else
    return norm(T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b)));
}

// Float min/max ignore a NaN operand (fmin/fmax) and order -0.0 below +0.0, so they are
// commutative and associative: any reduction order gives the same bits.
template <class T>
inline T zero_bits(T a, T b, bool for_max) {
  using I = std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>;
  I x = std::bit_cast<I>(a), y = std::bit_cast<I>(b);
  return std::bit_cast<T>(for_max ? I(x & y) : I(x | y));
}
template <class T>
inline T vmax(T a, T b) {
  if constexpr (kFloat<T>) {
    T r = a > b ? a : b;  // branch-free selects, so loops vectorise
    r = a == b ? zero_bits(a, b, true) : r;
    r = b != b ? a : r;
    return a != a ? b : r;
  } else {
    return a > b ? a : b;
  }
}
template <class T>
inline T vmin(T a, T b) {
  if constexpr (kFloat<T>) {
    T r = a < b ? a : b;
    r = a == b ? zero_bits(a, b, false) : r;
    r = b != b ? a : r;
    return a != a ? b : r;
  } else {
    return a < b ? a : b;
  }
}

// One store `o op= v` (`=` keeps v).
template <StoreOp Op, class T>
inline T sto(T o, T v) {
  if constexpr (Op == StoreOp::Assign)
    return v;
  else if constexpr (Op == StoreOp::Add)
    return add(o, v);
  else if constexpr (Op == StoreOp::Max)
    return vmax(o, v);
  else if constexpr (Op == StoreOp::Min)
    return vmin(o, v);
  else if constexpr (Op == StoreOp::Or)
    return T(o | v);
  else
    return T(o & v);
}

// |= and &= exist on booleans and integers only.
template <StoreOp Op>
constexpr bool kStoreIntOnly = Op == StoreOp::Or || Op == StoreOp::And;

// The identity of a store operator: the value an output starts from.
template <class T>
T identity_of(StoreOp op) {
  switch (op) {
    case StoreOp::And:
      if constexpr (kFloat<T>)
        return T(0);
      else if constexpr (kBool<T>)
        return T(1);
      else
        return T(~T(0));
    case StoreOp::Max:
      if constexpr (kBool<T>)
        return T(0);
      else if constexpr (kFloat<T>)
        return -std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::min();
    case StoreOp::Min:
      if constexpr (kBool<T>)
        return T(1);
      else if constexpr (kFloat<T>)
        return std::numeric_limits<T>::infinity();
      else
        return std::numeric_limits<T>::max();
    default: return T(0);
  }
}

// Whole-array helpers for dense outputs: identity fill, and merging a part's (a thread's, a
// device's) partial array into `into` with the output's store operator.
void fill_identity(NDArray& a, StoreOp op, CType t);
void merge_partial(NDArray& into, const std::byte* part, StoreOp op, CType t);

}  // namespace gamut::cpu
