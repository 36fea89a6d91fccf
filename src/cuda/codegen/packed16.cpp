// Packed 16-bit tropical steps (CodegenOptions::packed16): two (i, j) pairs per 32-bit
// register, one DPX instruction (__viaddmax_s16x2 / __viaddmin_s16x2) per two updates.
//
// The spec computes `acc max= x + y` on 8/16-bit inputs in i32 (C promotion), so lanes of 16
// bits give the same result only when no sum leaves the 16-bit range: packed16_data_fits checks
// the bound data. Each lane then folds the k steps starting from the 16-bit identity; after the
// mainloop the epilogue reads each lane widened and folded into the accumulator's own initial
// value (which may be any literal), so the result is exactly the i32 one, and no i32 copy of the
// accumulators is ever live next to the packed one. With an empty k range the lanes
// are never touched and the accumulator keeps its initial value.
//
// Layout: the row operand is stored in shared memory as 32-bit words holding the value in both
// halves (made once by the loader, gm::widened's DUP16, not once per use: a byte permute per
// row and k cost ~10% of the DPX issue); the column operand is kept as 16-bit values, so a
// 32-bit fragment word is the pair of columns (2p, 2p + 1) of the thread's column run.
#include <algorithm>
#include <limits>

#include "cuda/codegen/mainloop.h"
#include "plan/semiring.h"

namespace gamut::cuda {

namespace {

bool small_int(DType t) { return t == DType::I8 || t == DType::U8 || t == DType::I16; }

bool tile_pattern(Pattern p) {
  const cg::InnerKind k = cg::inner_kind(p);
  return k == cg::InnerKind::RowTile || k == cg::InnerKind::ColTile;
}

// The value range of an operand's stored data, [lo, hi]; false for an empty array.
bool value_range(const NDArray& a, int64_t& lo, int64_t& hi) {
  const int64_t n = a.size();
  if (n == 0) return false;
  switch (a.dtype) {
    case DType::I8: {
      const auto* p = reinterpret_cast<const int8_t*>(a.data.data());
      const auto [mn, mx] = std::minmax_element(p, p + n);
      lo = *mn, hi = *mx;
      return true;
    }
    case DType::U8: {
      const auto* p = reinterpret_cast<const uint8_t*>(a.data.data());
      const auto [mn, mx] = std::minmax_element(p, p + n);
      lo = *mn, hi = *mx;
      return true;
    }
    default: {
      const auto* p = reinterpret_cast<const int16_t*>(a.data.data());
      int16_t mn = std::numeric_limits<int16_t>::max(), mx = std::numeric_limits<int16_t>::min();
      for (int64_t e = 0; e < n; ++e) {  // a plain loop vectorises; minmax_element does not
        mn = std::min(mn, p[e]);
        mx = std::max(mx, p[e]);
      }
      lo = mn, hi = mx;
      return true;
    }
  }
}

}  // namespace

bool packed16_form(const Plan& plan, const TileConfig& tile) {
  const SemiringForm f = semiring_form(plan);
  if (f.op != "add-max" && f.op != "add-min") return false;
  if (f.type != CType::I32 && f.type != CType::I64) return false;
  // The sum itself must be integer arithmetic (a cast to float would be a different step).
  const CType sum = plan.expr(plan.inner[0].value).type;
  if (sum != CType::I32 && sum != CType::I64) return false;
  const std::vector<int> inner = cg::inner_accesses(plan);
  if (inner.size() != 2) return false;
  for (int a : {f.row_access, f.col_access}) {
    if (!tile_pattern(plan.accesses[size_t(a)].pattern) || !small_int(cg::access_dtype(plan, a))) return false;
    if (std::find(inner.begin(), inner.end(), a) == inner.end()) return false;
  }
  // Column pairs come from the thread's runs of VN = min(TN, 4) columns.
  return tile.tn >= 2 && tile.tn % 2 == 0;
}

bool packed16_data_fits(const Plan& plan, const Instance& inst) {
  const SemiringForm f = semiring_form(plan);
  if (f.row_access < 0 || f.col_access < 0) return false;
  int64_t lo[2], hi[2];
  for (int s = 0; s < 2; ++s) {
    const int a = s == 0 ? f.row_access : f.col_access;
    const NDArray* x = inst.inputs[size_t(plan.accesses[size_t(a)].operand)];
    if (!x) return false;
    if (!value_range(*x, lo[s], hi[s])) return true;  // no data, no step
  }
  return lo[0] + lo[1] >= std::numeric_limits<int16_t>::min() && hi[0] + hi[1] <= std::numeric_limits<int16_t>::max();
}

namespace cg {

namespace {

// The tropical operation of a plan of packed16_form.
enum class Tropical { AddMax, AddMin };
Tropical tropical_of(const Plan& plan) {
  return semiring_form(plan).op == "add-max" ? Tropical::AddMax : Tropical::AddMin;
}

std::string loader(int a) { return cat("L", std::to_string(a)); }

class Packed16Step final : public SimtStep {
 public:
  Packed16Step(const Plan& plan, const Names& names) : P(plan), N(names), op(tropical_of(plan)) {
    const SemiringForm f = semiring_form(plan);
    row = f.row_access;
    col = f.col_access;
  }
  // The column operand stays 16-bit in shared memory (a 32-bit word is a column pair).
  std::string smem_type(int a) const override { return a == col ? "short" : frag_cpp(access_ctype(P, a)); }
  // The column operand is copied as it is, like a compute-type operand, when it is i16 and p is
  // contiguous; the other operands are staged and widened (tile_copy).
  TileCopy copy(int a) const override { return tile_copy(P, a, true); }
  // The row operand's loader writes each value into both 16-bit halves (gm::widened's DUP16).
  std::string loader_flags(int a) const override { return a == row ? ", true" : ""; }

