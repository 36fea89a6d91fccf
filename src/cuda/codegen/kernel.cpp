// Code generator, part 3: the kernel. The generated source instantiates the device header
// library (src/cuda/device): an Inner functor (the reduce body), a Stage (the plan's loaders and
// fragments, driven by gm::mainloop), and an epilogue that feeds each (i, j) to the output
// iterators (epilogue.cpp). Sizes, pointers and parameters are kernel arguments, so one
// compiled kernel serves every problem size. The generator's state: generator.h.
#include <algorithm>

#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/generator.h"
#include "cuda/codegen/tile_choice.h"

namespace gamut::cuda {

const char* const kMainKernelName = "gamut_main";

namespace cg {

using std::to_string;

namespace {
// Argument field `field` (a 64-bit word) read as a compute type.
std::string arg_as(const std::string& field, CType t) {
  switch (t) {
    case CType::Bool: return "gm::arg_bool(" + field + ")";
    case CType::I32: return "gm::arg_i32(" + field + ")";
    case CType::I64: return "gm::arg_i64(" + field + ")";
    case CType::F32: return "gm::arg_f32(" + field + ")";
    case CType::F64: return "gm::arg_f64(" + field + ")";
    case CType::Unknown: break;
  }
  unsupported("an untyped plan");
}
}  // namespace

const char* store_op_code(StoreOp op) {
  switch (op) {
    case StoreOp::Add: return "gm::kAdd";
    case StoreOp::Max: return "gm::kMax";
    case StoreOp::Min: return "gm::kMin";
    case StoreOp::Or: return "gm::kOr";
    case StoreOp::And: return "gm::kAnd";
    case StoreOp::Assign: break;
  }
  return "gm::kAssign";
}

void Gen::inner_update(const Stmt& s, Code& out) {
  if (s.kind != StmtKind::Update) unsupported("an output statement inside reduce");
  const CType t = P.accs[size_t(s.target)].type;
  const std::string a = "acc" + to_string(s.target), v = inner_r.expr_as(s.value, t);
  const bool fl = is_float(t);
  std::string r;
  switch (s.update) {
    case UpdateOp::Assign: r = v; break;
    case UpdateOp::Add: r = fl ? a + " + " + v : "gm::add(" + a + ", " + v + ")"; break;
    case UpdateOp::Sub: r = fl ? a + " - " + v : "gm::sub(" + a + ", " + v + ")"; break;
    case UpdateOp::Mul: r = fl ? a + " * " + v : "gm::mul(" + a + ", " + v + ")"; break;
    case UpdateOp::Max: r = "gm::max_(" + a + ", " + v + ")"; break;
    case UpdateOp::Min: r = "gm::min_(" + a + ", " + v + ")"; break;
    case UpdateOp::Or: case UpdateOp::And: case UpdateOp::Xor:
      if (fl) unsupported(std::string(update_symbol(s.update)) + " on a float accumulator");
      r = a + (s.update == UpdateOp::Or ? " | " : s.update == UpdateOp::And ? " & " : " ^ ") + v;
      break;
  }
  out.line(a + " = " + r + ";");
}

void Gen::inner_functor() {
  c.line("// The inner op: the reduce body for one (i, j, k), on register values.");
  c.open("struct Inner");
  c.line("int b;");
  for (const auto& [p, t] : params_in(P, true)) c.line(ctype_cpp(t) + " " + Renderer::param_name(p, t) + ";");
  std::string sig = "__device__ __forceinline__ void operator()(int i, int j, int k";
  for (size_t n = 0; n < P.accs.size(); ++n) sig += ", " + acc_type(int(n)) + "& acc" + to_string(n);
  for (int a : inner_acc) sig += ", " + inner_arg_cpp(access_ctype(P, a)) + " x" + to_string(a);
  c.open(sig + ") const");
  locals(true, c);
  inner_r.stmts(P.inner, c, [&](const Stmt& s, Code& out) { inner_update(s, out); });
  c.close();
  c.close(";");
}

void Gen::stage() {
  c.line("// The plan's operands in the mainloop: staged tiles (shared memory), vectors (registers).");
  c.open("struct Stage");
  for (int a : inner_acc) {
    const Access& acc = P.accesses[size_t(a)];
    const std::string st = dtype_cpp(access_dtype(P, a)), ct = smem_cpp(a);
    const std::string name = P.operands[size_t(acc.operand)].name + pattern_name(acc.pattern);
    switch (inner_kind(acc.pattern)) {
      case InnerKind::RowTile: case InnerKind::ColTile: {
        const bool row = inner_kind(acc.pattern) == InnerKind::RowTile;
        // Operands stored in their compute type go to shared memory by cp.async; the others
        // are widened through registers.
        // (The column operand of packed 16-bit steps stays 16-bit: copied as it is, like a
        // compute-type operand, when p is contiguous.)
        const bool async = async_tile(P, a) || (a == pk_col && access_dtype(P, a) == DType::I16 &&
                                                !k_contiguous(acc.pattern));
        c.line(std::string("typedef gm::") + (async ? "AsyncTileLoader<" + st : "TileLoader<" + st + ", " + ct) +
               (row ? ", Shape::BM" : ", Shape::BN") + ", Shape::BK, Shape::THREADS, " +
               (k_contiguous(acc.pattern) ? "true" : "false") + (a == pk_row ? ", true" : "") + "> " + loader(a) +
               ";  // " + name);
        c.line(loader(a) + " ld" + to_string(a) + ";");
        c.line(ct + "* sm" + to_string(a) + ";  // (" + to_string(kStages) + ", BK, " + loader(a) + "::LDS)");
        break;
      }
      case InnerKind::RedVec:
        c.line("typedef gm::KVecLoader<" + st + ", " + ct + ", Shape::BK> " + loader(a) + ";  // " + name);
        c.line(loader(a) + " ld" + to_string(a) + ";");
        c.line(ct + "* sm" + to_string(a) + ";  // (" + to_string(kStages) + ", BK)");
        break;
      case InnerKind::RowVec:
        c.line(ct + " rv" + to_string(a) + "[Shape::TM];  // " + name + ", loaded once");
        break;
      case InnerKind::ColVec:
        c.line(ct + " cv" + to_string(a) + "[Shape::TN];  // " + name + ", loaded once");
        break;
      case InnerKind::None: break;
    }
  }
  c.line("gm::ThreadMap<Shape> tmap;");
  c.line("int i0, j0;  // the block tile's first row and column");
  c.line("Inner f;");
  for (size_t n = 0; n < P.accs.size(); ++n)
    c.line(acc_type(int(n)) + " acc" + to_string(n) + "[Shape::TM][Shape::TN];  // " + P.accs[n].name);
  if (packed()) {
    c.line("unsigned pk[Shape::TM][Shape::TN / 2];  // " + P.accs[0].name + " as 16-bit lane pairs");
    packed16_accessor(P, c);
  }
  c.line("__device__ __forceinline__ explicit Stage(int tid) : tmap(tid) {}");
  std::string ld, stv;
  for (int a : inner_acc) {
    const InnerKind k = inner_kind(P.accesses[size_t(a)].pattern);
    if (k != InnerKind::RowTile && k != InnerKind::ColTile && k != InnerKind::RedVec) continue;
    ld += " ld" + to_string(a) + ".load(sm" + to_string(a) + " + buf * " + loader(a) + "::BUF, k0, k_end);";
    stv += " ld" + to_string(a) + ".store(sm" + to_string(a) + " + buf * " + loader(a) + "::BUF);";
  }
  c.line("__device__ __forceinline__ void load(int k0, int k_end, int buf) {" + ld + " }");
  c.line("__device__ __forceinline__ void store(int buf) {" + stv + " }");
  c.line("// One k of a slice: fragments from shared buffer buf, the inner op on every (m, n).");
  c.open("__device__ __forceinline__ void step(int buf, int k, int kk)");
  if (packed()) packed16_step(P, loader(pk_row), loader(pk_col), pk_row, pk_col, c);
  else generic_step();
  c.close();
  // A slice: its steps, unrolled; in the last, partial slice only the first krem exist.
  c.line("template <bool GUARD>");
  c.open("__device__ __forceinline__ void compute(int buf, int k0, int krem)");
  c.line("#pragma unroll");
  c.open("for (int kk = 0; kk < Shape::BK; ++kk)");
  c.line("if (GUARD && kk >= krem) break;  // past the end of k: no update at all");
  c.line("step(buf, k0 + kk, kk);");
  c.close();
  c.close();
  c.close(";");
}

void Gen::generic_step() {
  std::string args = "i0 + tmap.row(m), j0 + tmap.col(n), k";
  for (size_t n = 0; n < P.accs.size(); ++n) args += ", acc" + to_string(n) + "[m][n]";
  for (int a : inner_acc) {
    const std::string n = to_string(a), ct = frag_cpp(access_ctype(P, a));
    const std::string buf = "sm" + n + " + buf * " + loader(a) + "::BUF + kk";
    switch (inner_kind(P.accesses[size_t(a)].pattern)) {
      case InnerKind::RowTile:
      case InnerKind::ColTile: {   // the thread's TM rows (TN columns) of the slice
        const bool row = inner_kind(P.accesses[size_t(a)].pattern) == InnerKind::RowTile;
        const std::string side = row ? "M" : "N";
        c.line(ct + " x" + n + "[Shape::T" + side + "];");
        c.line("gm::load_frag<Shape::T" + side + ", Shape::V" + side + ", Shape::THREADS_" + side + ">(x" + n + ", " +
               buf + " * " + loader(a) + "::LDS, tmap.t" + (row ? "m" : "n") + ");");
        args += ", x" + n + (row ? "[m]" : "[n]");
        break;
      }
      case InnerKind::RedVec:
        c.line("const " + ct + " x" + n + " = sm" + n + "[buf * " + loader(a) + "::BUF + kk];");
        args += ", x" + n;
        break;
      case InnerKind::RowVec: args += ", rv" + n + "[m]"; break;
      case InnerKind::ColVec: args += ", cv" + n + "[n]"; break;
      case InnerKind::None: break;
    }
  }
  c.line("#pragma unroll");
  c.open("for (int m = 0; m < Shape::TM; ++m)");
  c.line("#pragma unroll");
  c.line("for (int n = 0; n < Shape::TN; ++n) f(" + args + ");");
  c.close();
}

std::string Gen::out_offset(int d, const std::string& jname) const {
  const std::vector<OutIndex> idx = output_index(P, d);
  std::string r;
  for (size_t p = 0; p < idx.size(); ++p) {
    std::string term;
    if (idx[p].kind == OutIndex::Lookup) term = "gm::to_i64(" + outer_r.load(idx[p].access) + ")";
    else if (idx[p].axis == AxisRole::Row) term = "gm::i64(i)";
    else if (idx[p].axis == AxisRole::Col) term = "gm::i64(" + jname + ")";
    else term = "gm::i64(b)";
    r += (r.empty() ? "" : " + ") + term + " * os" + to_string(d) + "_" + to_string(p);
  }
  return r.empty() ? "gm::i64(0)" : r;
}

std::set<int> Gen::outer_accesses() const {
  std::set<int> out;
  auto visit = [&](const Expr& e) {
    if (e.kind == ExprKind::Load) out.insert(e.index);
  };
  walk_stmts(P, P.outer, visit);
  walk_expr(P, P.when.mask, visit);
  for (const ListOutput& l : P.lists) walk_expr(P, l.key, visit);
  for (const JoinKey& k : P.when.keys) out.insert({k.row_access, k.col_access});
  for (const DenseOutput& d : P.dense)
    for (const OutIndex& x : d.index)
      if (x.kind == OutIndex::Lookup) out.insert(x.access);
  return out;
}

std::string Gen::when_condition() const {
  std::string r;
  for (const JoinKey& k : grouped() ? std::vector<JoinKey>{} : P.when.keys) {
    const CType tr = access_ctype(P, k.row_access), tc = access_ctype(P, k.col_access);
    CType t = std::max(tr, tc);        // compared in the common type, as the CPU engine
    if (!is_float(t)) t = CType::I64;
    r += (r.empty() ? "" : " && ") + std::string("(") + Renderer::convert(outer_r.load(k.row_access), tr, t) +
         " == " + Renderer::convert(outer_r.load(k.col_access), tc, t) + ")";
  }
  if (P.when.mask != kNoExpr)
    r += (r.empty() ? "" : " && ") + Renderer::cond(outer_r.expr(P.when.mask), P.expr(P.when.mask).type);
  return r;
}

void Gen::kernel_prologue() {
  c.line("extern __shared__ __align__(16) unsigned char smem[];");
  if (grouped()) {
    c.line("// A key-grouped join: one block per tile of the table; a tile spans key-ordered positions");
    c.line("// [row_begin, row_end) x [col_begin, col_end) of one key, mapped to indices by jrow / jcol.");
    c.line("const int* const jt = reinterpret_cast<const int*>(" + arg(A.join_tiles) + ") + 4 * gm::i64(blockIdx.x);");
    c.line("const int row_begin = __ldg(jt), row_end = __ldg(jt + 1);");
    c.line("const int col_begin = __ldg(jt + 2), col_end = __ldg(jt + 3);");
    c.line("const int* const jrow = reinterpret_cast<const int*>(" + arg(A.join_rows) + ");");
    c.line("const int* const jcol = reinterpret_cast<const int*>(" + arg(A.join_cols) + ");");
    c.line("const int red_begin = gm::arg_i32(" + arg(ArgLayout::kRedBegin) + "), red_end = gm::arg_i32(" + arg(ArgLayout::kRedEnd) + ");");
    c.line("const int tiles_m = 1, tiles_n = 1;");
    c.line("int b = 0, tile_m = 0, tile_n = 0;");
  } else {
    c.line("const int row_begin = gm::arg_i32(" + arg(ArgLayout::kRowBegin) + "), row_end = gm::arg_i32(" + arg(ArgLayout::kRowEnd) + ");");
    c.line("const int col_begin = gm::arg_i32(" + arg(ArgLayout::kColBegin) + "), col_end = gm::arg_i32(" + arg(ArgLayout::kColEnd) + ");");
    c.line("const int red_begin = gm::arg_i32(" + arg(ArgLayout::kRedBegin) + "), red_end = gm::arg_i32(" + arg(ArgLayout::kRedEnd) + ");");
    c.line("// One block per (batch instance, tile): the grid is tiles_m * tiles_n * batch blocks.");
    c.line("const int tiles_m = (row_end - row_begin + Shape::BM - 1) / Shape::BM;");
    c.line("const int tiles_n = (col_end - col_begin + Shape::BN - 1) / Shape::BN;");
    c.line("int b = int(blockIdx.x) / (tiles_m * tiles_n), tile_m, tile_n;");
    c.line(tile_order() + "(int(blockIdx.x) - b * tiles_m * tiles_n, tiles_m, tiles_n, tile_m, tile_n);");
  }
  for (const auto& p : A.params)
    c.line("const " + ctype_cpp(p.type) + " " + Renderer::param_name(p.param, p.type) + " = " +
           arg_as(arg(p.slot), p.type) + ";  // " + P.params[size_t(p.param)].name);
  for (int a : outer_accesses()) {
    const auto& s = A.access[size_t(a)];
    const std::string n = to_string(a);
    c.line("const " + dtype_cpp(access_dtype(P, a)) + "* gp" + n + " = reinterpret_cast<const " +
           dtype_cpp(access_dtype(P, a)) + "*>(" + arg(s.ptr) + ");  // " +
           P.operands[size_t(P.accesses[size_t(a)].operand)].name);
    const Pattern pat = P.accesses[size_t(a)].pattern;
    if (pat == Pattern::RowCol || pat == Pattern::ColRow)
      c.line("const gm::i64 gld" + n + " = gm::arg_i64(" + arg(s.ld) + ");");
    if (P.batched) c.line("const gm::i64 gbs" + n + " = gm::arg_i64(" + arg(s.bstride) + ");");
  }
  for (size_t d = 0; d < P.dense.size(); ++d) {
    const auto& s = A.dense[d];
    const std::string n = to_string(d);
    c.line(out_type(int(d)) + "* out" + n + " = reinterpret_cast<" + out_type(int(d)) + "*>(" + arg(s.ptr) +
           ");  // " + P.dense[d].name);
    for (size_t p = 0; p < s.stride.size(); ++p)
      c.line("const gm::i64 os" + n + "_" + to_string(p) + " = gm::arg_i64(" + arg(s.stride[p]) + ");");
    if (runs_along_j(int(d))) c.line("const bool ov" + n + " = " + arg(s.vec) + " != 0;");
  }
  c.line("Stage st(int(threadIdx.x));");
  c.line("st.i0 = row_begin + tile_m * Shape::BM;");
  c.line("st.j0 = col_begin + tile_n * Shape::BN;");
  for (int a : inner_acc)
    if (S.inner_off[size_t(a)] >= 0) {
      const std::string ct = smem_cpp(a);
      c.line("st.sm" + to_string(a) + " = reinterpret_cast<" + ct + "*>(smem + " +
             to_string(S.inner_off[size_t(a)]) + ");");
      c.line("static_assert(" + to_string(kStages) + " * Stage::" + loader(a) + "::BUF * sizeof(" + ct + ") <= " +
             to_string(S.inner_bytes[size_t(a)]) + ", \"shared memory plan\");");
    }
  for (const auto& [p, t] : params_in(P, true))
    c.line("st.f." + Renderer::param_name(p, t) + " = " + Renderer::param_name(p, t) + ";");
}

void Gen::setup() {
  c.line("st.f.b = b;");
  if (has_pass()) {
    c.line("// `when`: which pairs exist; a tile where none does skips all work.");
    c.line("unsigned pass[(Shape::TM * Shape::TN + 31) / 32];");
    c.line("#pragma unroll");
    c.line("for (int w = 0; w < (Shape::TM * Shape::TN + 31) / 32; ++w) pass[w] = 0u;");
    c.line("bool any = false;");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < Shape::TM; ++m)");
    c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ";");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < Shape::TN; ++n)");
    c.line("const int j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
    c.line("const bool p = " + in_range() + " && " + when_condition() + ";");
    c.line("pass[(m * Shape::TN + n) / 32] |= unsigned(p) << ((m * Shape::TN + n) % 32);");
    c.line("any = any || p;");
    c.close();
    c.close();
    c.line("if (!__syncthreads_or(any)) return;  // the same answer in every thread");
  }
  for (int a : inner_acc) {
    const auto& s = A.access[size_t(a)];
    const Pattern p = P.accesses[size_t(a)].pattern;
    const std::string n = to_string(a), st = dtype_cpp(access_dtype(P, a));
    const std::string base = "reinterpret_cast<const " + st + "*>(" + arg(s.ptr) + ") + gm::i64(b) * gm::arg_i64(" +
                             arg(s.bstride) + ")";
    switch (inner_kind(p)) {
      case InnerKind::RowTile: case InnerKind::ColTile: {
        const bool row = inner_kind(p) == InnerKind::RowTile;
        c.line("st.ld" + n + ".init(" + base + ", gm::arg_i32(" + arg(s.ld) + "), " +
               (row ? "st.i0, row_end" : "st.j0, col_end") + ", " + arg(s.vec) + " != 0);");
        break;
      }
      case InnerKind::RedVec: c.line("st.ld" + n + ".init(" + base + ");"); break;
      case InnerKind::RowVec: case InnerKind::ColVec: {
        const bool row = inner_kind(p) == InnerKind::RowVec;
        const std::string T = row ? "TM" : "TN", v = row ? "i" : "j";
        c.open("");
        c.line("const " + st + "* x = " + base + ";");
        c.line("#pragma unroll");
        c.open(std::string("for (int m = 0; m < Shape::") + T + "; ++m)");
        c.line("const int " + v + " = " + (row ? row_at("st.i0 + st.tmap.row(m)") : col_at("st.j0 + st.tmap.col(m)")) +
               ";");
        c.line(std::string("st.") + (row ? "rv" : "cv") + n + "[m] = gm::ldg_or_zero(x + " + v + ", " +
               (grouped() ? v + " >= 0" : v + " < " + (row ? "row_end" : "col_end")) + ");");
        c.close();
        c.close();
        break;
      }
      case InnerKind::None: break;
    }
  }
  if (packed()) {
    c.line("#pragma unroll");
    c.line("for (int m = 0; m < Shape::TM; ++m)");
    c.line("#pragma unroll");
    c.line("  for (int p = 0; p < Shape::TN / 2; ++p) st.pk[m][p] = " + packed16_identity(P) + ";");
  }
  for (size_t n = 0; n < P.accs.size() && !packed(); ++n) {
    const std::string init = Renderer::literal(P.accs[n].init, P.accs[n].type);
    c.line("#pragma unroll");
    c.line("for (int m = 0; m < Shape::TM; ++m)");
    c.line("#pragma unroll");
    c.line("  for (int n = 0; n < Shape::TN; ++n) st.acc" + to_string(n) + "[m][n] = " + init + ";");
  }
  if (!P.inner.empty()) {
    c.line("gm::mainloop<Shape::BK>(st, red_begin, red_end);");
    c.line("// Coordinates again, rather than held in registers through the mainloop.");
    c.line("st.tmap = gm::ThreadMap<Shape>(gm::fresh_tid());");
    if (!grouped()) {   // (a grouped join's block is one tile: b, tile_m, tile_n stay 0)
      // The tile counts too, from opaque copies of the bounds: the compiler otherwise keeps
      // tiles_m, tiles_m * tiles_n, ... from the prologue through the k loop, three registers
      // that made the list kernels spill inside it at 128 registers (128x128x8/8x8).
      c.line("int rb_e = row_begin, re_e = row_end, cb_e = col_begin, ce_e = col_end;");
      c.line("gm::opaque(rb_e); gm::opaque(re_e); gm::opaque(cb_e); gm::opaque(ce_e);");
      c.line("const int tm_e = (re_e - rb_e + Shape::BM - 1) / Shape::BM, tn_e = (ce_e - cb_e + Shape::BN - 1) / Shape::BN;");
      c.line("b = gm::fresh_ctaid() / (tm_e * tn_e);");
      c.line(tile_order() + "(gm::fresh_ctaid() - b * tm_e * tn_e, tm_e, tn_e, tile_m, tile_n);");
    }
    c.line("st.i0 = row_begin + tile_m * Shape::BM;");
    c.line("st.j0 = col_begin + tile_n * Shape::BN;");
  }
}

