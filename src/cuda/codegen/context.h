// The state one kernel's generation shares between its parts: the plan and tile, the argument
// layout and shared-memory plan, the renderers, the source being written, the tile coordinates
// (plain tiles or a key-grouped join's tile table) and the accumulator map the mainloop hands
// to the output operators. kernel.cpp composes the parts: the mainloop (mainloop.h), the `when`
// passes, and the output operators (outputs/output_operator.h).
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cuda/codegen/accumulator_map.h"
#include "cuda/codegen/internal.h"

namespace gamut::cuda::cg {

// Which tile a block runs and how its positions become (i, j): plain tiles of the (i, j)
// ranges, or the tiles of a key-grouped join (codegen/join_groups.h), whose positions are
// key-ordered and mapped to indices through tables. A strategy, chosen once per kernel.
class TileCoordinates {
 public:
  virtual ~TileCoordinates() = default;
  // The kernel's first lines: the ranges, b, tile_m, tile_n (the grid's block -> tile).
  virtual void prologue(Code& c) const = 0;
  // After the mainloop: b, tile_m, tile_n again rather than held through it (may be nothing),
  // from the linear (batch instance, tile) index `block` (the block's, or a persistent block's
  // current tile).
  virtual void refresh(Code& c, const std::string& block = "gm::fresh_ctaid()") const = 0;
  // The blocks of one batch instance (an expression of tiles_m, tiles_n).
  virtual std::string blocks_per_instance() const = 0;
  // Row / column index at tile position `pos` (an expression); -1 where a position has none.
  virtual std::string row_at(const std::string& pos) const = 0;
  virtual std::string col_at(const std::string& pos) const = 0;
  // Whether the pair (i, j) exists in the range, and whether index v (of row_at / col_at) does.
  virtual std::string in_range() const = 0;
  virtual std::string row_valid(const std::string& v) const = 0;
  virtual std::string col_valid(const std::string& v) const = 0;
  // The first index and the end of the instance's row (column) range.
  virtual std::string range_first(bool row) const = 0;
  virtual std::string range_end(bool row) const = 0;
  // True when positions are the indices themselves (in order): runs of consecutive j and the
  // direct-table loop rely on it. False for a grouped join.
  virtual bool positions_are_indices() const = 0;
  // True when the `when` keys hold for every pair the tiles reach (a grouped join's tiles are
  // pairs of equal keys).
  virtual bool keys_matched() const = 0;
};

struct KernelContext {
  const Plan& P;
  const TileConfig& T;
  Names N;  // the kernel's identifiers from the query (names.h)
  ArgLayout A;
  SmemPlan S;
  Code c;
  Renderer inner_r, outer_r;
  std::unique_ptr<TileCoordinates> coords;
  AccumulatorMap map;  // set by the mainloop
  // The kernel's dynamic shared memory (kernel_info), set before the output operators are made:
  // an operator may use what of it the mainloop frees and the tables leave (TopBottomRows' ranks).
  size_t smem_bytes = 0;
  // Persistent tiles (KernelInfo::persistent): the output operators' space starts at
  // out_smem_offset (after the stage ring), named `out_smem` in the kernel; else it is the
  // mainloop's space (offset 0, `smem`).
  bool persistent = false;
  bool bands = false;  // KernelInfo::bands: persistent blocks run contiguous tiles band by band
  // KernelInfo::resident_top: persistent blocks run contiguous tiles of a row (column) band and
  // keep the top / bottom list's thresholds at out_smem + resident_top_offset.
  bool resident_top = false;
  size_t resident_top_offset = 0;
  // Resident thresholds keep the tile's accumulators in shared memory after their state, at
  // out_smem + resident_accs_offset(): (map rows * cols, Shape::THREADS), pair e of thread t at
  // e * THREADS + t. With epilogue warpgroups (set by the tensor mainloop) the products put them
  // there and the outputs read them there (TcTile::epilogue).
  size_t resident_accs_offset() const;
  // Pair e's element of that copy through the pointer `accs` (e as an expression, parenthesised
  // where it is not a name), for the calling thread.
  static std::string resident_acc_at(const std::string& accs, const std::string& e) {
    return accs + "[" + e + " * Shape::THREADS + int(threadIdx.x)]";
  }
  bool epilogue_warpgroups = false;
  // Set by an output operator whose warps synchronize among themselves only (TopBottomRows with
  // gm::ResidentTop::WARP, the kernel's one output, run by the consumers): a persistent tile loop
  // then needs no tile barrier between tiles.
  bool warp_outputs = false;
  // Ping-pong (set by the tensor mainloop, TcTile::groups): consumer groups running tiles of
  // their own; the kernel defines GM_TILE_GROUPS before its includes.
  int tile_groups = 1;
  // Either: the consumers' tile loop runs tiles [tile_lo, tile_hi).
  bool contiguous_tiles() const { return bands || resident_top; }
  size_t out_smem_offset = 0;
  std::string out_smem() const { return persistent ? "out_smem" : "smem"; }

