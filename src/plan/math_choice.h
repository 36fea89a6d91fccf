// Which arithmetic a plan's inner operation runs in (spec section 10): a sum of products
// `ACC += x * y` (x reading a row operand, y a column operand, possibly through widening casts
// and constant factors) may run on the tensor cores; everything else keeps the SIMT mainloop.
// One place, so that code generation, `explain` and `--json` always agree.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/types.h"
#include "plan/plan.h"

namespace gamut {

// The f32_math run option: how sums of products of f32 inputs are computed.
enum class F32Math : uint8_t {
  Ieee,     // every product and sum rounded in f32 (SIMT), the default
  Tf32x3,   // each operand split into two TF32 parts, three tensor-core products
  Tf32,     // operands rounded to TF32 before the product (PyTorch's allow_tf32)
};
const char* f32_math_name(F32Math m);                          // "ieee", "tf32x3", "tf32"
std::optional<F32Math> f32_math_from_name(std::string_view name);

// The arithmetic of the inner operation.
enum class InnerMath : uint8_t {
  Simt,     // the FP32/INT32 pipe, every inner operation (today's mainloop)
  F16,      // f16 x f16 -> f32 on tensor cores (mma m16n8k16)
  BF16,     // bf16 x bf16 -> f32
  Int8,     // i8 / u8 x i8 / u8 -> i32 (mma m16n8k32), wrapping like the CPU engine
  Tf32,     // f32 operands rounded to TF32 -> f32 (mma m16n8k8)
  Tf32x3,   // f32 operands split into TF32 big + small, three products -> f32
};

// The plan-level conditions under which a top / bottom list may keep its thresholds in the
// blocks of a persistent wgmma kernel (CodegenOptions::resident_top, gm::ResidentTop): one
// output, a top / bottom list per i or per j whose key has an exact 32-bit rank (bool, i32,
// f32), one accumulator, no `when`. Returns the list, or -1. The run adds N <= 32 and the k
// range (choose_kernel).
int resident_top_form(const Plan& plan);

struct MathChoice {
  // The plan's inner operation is a sum of products of a row and a column operand (section 10),
  // whatever math then runs it.
  bool sum_of_products = false;
  InnerMath math = InnerMath::Simt;
  int row_access = -1;             // Plan::accesses of the row-side factor (X[i,k] or X[k,i])
  int col_access = -1;             // and of the column-side factor (Y[k,j] or Y[j,k])
  DType row_type = DType::F32;     // their storage types (known when sum_of_products)
  DType col_type = DType::F32;
  // The constant factor of the products (`acc += 2 * x * y`, `acc -= x * y`: 2, -1). The
  // mainloop sums x * y; the result is init + factor * sum. Integer factors are exact in i32
  // (wrapping), float factors add one rounding.
  Scalar factor = Scalar::of_int(CType::I32, 1);
  std::string why;                 // why the SIMT path runs (empty when a tensor-core math does)
  // f16 / bf16 / tf32 / tf32x3 may take the wgmma mainloop (sm_90a); executed_math clears it
  // for plans whose output operators run slower over its accumulator layout (distinct lists).
  bool wgmma = true;
  // Plans whose distinct lists may all run on seen tables (columns of vector lookups, see
  // src/cuda/codegen/seen_box.h): wgmma in the runs where every one of them does (their
  // values lie in small boxes), mma.sync otherwise. Set only where `wgmma` is cleared for them.
  bool wgmma_if_seen = false;
  // The reduction's length from which wgmma runs; shorter ones take mma.sync (0: any). Set
  // for top / bottom lists per i or j in 16- and 8-bit math (their per-tile selection costs
  // more over wgmma's 2 x 64 pairs per thread than its products save while K is short).
  int64_t wgmma_min_k = 0;

  bool tensor_cores() const { return math != InnerMath::Simt; }
  // For explain / --json: "ieee" (SIMT f32), "simt" (other SIMT), "f16", "bf16", "i8", "u8",
  // "i8xu8", "u8xi8", "tf32", "tf32x3".
  std::string math_name() const;
  // "simt", or the tensor-core mainloop of an sm_90a device (H100/H200): "wgmma" for f16 /
  // bf16 / tf32 / tf32x3 (unless `wgmma` is cleared; "wgmma from K = n" where wgmma_min_k is
  // set), "mma.sync" for 8-bit. (On sm_80 they run mma.sync: run statistics name what ran.)
  std::string mainloop_name() const;
};

// The math a typed plan runs with under `f32_math`. Plans whose input types are not known yet
// (explain without data) run on SIMT with a reason saying so.
MathChoice choose_math(const Plan& plan, F32Math f32_math);

// The math the engines run today: choose_math's answer where the code generator has a mainloop
// for it, else the SIMT path with `why` saying so. explain and --json report this one.
MathChoice executed_math(const Plan& plan, F32Math f32_math);
// explain's line for it: "math: ieee on the simt mainloop (...)\n".
std::string explain_math(const Plan& plan, F32Math f32_math);
std::string explain_math(const MathChoice& ran);

}  // namespace gamut
