// The SIMT mainloop (mainloop.h): an Inner functor (the reduce body for one (i, j, k)), a Stage
// holding the plan's loaders, fragments and TM x TN accumulators per thread, driven by the
// device library's gm::mainloop (device/mainloop/gamut_mainloop.cuh). Its accumulator map is
// gm::ThreadMap: runs of VM rows and VN columns, THREADS_M * VM (THREADS_N * VN) apart.
#include <algorithm>

#include "cuda/codegen/mainloop.h"
#include "cuda/codegen/tile_choice.h"
#include "plan/semiring.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

constexpr int kSliceUnroll = 8;  // k steps of a slice unrolled at most (the rest loop)

std::string loader(int a) { return cat("L", to_string(a)); }

// The condition under which an integer tropical step whose sum treats the limits as infinities
// (Expr::inf_sum; docs/language.md, "Integer infinities") may use the plain +: every value of
// both operands within half the sum type's range. Per thread, for Stage::own_within(buf): the
// values its loaders put into tile buffer buf (TileChunks::own_within_half), its row / column
// vectors; gm::mainloop takes the block's vote per slice. "" for other plans, or where an operand
// is not a row / column tile or vector.
std::string tropical_within(const Plan& p) {
  if (!p.typed || p.inner.size() != 1 || p.inner[0].kind != StmtKind::Update) return "";
  const Expr& sum = p.expr(p.inner[0].value);
  if (sum.inf_sum == InfSum::None) return "";
  const SemiringForm f = semiring_form(p);
  std::string cond;
  for (int a : {f.row_access, f.col_access}) {
    std::string frag;
    switch (inner_kind(p.accesses[size_t(a)].pattern)) {
      case InnerKind::RowTile:
      case InnerKind::ColTile:
        frag = loader(a) + "::template own_within_half<" + ctype_cpp(sum.type) + ">(sm" + to_string(a) + " + buf * " +
               loader(a) + "::BUF)";
        break;
      case InnerKind::RowVec:
        frag = "gm::within_half_range<" + ctype_cpp(sum.type) + ">(rv" + to_string(a) + ")";
        break;
      case InnerKind::ColVec:
        frag = "gm::within_half_range<" + ctype_cpp(sum.type) + ">(cv" + to_string(a) + ")";
        break;
      default: return "";
    }
    cond += (cond.empty() ? "" : " && ") + frag;
  }
  return cond;
}

// Every (m, n) through the Inner functor, on fragments of every operand.
class GenericStep final : public SimtStep {
 public:
  GenericStep(const Plan& plan, const Names& names, const std::vector<int>& inner)
      : P(plan), N(names), inner_acc(inner), within(tropical_within(plan)) {}
  std::string smem_type(int a) const override { return frag_cpp(access_ctype(P, a)); }
  TileCopy copy(int a) const override { return tile_copy(P, a); }
  std::string loader_flags(int) const override { return ""; }
  void members(Code& c) const override {
    if (within.empty()) return;
    c.line("// Integer tropical sums: gm::mainloop's vote per slice (own_within in every thread) says whether");
    c.line("// every operand value of the slice is within half the sum type's range: the plain + there.");
    c.line("static constexpr bool kVotes = true;");
    c.line("bool plain = false;");
    c.line("__device__ __forceinline__ bool own_within(int buf) const { return " + within + "; }");
  }
  void step(Code& c) const override {
    std::string args = "i0 + tmap.row(m), j0 + tmap.col(n), k";
    for (size_t n = 0; n < P.accs.size(); ++n) args += ", " + N.acc(int(n)) + "[m][n]";
    for (int a : inner_acc) {
      const std::string n = to_string(a), ct = frag_cpp(access_ctype(P, a)), x = N.access(a);
      const std::string buf = "sm" + n + " + buf * " + loader(a) + "::BUF + kk";
      switch (inner_kind(P.accesses[size_t(a)].pattern)) {
        case InnerKind::RowTile:
        case InnerKind::ColTile: {  // the thread's TM rows (TN columns) of the slice
          const bool row = inner_kind(P.accesses[size_t(a)].pattern) == InnerKind::RowTile;
          const std::string side = row ? "M" : "N";
          c.line(ct + " " + x + "[Shape::T" + side + "];");
          c.line("gm::load_frag<Shape::T" + side + ", Shape::V" + side + ", Shape::THREADS_" + side + ">(" + x + ", " +
                 buf + " * " + loader(a) + "::LDS, tmap.t" + (row ? "m" : "n") + ");");
          args += ", " + x + (row ? "[m]" : "[n]");
          break;
        }
        case InnerKind::RedVec:
          c.line("const " + ct + " " + x + " = sm" + n + "[buf * " + loader(a) + "::BUF + kk];");
          args += ", " + x;
          break;
        case InnerKind::RowVec: args += ", rv" + n + "[m]"; break;
        case InnerKind::ColVec: args += ", cv" + n + "[n]"; break;
        case InnerKind::None: break;
      }
    }
    const auto updates = [&](const std::string& call) {
      c.line("#pragma unroll");
      c.open("for (int m = 0; m < Shape::TM; ++m)");
      c.line("#pragma unroll");
      c.line("for (int n = 0; n < Shape::TN; ++n) " + call + "(" + args + ");");
      c.close();
    };
    if (within.empty()) return updates("f");
    // The sum of infinities costs ~10 instructions an update and keeps the step off DPX; where
    // no operand value of the slice is near the limits it equals the plain + (the block's vote:
    // checking each step's fragments in every thread cost ~40 % of the DPX rate, session 38).
    c.open("if (plain)");
    updates("f.plain_sums");
    c.mid("else");
    updates("f");
    c.close();
  }
  bool guards_tropical_sums() const override { return !within.empty(); }
  void init(Code& c) const override {
    for (size_t n = 0; n < P.accs.size(); ++n) {
      const std::string init = Renderer::literal(P.accs[n].init, P.accs[n].type);
      c.line("#pragma unroll");
      c.line("for (int m = 0; m < Shape::TM; ++m)");
      c.line("#pragma unroll");
      c.line("  for (int n = 0; n < Shape::TN; ++n) st." + N.acc(int(n)) + "[m][n] = " + init + ";");
    }
  }
  std::string value(int n) const override { return "st." + N.acc(n) + "[m][n]"; }

