// The CPU engine's compiled form of a plan: a flat program over typed value slots, evaluated
// for a block of up to kLanes (i, j) pairs at once: one row i, a list of columns j.
//
// A slot holds one value per lane, or one value for all lanes when it is `uniform` (it does
// not depend on j: i, k, b, params, row/reduction loads). Each instruction is a tight loop
// over the lanes, chosen once at compile time for its types and uniformity, so the per-lane
// cost is that of compiled C++ rather than of walking the expression tree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "plan/list_rows.h"
#include "semantics/computed_index.h"
#include "semantics/store_ops.h"

namespace gamut::cpu {

constexpr int kLanes = 256;  // columns evaluated together

// Lane representation of each compute type; equal to the storage representation of
// storage_type_of(type), so outputs and list columns are plain copies.
template <CType T> struct Rep;
template <> struct Rep<CType::Bool> { using type = uint8_t; };
template <> struct Rep<CType::I32> { using type = int32_t; };
template <> struct Rep<CType::I64> { using type = int64_t; };
template <> struct Rep<CType::F32> { using type = float; };
template <> struct Rep<CType::F64> { using type = double; };
size_t lane_size(CType t);

// Element index of an array access: b*sb + i*si + k*sk + j*sj (0 strides where unused).
struct Strides {
  int64_t b = 0, i = 0, k = 0, j = 0;
};

struct Instr;
struct Ctx;
using OpFn = void (*)(Ctx&, const Instr&);

struct Instr {
  OpFn fn = nullptr;
  int dst = -1, a = -1, b = -1, c = -1;  // slots
  const std::byte* data = nullptr;       // loads: the input array
  Strides st;                            // loads
};

enum class SlotKind : uint8_t { Temp, Const, Row, Col, Red, Batch, Acc, Mask };

struct SlotInfo {
  CType type = CType::I32;
  bool uniform = true;
  SlotKind kind = SlotKind::Temp;
  Scalar value;  // Const
};

// Accumulator update: acc[l] = acc[l] OP v[l] on active lanes.
using UpdateFn = void (*)(void* acc, const void* v, bool v_uniform, const uint8_t* mask, int n);
// acc[l] += a[l] * b[l] on active lanes: the multiply-accumulate that most MMLTs reduce with,
// fused so the product never goes through memory (same rounding as the separate steps).
using MulAddFn = void (*)(void* acc, const void* a, bool a_uniform, const void* b, bool b_uniform,
                          const uint8_t* mask, int n);
// Output update: out[off[l]] = out[off[l]] OP v[l] on active lanes.
using StoreFn = void (*)(std::byte* out, const int64_t* off, bool off_uniform, const void* v,
                         bool v_uniform, const uint8_t* mask, int n);
// Reads an index-vector element as int64 (output lookups g[i]).
using IndexFn = int64_t (*)(const std::byte* data, int64_t elem);

// One position of a store target.
struct OutDim {
  int64_t stride = 0;          // elements, C order of the output
  SlotKind axis = SlotKind::Row;  // Row/Col/Batch: the axis value; Temp: a lookup or a computed index
  const std::byte* data = nullptr;  // lookup: the index vector
  IndexFn read = nullptr;
  Strides st;
  int key = -1;                // computed index: its I64 slot (then data is null)
  int key_slot = -1;           // computed index: its KeyMisses entry (semantics/computed_index.h)
  int64_t extent = 0;          // computed index: values outside [0, extent) store nothing
};

enum class StepKind : uint8_t { Op, Update, MulAdd, If, Store, Emit };

struct Step {
  StepKind kind = StepKind::Op;
  Instr op;                    // Op
  int target = -1;             // Update: accumulator slot; Store: dense output; Emit: list
  int value = -1;              // Update, Store: value slot (already of the target's type)
  int value2 = -1;             // MulAdd: the factors are `value` and `value2`
  UpdateFn update = nullptr;
  MulAddFn muladd = nullptr;
  int cond = -1, mask = -1;    // If: Bool condition slot, slot for the combined lane mask
  std::vector<Step> body;      // If
  std::vector<OutDim> dims;    // Store
  bool computed = false;       // Store: some position is a computed index
  StoreFn store = nullptr;
  std::vector<int> cols;       // Emit: one slot per column, of the column's type
  int key = -1;                // Emit: key slot (top/bottom)
  bool one_nan = false;        // Emit: a plain/distinct list, whose float columns hold one NaN
};

struct Module {
  std::vector<SlotInfo> slots;
  std::vector<Step> mask, inner, outer;  // `when` mask, reduce body, output statements
  int mask_value = -1;                   // Bool slot computed by `mask`
  std::vector<int> acc_slot;             // per accumulator
  int row = -1, col = -1, red = -1, batch = -1;  // axis slots
  std::vector<bool> dense_unique;        // per output: each (b,i,j) writes its own elements
  std::vector<CType> key_type;           // per list
  size_t key_slots = 0;                  // computed output indices (semantics/computed_index.h)
  // Slot s's storage is region[s] of `regions` (share_temp_storage); empty: one region per slot.
  std::vector<int> region;
  int regions = 0;
};

// Per-thread evaluation state.
struct Ctx {
  const Module* mod;
  int n = 0;                           // lanes in the current block
  std::vector<void*> ptr;              // per slot: where its lanes are now
  std::vector<void*> buf;              // per slot: its own storage
  const uint8_t* mask = nullptr;       // active lanes; null: all
  int32_t b = 0, i = 0, k = 0;
  const int32_t* jv = nullptr;         // j of each lane, ascending
  bool contiguous = false;             // jv[l] == j0 + l
  int32_t j0 = 0;
  std::vector<int64_t> off;            // store offsets scratch
  std::vector<uint8_t> keep;           // store mask scratch: lanes whose computed indices are in range
  std::vector<KeyMisses> misses;       // per key slot: values out of range (computed_index.h)
  std::vector<int> active;             // emit scratch: active lanes
  std::vector<std::byte*> out;         // per dense output: where stores go
  std::vector<ListCandidates>* lists = nullptr;
  bool transposed = false;             // the module runs the query's j as its rows (engine.cpp)
  std::vector<double> arena;           // slot storage