  void members(Code& c) const override {
    const Accumulator& acc = P.accs[0];
    const std::string t = ctype_cpp(acc.type), init = Renderer::literal(acc.init, acc.type);
    const std::string fold = op == Tropical::AddMax ? "gm::max_" : "gm::min_";
    c.line("unsigned pk[Shape::TM][Shape::TN / 2];  // " + acc.name + " as 16-bit lane pairs");
    c.line("// The accumulator at fragment (m, n): its 16-bit lane widened and folded into the initial");
    c.line("// value; with an empty k range the lanes were never touched and the initial value stands.");
    c.open("__device__ __forceinline__ " + t + " packed_acc(int m, int n, bool k_any) const");
    c.line("const unsigned w = pk[m][n / 2];");
    c.line("const " + t + " lane = " + t + "(short(n % 2 != 0 ? w >> 16 : w & 0xffffu));");
    c.line("return k_any ? " + fold + "(" + t + "(" + init + "), lane) : " + t + "(" + init + ");");
    c.close();
  }

  void step(Code& c) const override {
    const std::string r = std::to_string(row), k = std::to_string(col), xr = N.access(row), xk = N.access(col);
    c.line("int " + xr + "[Shape::TM];  // (TM) row values, each in both 16-bit halves (the loader's DUP16)");
    c.line("gm::load_frag<Shape::TM, Shape::VM, Shape::THREADS_M>(" + xr + ", sm" + r + " + buf * " + loader(row) +
           "::BUF + kk * " + loader(row) + "::LDS, tmap.tm);");
    c.line("int " + xk + "[Shape::TN / 2];  // (TN/2) column pairs: 16-bit lanes (2p, 2p+1)");
    c.line("gm::load_frag<Shape::TN / 2, Shape::VN / 2, Shape::THREADS_N>(" + xk + ", reinterpret_cast<const int*>(sm" +
           k + " + buf * " + loader(col) + "::BUF + kk * " + loader(col) + "::LDS), tmap.tn);");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < Shape::TM; ++m)");
    c.line("#pragma unroll");
    c.line(std::string("for (int p = 0; p < Shape::TN / 2; ++p) pk[m][p] = ") +
           (op == Tropical::AddMax ? "__viaddmax_s16x2" : "__viaddmin_s16x2") + "(unsigned(" + xr + "[m]), unsigned(" +
           xk + "[p]), pk[m][p]);");
    c.close();
  }

  // Both lanes start at the 16-bit identity; the accumulator's own initial value is folded in
  // when it is read (packed_acc).
  void init(Code& c) const override {
    c.line("#pragma unroll");
    c.line("for (int m = 0; m < Shape::TM; ++m)");
    c.line("#pragma unroll");
    c.line(std::string("  for (int p = 0; p < Shape::TN / 2; ++p) st.pk[m][p] = ") +
           (op == Tropical::AddMax ? "0x80008000u" : "0x7fff7fffu") + ";");
  }

  // Packed lanes are widened where they are read, so no second, i32 copy of the accumulators
  // is ever live.
  std::string value(int) const override { return "st.packed_acc(m, n, red_end > red_begin)"; }

 private:
  const Plan& P;
  const Names& N;
  Tropical op;
  int row = -1, col = -1;
};

}  // namespace

std::unique_ptr<SimtStep> make_packed16_step(const KernelContext& ctx) {
  if (!packed16_form(ctx.P, ctx.T)) unsupported("packed 16-bit steps for this plan or tile");
  return std::make_unique<Packed16Step>(ctx.P, ctx.N);
}

}  // namespace cg
}  // namespace gamut::cuda
