// The generated kernel's one argument: an array of 64-bit words (pointers, sizes, strides,
// flags, parameter values as the bits of their compute type), described once here. The code
// generator renders it as `struct Args` with one named, commented field per word (the kernel
// reads `a.row_end`, `a.P_ptr` (names.h), ...); the launcher (engine/) writes the words by position.
// No CUDA headers: built with and without the CUDA backend.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "core/types.h"

namespace gamut {
struct Plan;
}

namespace gamut::cuda {

struct ArgLayout {
  // The Instance's ranges and batch count come first, in every kernel.
  static constexpr int kRowBegin = 0, kRowEnd = 1, kColBegin = 2, kColEnd = 3;
  static constexpr int kRedBegin = 4, kRedEnd = 5, kBatch = 6;
  // One word of the argument: its field name in `struct Args` and what it holds.
  struct Slot {
    std::string name;
    std::string comment;
    int words = 1;  // > 1: the first of a 64-byte aligned array (a tensor map)
  };
  struct AccessSlots {
    int ptr = -1;      // the operand's device pointer
    int ld = -1;       // elements between rows (2-d patterns)
    int bstride = -1;  // elements between batch instances
    int vec = -1;      // 1: chunks of 4 along the contiguous dimension are aligned (ld, begin, bstride)
  };
  struct ParamSlot {
    int param;
    CType type;  // the parameter converted to this type (convert_scalar)
    int slot;
  };
  struct OutputSlots {
    int ptr = -1;
    std::vector<int> stride;  // per position of output_index(plan, d), elements
    int vec = -1;             // project runs along j may use vector stores
    int elems = -1;           // elements of the (padded) output array
    std::vector<int> extent;  // per position: the extent of a computed index, else -1
    int misses = -1;          // computed indices: gm::KeyMisses per computed position, in order
  };
  struct ListSlots {
    int counter = -1;            // u64 rows that reached the emit (may exceed capacity)
    int capacity = -1;           // rows the buffers hold
    std::vector<int> cols;       // per column: storage_type_of(column type) buffer
    int b = -1, i = -1, j = -1;  // int32 buffers
    int key = -1;                // top/bottom: storage_type_of(key type) buffer
    int threshold = -1;          // top/bottom: u32 rank per group, shared by the tiles (gm::TileSelect)
    int reservoir = -1;          // top/bottom: u32[groups][N] ranks of kept rows, or 0 (TileSelect::keep)
    // Distinct lists of vector lookups (seen_table_columns): the run's bitmap (0: the tile
    // hash), its words, and per column the box's first value and cells per step.
    int seen = -1, seen_words = -1;
    std::vector<int> seen_lo, seen_stride;
  };
  std::vector<AccessSlots> access;  // per Plan::accesses
  std::vector<ParamSlot> params;
  std::vector<OutputSlots> dense;  // per Plan::dense
  std::vector<ListSlots> lists;    // per Plan::lists
  // Key-grouped joins (codegen/join_groups.h): the tile table (4 int32 per block) and the
  // key-ordered position -> index maps of rows and columns.
  int join_tiles = -1, join_rows = -1, join_cols = -1;
  // TMA (CodegenOptions::tma): the row and column operands' tensor maps, 16 words each from a
  // 64-byte boundary (the first word names the field; the other 15 have no name).
  int tma_a = -1, tma_b = -1;
  std::vector<Slot> slots;  // every word, in order
  int count = 0;            // slots.size()

  ArgLayout();
  // Appends a word; returns its position.
  int add(const std::string& name, const std::string& comment);
  // Appends `words` words from a 64-byte boundary (padding words before it); returns the first.
  int add_aligned(const std::string& name, const std::string& comment, int words);
  // The kernel's read of word s: "a.NAME".
  std::string field(int s) const { return "a." + slots[size_t(s)].name; }
};

// Every word a kernel of the plan may read (the same for every tile). With `tma`, the two
// tensor maps last.
ArgLayout arg_layout(const Plan& plan, bool tma = false);

// `full` with only the words whose field names are in `read` (the ranges and the batch count
// always: the launcher writes them at their fixed positions), in the same order; the others'
// slots are -1 (the launcher skips them). generate_source and kernel_info give the layout of
// the fields the kernel reads.
ArgLayout read_layout(const ArgLayout& full, const std::set<std::string>& read);

}  // namespace gamut::cuda