  // The kernel's `struct Smem` (rendered before it by kernel.cpp): one named byte offset per
  // region of the dynamic shared memory that the parts address, in the order they named them.
  struct SmemField {
    std::string name;
    size_t offset;
    std::string comment;
  };
  std::vector<SmemField> smem_fields;
  // The address of a mainloop region at byte `offset` of smem, `smem + Smem::NAME`; NAME
  // recorded once (the same name at another offset is an internal error).
  std::string smem_at(const std::string& name, size_t offset, const std::string& comment);
  // The same for an output operator's region at byte `offset` of out_smem().
  std::string out_smem_at(const std::string& name, size_t offset, const std::string& comment);
  // The struct, or "" where no part named a region.
  std::string smem_struct() const;

  // packed16: the SIMT mainloop steps on packed 16-bit lanes (its shared-memory plan differs).
  // args: the argument layout the kernel declares (kernel_layout).
  KernelContext(const Plan& plan, const TileConfig& tile, ArgLayout args, bool packed16 = false);

  // The kernel's read of argument word s (kernel_args.h): `a.NAME`.
  std::string arg(int s) const { return A.field(s); }
  std::string acc_type(int n) const { return ctype_cpp(P.accs[size_t(n)].type); }
  const std::string& acc(int n) const { return N.acc(n); }
  std::string out_type(int d) const { return ctype_cpp(P.dense[size_t(d)].type); }
  // Declarations of the plan's locals of the inner op (inner) or of the output statements.
  void locals(bool inner, Code& out) const;
  // Each `let` of the output statements rendered once, as a function `NAME_of` of the pair's
  // values it reads (i, j, b, accumulators, other lets), which every rendering of the
  // statements then calls (the pair loops, a list's pass 2, top / bottom keys): after the
  // kernel's pointers and parameters, which it reads in place. A local assigned by two lets
  // keeps its expression in place.
  void let_functions(Code& c);
  // Linear element offset of dense output d at (b, i, jname); its computed positions take the
  // names in `keys`, in order (outputs/dense/codegen/aggregate.cpp).
  std::string out_offset(int d, const std::string& jname, const std::vector<std::string>& keys = {}) const;
  // Accesses read outside the mainloop: `when`, output statements, list keys, output indices.
  std::set<int> outer_accesses() const;
  // Whether the `when` pass bits exist (join keys a grouped join matches need none).
  bool has_pass() const;
  std::string when_condition() const;
  // The pair loops' test of pair (m, n) at (i, j): in the ranges (with `bounds`) and its pass bit
  // set (where there are pass bits); "" when nothing is to be tested.
  std::string pair_test(bool bounds) const;
  // A pair loop rendered twice: `pairs(false)` for a tile wholly inside the ranges (every tile
  // but the last row and column of tiles: no bounds tests, whose branches around each pair kept
  // ptxas from interleaving pairs), `pairs(true)` for the others.
  void inside_and_edge(Code& c, const std::function<void(bool bounds)>& pairs) const;
  // Project outputs stored in vector runs along j.
  bool runs_along_j(int d) const;
  // Where top/bottom lists keep the tile's BM x BN ranks (u32): after the operators' tables, in
  // space the kernel has anyway (smem_bytes); -1 where it has not (the ranks are recomputed).
  // An offset into out_smem().
  long tile_ranks_offset() const;
};

}  // namespace gamut::cuda::cg
