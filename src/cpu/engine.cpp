// The CPU engine driver: which (b, i, j) pairs run (the `when` join and mask), in what order
// (row tiles, j blocks of kLanes, k blocks), on which thread, and how results are combined.
//
// A tile is a block of pairs: a band of rows (a multiple of kTileRows, more where the rows are
// short, so that a tile's fixed costs stay small) times all columns, or, where there are too few
// row bands to give every thread several tiles, a block of columns (tile_grid). Tile t goes to
// thread t mod T. Each pair belongs to one tile, so projections write straight into the result;
// aggregates that several pairs can hit go to a per-thread partial that is merged in thread
// order at the end, which makes every result a function of the thread count only (integer
// results not even of that). A float `+=` aggregate of few cells first sums into a chunk
// partial, added to the thread's every kChunkPairs pairs or more: a sum over many pairs is then
// two short sums, not one long one (one long f32 sum of 5e5 pairs was 1.1e-3 off; bench/NOTES.md).
// With one thread, and not transposed (below), the pairs run in the order they always did (rows
// in bands of kTileRows, no column blocks); an `=` store that several pairs can hit (whose last
// writer is the last in that order) always runs so.
//
// The engine evaluates a block of up to kLanes columns of one row at once (program.h). With few
// columns and many rows (N = 1) that is one lane at a time: such a run goes transposed, the
// query's j as the engine's rows and its i as the lanes (transposed_plan), and its list rows are
// recorded as the query's (i, j), so that ordering and pruning are the query's.
//
// A run stops early, with Cancelled, when its cancel flag is set: the flag is read before each
// tile and each block of columns and of k values, so a run stops within a block's work.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>

#include "core/error.h"
#include "core/sizes.h"
#include "core/threads.h"
#include "cpu/engine.h"
#include "semantics/join_key.h"
#include "semantics/list_order.h"
#include "cpu/program.h"