 private:
  const Plan& P;
  const Names& N;
  std::vector<int> inner_acc;
  std::string within;  // Stage::own_within's condition (tropical_within), or ""
};

class SimtMainloop final : public Mainloop {
 public:
  SimtMainloop(KernelContext& ctx, bool packed16) : X(ctx), P(ctx.P), inner_acc(inner_accesses(ctx.P)) {
    if (packed16)
      step_ = make_packed16_step(ctx);
    else
      step_ = std::make_unique<GenericStep>(ctx.P, ctx.N, inner_acc);
  }

  std::vector<std::string> headers() const override { return {"gamut_mainloop.cuh"}; }

  void declare_shape(Code& c) override {
    const TileConfig& T = X.T;
    const WarpShape w = warp_shape(T);
    c.line("typedef gm::TileShape<" + to_string(T.bm) + ", " + to_string(T.bn) + ", " + to_string(T.bk) + ", " +
           to_string(T.tm) + ", " + to_string(T.tn) + ", " + to_string(w.warp_m) + ", " + to_string(w.warp_n) +
           "> Shape;  // BM, BN, BK, TM, TN, WARP_M, WARP_N");
  }

  int min_blocks() const override {
    const int regs = estimate_registers(P, X.T);
    return regs <= kRegisterBudget ? std::max(1, 65536 / (X.T.threads() * 128)) : 1;
  }
  std::string resources() const override { return "estimated registers: " + to_string(estimate_registers(P, X.T)); }

  void declare(Code& c) override {
    inner_functor(c);
    c.line("");
    stage(c);
  }

  void prologue(Code& c) override {
    c.line("Stage st(int(threadIdx.x));");
    c.line("st.i0 = row_begin + tile_m * Shape::BM;");
    c.line("st.j0 = col_begin + tile_n * Shape::BN;");
    for (int a : inner_acc)
      if (X.S.inner_off[size_t(a)] >= 0) {
        const std::string ct = step_->smem_type(a);
        c.line("st.sm" + to_string(a) + " = reinterpret_cast<" + ct + "*>(" +
               X.smem_at(X.N.access(a) + "_tiles", size_t(X.S.inner_off[size_t(a)]),
                         "loader " + to_string(a) + ": " + to_string(kStages) + " slices of " + X.N.access(a)) +
               ");");
        c.line("static_assert(" + to_string(kStages) + " * Stage::" + loader(a) + "::BUF * sizeof(" + ct +
               ") <= " + to_string(X.S.inner_bytes[size_t(a)]) + ", \"shared memory plan\");");
      }
    for (int a : inner_acc)
      if (staged(a)) {
        const std::string st = dtype_cpp(access_dtype(P, a));
        c.line("st.sg" + to_string(a) + " = reinterpret_cast<" + st + "*>(" +
               X.smem_at(X.N.access(a) + "_raw", size_t(X.S.stage_off[size_t(a)]),
                         "loader " + to_string(a) + ": " + X.N.access(a) + "'s raw slices, widened into " +
                             X.N.access(a) + "_tiles") +
               ");");
        c.line("static_assert(" + to_string(kStages) + " * Stage::" + loader(a) + "::SBUF * sizeof(" + st +
               ") <= " + to_string(X.S.stage_bytes[size_t(a)]) + ", \"shared memory plan\");");
      }
    for (const auto& [p, t] : params_in(P, true)) c.line("st.f." + X.N.param(p, t) + " = " + X.N.param(p, t) + ";");
    c.line("st.f.b = b;");
  }

