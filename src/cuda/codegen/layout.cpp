// How a plan maps onto the kernel (which operands the mainloop stages,
// which outputs are pre-reduced, the shared-memory plan).
#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/outputs/output_kind.h"
#include "cuda/outputs/output_operator.h"
#include "plan/semiring.h"

namespace gamut::cuda {

namespace cg {

void unsupported(const std::string& what) {
  throw Error(ExitCode::Query, "query error: the GPU code generator does not support " + what);
}

InnerKind inner_kind(Pattern p) {
  switch (p) {
    case Pattern::RowRed:
    case Pattern::RedRow: return InnerKind::RowTile;
    case Pattern::RedCol:
    case Pattern::ColRed: return InnerKind::ColTile;
    case Pattern::RowVec: return InnerKind::RowVec;
    case Pattern::ColVec: return InnerKind::ColVec;
    case Pattern::RedVec: return InnerKind::RedVec;
    case Pattern::RowCol:
    case Pattern::ColRow: return InnerKind::None;
  }
  return InnerKind::None;
}

bool k_contiguous(Pattern p) { return p == Pattern::RowRed || p == Pattern::ColRed; }

bool uses_cp_async(DType t) { return t == DType::F32 || t == DType::I32 || t == DType::I64 || t == DType::F64; }

TileCopy tile_copy(const Plan& plan, int access, bool packed16) {
  const DType t = access_dtype(plan, access);
  const bool kcontig = k_contiguous(plan.accesses[size_t(access)].pattern);
  // X[p, k] operands are transposed into shared memory: through registers that is one 16-byte
  // load and four stores per chunk, by cp.async four 4-byte copies, which were slower on the
  // f32 product.
  if (uses_cp_async(t)) return kcontig ? TileCopy::Registers : TileCopy::Async;
  // The packed steps keep the column operand as 16-bit values in shared memory (packed16.cpp).
  if (packed16 && t == DType::I16 && !kcontig && access == semiring_form(plan).col_access) return TileCopy::Async;
  // 1- and 2-byte types widened once per slice from raw copies (gm::StagedTileLoader); bool is
  // held as a byte in shared memory too, so there is nothing to widen.
  return t == DType::Bool ? TileCopy::Registers : TileCopy::Staged;
}

DType access_dtype(const Plan& plan, int access) {
  const Operand& op = plan.operands[size_t(plan.accesses[size_t(access)].operand)];
  if (!op.dtype) unsupported("an operand of unknown type (" + op.name + ")");
  return *op.dtype;
}
CType access_ctype(const Plan& plan, int access) { return compute_type_of(access_dtype(plan, access)); }

void walk_expr(const Plan& plan, ExprId id, const std::function<void(const Expr&)>& fn) {
  if (id == kNoExpr) return;
  const Expr& e = plan.expr(id);
  fn(e);
  walk_expr(plan, e.a, fn);
  walk_expr(plan, e.b, fn);
  walk_expr(plan, e.c, fn);
  for (ExprId x : e.args) walk_expr(plan, x, fn);
}

void walk_stmts(const Plan& plan, const std::vector<Stmt>& stmts, const std::function<void(const Expr&)>& fn) {
  for (const Stmt& s : stmts) {
    walk_expr(plan, s.value, fn);
    walk_expr(plan, s.cond, fn);
    for (ExprId c : s.columns) walk_expr(plan, c, fn);
    walk_stmts(plan, s.body, fn);
  }
}

std::vector<int> inner_accesses(const Plan& plan) {
  std::set<int> seen;
  walk_stmts(plan, plan.inner, [&](const Expr& e) {
    if (e.kind == ExprKind::Load) seen.insert(e.index);
  });
  for (int a : seen)
    if (inner_kind(plan.accesses[size_t(a)].pattern) == InnerKind::None)
      unsupported("an output-shaped operand inside reduce (" +
                  plan.operands[size_t(plan.accesses[size_t(a)].operand)].name + ")");
  return {seen.begin(), seen.end()};
}

std::set<std::pair<int, CType>> params_in(const Plan& plan, bool inner) {
  std::set<std::pair<int, CType>> out;
  auto visit = [&](const Expr& e) {
    if (e.kind == ExprKind::Param) out.insert({e.index, e.type});
  };
  if (inner) {
    walk_stmts(plan, plan.inner, visit);
  } else {
    walk_stmts(plan, plan.outer, visit);
    walk_expr(plan, plan.when.mask, visit);
    for (const ListOutput& l : plan.lists) walk_expr(plan, l.key, visit);
  }
  return out;
}

bool output_uses_table(const Plan& plan, int d) {
  const DenseOutput& o = plan.dense[size_t(d)];
  if (o.is_project()) return false;
  bool row = false, col = false;
  for (const OutIndex& x : o.index) {
    if (x.kind != OutIndex::Axis) continue;
    row = row || x.axis == AxisRole::Row;
    col = col || x.axis == AxisRole::Col;
  }
  return !(row && col);
}

SmemPlan smem_plan(const Plan& plan, const TileConfig& t, bool packed16) {
  SmemPlan s;
  s.inner_off.assign(plan.accesses.size(), -1);
  s.inner_bytes.assign(plan.accesses.size(), 0);
  s.stage_off.assign(plan.accesses.size(), -1);
  s.stage_bytes.assign(plan.accesses.size(), 0);
  size_t off = 0;
  const std::vector<int> inner = inner_accesses(plan);
  for (int a : inner) {
    const Pattern p = plan.accesses[size_t(a)].pattern;
    const size_t pad = k_contiguous(p) ? 4 : 0;
    size_t elems = 0;
    switch (inner_kind(p)) {
      case InnerKind::RowTile: elems = size_t(t.bk) * (size_t(t.bm) + pad); break;
      case InnerKind::ColTile: elems = size_t(t.bk) * (size_t(t.bn) + pad); break;
      case InnerKind::RedVec: elems = size_t(t.bk); break;
      default: continue;  // row/column vectors live in registers
    }
    s.inner_off[size_t(a)] = long(off);
    s.inner_bytes[size_t(a)] = round16(size_t(kStages) * elems * ctype_bytes(access_ctype(plan, a)));
    off += s.inner_bytes[size_t(a)];
  }
  // The staging slices of staged tiles, (P, BK) raw elements each (gm::StagedTileLoader::SBUF).
  for (int a : inner) {
    const InnerKind k = inner_kind(plan.accesses[size_t(a)].pattern);
    if ((k != InnerKind::RowTile && k != InnerKind::ColTile) || tile_copy(plan, a, packed16) != TileCopy::Staged)
      continue;
    const size_t elems = size_t(t.bk) * size_t(k == InnerKind::RowTile ? t.bm : t.bn);
    s.stage_off[size_t(a)] = long(off);
    s.stage_bytes[size_t(a)] = round16(size_t(kStages) * elems * dtype_size(access_dtype(plan, a)));
    off += s.stage_bytes[size_t(a)];
  }
  s.mainloop = off;
  // The output kinds' regions, after the mainloop's (whose space they reuse from its start).
  s.epilogue = 0;
  for (const OutputKind* kind : output_kinds()) s.epilogue = kind->smem(plan, t, s.epilogue, s);
  return s;
}

Code& Code::line(const std::string& s) {
  if (!s.empty() && s[0] == '#')
    out_ += s + '\n';  // preprocessor lines stay in column 0
  else
    out_ += std::string(size_t(2 * depth_), ' ') + s + '\n';
  return *this;
}
Code& Code::open(const std::string& s) {
  line(s + " {");
  ++depth_;
  return *this;
}
Code& Code::mid(const std::string& s) {
  --depth_;
  line("} " + s + " {");
  ++depth_;
  return *this;
}
Code& Code::close(const std::string& tail) {
  --depth_;
  return line("}" + tail);
}

}  // namespace cg

std::vector<OutIndex> output_index(const Plan& plan, int d) {
  std::vector<OutIndex> idx = plan.dense[size_t(d)].index;
  const bool has_batch = std::any_of(
      idx.begin(), idx.end(), [](const OutIndex& x) { return x.kind == OutIndex::Axis && x.axis == AxisRole::Batch; });
  if (plan.batched && !has_batch) idx.insert(idx.begin(), OutIndex{OutIndex::Axis, AxisRole::Batch, -1});
  return idx;
}

bool output_runs_along_j(const Plan& plan, int d) {
  if (!plan.dense[size_t(d)].is_project()) return false;
  const std::vector<OutIndex> idx = output_index(plan, d);
  if (idx.empty() || idx.back().kind != OutIndex::Axis || idx.back().axis != AxisRole::Col) return false;
  return std::all_of(idx.begin(), idx.end(), [](const OutIndex& x) { return x.kind == OutIndex::Axis; });
}

namespace {
// Persistent tiles (KernelInfo::persistent) for TMA-fed wgmma kernels over plain tiles without
// `when` pass bits (whose early exit is per tile), where no experiment asks for several blocks
// per SM. Which of those: outputs with shared memory (aggregate tables, top/bottom ranks), whose
// per-tile work is long enough that the next tile's loads pay to overlap it; not products and
// select lists, whose outputs are stores the block does not wait for (they lose a little), except
// where the kernel choice asks for it (plain selects over short k, kernel_spec.cpp).
// CodegenOptions::persistent (a kernel variant's, or that choice) decides where set; else
// GAMUT_EXPERIMENT_PERSISTENT=0 / =1 (measurements and tests; it shapes the source, hence the
// cache key): never / wherever the form allows. Resident B (TcTile::panel) is persistent too:
// its blocks run their tiles band by band, one B load per band.
bool persistent_form(const Plan& plan, const TcMainloopSpec& s, const CodegenOptions& options, bool shared_outputs) {
  if (!s.tile.tma || !s.tile.wgmma || options.grouped_join || plan.when.present() || tc_min_blocks(s) != 1)
    return false;
  if (s.tile.groups > 1) return true;  // (ping-pong is persistent by its nature)
  if (options.persistent >= 0) return options.persistent == 1;
  if (const int e = persistent_experiment(); e >= 0) return e == 1;
  return shared_outputs || s.tile.panel > 0 || options.resident_top;
}
}  // namespace

int persistent_experiment() {
  const char* e = std::getenv("GAMUT_EXPERIMENT_PERSISTENT");
  if (e && std::string(e) == "0") return 0;
  if (e && std::string(e) == "1") return 1;
  return -1;
}

int pingpong_experiment() {
  const char* e = std::getenv("GAMUT_EXPERIMENT_PINGPONG");
  if (e && std::string(e) == "256") return 256;
  if (e && std::string(e) == "128") return 128;
  if (e && (std::string(e) == "0" || std::string(e) == "off")) return 0;
  return -1;  // unset or "auto": by the kept-pairs rule (kernel_spec.cpp)
}

KernelInfo kernel_info(const Plan& plan, const TileConfig& tile, const CodegenOptions& options) {
  KernelInfo k = cg::kernel_form(plan, tile, options);
  k.args = cg::kernel_layout(plan, tile, options);
  return k;
}

KernelInfo cg::kernel_form(const Plan& plan, const TileConfig& tile, const CodegenOptions& options) {
  if (!plan.typed) cg::unsupported("an untyped plan");
  KernelInfo k;
  k.args = arg_layout(plan, options.tma);
  k.threads = tile.threads();
  if (options.tensor_cores()) {
    // The tensor-core mainloop's stages; the output operators' tables reuse the space after it.
    const TcMainloopSpec s =
        tc_plan_spec(plan, tile, options.tensor_math, options.tma, options.resident_b, false, options.pingpong);
    k.threads = s.tile.threads();
    k.cluster = s.tile.cluster;
    const cg::SmemPlan outputs = cg::smem_plan(plan, tile);
    k.smem_bytes = std::max(tc_smem_bytes(s), outputs.epilogue);
    // The outputs' space after the stage ring, and top/bottom lists' ranks after it. Where the
    // ranks do not fit there, the kernel keeps one tile per block with the ranks in the stages'
    // space: recomputing them made a persistent Q7 (128 x 256 tiles) slower.
    const size_t ring = tc_smem_bytes(s), tables = cg::tile_ranks_offset(outputs);
    const size_t ranks =
        std::any_of(plan.lists.begin(), plan.lists.end(),
                    [](const ListOutput& l) { return l.mode == ListMode::Top || l.mode == ListMode::Bottom; })
            ? cg::tile_ranks_bytes(tile)
            : 0;
    // Block-resident thresholds (gm::ResidentTop) and the tile's keys beside the ring, where
    // they fit sm_90's 227 KB with the list's few static words (BlockAppend's; TileSelect's
    // are not used there).
    const int resident = options.resident_top ? resident_top_form(plan) : -1;
    if (resident >= 0 && persistent_form(plan, s, options, true)) {
      const size_t state = cg::resident_top_bytes(tile, plan.lists[size_t(resident)].per) + cg::tile_ranks_bytes(tile);
      if (ring + tables + state + 256 <= (size_t(227) << 10)) {
        // (Epilogue warpgroups, where the tile takes them: more threads, the same shared memory.)
        k.threads =
            tc_plan_spec(plan, tile, options.tensor_math, options.tma, options.resident_b, options.epilogue_warpgroups)
                .tile.threads();
        k.persistent = k.resident_top = true;
        k.out_smem_offset = ring;
        k.resident_top_offset = tables;
        k.smem_bytes = ring + tables + state;
        return k;
      }
    }
    if (persistent_form(plan, s, options, tables + ranks > 0)) {
      // Resident B keeps a persistent kernel even where the ranks do not fit beside the ring
      // (they are then computed again per pass): with the gate (gm::TileSelect::gate) few tiles of a
      // global top / bottom list select at all, and one B load then serves a band of tiles.
      const bool fits = ring + tables + ranks <= kSm90SmemPerBlock;
      if (fits || (s.tile.panel > 0 && ring + tables <= kSm90SmemPerBlock)) {
        k.persistent = true;
        k.bands = s.tile.panel > 0;
        k.out_smem_offset = ring;
        k.smem_bytes = ring + tables + (fits ? ranks : 0);
      }
    }
    if (s.tile.groups > 1 && !k.persistent)
      throw Error(ExitCode::Query, "internal error: a ping-pong kernel (" + s.tile.str() + ") that is not persistent");
    return k;
  }
  k.smem_bytes = cg::smem_plan(plan, tile, options.packed16).total();
  return k;
}

}  // namespace gamut::cuda