namespace gamut {
namespace cpu {
namespace {

// Pairs a float aggregate's chunk partial takes before it is added to the thread's (at least
// kChunkCellsFactor per cell, so that adding chunks costs at most a small part of the pairs' work).
constexpr int64_t kChunkPairs = 1024, kChunkCellsFactor = 4, kChunkMaxCells = 4096;
constexpr int64_t kTileRows = 2;     // rows sharing one pass over a block of the column operand
constexpr int64_t kRedBlock = 32;    // k values per pass, so that block stays in cache
constexpr int64_t kPruneMin = 1 << 14;
// Tiles: at least this much work (pairs times max(1, K)) each where the problem has it, and
// about kTilesPerThread of them per thread (an even share with the static assignment).
constexpr int64_t kMinTileWork = 1 << 14;
constexpr int64_t kTilesPerThread = 8;

// How the pairs of a run are cut into tiles for `threads` threads.
struct TileGrid {
  int64_t rows = kTileRows;  // rows per tile, a multiple of kTileRows
  int64_t cols = 0;          // columns per tile: all of them, or a multiple of kLanes
  int64_t row_tiles = 0, col_tiles = 1;  // per batch entry
  int64_t batch = 1;
  int64_t count() const { return batch * row_tiles * col_tiles; }
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows per tile from the work of a band of kTileRows rows; columns split (when `split_cols`:
// more than one thread and no `=` store that several pairs hit, whose order must stay) where the
// row tiles are too few for the threads. Both keep a tile at kMinTileWork or more where they can.
// `transposed`: for the transposed run of `inst` (its rows are inst's columns).
TileGrid tile_grid(const Instance& inst, bool transposed, int64_t threads, bool split_cols) {
  TileGrid g;
  const AxisRange& rows = transposed ? inst.col : inst.row;
  const AxisRange& cols = transposed ? inst.row : inst.col;
  const int64_t M = rows.size(), N = std::max<int64_t>(cols.size(), 1);
  const int64_t K = std::max<int64_t>(inst.red.size(), 1);
  g.batch = inst.batch;
  g.cols = N;
  if (M <= 0 || cols.size() <= 0 || inst.batch <= 0) {
    g.row_tiles = M <= 0 || cols.size() <= 0 ? 0 : ceil_div(M, kTileRows);
    return g;
  }
  const int64_t want = kTilesPerThread * std::max<int64_t>(threads, 1);
  const int64_t bands = ceil_div(M, kTileRows);
  const int64_t band_work = size_mul_saturated(size_mul_saturated(kTileRows, N), K);
  int64_t per = band_work >= kMinTileWork ? 1 : ceil_div(kMinTileWork, band_work);
  per = std::max<int64_t>(1, std::min(per, size_mul_saturated(bands, inst.batch) / want));
  g.rows = per * kTileRows;
  g.row_tiles = ceil_div(M, g.rows);
  const int64_t row_tiles = size_mul_saturated(g.row_tiles, inst.batch);
  if (split_cols && threads > 1 && row_tiles < want && N > kLanes) {
    const int64_t tile_work = size_mul_saturated(size_mul_saturated(std::min(g.rows, M), N), K);
    int64_t parts = std::min({ceil_div(want, row_tiles), std::max<int64_t>(1, tile_work / kMinTileWork),
                              ceil_div(N, kLanes)});
    g.cols = ceil_div(ceil_div(N, parts), kLanes) * kLanes;
    g.col_tiles = ceil_div(N, g.cols);
  }
  return g;
}

// Whether the run must keep one thread and the pairs' order: an `=` store that several pairs
// can hit has no defined merge.
bool ordered_alone(const Plan& P) {
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (dense_output_shared(P, d) && P.dense[d].op == StoreOp::Assign) return true;
  return false;
}

// Whether `inst` runs transposed: fewer columns than a fraction of a block of lanes, and several
// times as many rows; never where an `=` store keeps the pairs' order, nor for an equi-join
// (its index would be built over the many rows instead of the few columns).
constexpr int64_t kNarrow = kLanes / 8;

bool runs_transposed(const Instance& inst) {
  const int64_t M = inst.row.size(), N = inst.col.size();
  return N > 0 && N < kNarrow && M >= 4 * N && inst.plan->when.keys.empty() && !ordered_alone(*inst.plan);
}

Pattern transposed(Pattern p) {
  switch (p) {
    case Pattern::RowRed: return Pattern::ColRed;
    case Pattern::ColRed: return Pattern::RowRed;
    case Pattern::RedRow: return Pattern::RedCol;
    case Pattern::RedCol: return Pattern::RedRow;
    case Pattern::RowVec: return Pattern::ColVec;
    case Pattern::ColVec: return Pattern::RowVec;
    case Pattern::RowCol: return Pattern::ColRow;
    case Pattern::ColRow: return Pattern::RowCol;
    case Pattern::RedVec: return Pattern::RedVec;
  }
  return p;
}

AxisRole transposed(AxisRole r) {
  return r == AxisRole::Row ? AxisRole::Col : r == AxisRole::Col ? AxisRole::Row : r;
}

// The plan with the roles of i and j exchanged: accesses (A[i, k] reads as A[j, k] would), axis
// values, output indices and join keys. The lists keep their specs: their rows are recorded as
// the query's (i, j) (Ctx::transposed), and `per i` stays per the query's i.
Plan transposed_plan(const Plan& P) {
  Plan T = P;
  for (Axis& a : T.axes) a.role = transposed(a.role);
  for (Access& a : T.accesses) a.pattern = transposed(a.pattern);
  for (Expr& e : T.exprs)
    if (e.kind == ExprKind::Axis) e.index = int(transposed(AxisRole(e.index)));
  for (DenseOutput& d : T.dense)
    for (OutIndex& x : d.index)
      if (x.kind == OutIndex::Axis) x.axis = transposed(x.axis);
  for (JoinKey& k : T.when.keys) std::swap(k.row_access, k.col_access);
  return T;
}

using Key = std::vector<int64_t>;
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : k) h = (h ^ uint64_t(v)) * 1099511628211ull;
    return size_t(h);
  }
};

// One side of an equi-join key, compared in the common type of both sides.
struct KeySide {
  const NDArray* x = nullptr;
  Strides st;
  bool as_float = false;
  bool as_f32 = false;
  // false: NaN, which equals nothing
  bool value(int64_t e, int64_t& out) const {
    return join_key_value(*x, e, as_f32 ? CType::F32 : as_float ? CType::F64 : CType::I64, out);
  }
};

// `when` keys: per batch, the ascending j list of every column-side key value.
struct JoinIndex {
  std::vector<KeySide> rows, cols;
  std::vector<std::unordered_map<Key, std::vector<int32_t>, KeyHash>> by_batch;