  void run(Code& c) override {
    const TileCoordinates& tc = *X.coords;
    for (int a : inner_acc) {
      const auto& s = X.A.access[size_t(a)];
      const Pattern p = P.accesses[size_t(a)].pattern;
      const std::string n = to_string(a), st = dtype_cpp(access_dtype(P, a));
      const std::string base = "reinterpret_cast<const " + st + "*>(" + X.arg(s.ptr) + ") + gm::i64(b) * gm::arg_i64(" +
                               X.arg(s.bstride) + ")";
      switch (inner_kind(p)) {
        case InnerKind::RowTile:
        case InnerKind::ColTile: {
          const bool row = inner_kind(p) == InnerKind::RowTile;
          c.line("st.ld" + n + ".init(" + base + ", gm::arg_i32(" + X.arg(s.ld) + "), " +
                 (row ? "st.i0, row_end" : "st.j0, col_end") + ", " + X.arg(s.vec) + " != 0);");
          break;
        }
        case InnerKind::RedVec: c.line("st.ld" + n + ".init(" + base + ");"); break;
        case InnerKind::RowVec:
        case InnerKind::ColVec: {  // the thread's TM rows (TN columns), once
          const bool row = inner_kind(p) == InnerKind::RowVec;
          const std::string T = row ? "TM" : "TN", v = row ? "i" : "j";
          c.open("");
          c.line("const " + st + "* x = " + base + ";");
          c.line("#pragma unroll");
          c.open(std::string("for (int m = 0; m < Shape::") + T + "; ++m)");
          c.line("const int " + v + " = " +
                 (row ? tc.row_at("st.i0 + st.tmap.row(m)") : tc.col_at("st.j0 + st.tmap.col(m)")) + ";");
          c.line(std::string("st.") + (row ? "rv" : "cv") + n + "[m] = gm::ldg_or_zero(x + " + v + ", " +
                 (row ? tc.row_valid(v) : tc.col_valid(v)) + ");");
          c.close();
          c.close();
          break;
        }
        case InnerKind::None: break;
      }
    }
    step_->init(c);
    if (P.inner.empty()) return;
    c.line("gm::mainloop<Shape::BK>(st, red_begin, red_end);");
    c.line("// Coordinates again, rather than held in registers through the mainloop.");
    c.line("st.tmap = gm::ThreadMap<Shape>(gm::fresh_tid());");
    tc.refresh(c);
    c.line("st.i0 = row_begin + tile_m * Shape::BM;");
    c.line("st.j0 = col_begin + tile_n * Shape::BN;");
  }

  AccumulatorMap map() const override {
    AccumulatorMap m;
    m.type = "gm::ThreadMap<Shape>";
    m.object = "st.tmap";
    m.rows = "Shape::TM";
    m.cols = "Shape::TN";
    m.col_run = "Shape::VN";
    m.tile_row0 = "st.i0";
    m.tile_col0 = "st.j0";
    m.pairs = X.T.tm * X.T.tn;
    const SimtStep* step = step_.get();
    m.value = [step](int n) { return step->value(n); };
    return m;
  }

