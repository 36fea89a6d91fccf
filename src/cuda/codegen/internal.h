// Pieces shared by the code generator's files: classification of accesses and outputs, the
// shared-memory plan, the expression renderer and a small indenting text builder.
#pragma once
#include <cstddef>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cuda/codegen/codegen.h"
#include "cuda/codegen/element_types.h"
#include "cuda/codegen/names.h"
#include "cuda/device/core/gamut_constants.cuh"

namespace gamut::cuda::cg {

// The constants the host shares with the device code (table slots, chunk size, stages, ...).
using gm::kChunk;
using gm::kDistinctBudget;
using gm::kDistinctCandidates;
using gm::kDistinctMinSlots;
using gm::kDistinctSlots;
using gm::kStages;
using gm::kTableBudget;
using gm::kTableSlots;

[[noreturn]] void unsupported(const std::string& what);

// Concatenation by appending ("x" + std::string temporaries trip a GCC 12 -Wrestrict false
// positive at -O3).
template <class... A>
std::string cat(const A&... parts) {
  std::string s;
  (s.append(parts), ...);
  return s;
}

inline size_t round16(size_t n) { return (n + 15) / 16 * 16; }

// How the mainloop holds an operand the inner op reads.
enum class InnerKind { RowTile, ColTile, RowVec, ColVec, RedVec, None };
InnerKind inner_kind(Pattern p);
bool k_contiguous(Pattern p);  // X[r,k] / X[c,k]: k is the contiguous dimension
bool uses_cp_async(DType t);   // stored as its compute type: copied by cp.async
// How tile operand `access` goes global -> shared: through registers (gm::TileLoader), by
// cp.async as it is (gm::AsyncTileLoader), or by cp.async into a staging ring of raw 1- and
// 2-byte slices widened in shared memory (gm::StagedTileLoader). `packed16`: the kernel steps
// on packed 16-bit lanes (CodegenOptions::packed16), whose p-contiguous i16 column operand
// is copied as it is.
enum class TileCopy { Registers, Async, Staged };
TileCopy tile_copy(const Plan& plan, int access, bool packed16 = false);
CType access_ctype(const Plan& plan, int access);
DType access_dtype(const Plan& plan, int access);

// Every expression reachable from `id`, and from a statement list (conditions, values,
// columns; list keys are not part of statements).
void walk_expr(const Plan& plan, ExprId id, const std::function<void(const Expr&)>& fn);
void walk_stmts(const Plan& plan, const std::vector<Stmt>& stmts, const std::function<void(const Expr&)>& fn);
std::vector<int> inner_accesses(const Plan& plan);  // read by the reduce body
std::set<std::pair<int, CType>> params_in(const Plan& plan, bool inner);

// kernel_info without its argument layout (args: every word, arg_layout), as the generator
// itself takes it.
KernelInfo kernel_form(const Plan& plan, const TileConfig& tile, const CodegenOptions& options);
// The argument words the kernel reads (read_layout of the names `a.NAME` in its source), and,
// in tensor-core kernels, the words of the operands of the sum of products, which the launcher
// reads back to re-pitch them and to encode their tensor maps.
ArgLayout kernel_layout(const Plan& plan, const TileConfig& tile, const CodegenOptions& options);

// Aggregate outputs whose every (b, i, j) has its own element need no pre-reduction.
bool output_uses_table(const Plan& plan, int d);

struct SmemPlan {
  std::vector<long> inner_off;  // per access: byte offset of its kStages buffers, -1: none
  std::vector<size_t> inner_bytes;
  std::vector<long> stage_off;  // per access: byte offset of its kStages staging slices, -1: none
  std::vector<size_t> stage_bytes;
  size_t mainloop = 0;
  std::vector<long> table_off;  // per dense output: byte offset of its table, -1: none
  int table_slots = kTableSlots;
  // Distinct lists, per list: TileDistinct's slots and row words (0 slots: no pre-dedup). The
  // lists take turns in one region at distinct_off, after the tables.
  std::vector<int> distinct_slots, distinct_words, distinct_cands;
  long distinct_off = -1;
  size_t distinct_bytes = 0;  // the tables' region; the seen tables follow it
  // Per list: the byte offset of its seen table (gm::SeenCells) in the same region, -1: none.
  // Seen tables live through the pair loop together, so each list has its own.
  std::vector<long> seen_off;
  size_t epilogue = 0;  // (the epilogue reuses the mainloop's space)
  size_t total() const { return mainloop > epilogue ? mainloop : epilogue; }
};
SmemPlan smem_plan(const Plan& plan, const TileConfig& tile, bool packed16 = false);
// Top/bottom lists' BM x BN u32 ranks of a tile (TopBottomRows) in the outputs' shared memory,
// after the operators' tables: their offset there and their bytes (KernelContext::
// tile_ranks_offset places them; kernel_info reserves them in persistent kernels).
inline size_t tile_ranks_offset(const SmemPlan& s) { return round16(s.epilogue); }
inline size_t tile_ranks_bytes(const TileConfig& t) { return size_t(t.bm) * size_t(t.bn) * 4; }
// gm::ResidentTop<Shape, PER>::Smem: per group of the band 32 kept ranks, 32 candidate slots,
// a count and a threshold (u32 each); groups are the tile's rows (per i) or columns (per j).
// The tile's keys (tile_ranks_bytes) follow it.
inline size_t resident_top_bytes(const TileConfig& t, PerGroup per) {
  return size_t(per == PerGroup::Col ? t.bn : t.bm) * (32 + 32 + 2) * 4;
}

// Indented source text.
class Code {
 public:
  Code& line(const std::string& s);
  Code& open(const std::string& s);  // s + " {", then indent
  Code& close(const std::string& tail = "");
  Code& mid(const std::string& s);  // "} " + s + " {" at the enclosing depth (else)
  std::string str() const { return out_; }
  // The text's length now, and the text cut back to such a length (a comment whose statement
  // rendered nothing).
  size_t mark() const { return out_.size(); }
  void rewind(size_t to) { out_.resize(to); }