  JoinIndex(const Instance& inst) {
    const Plan& P = *inst.plan;
    for (const JoinKey& k : P.when.keys) {
      KeySide r, c;
      r.x = inst.inputs[size_t(P.accesses[size_t(k.row_access)].operand)];
      c.x = inst.inputs[size_t(P.accesses[size_t(k.col_access)].operand)];
      r.st = access_strides(inst, k.row_access);
      c.st = access_strides(inst, k.col_access);
      CType t = std::max(compute_type_of(r.x->dtype), compute_type_of(c.x->dtype));
      r.as_float = c.as_float = is_float(t);
      r.as_f32 = c.as_f32 = t == CType::F32;
      rows.push_back(r);
      cols.push_back(c);
    }
    by_batch.resize(size_t(inst.batch));
    Key key(cols.size());
    for (int64_t b = 0; b < inst.batch; ++b)
      for (int64_t j = inst.col.begin; j < inst.col.end; ++j) {
        bool ok = true;
        for (size_t n = 0; n < cols.size() && ok; ++n)
          ok = cols[n].value(b * cols[n].st.b + j * cols[n].st.j, key[n]);
        if (ok) by_batch[size_t(b)][key].push_back(int32_t(j));
      }
  }

  const std::vector<int32_t>* match(int64_t b, int64_t i) const {
    Key key(rows.size());
    for (size_t n = 0; n < rows.size(); ++n)
      if (!rows[n].value(b * rows[n].st.b + i * rows[n].st.i, key[n])) return nullptr;
    auto it = by_batch[size_t(b)].find(key);
    return it == by_batch[size_t(b)].end() ? nullptr : &it->second;
  }
};

// The columns one row runs for: a range, or an explicit ascending list.
struct RowLanes {
  bool range = true;
  int32_t begin = 0, end = 0;
  std::vector<int32_t> js;
  int64_t count() const { return range ? end - begin : int64_t(js.size()); }
};

struct Worker {
  const Instance& inst;
  const Plan& P;
  const Module& m;
  const JoinIndex* join;
  Ctx c;
  std::vector<NDArray> partial;            // per dense output; empty when written in place
  std::vector<NDArray> chunk;              // per dense output: its chunk partial, or empty
  std::vector<NDArray*> chunk_into;        // where a chunk partial is added (partial or the result)
  int64_t chunk_pairs = 0, chunk_every = 0; // pairs in the chunk partials; when to add them
  std::vector<ListCandidates> lists;
  std::vector<int64_t> prune_at;
  std::vector<RowLanes> rows;
  std::vector<std::vector<double>> accs;   // per tile row: kLanes lanes per accumulator
  std::vector<int32_t> jbuf, cand;
  std::vector<Scalar> acc_init;            // per accumulator: its initial value in its type
  ListMemoryGuard* guard = nullptr;
  const std::atomic<bool>* stop = nullptr; // the run's cancel flag
  int64_t reported = 0;                    // list bytes last reported to the guard

  Worker(const Instance& in, const Module& mod, const JoinIndex* j)
      : inst(in), P(*in.plan), m(mod), join(j), c(mod), rows(size_t(kTileRows)),
        accs(size_t(kTileRows), std::vector<double>(mod.acc_slot.size() * size_t(kLanes))),
        jbuf(size_t(kLanes)) {
    for (size_t l = 0; l < P.lists.size(); ++l) lists.push_back(empty_candidates(P.lists[l], m.key_type[l]));
    for (const Accumulator& a : P.accs) acc_init.push_back(convert_scalar(a.init, a.type));
    prune_at.assign(P.lists.size(), kPruneMin);
    c.lists = &lists;
  }

  // Point the context at row r of the tile, j block `blk`.
  void enter(int32_t i, const RowLanes& rl, int64_t blk, std::vector<double>& acc) {
    c.set_row(i);
    int64_t first = blk * kLanes;
    int n = int(std::min<int64_t>(kLanes, rl.count() - first));
    if (rl.range) {
      for (int l = 0; l < n; ++l) jbuf[size_t(l)] = int32_t(rl.begin + first + l);
      c.set_lanes(jbuf.data(), n, true);
    } else {
      c.set_lanes(rl.js.data() + first, n, false);
    }
    for (size_t a = 0; a < m.acc_slot.size(); ++a) c.ptr[size_t(m.acc_slot[a])] = acc.data() + a * kLanes;
  }