 private:
  void inner_update(const Stmt& s, Code& out) const {
    if (s.kind != StmtKind::Update) unsupported("an output statement inside reduce");
    const CType t = P.accs[size_t(s.target)].type;
    const std::string a = X.acc(s.target), v = X.inner_r.expr_as(s.value, t);
    const bool fl = is_float(t);
    std::string r;
    switch (s.update) {
      case UpdateOp::Assign: r = v; break;
      case UpdateOp::Add: r = fl ? a + " + " + v : "gm::add(" + a + ", " + v + ")"; break;
      case UpdateOp::Sub: r = fl ? a + " - " + v : "gm::sub(" + a + ", " + v + ")"; break;
      case UpdateOp::Mul: r = fl ? a + " * " + v : "gm::mul(" + a + ", " + v + ")"; break;
      case UpdateOp::Max: r = "gm::max_(" + a + ", " + v + ")"; break;
      case UpdateOp::Min: r = "gm::min_(" + a + ", " + v + ")"; break;
      case UpdateOp::Or:
      case UpdateOp::And:
      case UpdateOp::Xor:
        if (fl) unsupported(std::string(update_symbol(s.update)) + " on a float accumulator");
        r = a + (s.update == UpdateOp::Or ? " | " : s.update == UpdateOp::And ? " & " : " ^ ") + v;
        break;
    }
    out.line(a + " = " + r + ";");
  }

  void inner_functor(Code& c) const {
    c.line("// The inner op: the reduce body for one (i, j, k), on register values.");
    c.open("struct Inner");
    c.line("int b;");
    for (const auto& [p, t] : params_in(P, true)) c.line(ctype_cpp(t) + " " + X.N.param(p, t) + ";");
    std::string params = "(int i, int j, int k";
    for (size_t n = 0; n < P.accs.size(); ++n) params += ", " + X.acc_type(int(n)) + "& " + X.acc(int(n));
    for (int a : inner_acc) params += ", " + inner_arg_cpp(access_ctype(P, a)) + " " + X.N.access(a);
    const auto body = [&](const std::string& name, bool plain_sums) {
      c.open("__device__ __forceinline__ void " + name + params + ") const");
      X.locals(true, c);
      X.inner_r.set_plain_sums(plain_sums);
      X.inner_r.stmts(P.inner, c, [&](const Stmt& s, Code& out) { inner_update(s, out); });
      X.inner_r.set_plain_sums(false);
      c.close();
    };
    body("operator()", false);
    if (step_->guards_tropical_sums()) {
      c.line("// The same with the plain + for the tropical sum: step calls it where every operand value");
      c.line("// is within half the sum type's range (gm::within_half_range), where the two are equal.");
      body("plain_sums", true);
    }
    c.close(";");
  }

