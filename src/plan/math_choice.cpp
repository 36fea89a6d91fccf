#include "plan/math_choice.h"

#include <cmath>
#include <map>
#include <vector>

namespace gamut {

const char* f32_math_name(F32Math m) {
  switch (m) {
    case F32Math::Ieee: return "ieee";
    case F32Math::Tf32x3: return "tf32x3";
    case F32Math::Tf32: return "tf32";
  }
  return "ieee";
}

std::optional<F32Math> f32_math_from_name(std::string_view name) {
  if (name == "ieee") return F32Math::Ieee;
  if (name == "tf32x3") return F32Math::Tf32x3;
  if (name == "tf32") return F32Math::Tf32;
  return std::nullopt;
}

std::string MathChoice::math_name() const {
  switch (math) {
    case InnerMath::Simt:
      return sum_of_products && row_type == DType::F32 && col_type == DType::F32 ? "ieee" : "simt";
    case InnerMath::F16: return "f16";
    case InnerMath::BF16: return "bf16";
    case InnerMath::Int8: {
      const bool sr = row_type == DType::I8, sc = col_type == DType::I8;
      return sr == sc ? (sr ? "i8" : "u8") : (sr ? "i8xu8" : "u8xi8");
    }
    case InnerMath::Tf32: return "tf32";
    case InnerMath::Tf32x3: return "tf32x3";
  }
  return "simt";
}

std::string MathChoice::mainloop_name() const {
  if (!tensor_cores()) return "simt";
  if (math == InnerMath::Int8) return "mma.sync";
  if (!wgmma) return wgmma_if_seen ? "wgmma with seen tables (mma.sync otherwise)" : "mma.sync";
  return wgmma_min_k > 0 ? "wgmma from K = " + std::to_string(wgmma_min_k) + " (mma.sync below)" : "wgmma";
}

namespace {

// The factors of a product tree: loads (through exact widening casts), constants and negations.
struct Factors {
  std::vector<int> loads;          // Plan::accesses
  Scalar factor;
  std::string why;                 // set when the expression is not such a product
};

// Whether every value of storage type `from` converts exactly to compute type `to`.
bool exact_widening(DType from, CType to) {
  switch (from) {
    case DType::U8: case DType::I8: case DType::I16:
      return to == CType::I32 || to == CType::I64 || to == CType::F32 || to == CType::F64;
    case DType::I32: return to == CType::I32 || to == CType::I64 || to == CType::F64;
    case DType::I64: return to == CType::I64;
    case DType::F16: case DType::BF16: case DType::F32: return to == CType::F32 || to == CType::F64;
    case DType::F64: return to == CType::F64;
    case DType::Bool: return false;
  }
  return false;
}

std::optional<DType> load_dtype(const Plan& p, int access) {
  return p.operands[size_t(p.accesses[size_t(access)].operand)].dtype;
}

class ProductCollector {
 public:
  ProductCollector(const Plan& p, const std::map<int, ExprId>& lets, CType t) : p_(p), lets_(lets), t_(t) {}

  Factors run(ExprId id) {
    f_.factor = is_float(t_) ? Scalar::of_float(t_, 1.0) : Scalar::of_int(t_, 1);
    visit(id);
    return f_;
  }

 private:
  void fail(const std::string& why) {
    if (f_.why.empty()) f_.why = why;
  }
  void scale(const Scalar& c) {
    if (is_float(t_)) f_.factor = Scalar::of_float(t_, f_.factor.f * c.f);
    else f_.factor = convert_scalar(Scalar::of_int(CType::I64, int64_t(uint64_t(f_.factor.i) * uint64_t(c.i))), t_);
  }
  void visit(ExprId id) {
    if (!f_.why.empty()) return;
    // (Lets between expressions of up to 256 levels: the recursion is bounded on its own too.)
    struct Enter {
      int& d;
      explicit Enter(int& x) : d(x) { ++d; }
      ~Enter() { --d; }
    } in(depth_);
    if (depth_ > kMaxDepth) return fail("the product is nested more than 1024 levels deep through its lets");
    const Expr& e = p_.expr(id);
    if (e.type != t_ && e.kind != ExprKind::Load) {
      fail("the product is computed in " + std::string(ctype_name(e.type)) + ", the sum in " +
           std::string(ctype_name(t_)));
      return;
    }
    switch (e.kind) {
      case ExprKind::Binary:
        if (e.binop != BinOp::Mul) return fail(std::string("the inner operation has '") + binop_symbol(e.binop) + "'");
        visit(e.a);
        visit(e.b);
        return;
      case ExprKind::Unary:
        if (e.unop != UnOp::Neg) return fail(std::string("the inner operation has '") + unop_symbol(e.unop) + "'");
        scale(is_float(t_) ? Scalar::of_float(t_, -1.0) : Scalar::of_int(CType::I64, -1));
        visit(e.a);
        return;
      case ExprKind::Const:
        if (is_float(t_) && !std::isfinite(e.value.f)) return fail("a factor is not finite");
        scale(e.value);
        return;
      case ExprKind::Cast: {
        const Expr& x = p_.expr(e.a);
        const auto d = x.kind == ExprKind::Load ? load_dtype(p_, x.index) : std::nullopt;
        if (x.kind != ExprKind::Load) return fail("a cast of a computed value");
        if (d && !exact_widening(*d, e.type)) return fail("a cast that changes a value");
        f_.loads.push_back(x.index);
        return;
      }
      case ExprKind::Load:
        if (e.type != t_) return fail("an operand is used as " + std::string(ctype_name(e.type)));
        f_.loads.push_back(e.index);
        return;
      case ExprKind::Local: {
        auto it = lets_.find(e.index);
        if (it == lets_.end()) return fail("a local that is not a plain inner let");
        // (Every pass through a let counts: thousands of chained lets would overflow the stack,
        // and lets used twice at every level double the walk.)
        if (++let_reads_ > kMaxLetReads) return fail("the product reads through more than 256 lets");
        visit(it->second);
        return;
      }
      default:
        return fail("the inner operation is not a product of operands");
    }
  }

