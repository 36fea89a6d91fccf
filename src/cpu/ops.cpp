// Lane kernels of the CPU engine: one template per operation, instantiated per lane type and
// per operand uniformity, so every loop is simple enough for the compiler to vectorise.
// The scalar semantics here are the definition in docs/semantics.md.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "cpu/program.h"
#include "semantics/store_ops.h"

namespace gamut::cpu {
namespace {



// Integer arithmetic wraps (two's complement): compute in the unsigned type.
template <class T> inline T sub(T a, T b) {
  if constexpr (kFloat<T>) return a - b;
  else return norm(T(std::make_unsigned_t<T>(a) - std::make_unsigned_t<T>(b)));
}
template <class T> inline T mul(T a, T b) {
  if constexpr (kFloat<T>) return a * b;
  else if constexpr (kBool<T>) return T(a && b);
  else return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
}
template <class T> inline T neg(T a) {
  if constexpr (kFloat<T>) return -a;
  else return norm(T(std::make_unsigned_t<T>(0) - std::make_unsigned_t<T>(a)));
}
// Division or remainder by zero gives 0; INT_MIN / -1 wraps to INT_MIN, INT_MIN % -1 is 0.
template <class T> inline T divide(T a, T b) {
  if constexpr (kFloat<T>) return a / b;
  else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>) if (b == T(-1)) return neg(a);
    return T(a / b);
  }
}
template <class T> inline T modulo(T a, T b) {
  if constexpr (kFloat<T>) return std::fmod(a, b);
  else {
    if (b == 0) return T(0);
    if constexpr (std::is_signed_v<T>) if (b == T(-1)) return T(0);
    return T(a % b);
  }
}
// Shift counts are taken modulo the bit width; >> is arithmetic for signed types.
template <class T> inline T shl(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return norm(T(U(U(a) << (U(b) & U(sizeof(T) * 8 - 1)))));
}
template <class T> inline T shr(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return norm(T(a >> (U(b) & U(sizeof(T) * 8 - 1))));
}


// The `+` of an integer tropical step (InfSum, docs/language.md section 3): the type's limits are
// -inf and +inf. The semiring's zero (-inf in max-plus, +inf in min-plus) absorbs everything, the
// other infinity absorbs finite values, and a finite sum saturates at the limits instead of wrapping.
template <bool kMaxPlus, class T> inline T inf_sum(T a, T b) {
  if constexpr (!std::is_signed_v<T>) return add(a, b);  // (bool lanes: never a tropical sum)
  constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  constexpr T zero = kMaxPlus ? lo : hi, other = kMaxPlus ? hi : lo;
  T s;
  if (__builtin_add_overflow(a, b, &s)) s = a < 0 ? lo : hi;
  s = a == other || b == other ? other : s;
  return a == zero || b == zero ? zero : s;
}