std::string Gen::run() {
  const WarpShape w = warp_shape(T);
  const KernelInfo info = kernel_info(P, T);
  std::string name = P.source_name;
  for (char& ch : name)
    if (ch < 32 || ch > 126) ch = '?';
  c.line("// Generated by gamut (src/cuda/codegen.cpp): " + name + ", tile " + T.str() + ".");
  for (const char* h : {"gamut_math.cuh", "gamut_atomics.cuh", "gamut_loaders.cuh", "gamut_mainloop.cuh",
                        "gamut_epilogue.cuh", "gamut_list.cuh"})
    c.line(std::string("#include \"") + h + "\"");
  if (std::any_of(S.distinct_slots.begin(), S.distinct_slots.end(), [](int n) { return n > 0; }))
    c.line("#include \"gamut_distinct.cuh\"");
  c.line("");
  c.line("namespace {");
  c.line("");
  c.line("typedef gm::TileShape<" + to_string(T.bm) + ", " + to_string(T.bn) + ", " + to_string(T.bk) + ", " +
         to_string(T.tm) + ", " + to_string(T.tn) + ", " + to_string(w.warp_m) + ", " + to_string(w.warp_n) +
         "> Shape;");
  c.line("// Kernel arguments: one 64-bit word per field (pointers, sizes, strides, parameter bits),");
  c.line("// written by the launcher in this order (src/cuda/codegen/kernel_args.h).");
  c.open("struct Args");
  for (const ArgLayout::Slot& s : A.slots)
    c.line("unsigned long long " + s.name + ";" + (s.comment.empty() ? "" : "  // " + s.comment));
  c.close(";");
  c.line("");
  inner_functor();
  c.line("");
  stage();
  c.line("");
  c.line("}  // namespace");
  c.line("");
  const int regs = estimate_registers(P, T);
  const int min_blocks = regs <= kRegisterBudget ? std::max(1, 65536 / (info.threads * 128)) : 1;
  c.line("// dynamic shared memory: " + to_string(info.smem_bytes) + " bytes; estimated registers: " +
         to_string(regs));
  c.open("extern \"C\" __global__ void __launch_bounds__(" + to_string(info.threads) + ", " +
         to_string(min_blocks) + ") " + kMainKernelName + "(const Args a)");
  kernel_prologue();
  setup();
  epilogue();
  c.close();
  return c.str();
}

}  // namespace cg

std::string generate_source(const Plan& plan, const TileConfig& tile, const CodegenOptions& options) {
  std::string why;
  if (!tile_valid(tile, &why)) throw_usage_error("invalid tile " + tile.str() + ": " + why);
  if (!plan.typed) cg::unsupported("an untyped plan");
  // plan.k_sequential needs nothing: every thread runs k in increasing order (no split-k).
  return cg::Gen(plan, tile, options).run();
}

}  // namespace gamut::cuda