  static constexpr int kMaxLetReads = 256, kMaxDepth = 1024;
  int depth_ = 0;
  const Plan& p_;
  const std::map<int, ExprId>& lets_;
  CType t_;
  Factors f_;
  int let_reads_ = 0;
};

bool row_matrix(Pattern q) { return q == Pattern::RowRed || q == Pattern::RedRow; }
bool col_matrix(Pattern q) { return q == Pattern::RedCol || q == Pattern::ColRed; }

MathChoice simt(MathChoice c, const std::string& why) {
  c.math = InnerMath::Simt;
  c.why = why;
  return c;
}

}  // namespace

MathChoice choose_math(const Plan& p, F32Math f32_math) {
  MathChoice c;
  // The form: one accumulator, unconditional lets, then one `ACC += e` / `ACC -= e`.
  if (p.accs.size() != 1) return simt(c, "not one accumulator");
  std::map<int, ExprId> lets;
  const Stmt* update = nullptr;
  for (const Stmt& s : p.inner) {
    if (s.kind == StmtKind::Let && !update) lets[s.target] = s.value;
    else if (s.kind == StmtKind::Update && !update) update = &s;
    else return simt(c, "the reduce body is not one update");
  }
  if (!update || (update->update != UpdateOp::Add && update->update != UpdateOp::Sub))
    return simt(c, "the update is not += or -=");
  const CType t = p.accs[0].type;
  Factors f = ProductCollector(p, lets, t).run(update->value);
  if (!f.why.empty()) return simt(c, f.why);
  if (f.loads.size() != 2) return simt(c, "the product has " + std::to_string(f.loads.size()) + " operands, not 2");
  int a = f.loads[0], b = f.loads[1];
  if (row_matrix(p.accesses[size_t(b)].pattern) && col_matrix(p.accesses[size_t(a)].pattern)) std::swap(a, b);
  if (!row_matrix(p.accesses[size_t(a)].pattern) || !col_matrix(p.accesses[size_t(b)].pattern))
    return simt(c, "the factors are not a row matrix and a column matrix");
  c.sum_of_products = true;
  c.row_access = a;
  c.col_access = b;
  c.factor = f.factor;
  if (update->update == UpdateOp::Sub)
    c.factor = is_float(t) ? Scalar::of_float(t, -c.factor.f)
                           : convert_scalar(Scalar::of_int(CType::I64, int64_t(0 - uint64_t(c.factor.i))), t);

  const auto dr = load_dtype(p, a), dc = load_dtype(p, b);
  if (!dr || !dc) return simt(c, "input types not known yet (bind the inputs)");
  c.row_type = *dr;
  c.col_type = *dc;
  const std::string types = std::string(dtype_name(*dr)) + " x " + std::string(dtype_name(*dc));
  auto int8 = [](DType d) { return d == DType::I8 || d == DType::U8; };
  if (t == CType::F32) {
    if (*dr == DType::F16 && *dc == DType::F16) c.math = InnerMath::F16;
    else if (*dr == DType::BF16 && *dc == DType::BF16) c.math = InnerMath::BF16;
    else if (*dr == DType::F32 && *dc == DType::F32) {
      switch (f32_math) {
        case F32Math::Ieee: return simt(c, "f32 inputs under f32_math ieee");
        case F32Math::Tf32x3: c.math = InnerMath::Tf32x3; break;
        case F32Math::Tf32: c.math = InnerMath::Tf32; break;
      }
    } else {
      return simt(c, "no tensor-core math for " + types + " summed in f32");
    }
  } else if (t == CType::I32) {
    if (!int8(*dr) || !int8(*dc)) return simt(c, "no tensor-core math for " + types + " summed in i32");
    c.math = InnerMath::Int8;
  } else {
    return simt(c, "no tensor-core math for a " + std::string(ctype_name(t)) + " sum");
  }
  return c;
}

namespace {

// The maths whose tensor-core mainloop the kernel generator emits (src/cuda/codegen/
// mainloop_tensor_cores.cpp: mma.sync, every output operator). A math switched off here runs
// on the SIMT mainloop, at least as precise as asked, and explain says why.
bool generator_emits(InnerMath m) {
  switch (m) {
    case InnerMath::F16:
    case InnerMath::BF16:
    case InnerMath::Int8:
    case InnerMath::Tf32:
    case InnerMath::Tf32x3: return true;
    case InnerMath::Simt: break;
  }
  return false;
}

}  // namespace

MathChoice executed_math(const Plan& plan, F32Math f32_math) {
  MathChoice c = choose_math(plan, f32_math);
  if (c.tensor_cores() && !generator_emits(c.math)) {
    c.why = std::string("could run as ") + c.math_name() + " on tensor cores; this build's kernel generator runs it on the SIMT mainloop";
    c.math = InnerMath::Simt;
  }
  // (Top/bottom lists per i or j ran on SIMT until session 7: with the kept rows ordered on the
  // device, the expanded kNN is faster on tensor cores, 9.8 -> 7.2 ms at K = 256 and 25 -> 7.4
  // ms at K = 1024 on bf16; bench/NOTES.md.)
  // Distinct lists de-duplicate per tile over the accumulator map: over wgmma's (2 x 64 pairs
  // per thread) the distinct areas took 32 ms on bf16, over mma.sync's (8 x 8) 15 ms on tf32
  // (H200, 16384^2, K = 256; bench/NOTES.md, session 6).
  // Top/bottom lists per i or j ran on mma.sync from session 7 (over wgmma's map the kNN kernel
  // spilled 392 bytes) to session 14: with the producer warpgroup's registers it spills 24, and
  // its kernel (H200, 16384^2, bench/NOTES.md session 14) is faster on wgmma in tf32 (K = 256:
  // 2.08 -> 1.81 ms, K = 1024: 5.26 -> 2.82) and in bf16 at K = 1024 (2.76 -> 2.14), slower in
  // bf16 at K = 256 (1.48 -> 1.69): there the selection dominates, and it is cheaper over
  // mma.sync's 8 x 8 pairs per thread. 16-bit math therefore takes wgmma from K = 512.
  // Distinct lists of vector lookups whose values lie in a small box run on seen tables (no
  // per-tile hash, src/cuda/codegen/seen_box.h); there wgmma is the faster mainloop (H100, 16384^2,
  // distinct areas kernel, bench/NOTES.md session 15: bf16 K = 256 0.975 -> 0.937 ms, K = 1024
  // 2.40 -> 1.39; tf32 1.61 -> 1.09, 4.99 -> 1.92). That is known per run (the values):
  // wgmma_if_seen lets choose_kernel take wgmma where every distinct list has its table.
  bool distinct = false, all_lookups = true;
  for (size_t l = 0; l < plan.lists.size(); ++l)
    if (plan.lists[l].mode == ListMode::Distinct) {
      distinct = true;
      all_lookups = all_lookups && !distinct_lookup_columns(plan, l).empty();
    }
  c.wgmma_if_seen = c.wgmma && distinct && all_lookups;
  c.wgmma = c.wgmma && !distinct;
  // Since session 20 a list of N <= 32 (a literal here; the run knows a parameter's) keeps its
  // thresholds in the blocks of a persistent wgmma kernel at every K (resident_top_form).
  const int resident = resident_top_form(plan);
  const bool resident_n =
      resident >= 0 && plan.lists[size_t(resident)].limit_param < 0 && plan.lists[size_t(resident)].limit <= 32;
  for (const ListOutput& l : plan.lists) {
    const bool grouped_rank = (l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per != PerGroup::None;
    if (grouped_rank && !resident_n && c.math != InnerMath::Tf32 && c.math != InnerMath::Tf32x3) c.wgmma_min_k = 512;
  }
  return c;
}

int resident_top_form(const Plan& plan) {
  if (plan.lists.size() != 1 || !plan.dense.empty() || plan.when.present() || plan.accs.size() != 1) return -1;
  const ListOutput& l = plan.lists[0];
  if ((l.mode != ListMode::Top && l.mode != ListMode::Bottom) || l.key == kNoExpr) return -1;
  if (l.per != PerGroup::Row && l.per != PerGroup::Col) return -1;
  // gm::rank32 is the key's exact order only for 32-bit keys (64-bit: the top half).
  const CType t = plan.expr(l.key).type;
  return t == CType::Bool || t == CType::I32 || t == CType::F32 ? 0 : -1;
}

std::string explain_math(const Plan& plan, F32Math f32_math) { return explain_math(executed_math(plan, f32_math)); }

std::string explain_math(const MathChoice& m) {
  return "math: " + m.math_name() + " on the " + m.mainloop_name() + " mainloop" +
         (m.why.empty() ? "" : " (" + m.why + ")") + "\n";
}

}  // namespace gamut
