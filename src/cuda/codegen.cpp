// Code generator, part 3: the kernel. The generated source instantiates the device header
// library (src/cuda/device): an Inner functor (the reduce body), a Stage (the plan's loaders and
// fragments, driven by gm::mainloop), and an epilogue that feeds each (i, j) to the output
// iterators. Sizes, pointers and parameters are kernel arguments, so one compiled kernel
// serves every problem size.
#include <algorithm>

#include "core/error.h"
#include "cuda/codegen.h"
#include "cuda/codegen_internal.h"
#include "cuda/join_groups.h"
#include "cuda/tile_choice.h"
#include "plan/semiring.h"

namespace gamut::cuda {

const char* const kMainKernelName = "gamut_main";

namespace {

using namespace cg;
using std::to_string;

std::string slot(int s) { return "a.s[" + to_string(s) + "]"; }

// `a.s[N]` read as a compute type.
std::string arg_as(int s, CType t) {
  switch (t) {
    case CType::Bool: return "gm::arg_bool(" + slot(s) + ")";
    case CType::I32: return "gm::arg_i32(" + slot(s) + ")";
    case CType::I64: return "gm::arg_i64(" + slot(s) + ")";
    case CType::F32: return "gm::arg_f32(" + slot(s) + ")";
    case CType::F64: return "gm::arg_f64(" + slot(s) + ")";
    case CType::Unknown: break;
  }
  unsupported("an untyped plan");
}

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

struct Gen {
  const Plan& P;
  const TileConfig& T;
  ArgLayout A;
  SmemPlan S;
  std::vector<int> inner_acc;             // accesses the reduce body reads
  std::vector<std::pair<const Stmt*, int>> aggs;   // aggregate Store statements, in source order
  Code c;
  Renderer inner_r, outer_r;
  // Packed 16-bit tropical steps (codegen_packed.cpp): the row and column access, else -1.
  int pk_row = -1, pk_col = -1;
  bool grouped_join = false;

  Gen(const Plan& plan, const TileConfig& tile, const CodegenOptions& options)
      : P(plan), T(tile), A(arg_layout(plan)), S(smem_plan(plan, tile)),
        inner_acc(inner_accesses(plan)), inner_r(plan, Renderer::Ctx::Inner),
        outer_r(plan, Renderer::Ctx::Outer) {
    number_aggregates(P.outer);
    grouped_join = options.grouped_join;
    if (grouped_join && !join_grouping_form(plan)) unsupported("a key-grouped join for this plan");
    if (options.packed16) {
      if (!packed16_form(plan, tile)) unsupported("packed 16-bit steps for this plan or tile");
      const SemiringForm f = semiring_form(plan);
      pk_row = f.row_access;
      pk_col = f.col_access;
    }
  }
  bool packed() const { return pk_row >= 0; }
  // The epilogue's read of accumulator n at fragment (m, n): packed lanes are widened there, so
  // no second, i32 copy of the accumulators is ever live.
  std::string acc_read(int n) const {
    return packed() ? "st.packed_acc(m, n, red_end > red_begin)" : "st.acc" + to_string(n) + "[m][n]";
  }
  // Element type of access a's shared buffers: the column operand of packed steps stays 16-bit.
  std::string smem_cpp(int a) const { return a == pk_col ? "short" : frag_cpp(access_ctype(P, a)); }

  // Key-grouped joins (join_groups.h): blocks run tiles of key-ordered positions, mapped back to
  // row / column indices through jrow / jcol (-1 past the tile's end).
  bool grouped() const { return grouped_join; }
  std::string row_at(const std::string& pos) const {
    return grouped() ? "(" + pos + " < row_end ? __ldg(jrow + " + pos + ") : -1)" : pos;
  }
  std::string col_at(const std::string& pos) const {
    return grouped() ? "(" + pos + " < col_end ? __ldg(jcol + " + pos + ") : -1)" : pos;
  }
  std::string in_range() const { return grouped() ? "i >= 0 && j >= 0" : "i < row_end && j < col_end"; }
  // Whether the `when` pass bits exist: grouped joins match their keys by construction.
  bool has_pass() const { return grouped() ? P.when.mask != kNoExpr : P.when.present(); }
  // The block -> tile order: L2-friendly groups of row tiles, or, with top/bottom lists per i
  // (per j), all row (column) tiles first so that each group's threshold tightens early.
  std::string tile_order() const {
    for (const ListOutput& l : P.lists)
      if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per != PerGroup::None)
        return l.per == PerGroup::Col ? "gm::tile_coords_spread<true>" : "gm::tile_coords_spread<false>";
    return "gm::tile_coords<8>";
  }
  // Project outputs in vector runs along j: not when j follows a key order.
  bool runs_along_j(int d) const { return !grouped() && output_runs_along_j(P, d); }

