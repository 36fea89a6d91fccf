// Constants the host and the device code share: the host's code generator and launcher include
// this header ("cuda/device/core/gamut_constants.cuh"), generated kernels and the device headers
// get it embedded. Plain C++: no CUDA extensions outside GM_HOST_DEVICE.
#pragma once

#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
#define GM_HOST_DEVICE __host__ __device__
#else
#define GM_HOST_DEVICE
#endif

namespace gm {

// ---- the mainloop --------------------------------------------------------------------------
// Shared buffers per staged operand: slice t + 2 is fetched while slice t is computed
// (gm::mainloop, written for exactly three).
constexpr int kStages = 3;
// Elements per global load chunk along an operand's contiguous dimension (gm::TileLoader): one
// 16/8/4-byte access when aligned. Matrix rows are padded to a multiple of it on the device.
constexpr int kChunk = 4;

// ---- aggregates ----------------------------------------------------------------------------
// Shared hash table slots per pre-reduced aggregate output (gm::TableSink): at most this many,
// fewer when the plan has so many such outputs that their tables would pass kTableBudget bytes.
constexpr int kTableSlots = 512;
constexpr unsigned kTableBudget = 32 * 1024;
// The aggregate operators (gamut::StoreOp on the host has the same numbering).
enum StoreOpCode : int { kAssign = 0, kAdd = 1, kMax = 2, kMin = 3, kOr = 4, kAnd = 5 };

// ---- lists ---------------------------------------------------------------------------------
// A list's counter: word 0 counts the rows that reached the emit, word 1 holds N (top/bottom).
constexpr int kListCounterWords = 2;
// Per-tile pre-deduplication of distinct lists (gm::TileDistinct): table slots, at most this
// many, fewer for small tiles or wide rows; a list whose table does not fit kDistinctBudget
// bytes even at kDistinctMinSlots appends its rows as a plain list does.
constexpr int kDistinctSlots = 1024;
constexpr int kDistinctMinSlots = 64;
constexpr unsigned kDistinctBudget = 32 * 1024;
// Candidates a thread stages per sweep of gm::TileDistinct (each offered in a round of its
// own), where they fit the budget next to the table; else one.
constexpr int kDistinctCandidates = 4;
// Distinct lists whose columns are integer lookups of row / column vectors (g[i], h[j]): where
// the host finds the columns' values in a box of at most kSeenWords * 32 cells, the tiles mark
// the cells their pairs reach (gm::SeenCells) instead of de-duplicating rows, and the set cells
// are the list (outputs/list/finish/seen.cu). At most kSeenColumns such columns.
constexpr int kSeenWords = 1024;
constexpr int kSeenColumns = 4;
// Groups of a top/bottom list (gm::TileSelect's PER): the whole list, each row (per i), each
// column (per j).
enum ListGroup : int { kGroupAll = 0, kGroupRow = 1, kGroupCol = 2 };
// Reservoir slots per top/bottom group (gm::TileSelect::keep / refresh): 32 for N <= 16, else N,
// at most 2^30 (N comes from the user: int(N) wrapped to 0 or negative for N = 2^62, 2^63 - 1).
// The host gives reservoirs only where they are small, so a clamped count never indexes one.
GM_HOST_DEVICE constexpr int reservoir_slots(long long limit) {
  return limit <= 16 ? 32 : limit >= (1LL << 30) ? (1 << 30) : int(limit);
}

// ---- stage kernels -------------------------------------------------------------------------
// Threads per block of the stage kernels (segment sum, bit pack, top/bottom selection).
constexpr int kStageThreads = 256;
// Rows x columns a segment sum or bit pack block stages in shared memory per step.
constexpr int kStageTile = 32;
// The one-block selection of a small global list (gamut_select_small.cuh): its threads, the
// candidates whose ranks it holds in shared memory (4 bytes each), its sort entries (20 bytes
// each), and the status that sends the host back to the multi-launch path.
constexpr unsigned kSelSmallThreads = 1024;
constexpr unsigned kSelSmallCandidates = 32768;
constexpr unsigned kSelSmallCap = 4096;
constexpr unsigned kSelSmallSmem = kSelSmallCandidates * 4u + kSelSmallCap * 20u;
constexpr unsigned long long kSelSmallOverflow = ~0ull;

}  // namespace gm