  // Apply the `when` mask to candidate columns (in `rl`), keeping those where it holds.
  void apply_mask(int32_t i, RowLanes& rl) {
    cand = rl.range ? std::vector<int32_t>() : rl.js;
    if (rl.range)
      for (int32_t j = rl.begin; j < rl.end; ++j) cand.push_back(j);
    std::vector<int32_t> kept;
    c.set_row(i);
    for (size_t first = 0; first < cand.size(); first += kLanes) {
      int n = int(std::min<size_t>(kLanes, cand.size() - first));
      c.set_lanes(cand.data() + first, n, false);
      run_steps(c, m.mask);
      const uint8_t* v = static_cast<const uint8_t*>(c.ptr[size_t(m.mask_value)]);
      if (m.slots[size_t(m.mask_value)].uniform) {
        if (!v[0]) rl = RowLanes{true, 0, 0, {}};
        return;  // the same answer for every column of this row
      }
      for (int l = 0; l < n; ++l)
        if (v[l]) kept.push_back(cand[first + size_t(l)]);
    }
    rl.range = false;
    rl.js = std::move(kept);
  }

  // The columns of [j0, j1) row i runs for.
  void lanes_for_row(int32_t b, int32_t i, int64_t j0, int64_t j1, RowLanes& rl) {
    rl.range = true;
    rl.begin = int32_t(j0);
    rl.end = int32_t(j1);
    rl.js.clear();
    if (!P.when.keys.empty()) {
      rl.range = false;
      if (const std::vector<int32_t>* js = join->match(b, i))
        rl.js.assign(std::lower_bound(js->begin(), js->end(), int32_t(j0)),
                     std::lower_bound(js->begin(), js->end(), int32_t(j1)));
    }
    if (m.mask_value >= 0 && rl.count() > 0) apply_mask(i, rl);
  }

  // The pairs of rows [i0, i1) and columns [j0, j1) of batch entry b, in bands of kTileRows rows.
  void run_tile(int32_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    c.set_batch(b);
    for (int64_t r0 = i0; r0 < i1; r0 += kTileRows) run_band(b, r0, std::min(i1, r0 + kTileRows), j0, j1);
    prune_lists();
    report_lists();
  }

  // Rows sharing one pass over each block of the column operand.
  void run_band(int32_t b, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    int64_t R = i1 - i0, blocks = 0;
    for (int64_t r = 0; r < R; ++r) {
      lanes_for_row(b, int32_t(i0 + r), j0, j1, rows[size_t(r)]);
      blocks = std::max(blocks, (rows[size_t(r)].count() + kLanes - 1) / kLanes);
    }
    int64_t live[kTileRows];
    for (int64_t blk = 0; blk < blocks; ++blk) {
      throw_if_cancelled(stop);
      int nlive = 0;
      for (int64_t r = 0; r < R; ++r)
        if (rows[size_t(r)].count() > blk * kLanes) live[nlive++] = r;
      for (int n = 0; n < nlive; ++n) {
        const int64_t r = live[n];
        enter(int32_t(i0 + r), rows[size_t(r)], blk, accs[size_t(r)]);
        for (size_t a = 0; a < m.acc_slot.size(); ++a) init_acc(a);
      }
      if (!m.inner.empty()) {
        for (int64_t k0 = inst.red.begin; k0 < inst.red.end; k0 += kRedBlock) {
          if (k0 != inst.red.begin) throw_if_cancelled(stop);
          int64_t k1 = std::min(inst.red.end, k0 + kRedBlock);
          for (int n = 0; n < nlive; ++n) {
            const int64_t r = live[n];
            enter(int32_t(i0 + r), rows[size_t(r)], blk, accs[size_t(r)]);
            for (int64_t k = k0; k < k1; ++k) {
              c.set_red(int32_t(k));
              run_steps(c, m.inner);
            }
          }
        }
      }
      for (int n = 0; n < nlive; ++n) {
        const int64_t r = live[n];
        enter(int32_t(i0 + r), rows[size_t(r)], blk, accs[size_t(r)]);
        run_steps(c, m.outer);
        chunk_pairs += c.n;
      }
      if (chunk_every > 0 && chunk_pairs >= chunk_every) add_chunks();
    }
  }