  void stage(Code& c) const {
    c.line("// The plan's operands in the mainloop: staged tiles (shared memory), vectors (registers).");
    c.open("struct Stage");
    for (int a : inner_acc) {
      const Access& acc = P.accesses[size_t(a)];
      const std::string st = dtype_cpp(access_dtype(P, a)), ct = step_->smem_type(a);
      const std::string name = P.operands[size_t(acc.operand)].name + pattern_name(acc.pattern);
      switch (inner_kind(acc.pattern)) {
        case InnerKind::RowTile:
        case InnerKind::ColTile: {
          const bool row = inner_kind(acc.pattern) == InnerKind::RowTile;
          // Operands stored in their compute type go to shared memory by cp.async as they are, 1-
          // and 2-byte ones by cp.async into staging slices widened in shared memory, the others
          // (X[p, k] of 4- and 8-byte types, bool) through registers.
          const TileCopy how = step_->copy(a);
          const std::string kind = how == TileCopy::Async    ? "AsyncTileLoader<" + st
                                   : how == TileCopy::Staged ? "StagedTileLoader<" + st + ", " + ct
                                                             : "TileLoader<" + st + ", " + ct;
          c.line("typedef gm::" + kind + (row ? ", Shape::BM" : ", Shape::BN") + ", Shape::BK, Shape::THREADS, " +
                 (k_contiguous(acc.pattern) ? "true" : "false") + step_->loader_flags(a) + "> " + loader(a) + ";  // " +
                 name + ": (types, extent, k-slice, threads, k contiguous" +
                 (step_->loader_flags(a).empty() ? "" : ", values in both 16-bit halves") + ")");
          c.line(loader(a) + " ld" + to_string(a) + ";");
          c.line(ct + "* sm" + to_string(a) + ";  // (" + to_string(kStages) + ", BK, " + loader(a) + "::LDS)");
          if (how == TileCopy::Staged)
            c.line(st + "* sg" + to_string(a) + ";  // (" + to_string(kStages) + ", " + loader(a) +
                   "::SBUF) raw slices, chunk order");
          break;
        }
        case InnerKind::RedVec:
          c.line("typedef gm::KVecLoader<" + st + ", " + ct + ", Shape::BK> " + loader(a) + ";  // " + name);
          c.line(loader(a) + " ld" + to_string(a) + ";");
          c.line(ct + "* sm" + to_string(a) + ";  // (" + to_string(kStages) + ", BK)");
          break;
        case InnerKind::RowVec: c.line(ct + " rv" + to_string(a) + "[Shape::TM];  // " + name + ", loaded once"); break;
        case InnerKind::ColVec: c.line(ct + " cv" + to_string(a) + "[Shape::TN];  // " + name + ", loaded once"); break;
        case InnerKind::None: break;
      }
    }
    c.line("gm::ThreadMap<Shape> tmap;");
    c.line("int i0, j0;  // the block tile's first row and column");
    c.line("Inner f;");
    for (size_t n = 0; n < P.accs.size(); ++n)
      c.line(X.acc_type(int(n)) + " " + X.acc(int(n)) + "[Shape::TM][Shape::TN];");
    step_->members(c);
    c.line("__device__ __forceinline__ explicit Stage(int tid) : tmap(tid) {}");
    std::string ld, stv, sg, wd;
    for (int a : inner_acc) {
      const InnerKind k = inner_kind(P.accesses[size_t(a)].pattern);
      if (k != InnerKind::RowTile && k != InnerKind::ColTile && k != InnerKind::RedVec) continue;
      const std::string n = to_string(a), tile = "sm" + n + " + buf * " + loader(a) + "::BUF";
      if (staged(a)) {
        const std::string raw = "sg" + n + " + buf * " + loader(a) + "::SBUF";
        sg += " ld" + n + ".stage(" + raw + ", k0, k_end);";
        wd += " ld" + n + ".widen(" + raw + ", " + tile + ");";
        continue;
      }
      ld += " ld" + n + ".load(" + tile + ", k0, k_end);";
      stv += " ld" + n + ".store(" + tile + ");";
    }
    c.line("__device__ __forceinline__ void load(int k0, int k_end, int buf) {" + ld + " }");
    c.line("__device__ __forceinline__ void store(int buf) {" + stv + " }");
    if (!sg.empty()) {  // (gm::mainloop calls these only where kStaged is declared true)
      c.line("// Staged tiles: raw copies of slice k0 into staging buffer buf; widening of it into tile buffer buf.");
      c.line("static constexpr bool kStaged = true;");
      c.line("__device__ __forceinline__ void stage(int k0, int k_end, int buf) {" + sg + " }");
      c.line("__device__ __forceinline__ void widen(int buf) {" + wd + " }");
    }
    c.line("// One k of a slice: fragments from shared buffer buf, the inner op on every (m, n).");
    c.open("__device__ __forceinline__ void step(int buf, int k, int kk)");
    step_->step(c);
    c.close();
    // A slice: its steps, unrolled. The last, partial slice (GUARD) runs its first krem steps in
    // a loop: an unrolled copy with a break per step doubles the code NVVM and ptxas optimise,
    // most of a cold compile's time, for one slice per tile.
    c.line("template <bool GUARD>");
    c.open("__device__ __forceinline__ void compute(int buf, int k0, int krem)");
    c.open("if constexpr (GUARD)");
    c.line("#pragma unroll 1");
    c.line("for (int kk = 0; kk < krem; ++kk) step(buf, k0 + kk, kk);  // past krem: no update at all");
    c.mid("else");
    // At most kSliceUnroll steps unrolled: for a 16-step slice, 8 cut the SGEMM kernel's cold
    // compile by about a third at the same speed; 4 cost speed. Batched plans keep the whole
    // slice unrolled: the batched min-plus kernel spilled at 255 registers with 8.
    const bool partial = X.T.bk > kSliceUnroll && !P.batched;
    c.line(partial ? "#pragma unroll " + to_string(kSliceUnroll) : std::string("#pragma unroll"));
    c.line("for (int kk = 0; kk < Shape::BK; ++kk) step(buf, k0 + kk, kk);");
    c.close();
    c.close();
    c.close(";");
  }

  bool staged(int a) const {
    const InnerKind k = inner_kind(P.accesses[size_t(a)].pattern);
    return (k == InnerKind::RowTile || k == InnerKind::ColTile) && step_->copy(a) == TileCopy::Staged;
  }

  KernelContext& X;
  const Plan& P;
  std::vector<int> inner_acc;  // accesses the reduce body reads
  std::unique_ptr<SimtStep> step_;
};

}  // namespace

std::unique_ptr<Mainloop> make_simt_mainloop(KernelContext& ctx, bool packed16) {
  return std::make_unique<SimtMainloop>(ctx, packed16);
}

}  // namespace gamut::cuda::cg