  explicit Ctx(const Module& m);
  void set_batch(int32_t v);
  void set_row(int32_t v);
  void set_red(int32_t v);
  void set_lanes(const int32_t* js, int count, bool contig);
};

Module compile_module(const Instance& inst);
// Temporary slots never live at once share storage (slot_storage.cpp).
void share_temp_storage(Module& M);

// Finishing steps (cpu/finish.cpp): what each Plan::output_reads entry of one step reads.
struct FinishRead {
  const std::byte* data = nullptr;  // the output's elements (unused for a sum)
  DType dtype = DType::F32;
  Strides st;                       // per element of the step: b and i its leading indices, j its last
  Scalar sum;                       // sum(OUT), in the read's type
};
// The program of one finishing step's value over a block of its elements (one b, one i, lanes
// of j): Module::outer computes it into the slot *value, of the step's type.
Module compile_finish(const Instance& inst, const FinishStep& step, const std::vector<FinishRead>& reads, int* value);
// Strides of Plan::accesses[access] over its bound array (checks the rank).
Strides access_strides(const Instance& inst, int access);
[[noreturn]] void internal_error(const std::string& what);
void run_steps(Ctx& c, const std::vector<Step>& steps);

// Kernels (ops.cpp). Each returns the instantiation for the given types and uniformity.
enum class Kern : uint8_t {
  Add, Sub, Mul, Div, Mod, Shl, Shr, BitAnd, BitOr, BitXor,
  Lt, Le, Gt, Ge, Eq, Ne, LogAnd, LogOr, Min, Max,
  AddInfMax, AddInfMin,   // the `+` of an integer tropical step (InfSum); integers only
  Pow                     // last (the dispatch counts up to it)
};
enum class UKern : uint8_t { Neg, Not, BitNot, Abs, Sqrt, Exp, Log, Floor, Ceil, Tanh };
OpFn binary_fn(Kern k, CType t, bool ua, bool ub);   // operands of type t
OpFn unary_fn(UKern k, CType t, bool ua);            // Not: t is Bool
OpFn cast_fn(CType from, CType to, bool ua);
OpFn select_fn(CType t, bool uc, bool ua, bool ub);  // cond slot is Bool
OpFn load_fn(DType d, bool uniform);
IndexFn index_fn(DType d);
UpdateFn update_fn(UpdateOp op, CType t);
MulAddFn muladd_fn(CType t);
StoreFn store_fn(StoreOp op, CType t);

}  // namespace gamut::cpu