  // Use a chunk partial for dense output d (a float `+=` aggregate of few cells), added to `into`.
  void use_chunk(size_t d, NDArray* into) {
    chunk.resize(P.dense.size());
    chunk_into.resize(P.dense.size(), nullptr);
    chunk[d] = NDArray::zeros(into->dtype, into->shape);
    fill_identity(chunk[d], StoreOp::Add, P.dense[d].type);
    chunk_into[d] = into;
    c.out[d] = chunk[d].data.data();
    chunk_every = std::max({chunk_every, kChunkPairs, kChunkCellsFactor * into->size()});
  }

  // Add the chunk partials to their targets and start them again (after the last pair: all of it).
  void add_chunks() {
    for (size_t d = 0; d < chunk.size(); ++d) {
      if (!chunk_into[d]) continue;
      merge_partial(*chunk_into[d], chunk[d].data.data(), StoreOp::Add, P.dense[d].type);
      fill_identity(chunk[d], StoreOp::Add, P.dense[d].type);
    }
    chunk_pairs = 0;
  }

  // Host memory the lists hold (vector capacities), reported when it changed by a step.
  void report_lists() {
    if (!guard || lists.empty()) return;
    auto held = [](const ListCandidates& c) {
      int64_t n = int64_t(c.key.data.capacity() + (c.b.capacity() + c.i.capacity() + c.j.capacity()) * sizeof(int32_t));
      for (const Column& col : c.table.columns) n += int64_t(col.data.capacity());
      return n;
    };
    int64_t bytes = 0, largest = -1;
    size_t which = 0;
    for (size_t l = 0; l < lists.size(); ++l) {
      const int64_t b = held(lists[l]);
      bytes += b;
      if (b > largest) largest = b, which = l;
    }
    if (bytes - reported < guard->report_step() && reported - bytes < guard->report_step()) return;
    guard->report(reported, bytes, P.lists[which].name);
    reported = bytes;
  }

  // The block's lanes (c.n) of accumulator a at its initial value. (Filling all kLanes lanes
  // with a switch per lane was most of the time of a run with one column.)
  void init_acc(size_t a) {
    const Accumulator& acc = P.accs[a];
    void* p = c.ptr[size_t(m.acc_slot[a])];
    const Scalar& v = acc_init[a];
    const int n = c.n;
    switch (acc.type) {
      case CType::Bool: std::fill_n(static_cast<uint8_t*>(p), n, uint8_t(v.i != 0)); break;
      case CType::I32: std::fill_n(static_cast<int32_t*>(p), n, int32_t(v.i)); break;
      case CType::I64: std::fill_n(static_cast<int64_t*>(p), n, v.i); break;
      case CType::F32: std::fill_n(static_cast<float*>(p), n, float(v.f)); break;
      default: std::fill_n(static_cast<double*>(p), n, v.f); break;
    }
  }

  // Top/bottom lists keep only what can still be in the result, so memory stays bounded.
  void prune_lists() {
    for (size_t l = 0; l < lists.size(); ++l) {
      if (lists[l].table.rows <= prune_at[l]) continue;
      prune_candidates(P.lists[l], inst.list_limits[l], lists[l]);
      prune_at[l] = std::max(kPruneMin, 2 * lists[l].table.rows);
    }
  }
};

}  // namespace
}  // namespace cpu

bool cpu_runs_transposed(const Instance& inst) { return inst.plan && cpu::runs_transposed(inst); }

int cpu_thread_count(const Instance& inst, int threads, int64_t host_available) {
  using namespace cpu;
  const Plan& P = *inst.plan;
  int64_t T = threads > 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  // A `=` store that several pairs could hit has no defined merge: run it in order, alone.
  if (ordered_alone(P)) T = 1;
  T = std::max<int64_t>(1, std::min(T, tile_grid(inst, runs_transposed(inst), T, true).count()));
  if (T == 1 || cpu_host_memory(inst, int(T)).total() <= host_available) return int(T);
  // need(T) = base + T * per_thread copies.
  const int64_t base = cpu_host_memory(inst, 1).total(), per_thread = (cpu_host_memory(inst, 2).total() - base) / 2;
  if (per_thread <= 0 || base >= host_available) return 1;
  return int(std::clamp<int64_t>((host_available - base) / per_thread, 1, T));
}