 private:
  std::string out_;
  int depth_ = 0;
};

// Renders plan expressions as device C++ of the exact compute type (docs/semantics.md), with
// the names of the naming policy (names.h). Inner context: loads are the inner op's arguments,
// named as the operand (`P`). Outer context (when, output statements): loads read global memory
// through the operand's pointer `P` with strides `P_ld`, `P_bs`, at the names b, i, j.
class Renderer {
 public:
  enum class Ctx { Inner, Outer };
  Renderer(const Plan& plan, const Names& names, Ctx ctx) : P(plan), N(names), ctx_(ctx) {}
  std::string expr(ExprId id) const;
  std::string expr_as(ExprId id, CType to) const;
  std::string load(int access) const;  // widened value of the access
  // Statements: Let and If here; everything else goes to `leaf`.
  void stmts(const std::vector<Stmt>& body, Code& out, const std::function<void(const Stmt&, Code&)>& leaf) const;
  static std::string convert(const std::string& e, CType from, CType to);
  static std::string literal(const Scalar& v, CType t);
  std::string param_name(int param, CType t) const { return N.param(param, t); }
  static std::string cond(const std::string& e, CType t);  // as a C++ condition
  // Statement s as a comment line: FILE:LINE (where the plan has its position) and its printed form.
  std::string echo(const Stmt& s) const;
  // Lets rendered as calls of functions defined once (KernelContext::let_functions): per local,
  // the call that computes its value; the others render their expression in place.
  void set_let_calls(std::map<int, std::string> calls) { let_calls_ = std::move(calls); }
  // An integer tropical step's sum of infinities (Expr::inf_sum) as the plain +: for code that
  // runs only where no operand is near the sum type's limits (the SIMT step's guarded path).
  void set_plain_sums(bool plain) { plain_sums_ = plain; }

 private:
  std::string call(const Expr& e) const;
  std::string binary(const Expr& e) const;
  const Plan& P;
  const Names& N;
  Ctx ctx_;
  std::map<int, std::string> let_calls_;
  bool plain_sums_ = false;
};

}  // namespace gamut::cuda::cg
