// Generated queries at the nesting limits of src/lang/ast.h (kMaxExprDepth, kMaxIfDepth), each
// with an independent reference for C[i, j]; shared by the CPU tests (test_query_limits.cpp) and
// the GPU comparison (gpu/test_query_limits_gpu.cpp).
//
// Depth as the parser counts it: a subscript A[i,k] is 2 levels (the access and its index), a
// chain of m terms whose first term is 2 levels deep is m + 1 levels, each unary operator, call,
// cast or `?:` adds one, and each parenthesis one level of parser nesting.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/array.h"
#include "lang/ast.h"

namespace gamut::limits {

constexpr int64_t kM = 5, kK = 3, kN = 4;   // odd sizes

// A, B, J: small nonzero integers (i32), A of (M, K), B of (K, N), J of (N).
inline NDArray make_input(const std::string& name) {
  NDArray a = name == "A" ? NDArray::zeros(DType::I32, {kM, kK})
            : name == "B" ? NDArray::zeros(DType::I32, {kK, kN}) : NDArray::zeros(DType::I32, {kN});
  const int salt = name == "A" ? 1 : name == "B" ? 2 : 3;
  for (int64_t e = 0; e < a.size(); ++e) {
    int v = int((e * 7 + salt * 5) % 9) - 4;
    a.as<int32_t>()[e] = v == 0 ? salt : v;
  }
  return a;
}

inline std::string repeat(const std::string& s, int n) {
  std::string r;
  for (int k = 0; k < n; ++k) r += s;
  return r;
}
// `terms` copies of leaf joined by op: a chain of terms - 1 operators.
inline std::string chain(const std::string& leaf, const std::string& op, int terms) {
  std::string r = leaf;
  for (int k = 1; k < terms; ++k) r += " " + op + " " + leaf;
  return r;
}

inline std::string query(const std::string& inner, const std::string& outer = "C[i, j] = a + J[j];",
                         const std::string& when = "") {
  return "where (i, j)" + when + " {\n  a: i64 = 0;\n  reduce (k) {\n    " + inner + "\n  }\n  " + outer + "\n}\n";
}

struct Case {
  std::string name;
  // The query at `extra` levels beyond the limit (0: exactly at it).
  std::function<std::string(int extra)> text;
  // Expected C[i, j] of the query at the limit, from the inputs.
  std::function<int64_t(const NDArray& A, const NDArray& B, const NDArray& J, int64_t i, int64_t j)> expect;
};

inline int64_t at(const NDArray& x, int64_t r, int64_t c, int64_t cols) { return x.as<int32_t>()[r * cols + c]; }

inline std::vector<Case> cases() {
  const int D = kMaxExprDepth;
  using F = std::function<int64_t(int64_t, int64_t, int64_t)>;  // (a, b, k) -> term, summed over k
  auto sum_k = [](F term) {
    return [term](const NDArray& A, const NDArray& B, const NDArray& J, int64_t i, int64_t j) {
      int64_t s = 0;
      for (int64_t k = 0; k < kK; ++k) s += term(at(A, i, k, kK), at(B, k, j, kN), k);
      return s + J.as<int32_t>()[j];
    };
  };
  std::vector<Case> v;
  // Flat chains: m terms of A[i,k] are m + 1 levels.
  v.push_back({"add_chain", [=](int x) { return query("a += " + chain("A[i,k]", "+", D - 1 + x) + ";"); },
               sum_k([=](int64_t a, int64_t, int64_t) { return int64_t(D - 1) * a; })});
  v.push_back({"sub_chain", [=](int x) { return query("a += " + chain("A[i,k]", "-", D - 1 + x) + ";"); },
               sum_k([=](int64_t a, int64_t, int64_t) { return int64_t(2 - (D - 1)) * a; })});
  v.push_back({"mul_chain", [=](int x) { return query("a += A[i,k] * " + chain("B[k,j]", "*", D - 2 + x) + ";"); },
               sum_k([=](int64_t a, int64_t b, int64_t) {
                 uint32_t p = uint32_t(a);   // the product is i32 and wraps
                 for (int n = 0; n < D - 2; ++n) p *= uint32_t(b);
                 return int64_t(int32_t(p));
               })});
  v.push_back({"and_chain", [=](int x) { return query("a += " + chain("A[i,k]", "&&", D - 1 + x) + ";"); },
               sum_k([](int64_t a, int64_t, int64_t) { return int64_t(a != 0); })});
  v.push_back({"or_chain", [=](int x) { return query("a += B[k,j] - A[i,k] || " + chain("A[i,k] - A[i,k]", "||", D - 3 + x) + ";"); },
               sum_k([](int64_t a, int64_t b, int64_t) { return int64_t(b - a != 0); })});
  v.push_back({"compare_chain", [=](int x) { return query("a += " + chain("A[i,k]", "<", D - 1 + x) + ";"); },
               sum_k([=](int64_t a, int64_t, int64_t) {
                 int64_t r = a;
                 for (int n = 1; n < D - 1; ++n) r = r < a;
                 return r;
               })});
  // Nesting: n prefixes over A[i,k] are n + 2 levels.
  v.push_back({"negations", [=](int x) { return query("a += " + repeat("-", D - 2 + x) + "A[i,k];"); },
               sum_k([=](int64_t a, int64_t, int64_t) { return (D - 2) % 2 ? -a : a; })});
  v.push_back({"nots", [=](int x) { return query("a += " + repeat("!", D - 2 + x) + "A[i,k];"); },
               sum_k([=](int64_t a, int64_t, int64_t) { return (D - 2) % 2 ? int64_t(a == 0) : int64_t(a != 0); })});
  v.push_back({"bit_nots", [=](int x) { return query("a += " + repeat("~", D - 2 + x) + "A[i,k];"); },
               sum_k([=](int64_t a, int64_t, int64_t) { return (D - 2) % 2 ? ~a : a; })});
  v.push_back({"parentheses", [=](int x) {
                 return query("a += " + repeat("(", D - 2 + x) + "A[i,k]" + repeat(")", D - 2 + x) + " * B[k,j];"); },
               sum_k([](int64_t a, int64_t b, int64_t) { return a * b; })});
  v.push_back({"calls", [=](int x) { return query("a += " + repeat("abs(", D - 2 + x) + "A[i,k]" + repeat(")", D - 2 + x) + ";"); },
               sum_k([](int64_t a, int64_t, int64_t) { return a < 0 ? -a : a; })});
  v.push_back({"casts", [=](int x) {
                 std::string open;
                 for (int n = 0; n < D - 2 + x; ++n) open += n % 2 ? "f64(" : "i32(";
                 return query("a += " + open + "A[i,k]" + repeat(")", D - 2 + x) + ";"); },
               sum_k([](int64_t a, int64_t, int64_t) { return a; })});
  v.push_back({"min_nested", [=](int x) {
                 return query("a += " + repeat("min(", D - 2 + x) + "A[i,k]" + repeat(", B[k,j])", D - 2 + x) + ";"); },
               sum_k([](int64_t a, int64_t b, int64_t) { return a < b ? a : b; })});
  // Right-nested ?: chain: n conditionals ending in B[k,j] are n + 2 levels.
  v.push_back({"conditionals", [=](int x) { return query("a += " + repeat("i < j ? A[i,k] : ", D - 2 + x) + "B[k,j];"); },
               [=](const NDArray& A, const NDArray& B, const NDArray& J, int64_t i, int64_t j) {
                 int64_t s = 0;
                 for (int64_t k = 0; k < kK; ++k) s += i < j ? at(A, i, k, kK) : at(B, k, j, kN);
                 return s + J.as<int32_t>()[j];
               }});
  // After reduce, and in `when`.
  v.push_back({"output_chain", [=](int x) { return query("a += A[i,k];", "C[i, j] = " + chain("J[j]", "+", D - 2 + x) + " + a;"); },
               [=](const NDArray& A, const NDArray&, const NDArray& J, int64_t i, int64_t j) {
                 int64_t s = 0;
                 for (int64_t k = 0; k < kK; ++k) s += at(A, i, k, kK);
                 return s + int64_t(D - 2) * J.as<int32_t>()[j];
               }});
  v.push_back({"when_chain", [=](int x) {
                 return query("a += A[i,k] * B[k,j];", "C[i, j] = a + J[j];", " when (" + chain("i != j", "&&", D - 1 + x) + ")"); },
               [](const NDArray& A, const NDArray& B, const NDArray& J, int64_t i, int64_t j) {
                 if (i == j) return int64_t(0);   // the pair does not reach the store
                 int64_t s = 0;
                 for (int64_t k = 0; k < kK; ++k) s += int64_t(at(A, i, k, kK)) * at(B, k, j, kN);
                 return s + J.as<int32_t>()[j];
               }});
  // kMaxIfDepth nested `if`s around a chain at the expression limit.
  v.push_back({"nested_ifs", [=](int x) {
                 return query(repeat("if (i <= j) ", kMaxIfDepth + x) + "a += " + chain("A[i,k]", "+", D - 1) + ";"); },
               [=](const NDArray& A, const NDArray&, const NDArray& J, int64_t i, int64_t j) {
                 int64_t s = 0;
                 for (int64_t k = 0; k < kK; ++k) s += i <= j ? int64_t(D - 1) * at(A, i, k, kK) : 0;
                 return s + J.as<int32_t>()[j];
               }});
  return v;
}

}  // namespace gamut::limits