Results run_cpu(const Instance& query, int threads, ListMemoryGuard* lists_guard,
                const std::function<void(int64_t, int64_t)>& progress, const std::atomic<bool>* cancel) {
  using namespace cpu;
  if (!query.plan) internal_error("no plan");
  const bool swap_ij = runs_transposed(query);
  std::optional<Plan> swapped_plan;
  Instance swapped;
  if (swap_ij) {
    swapped_plan = transposed_plan(*query.plan);
    swapped = query;
    swapped.plan = &*swapped_plan;
    std::swap(swapped.row, swapped.col);
  }
  const Instance& inst = swap_ij ? swapped : query;
  const Plan& P = *inst.plan;
  Module m = compile_module(inst);

  Results res;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    res.dense.push_back(NDArray::zeros(storage_type_of(P.dense[d].type), inst.dense_shapes[d]));
    fill_identity(res.dense.back(), P.dense[d].op, P.dense[d].type);
  }

  const int64_t T = cpu_thread_count(query, threads);
  const TileGrid grid = tile_grid(inst, false, T, !ordered_alone(P));
  const int64_t tiles = grid.count(), tiles_per_batch = grid.row_tiles * grid.col_tiles;
  throw_if_cancelled(cancel);

  std::unique_ptr<JoinIndex> join;
  if (!P.when.keys.empty() && tiles > 0) join = std::make_unique<JoinIndex>(inst);

  std::vector<std::unique_ptr<Worker>> workers;
  for (int64_t t = 0; t < T; ++t) {
    auto w = std::make_unique<Worker>(inst, m, join.get());
    w->guard = lists_guard;
    w->stop = cancel;
    w->c.transposed = swap_ij;
    w->partial.resize(P.dense.size());
    for (size_t d = 0; d < P.dense.size(); ++d) {
      NDArray* target = &res.dense[d];
      if (T > 1 && !m.dense_unique[d]) {
        w->partial[d] = NDArray::zeros(res.dense[d].dtype, res.dense[d].shape);
        fill_identity(w->partial[d], P.dense[d].op, P.dense[d].type);
        target = &w->partial[d];
      }
      w->c.out.push_back(target->data.data());
      if (P.dense[d].op == StoreOp::Add && is_float(P.dense[d].type) && !m.dense_unique[d] &&
          target->size() <= kChunkMaxCells)
        w->use_chunk(d, target);
    }
    workers.push_back(std::move(w));
  }

  std::vector<std::exception_ptr> errors(static_cast<size_t>(T));
  std::atomic<int64_t> tiles_done{0};
  std::atomic<bool> failed{false};   // one thread's error (e.g. out of memory) stops the others
  auto body = [&](int64_t t) {
    try {
      for (int64_t tile = t; tile < tiles && !failed.load(std::memory_order_relaxed); tile += T) {
        throw_if_cancelled(cancel);
        const int64_t b = tile / tiles_per_batch, in_batch = tile % tiles_per_batch;
        const int64_t i0 = inst.row.begin + in_batch / grid.col_tiles * grid.rows;
        const int64_t j0 = inst.col.begin + in_batch % grid.col_tiles * grid.cols;
        workers[size_t(t)]->run_tile(int32_t(b), i0, std::min(inst.row.end, i0 + grid.rows), j0,
                                     std::min(inst.col.end, j0 + grid.cols));
        if (progress) progress(++tiles_done, tiles);
      }
    } catch (...) {
      errors[size_t(t)] = std::current_exception();
      failed = true;
    }
  };
  // This thread runs share 0; a share whose thread cannot start runs here too.
  run_on_threads(T, 1, body);
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (auto& w : workers) w->add_chunks();
  // A computed output index out of range is a data error: no partial result.
  std::vector<KeyMisses> misses(m.key_slots);
  for (auto& w : workers)
    for (size_t k = 0; k < misses.size(); ++k) misses[k].merge(w->c.misses[k]);
  check_key_misses(inst, misses);

  for (size_t d = 0; d < P.dense.size(); ++d)
    for (auto& w : workers)
      if (!w->partial[d].data.empty()) merge_partial(res.dense[d], w->partial[d].data.data(), P.dense[d].op, P.dense[d].type);

  for (size_t l = 0; l < P.lists.size(); ++l) {
    ListCandidates all = empty_candidates(P.lists[l], m.key_type[l]);
    for (auto& w : workers) {
      append_candidates(all, w->lists[l]);
      w->lists[l] = ListCandidates{};   // the rows are in `all` now
    }
    res.lists.push_back(finalize_list(P.lists[l], inst.list_limits[l], std::move(all)));
  }
  return res;
}

}  // namespace gamut