  void number_aggregates(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Store && !P.dense[size_t(s.target)].is_project())
        aggs.push_back({&s, int(aggs.size())});
      number_aggregates(s.body);
    }
  }

  std::string acc_type(int n) const { return ctype_cpp(P.accs[size_t(n)].type); }
  std::string out_type(int d) const { return ctype_cpp(P.dense[size_t(d)].type); }
  std::string loader(int a) const {
    std::string r = "L";
    return r.append(to_string(a));
  }

  // ---- the inner op ------------------------------------------------------------------------
  void inner_update(const Stmt& s, Code& out) {
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

  void locals(bool inner, Code& out) {
    for (size_t n = 0; n < P.locals.size(); ++n)
      if (P.locals[n].inner == inner)
        out.line(ctype_cpp(P.locals[n].type) + " l" + to_string(n) + " = " + ctype_cpp(P.locals[n].type) + "();");
  }

  void inner_functor() {
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

  // ---- the stage: loaders, fragments and the inner op per k-slice ----------------------------
  void stage() {
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

  // The body of Stage::step: fragments of every operand, the inner op on every (m, n).
  void generic_step() {
    std::string args = "i0 + tmap.row(m), j0 + tmap.col(n), k";
    for (size_t n = 0; n < P.accs.size(); ++n) args += ", acc" + to_string(n) + "[m][n]";
    for (int a : inner_acc) {
      const std::string n = to_string(a), ct = frag_cpp(access_ctype(P, a));
      const std::string buf = "sm" + n + " + buf * " + loader(a) + "::BUF + kk";
      switch (inner_kind(P.accesses[size_t(a)].pattern)) {
        case InnerKind::RowTile:
          c.line(ct + " x" + n + "[Shape::TM];");
          c.line("gm::load_frag<Shape::TM, Shape::VM, Shape::THREADS_M>(x" + n + ", " + buf + " * " + loader(a) +
                 "::LDS, tmap.tm);");
          args += ", x" + n + "[m]";
          break;
        case InnerKind::ColTile:
          c.line(ct + " x" + n + "[Shape::TN];");
          c.line("gm::load_frag<Shape::TN, Shape::VN, Shape::THREADS_N>(x" + n + ", " + buf + " * " + loader(a) +
                 "::LDS, tmap.tn);");
          args += ", x" + n + "[n]";
          break;
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

  // ---- the kernel --------------------------------------------------------------------------
  // Linear element offset of dense output d at (b, i, jname).
  std::string out_offset(int d, const std::string& jname) const {
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

  // Accesses read outside the mainloop: `when`, output statements, list keys, output indices.
  std::set<int> outer_accesses() const {
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

  std::string when_condition() const {
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

  void kernel_prologue() {
    c.line("extern __shared__ __align__(16) unsigned char smem[];");
    if (grouped()) {
      c.line("// A key-grouped join: one block per tile of the table; a tile spans key-ordered positions");
      c.line("// [row_begin, row_end) x [col_begin, col_end) of one key, mapped to indices by jrow / jcol.");
      c.line("const int* const jt = reinterpret_cast<const int*>(" + slot(A.join_tiles) + ") + 4 * gm::i64(blockIdx.x);");
      c.line("const int row_begin = __ldg(jt), row_end = __ldg(jt + 1);");
      c.line("const int col_begin = __ldg(jt + 2), col_end = __ldg(jt + 3);");
      c.line("const int* const jrow = reinterpret_cast<const int*>(" + slot(A.join_rows) + ");");
      c.line("const int* const jcol = reinterpret_cast<const int*>(" + slot(A.join_cols) + ");");
      c.line("const int red_begin = gm::arg_i32(a.s[4]), red_end = gm::arg_i32(a.s[5]);");
      c.line("const int tiles_m = 1, tiles_n = 1;");
      c.line("int b = 0, tile_m = 0, tile_n = 0;");
    } else {
      c.line("const int row_begin = gm::arg_i32(a.s[0]), row_end = gm::arg_i32(a.s[1]);");
      c.line("const int col_begin = gm::arg_i32(a.s[2]), col_end = gm::arg_i32(a.s[3]);");
      c.line("const int red_begin = gm::arg_i32(a.s[4]), red_end = gm::arg_i32(a.s[5]);");
      c.line("// One block per (batch instance, tile): the grid is tiles_m * tiles_n * batch blocks.");
      c.line("const int tiles_m = (row_end - row_begin + Shape::BM - 1) / Shape::BM;");
      c.line("const int tiles_n = (col_end - col_begin + Shape::BN - 1) / Shape::BN;");
      c.line("int b = int(blockIdx.x) / (tiles_m * tiles_n), tile_m, tile_n;");
      c.line(tile_order() + "(int(blockIdx.x) - b * tiles_m * tiles_n, tiles_m, tiles_n, tile_m, tile_n);");
    }
    for (const auto& p : A.params)
      c.line("const " + ctype_cpp(p.type) + " " + Renderer::param_name(p.param, p.type) + " = " +
             arg_as(p.slot, p.type) + ";  // " + P.params[size_t(p.param)].name);
    for (int a : outer_accesses()) {
      const auto& s = A.access[size_t(a)];
      const std::string n = to_string(a);
      c.line("const " + dtype_cpp(access_dtype(P, a)) + "* gp" + n + " = reinterpret_cast<const " +
             dtype_cpp(access_dtype(P, a)) + "*>(" + slot(s.ptr) + ");  // " +
             P.operands[size_t(P.accesses[size_t(a)].operand)].name);
      const Pattern pat = P.accesses[size_t(a)].pattern;
      if (pat == Pattern::RowCol || pat == Pattern::ColRow)
        c.line("const gm::i64 gld" + n + " = gm::arg_i64(" + slot(s.ld) + ");");
      if (P.batched) c.line("const gm::i64 gbs" + n + " = gm::arg_i64(" + slot(s.bstride) + ");");
    }
    for (size_t d = 0; d < P.dense.size(); ++d) {
      const auto& s = A.dense[d];
      const std::string n = to_string(d);
      c.line(out_type(int(d)) + "* out" + n + " = reinterpret_cast<" + out_type(int(d)) + "*>(" + slot(s.ptr) +
             ");  // " + P.dense[d].name);
      for (size_t p = 0; p < s.stride.size(); ++p)
        c.line("const gm::i64 os" + n + "_" + to_string(p) + " = gm::arg_i64(" + slot(s.stride[p]) + ");");
      if (runs_along_j(int(d))) c.line("const bool ov" + n + " = " + slot(s.vec) + " != 0;");
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

  void setup() {
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
      const std::string base = "reinterpret_cast<const " + st + "*>(" + slot(s.ptr) + ") + gm::i64(b) * gm::arg_i64(" +
                               slot(s.bstride) + ")";
      switch (inner_kind(p)) {
        case InnerKind::RowTile: case InnerKind::ColTile: {
          const bool row = inner_kind(p) == InnerKind::RowTile;
          c.line("st.ld" + n + ".init(" + base + ", gm::arg_i32(" + slot(s.ld) + "), " +
                 (row ? "st.i0, row_end" : "st.j0, col_end") + ", " + slot(s.vec) + " != 0);");
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
        c.line("b = gm::fresh_ctaid() / (tiles_m * tiles_n);");
        c.line(tile_order() + "(gm::fresh_ctaid() - b * tiles_m * tiles_n, tiles_m, tiles_n, tile_m, tile_n);");
      }
      c.line("st.i0 = row_begin + tile_m * Shape::BM;");
      c.line("st.j0 = col_begin + tile_n * Shape::BN;");
    }
  }

  // One output statement of the epilogue (Let and If are the renderer's).
  void outer_leaf(const Stmt& s, Code& out) {
    if (s.kind == StmtKind::Update) unsupported("an accumulator update outside reduce");
    if (s.kind == StmtKind::Emit) {
      const ListOutput& l = P.lists[size_t(s.target)];
      const std::string n = to_string(s.target);
      out.line("ef" + n + " = true;");
      for (size_t k = 0; k < l.columns.size(); ++k)
        out.line("ec" + n + "_" + to_string(k) + " = " + outer_r.expr_as(s.columns[k], l.columns[k].type) + ";");
      if (l.key != kNoExpr) out.line("ek" + n + " = " + outer_r.expr(l.key) + ";");
      return;
    }
    const int d = s.target;
    const std::string n = to_string(d), v = outer_r.expr_as(s.value, P.dense[size_t(d)].type);
    if (P.dense[size_t(d)].is_project()) {
      if (runs_along_j(d)) {
        out.line("pv" + n + "[v] = " + v + ";");
        out.line("pm" + n + "[v] = true;");
      } else {
        out.line("out" + n + "[" + out_offset(d, "j") + "] = " + v + ";");
      }
      return;
    }
    std::string id;
    for (const auto& [st, n] : aggs)
      if (st == &s) id = to_string(n);
    out.line("af" + id + " = true;");
    out.line("ak" + id + " = gm::u64(" + out_offset(d, "j") + ");");
    out.line("av" + id + " = " + v + ";");
  }

  void epilogue() {
    bool tables = false;
    for (size_t d = 0; d < P.dense.size(); ++d) {
      const DenseOutput& o = P.dense[d];
      if (o.is_project()) continue;
      if (o.type == CType::Bool) unsupported("an aggregate of bool values");
      const std::string n = to_string(d), t = out_type(int(d));
      if (S.table_off[d] >= 0) {
        tables = true;
        c.line("gm::TableSink<" + t + ", " + store_op_code(o.op) + ", " + to_string(S.table_slots) +
               ", Shape::THREADS> sk" + n + ";");
        c.line("sk" + n + ".init(smem + " + to_string(S.table_off[d]) + ", out" + n + ", gm::u64(" +
               slot(A.dense[d].elems) + "));");
      } else {
        c.line("gm::GlobalSink<" + t + ", " + store_op_code(o.op) + "> sk" + n + "{out" + n + "};");
      }
    }
    for (const auto& [s, id] : aggs) {
      const DenseOutput& o = P.dense[size_t(s->target)];
      c.line("gm::AggRun<" + out_type(s->target) + ", " + store_op_code(o.op) + "> ar" + to_string(id) + ";");
      c.line("ar" + to_string(id) + ".reset();");
    }
    for (size_t l = 0; l < P.lists.size(); ++l)
      c.line("const gm::ListAppend la" + to_string(l) + "{reinterpret_cast<gm::u64*>(" + slot(A.lists[l].counter) +
             "), " + slot(A.lists[l].capacity) + "};");
    list_decls();
    if (tables) c.line("__syncthreads();  // tables initialised");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < Shape::TM; ++m)");
    c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ";");
    c.line("#pragma unroll");
    c.open("for (int c = 0; c < Shape::TN / Shape::VN; ++c)");
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (runs_along_j(int(d)))
        c.line(out_type(int(d)) + " pv" + to_string(d) + "[Shape::VN]; bool pm" + to_string(d) + "[Shape::VN];");
    c.line("#pragma unroll");
    c.open("for (int v = 0; v < Shape::VN; ++v)");
    c.line("const int n = c * Shape::VN + v;");
    c.line("const int j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (runs_along_j(int(d)))
        c.line("pv" + to_string(d) + "[v] = " + out_type(int(d)) + "(0); pm" + to_string(d) + "[v] = false;");
    for (const auto& [s, id] : aggs)
      c.line("bool af" + to_string(id) + " = false; gm::u64 ak" + to_string(id) + " = 0; " + out_type(s->target) +
             " av" + to_string(id) + " = " + out_type(s->target) + "(0);");
    for (size_t l = 0; l < P.lists.size(); ++l) c.line("bool ef" + to_string(l) + " = false;");
    std::string ok = in_range();
    if (has_pass()) ok += " && ((pass[(m * Shape::TN + n) / 32] >> ((m * Shape::TN + n) % 32)) & 1u) != 0";
    c.open("if (" + ok + ")");
    // With lists, through gm::opaque: nothing computed here is carried into their pass 2.
    for (size_t n = 0; n < P.accs.size(); ++n)
      c.line((P.lists.empty() ? "const " : "") + acc_type(int(n)) + " acc" + to_string(n) + " = " +
             acc_read(int(n)) + ";" + (P.lists.empty() ? "" : " gm::opaque(acc" + to_string(n) + ");"));
    locals(false, c);
    outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind == StmtKind::Emit) emit_mark(s, out);
      else outer_leaf(s, out);
    });
    c.close();
    for (const auto& [s, id] : aggs)
      c.line("ar" + to_string(id) + ".step(af" + to_string(id) + ", ak" + to_string(id) + ", av" + to_string(id) +
             ", sk" + to_string(s->target) + ");");
    // Lists: pass 1 only marks the pairs whose row reached the emit; top/bottom select among
    // the marks (preselect), the rows are rendered and stored after the loop (list_rows).
    for (size_t l = 0; l < P.lists.size(); ++l)
      c.line("pr" + to_string(l) + "[(m * Shape::TN + n) / 32] |= unsigned(ef" + to_string(l) +
             ") << ((m * Shape::TN + n) % 32);");
    c.close();  // v
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (runs_along_j(int(d)))
        c.line("gm::store_run<" + out_type(int(d)) + ", Shape::VN>(out" + to_string(d) + " + " +
               out_offset(int(d), "st.j0 + st.tmap.col(c * Shape::VN)") + ", pv" + to_string(d) + ", pm" +
               to_string(d) + ", ov" + to_string(d) + ");");
    c.close();  // c
    c.close();  // m
    for (const auto& [s, id] : aggs) c.line("ar" + to_string(id) + ".finish(sk" + to_string(s->target) + ");");
    if (tables) {
      c.line("__syncthreads();  // every commit is in its table");
      for (size_t d = 0; d < P.dense.size(); ++d)
        if (S.table_off[d] >= 0) c.line("sk" + to_string(d) + ".flush();");
    }
    for (size_t l = 0; l < P.lists.size(); ++l) {
      if (preselected(l)) preselect(l);
      list_rows(l);
    }
  }

  // ---- top / bottom lists: pre-selection per block tile (gm::TileSelect) --------------------
  bool preselected(size_t l) const {
    const ListOutput& lo = P.lists[l];
    return (lo.mode == ListMode::Top || lo.mode == ListMode::Bottom) && lo.key != kNoExpr;
  }
  std::string top_code(size_t l) const { return P.lists[l].mode == ListMode::Top ? "true" : "false"; }
  std::string per_code(size_t l) const {
    const PerGroup g = P.lists[l].per;
    return g == PerGroup::Row ? "1" : g == PerGroup::Col ? "2" : "0";
  }

  // Pass 1 of the lists: only that the row exists (columns and keys come later).
  void emit_mark(const Stmt& s, Code& out) { out.line("ef" + to_string(s.target) + " = true;"); }

  // Per-thread marks, one bit per pair: the row reached the emit (pass 1 sets them).
  void list_decls() {
    for (size_t l = 0; l < P.lists.size(); ++l) {
      const std::string n = to_string(l);
      c.line("unsigned pr" + n + "[(Shape::TM * Shape::TN + 31) / 32];  // " + P.lists[l].name +
             ": rows that reached the emit");
      c.line("#pragma unroll");
      c.line("for (int w = 0; w < (Shape::TM * Shape::TN + 31) / 32; ++w) pr" + n + "[w] = 0u;");
    }
  }

  // top/bottom: the tile's per-group thresholds (from and into the global ones) clear the marks
  // of the rows that cannot be among their group's N best. The selection computes each pair's
  // rank again where it needs it rather than holding TM x TN ranks (which spill on the largest
  // tiles): from the accumulators when the key reads nothing else, else by rendering the
  // statements that lead to the emit (lets, ifs) for the key alone.
  void preselect(size_t l) {
    const ListOutput& lo = P.lists[l];
    const std::string n = to_string(l), sel = "gm::TileSelect<Shape, " + per_code(l) + ">";
    const std::string kt = ctype_cpp(P.expr(lo.key).type);
    std::set<int> accs;
    bool direct = true;
    walk_expr(P, lo.key, [&](const Expr& e) {
      if (e.kind == ExprKind::Acc) accs.insert(e.index);
      direct = direct && e.kind != ExprKind::Load && e.kind != ExprKind::Local;
    });
    c.open("");
    c.line("__shared__ " + sel + "::Smem ss;");
    c.line("unsigned* const gthr = reinterpret_cast<unsigned*>(" + slot(A.lists[l].threshold) + ");");
    // Group g of the tile in the global thresholds: (b, i - row begin) per i, (b, j - col begin)
    // per j, from the Instance's ranges (a.s[0..3]; a grouped join's tile ranges are positions).
    const PerGroup per = lo.per;
    if (per == PerGroup::None) {
      c.line("const auto at = [&](int) -> gm::i64 { return 0; };");
    } else {
      const bool row = per == PerGroup::Row;
      const std::string pos = row ? "st.i0 + g" : "st.j0 + g", end = row ? "row_end" : "col_end";
      // The Instance's range: a grouped join's row_begin / row_end are one tile's positions.
      const std::string rb = grouped() ? (row ? "gm::arg_i32(a.s[0])" : "gm::arg_i32(a.s[2])")
                                       : (row ? "row_begin" : "col_begin");
      const std::string re = grouped() ? (row ? "gm::arg_i32(a.s[1])" : "gm::arg_i32(a.s[3])")
                                       : (row ? "row_end" : "col_end");
      c.line("const int gfirst = " + rb + ", gextent = " + re + " - gfirst;");
      c.open("const auto at = [&](int g) -> gm::i64");
      c.line("if (" + pos + " >= " + end + ") return -1;");
      c.line("return gm::i64(b) * gextent + (" + (row ? row_at(pos) : col_at(pos)) + " - gfirst);");
      c.close(";");
    }
    c.open("const auto rank = [&](int m, int n) -> unsigned");
    c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ", j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
    c.line("(void)i; (void)j;");
    for (size_t a = 0; a < P.accs.size(); ++a)
      if (!direct || accs.count(int(a)))
        c.line(acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_read(int(a)) + "; gm::opaque(acc" +
               to_string(a) + ");");
    if (direct) {
      c.line("return gm::rank32(" + outer_r.expr(lo.key) + ", " + top_code(l) + ");");
    } else {
      c.line(kt + " ek" + n + " = " + kt + "();");
      locals(false, c);
      outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
        if (s.kind == StmtKind::Emit && size_t(s.target) == l) out.line("ek" + n + " = " + outer_r.expr(lo.key) + ";");
      });
      c.line("return gm::rank32(ek" + n + ", " + top_code(l) + ");");
    }
    c.close(";");
    c.line(sel + "::select(st.tmap, rank, pr" + n + ", la" + n + ".limit(), gthr, at, ss);");
    c.close();
  }

  // Pass 2 of list l: one global atomic per block reserves the marked rows; the emit's columns
  // are rendered again (no stores, no other lists) for the marked pairs and stored in order.
  // The counter counts rows past the capacity too: the host grows the buffers and reruns.
  void list_rows(size_t l) {
    const ListOutput& lo = P.lists[l];
    const auto& ls = A.lists[l];
    const std::string n = to_string(l);
    c.open("");
    c.line("gm::u64 row;");
    c.line("// Every thread, together; false in all of them when the block has no row.");
    c.open("if (gm::BlockAppend<Shape>::reserve(pr" + n + ", la" + n + ".counter, row))");
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < Shape::TM; ++m)");
    c.line("const int i = " + row_at("st.i0 + st.tmap.row(m)") + ";");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < Shape::TN; ++n)");
    c.line("if (((pr" + n + "[(m * Shape::TN + n) / 32] >> ((m * Shape::TN + n) % 32)) & 1u) == 0u) continue;");
    c.line("const int j = " + col_at("st.j0 + st.tmap.col(n)") + ";");
    c.line("bool ef" + n + " = false;");
    for (size_t k = 0; k < lo.columns.size(); ++k)
      c.line(ctype_cpp(lo.columns[k].type) + " ec" + n + "_" + to_string(k) + " = " + ctype_cpp(lo.columns[k].type) +
             "();");
    if (lo.key != kNoExpr)
      c.line(ctype_cpp(P.expr(lo.key).type) + " ek" + n + " = " + ctype_cpp(P.expr(lo.key).type) + "();");
    for (size_t a = 0; a < P.accs.size(); ++a)
      c.line(acc_type(int(a)) + " acc" + to_string(a) + " = " + acc_read(int(a)) + "; gm::opaque(acc" + to_string(a) +
             ");");
    locals(false, c);
    outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind == StmtKind::Emit && size_t(s.target) == l) outer_leaf(s, out);
    });
    c.line("(void)ef" + n + ";  // marked in pass 1: the row exists");
    c.open("if (row < la" + n + ".capacity)");
    for (size_t k = 0; k < lo.columns.size(); ++k)
      c.line("reinterpret_cast<" + ctype_cpp(lo.columns[k].type) + "*>(" + slot(ls.cols[k]) + ")[row] = ec" + n +
             "_" + to_string(k) + ";");
    c.line("reinterpret_cast<int*>(" + slot(ls.b) + ")[row] = b;");
    c.line("reinterpret_cast<int*>(" + slot(ls.i) + ")[row] = i;");
    c.line("reinterpret_cast<int*>(" + slot(ls.j) + ")[row] = j;");
    if (lo.key != kNoExpr)
      c.line("reinterpret_cast<" + ctype_cpp(P.expr(lo.key).type) + "*>(" + slot(ls.key) + ")[row] = ek" + n + ";");
    c.close();
    c.line("++row;");
    c.close();  // n
    c.close();  // m
    c.close();  // reserve
    c.close();
  }

  std::string run() {
    const WarpShape w = warp_shape(T);
    const KernelInfo info = kernel_info(P, T);
    std::string name = P.source_name;
    for (char& ch : name)
      if (ch < 32 || ch > 126) ch = '?';
    c.line("// Generated by gamut (src/cuda/codegen.cpp): " + name + ", tile " + T.str() + ".");
    for (const char* h : {"gamut_math.cuh", "gamut_atomics.cuh", "gamut_loaders.cuh", "gamut_mainloop.cuh",
                          "gamut_epilogue.cuh", "gamut_list.cuh"})
      c.line(std::string("#include \"") + h + "\"");
    c.line("");
    c.line("namespace {");
    c.line("");
    c.line("typedef gm::TileShape<" + to_string(T.bm) + ", " + to_string(T.bn) + ", " + to_string(T.bk) + ", " +
           to_string(T.tm) + ", " + to_string(T.tn) + ", " + to_string(w.warp_m) + ", " + to_string(w.warp_n) +
           "> Shape;");
    c.line("// Kernel arguments: 64-bit words (pointers, sizes, strides, parameter bits).");
    c.line("struct Args { unsigned long long s[" + to_string(A.count) + "]; };");
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
};

}  // namespace

std::string generate_source(const Plan& plan, const TileConfig& tile, const CodegenOptions& options) {
  std::string why;
  if (!tile_valid(tile, &why)) throw_usage_error("invalid tile " + tile.str() + ": " + why);
  if (!plan.typed) cg::unsupported("an untyped plan");
  // plan.k_sequential needs nothing: every thread runs k in increasing order (no split-k).
  return Gen(plan, tile, options).run();
}

}  // namespace gamut::cuda