// Conversions: float -> int truncates, saturates, NaN -> 0; int -> int wraps; -> bool is != 0.
template <class F, class T> inline T conv(F x) {
  if constexpr (kBool<T>) {
    return T(x != 0);
  } else if constexpr (kFloat<F> && !kFloat<T>) {
    if (x != x) return T(0);
    if (x <= F(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (x >= F(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return T(x);
  } else {
    return static_cast<T>(x);
  }
}

// ---- binary -------------------------------------------------------------------------------

template <Kern K> constexpr bool kIntOnly = K == Kern::Shl || K == Kern::Shr || K == Kern::BitAnd ||
                                           K == Kern::BitOr || K == Kern::BitXor || K == Kern::AddInfMax ||
                                           K == Kern::AddInfMin;

template <Kern K, class T> inline auto bin(T a, T b) {
  if constexpr (K == Kern::Add) return add(a, b);
  else if constexpr (K == Kern::Sub) return sub(a, b);
  else if constexpr (K == Kern::Mul) return mul(a, b);
  else if constexpr (K == Kern::Div) return divide(a, b);
  else if constexpr (K == Kern::Mod) return modulo(a, b);
  else if constexpr (K == Kern::Shl) return shl(a, b);
  else if constexpr (K == Kern::Shr) return shr(a, b);
  else if constexpr (K == Kern::BitAnd) return T(a & b);
  else if constexpr (K == Kern::BitOr) return T(a | b);
  else if constexpr (K == Kern::BitXor) return T(a ^ b);
  else if constexpr (K == Kern::Lt) return uint8_t(a < b);
  else if constexpr (K == Kern::Le) return uint8_t(a <= b);
  else if constexpr (K == Kern::Gt) return uint8_t(a > b);
  else if constexpr (K == Kern::Ge) return uint8_t(a >= b);
  else if constexpr (K == Kern::Eq) return uint8_t(a == b);
  else if constexpr (K == Kern::Ne) return uint8_t(a != b);
  else if constexpr (K == Kern::LogAnd) return uint8_t((a != 0) & (b != 0));
  else if constexpr (K == Kern::LogOr) return uint8_t((a != 0) | (b != 0));
  else if constexpr (K == Kern::Min) return vmin(a, b);
  else if constexpr (K == Kern::Max) return vmax(a, b);
  else if constexpr (K == Kern::AddInfMax) return inf_sum<true>(a, b);
  else if constexpr (K == Kern::AddInfMin) return inf_sum<false>(a, b);
  else return T(std::pow(a, b));  // Pow: floats only
}

template <Kern K, class T, bool UA, bool UB>
void bin_kernel(Ctx& c, const Instr& in) {
  using R = decltype(bin<K, T>(T(), T()));
  const T* __restrict a = static_cast<const T*>(c.ptr[size_t(in.a)]);
  const T* __restrict b = static_cast<const T*>(c.ptr[size_t(in.b)]);
  R* __restrict o = static_cast<R*>(c.ptr[size_t(in.dst)]);
  const int n = UA && UB ? 1 : c.n;
  for (int l = 0; l < n; ++l) o[l] = bin<K, T>(a[UA ? 0 : l], b[UB ? 0 : l]);
}

template <Kern K, class T> OpFn bin_pick(bool ua, bool ub) {
  if (ua && ub) return &bin_kernel<K, T, true, true>;
  if (ua) return &bin_kernel<K, T, true, false>;
  if (ub) return &bin_kernel<K, T, false, true>;
  return &bin_kernel<K, T, false, false>;
}

template <Kern K> OpFn bin_typed(CType t, bool ua, bool ub) {
  if constexpr (K == Kern::Pow) {
    if (t == CType::F32) return bin_pick<K, float>(ua, ub);
    if (t == CType::F64) return bin_pick<K, double>(ua, ub);
    return nullptr;
  } else {
    switch (t) {
      case CType::Bool: return bin_pick<K, uint8_t>(ua, ub);
      case CType::I32: return bin_pick<K, int32_t>(ua, ub);
      case CType::I64: return bin_pick<K, int64_t>(ua, ub);
      case CType::F32: if constexpr (!kIntOnly<K>) return bin_pick<K, float>(ua, ub); else return nullptr;
      case CType::F64: if constexpr (!kIntOnly<K>) return bin_pick<K, double>(ua, ub); else return nullptr;
      default: return nullptr;
    }
  }
}

template <size_t... I>
OpFn bin_dispatch(Kern k, CType t, bool ua, bool ub, std::index_sequence<I...>) {
  OpFn r = nullptr;
  ((size_t(k) == I ? (r = bin_typed<Kern(I)>(t, ua, ub), 0) : 0), ...);
  return r;
}

// ---- unary --------------------------------------------------------------------------------

template <UKern K, class T> inline auto un(T a) {
  if constexpr (K == UKern::Neg) return neg(a);
  else if constexpr (K == UKern::Not) return uint8_t(a == 0);
  else if constexpr (K == UKern::BitNot) return norm(T(~a));
  else if constexpr (K == UKern::Abs) {
    if constexpr (kFloat<T>) return T(std::fabs(a));
    else return a < 0 ? neg(a) : a;  // abs(INT_MIN) == INT_MIN
  }
  else if constexpr (K == UKern::Sqrt) return T(std::sqrt(a));
  else if constexpr (K == UKern::Exp) return T(std::exp(a));
  else if constexpr (K == UKern::Log) return T(std::log(a));
  else if constexpr (K == UKern::Floor) return T(std::floor(a));
  else if constexpr (K == UKern::Ceil) return T(std::ceil(a));
  else return T(std::tanh(a));
}

template <UKern K, class T, bool UA>
void un_kernel(Ctx& c, const Instr& in) {
  using R = decltype(un<K, T>(T()));
  const T* __restrict a = static_cast<const T*>(c.ptr[size_t(in.a)]);
  R* __restrict o = static_cast<R*>(c.ptr[size_t(in.dst)]);
  const int n = UA ? 1 : c.n;
  for (int l = 0; l < n; ++l) o[l] = un<K, T>(a[l]);
}

template <UKern K, class T> OpFn un_pick(bool ua) {
  return ua ? &un_kernel<K, T, true> : &un_kernel<K, T, false>;
}

template <UKern K> OpFn un_typed(CType t, bool ua) {
  constexpr bool float_only = K >= UKern::Sqrt;
  constexpr bool int_only = K == UKern::BitNot;
  switch (t) {
    case CType::Bool: if constexpr (!float_only) return un_pick<K, uint8_t>(ua); else return nullptr;
    case CType::I32: if constexpr (!float_only) return un_pick<K, int32_t>(ua); else return nullptr;
    case CType::I64: if constexpr (!float_only) return un_pick<K, int64_t>(ua); else return nullptr;
    case CType::F32: if constexpr (!int_only) return un_pick<K, float>(ua); else return nullptr;
    case CType::F64: if constexpr (!int_only) return un_pick<K, double>(ua); else return nullptr;
    default: return nullptr;
  }
}

template <size_t... I>
OpFn un_dispatch(UKern k, CType t, bool ua, std::index_sequence<I...>) {
  OpFn r = nullptr;
  ((size_t(k) == I ? (r = un_typed<UKern(I)>(t, ua), 0) : 0), ...);
  return r;
}

// ---- cast, select -------------------------------------------------------------------------

template <class F, class T, bool UA>
void cast_kernel(Ctx& c, const Instr& in) {
  const F* __restrict a = static_cast<const F*>(c.ptr[size_t(in.a)]);
  T* __restrict o = static_cast<T*>(c.ptr[size_t(in.dst)]);
  const int n = UA ? 1 : c.n;
  for (int l = 0; l < n; ++l) o[l] = conv<F, T>(a[l]);
}

template <class F> OpFn cast_from(CType to, bool ua) {
  switch (to) {
    case CType::Bool: return ua ? &cast_kernel<F, uint8_t, true> : &cast_kernel<F, uint8_t, false>;
    case CType::I32: return ua ? &cast_kernel<F, int32_t, true> : &cast_kernel<F, int32_t, false>;
    case CType::I64: return ua ? &cast_kernel<F, int64_t, true> : &cast_kernel<F, int64_t, false>;
    case CType::F32: return ua ? &cast_kernel<F, float, true> : &cast_kernel<F, float, false>;
    case CType::F64: return ua ? &cast_kernel<F, double, true> : &cast_kernel<F, double, false>;
    default: return nullptr;
  }
}

template <class T, bool UC, bool UA, bool UB>
void select_kernel(Ctx& c, const Instr& in) {
  const uint8_t* __restrict s = static_cast<const uint8_t*>(c.ptr[size_t(in.a)]);
  const T* __restrict x = static_cast<const T*>(c.ptr[size_t(in.b)]);
  const T* __restrict y = static_cast<const T*>(c.ptr[size_t(in.c)]);
  T* __restrict o = static_cast<T*>(c.ptr[size_t(in.dst)]);
  const int n = UC && UA && UB ? 1 : c.n;
  for (int l = 0; l < n; ++l) o[l] = s[UC ? 0 : l] ? x[UA ? 0 : l] : y[UB ? 0 : l];
}

template <class T, bool UC, bool UA> OpFn select_b(bool ub) {
  return ub ? &select_kernel<T, UC, UA, true> : &select_kernel<T, UC, UA, false>;
}
template <class T> OpFn select_t(bool uc, bool ua, bool ub) {
  if (uc) return ua ? select_b<T, true, true>(ub) : select_b<T, true, false>(ub);
  return ua ? select_b<T, false, true>(ub) : select_b<T, false, false>(ub);
}

// ---- loads --------------------------------------------------------------------------------

// Storage element type S of each dtype and its widening to the lane type T.
template <DType D> struct Src;
template <> struct Src<DType::Bool> { using S = uint8_t; using T = uint8_t; static T w(S v) { return T(v != 0); } static constexpr bool native = false; };
template <> struct Src<DType::U8> { using S = uint8_t; using T = int32_t; static T w(S v) { return v; } static constexpr bool native = false; };
template <> struct Src<DType::I8> { using S = int8_t; using T = int32_t; static T w(S v) { return v; } static constexpr bool native = false; };
template <> struct Src<DType::I16> { using S = int16_t; using T = int32_t; static T w(S v) { return v; } static constexpr bool native = false; };
template <> struct Src<DType::I32> { using S = int32_t; using T = int32_t; static T w(S v) { return v; } static constexpr bool native = true; };
template <> struct Src<DType::I64> { using S = int64_t; using T = int64_t; static T w(S v) { return v; } static constexpr bool native = true; };
template <> struct Src<DType::F16> { using S = uint16_t; using T = float; static T w(S v) { return half_to_float(v); } static constexpr bool native = false; };
template <> struct Src<DType::BF16> {
  using S = uint16_t; using T = float;
  static T w(S v) { uint32_t bits = uint32_t(v) << 16; float f; std::memcpy(&f, &bits, 4); return f; }
  static constexpr bool native = false;
};
template <> struct Src<DType::F32> { using S = float; using T = float; static T w(S v) { return v; } static constexpr bool native = true; };
template <> struct Src<DType::F64> { using S = double; using T = double; static T w(S v) { return v; } static constexpr bool native = true; };

template <DType D, bool Uni>
void load_kernel(Ctx& c, const Instr& in) {
  using S = typename Src<D>::S;
  using T = typename Src<D>::T;
  const S* x = reinterpret_cast<const S*>(in.data);
  const int64_t base = int64_t(c.b) * in.st.b + int64_t(c.i) * in.st.i + int64_t(c.k) * in.st.k;
  T* o = static_cast<T*>(c.buf[size_t(in.dst)]);
  if constexpr (Uni) {
    o[0] = Src<D>::w(x[base]);
  } else if (c.contiguous && in.st.j == 1) {
    const S* s = x + base + c.j0;
    if constexpr (Src<D>::native) {
      c.ptr[size_t(in.dst)] = const_cast<S*>(s);  // read the input in place
      return;
    } else {
      for (int l = 0; l < c.n; ++l) o[l] = Src<D>::w(s[l]);
    }
  } else {
    const int64_t sj = in.st.j;
    for (int l = 0; l < c.n; ++l) o[l] = Src<D>::w(x[base + int64_t(c.jv[l]) * sj]);
  }
  c.ptr[size_t(in.dst)] = o;
}

template <DType D> OpFn load_pick(bool uniform) {
  return uniform ? &load_kernel<D, true> : &load_kernel<D, false>;
}

template <DType D> int64_t read_index(const std::byte* data, int64_t e) {
  typename Src<D>::S v;
  std::memcpy(&v, data + size_t(e) * sizeof v, sizeof v);
  return int64_t(Src<D>::w(v));
}

// ---- accumulator updates and output stores ------------------------------------------------

template <UpdateOp Op, class T> inline T upd(T acc, T v) {
  if constexpr (Op == UpdateOp::Assign) return v;
  else if constexpr (Op == UpdateOp::Add) return add(acc, v);
  else if constexpr (Op == UpdateOp::Sub) return sub(acc, v);
  else if constexpr (Op == UpdateOp::Mul) return mul(acc, v);
  else if constexpr (Op == UpdateOp::Max) return vmax(acc, v);
  else if constexpr (Op == UpdateOp::Min) return vmin(acc, v);
  else if constexpr (Op == UpdateOp::Or) return T(acc | v);
  else if constexpr (Op == UpdateOp::And) return T(acc & v);
  else return T(acc ^ v);
}

template <UpdateOp Op, class T, bool VU, bool M>
void upd_loop(T* acc, const T* v, const uint8_t* m, int n) {
  for (int l = 0; l < n; ++l) {
    T r = upd<Op, T>(acc[l], v[VU ? 0 : l]);
    if constexpr (M) acc[l] = m[l] ? r : acc[l];
    else acc[l] = r;
  }
}

template <UpdateOp Op, class T>
void update_kernel(void* accp, const void* vp, bool vu, const uint8_t* m, int n) {
  T* acc = static_cast<T*>(accp);
  const T* v = static_cast<const T*>(vp);
  if (m) vu ? upd_loop<Op, T, true, true>(acc, v, m, n) : upd_loop<Op, T, false, true>(acc, v, m, n);
  else vu ? upd_loop<Op, T, true, false>(acc, v, m, n) : upd_loop<Op, T, false, false>(acc, v, m, n);
}

template <UpdateOp Op> UpdateFn update_typed(CType t) {
  constexpr bool int_only = Op == UpdateOp::Or || Op == UpdateOp::And || Op == UpdateOp::Xor;
  switch (t) {
    case CType::Bool: return &update_kernel<Op, uint8_t>;
    case CType::I32: return &update_kernel<Op, int32_t>;
    case CType::I64: return &update_kernel<Op, int64_t>;
    case CType::F32: if constexpr (!int_only) return &update_kernel<Op, float>; else return nullptr;
    case CType::F64: if constexpr (!int_only) return &update_kernel<Op, double>; else return nullptr;
    default: return nullptr;
  }
}

template <class T, bool UA, bool UB, bool M>
void muladd_loop(T* acc, const T* a, const T* b, const uint8_t* m, int n) {
  for (int l = 0; l < n; ++l) {
    T r = add(acc[l], mul(a[UA ? 0 : l], b[UB ? 0 : l]));
    if constexpr (M) acc[l] = m[l] ? r : acc[l];
    else acc[l] = r;
  }
}

template <class T, bool M>
void muladd_pick(T* acc, const T* a, bool ua, const T* b, bool ub, const uint8_t* m, int n) {
  if (ua && ub) muladd_loop<T, true, true, M>(acc, a, b, m, n);
  else if (ua) muladd_loop<T, true, false, M>(acc, a, b, m, n);
  else if (ub) muladd_loop<T, false, true, M>(acc, a, b, m, n);
  else muladd_loop<T, false, false, M>(acc, a, b, m, n);
}

template <class T>
void muladd_kernel(void* accp, const void* ap, bool ua, const void* bp, bool ub, const uint8_t* m, int n) {
  T* acc = static_cast<T*>(accp);
  const T* a = static_cast<const T*>(ap);
  const T* b = static_cast<const T*>(bp);
  if (m) muladd_pick<T, true>(acc, a, ua, b, ub, m, n);
  else muladd_pick<T, false>(acc, a, ua, b, ub, m, n);
}


template <StoreOp Op, class T>
void store_kernel(std::byte* out, const int64_t* off, bool ou, const void* vp, bool vu,
                  const uint8_t* m, int n) {
  T* o = reinterpret_cast<T*>(out);
  const T* v = static_cast<const T*>(vp);
  if constexpr (Op == StoreOp::Add && kFloat<T>) {
    if (ou) {  // one cell for every lane (`R[i] += e`, a scalar): the lanes' sum, then one addition
      bool any = false;
      T sum{};
      for (int l = 0; l < n; ++l) {
        if (m && !m[l]) continue;
        sum = any ? sum + v[vu ? 0 : l] : v[vu ? 0 : l];
        any = true;
      }
      if (any) o[off[0]] = o[off[0]] + sum;
      return;
    }
  }
  for (int l = 0; l < n; ++l) {
    if (m && !m[l]) continue;
    T& e = o[off[ou ? 0 : l]];
    e = sto<Op, T>(e, v[vu ? 0 : l]);
  }
}


template <StoreOp Op> StoreFn store_typed(CType t) {
  switch (t) {
    case CType::Bool: return &store_kernel<Op, uint8_t>;
    case CType::I32: return &store_kernel<Op, int32_t>;
    case CType::I64: return &store_kernel<Op, int64_t>;
    case CType::F32: if constexpr (!kStoreIntOnly<Op>) return &store_kernel<Op, float>; else return nullptr;
    case CType::F64: if constexpr (!kStoreIntOnly<Op>) return &store_kernel<Op, double>; else return nullptr;
    default: return nullptr;
  }
}

}  // namespace

size_t lane_size(CType t) {
  switch (t) {
    case CType::Bool: return 1;
    case CType::I32: case CType::F32: return 4;
    default: return 8;
  }
}

OpFn binary_fn(Kern k, CType t, bool ua, bool ub) {
  return bin_dispatch(k, t, ua, ub, std::make_index_sequence<size_t(Kern::Pow) + 1>{});
}

OpFn unary_fn(UKern k, CType t, bool ua) {
  return un_dispatch(k, t, ua, std::make_index_sequence<size_t(UKern::Tanh) + 1>{});
}

OpFn cast_fn(CType from, CType to, bool ua) {
  switch (from) {
    case CType::Bool: return cast_from<uint8_t>(to, ua);
    case CType::I32: return cast_from<int32_t>(to, ua);
    case CType::I64: return cast_from<int64_t>(to, ua);
    case CType::F32: return cast_from<float>(to, ua);
    case CType::F64: return cast_from<double>(to, ua);
    default: return nullptr;
  }
}

OpFn select_fn(CType t, bool uc, bool ua, bool ub) {
  switch (t) {
    case CType::Bool: return select_t<uint8_t>(uc, ua, ub);
    case CType::I32: return select_t<int32_t>(uc, ua, ub);
    case CType::I64: return select_t<int64_t>(uc, ua, ub);
    case CType::F32: return select_t<float>(uc, ua, ub);
    case CType::F64: return select_t<double>(uc, ua, ub);
    default: return nullptr;
  }
}

OpFn load_fn(DType d, bool uniform) {
  switch (d) {
    case DType::Bool: return load_pick<DType::Bool>(uniform);
    case DType::U8: return load_pick<DType::U8>(uniform);
    case DType::I8: return load_pick<DType::I8>(uniform);
    case DType::I16: return load_pick<DType::I16>(uniform);
    case DType::I32: return load_pick<DType::I32>(uniform);
    case DType::I64: return load_pick<DType::I64>(uniform);
    case DType::F16: return load_pick<DType::F16>(uniform);
    case DType::BF16: return load_pick<DType::BF16>(uniform);
    case DType::F32: return load_pick<DType::F32>(uniform);
    case DType::F64: return load_pick<DType::F64>(uniform);
  }
  return nullptr;
}

IndexFn index_fn(DType d) {
  switch (d) {
    case DType::Bool: return &read_index<DType::Bool>;
    case DType::U8: return &read_index<DType::U8>;
    case DType::I8: return &read_index<DType::I8>;
    case DType::I16: return &read_index<DType::I16>;
    case DType::I32: return &read_index<DType::I32>;
    case DType::I64: return &read_index<DType::I64>;
    default: return nullptr;  // index vectors are integers
  }
}

UpdateFn update_fn(UpdateOp op, CType t) {
  switch (op) {
    case UpdateOp::Assign: return update_typed<UpdateOp::Assign>(t);
    case UpdateOp::Add: return update_typed<UpdateOp::Add>(t);
    case UpdateOp::Sub: return update_typed<UpdateOp::Sub>(t);
    case UpdateOp::Mul: return update_typed<UpdateOp::Mul>(t);
    case UpdateOp::Max: return update_typed<UpdateOp::Max>(t);
    case UpdateOp::Min: return update_typed<UpdateOp::Min>(t);
    case UpdateOp::Or: return update_typed<UpdateOp::Or>(t);
    case UpdateOp::And: return update_typed<UpdateOp::And>(t);
    case UpdateOp::Xor: return update_typed<UpdateOp::Xor>(t);
  }
  return nullptr;
}

MulAddFn muladd_fn(CType t) {
  switch (t) {
    case CType::I32: return &muladd_kernel<int32_t>;
    case CType::I64: return &muladd_kernel<int64_t>;
    case CType::F32: return &muladd_kernel<float>;
    case CType::F64: return &muladd_kernel<double>;
    default: return nullptr;
  }
}

StoreFn store_fn(StoreOp op, CType t) {
  switch (op) {
    case StoreOp::Assign: return store_typed<StoreOp::Assign>(t);
    case StoreOp::Add: return store_typed<StoreOp::Add>(t);
    case StoreOp::Max: return store_typed<StoreOp::Max>(t);
    case StoreOp::Min: return store_typed<StoreOp::Min>(t);
    case StoreOp::Or: return store_typed<StoreOp::Or>(t);
    case StoreOp::And: return store_typed<StoreOp::And>(t);
  }
  return nullptr;
}

}  // namespace gamut::cpu
