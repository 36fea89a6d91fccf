// The tiled mainloop skeleton shared by every generated kernel.
//
// A thread block computes a BM x BN tile of (i, j) pairs; each thread owns TM x TN of them in
// registers. The thread's rows are TM/VM runs of VM consecutive rows, the runs THREADS_M * VM
// apart (likewise for columns), so a warp's fragment reads are VM-wide vector loads of
// consecutive shared addresses: 128-bit LDS without bank conflicts.
// The k loop is a pipeline of kStages (3) shared buffers: slice t+2 is fetched (cp.async, or
// into registers and stored after the compute) while slice t is computed; one barrier per slice.
// 1- and 2-byte operands are copied raw one slice further ahead and widened in shared memory.
#pragma once
#include "gamut_accumulator_map.cuh"
#include "gamut_constants.cuh"
#include "gamut_loaders.cuh"
#include "gamut_math.cuh"

namespace gm {

template <int BM_, int BN_, int BK_, int TM_, int TN_, int WARP_M_, int WARP_N_>
struct TileShape {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int THREADS_M = BM / TM, THREADS_N = BN / TN;
  static constexpr int THREADS = THREADS_M * THREADS_N;
  static constexpr int VM = TM < 4 ? TM : 4;    // fragment vector widths
  static constexpr int VN = TN < 4 ? TN : 4;
  // A warp covers WARP_M x WARP_N threads of the (THREADS_M, THREADS_N) grid.
  static constexpr int WARP_M = WARP_M_, WARP_N = WARP_N_;
  static constexpr int WARPS_N = THREADS_N / WARP_N;
  static_assert(BM % TM == 0 && BN % TN == 0, "tile must divide into thread tiles");
  static_assert(TM % VM == 0 && TN % VN == 0, "thread tile must divide into vectors");
  static_assert(WARP_M * WARP_N == 32, "a warp is 32 threads");
  static_assert(THREADS_M % WARP_M == 0 && THREADS_N % WARP_N == 0, "warps must tile the block");
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "block size");
};

// The SIMT mainloop's accumulator map (gamut_accumulator_map.cuh): where this thread's TM x TN
// fragment lies in the block tile. A map object, made from the thread id: the epilogue makes it
// again after the k loop (gm::fresh_tid) instead of holding tm, tn through it.
template <class Shape>
struct ThreadMap {
  static constexpr int kRows = Shape::TM, kCols = Shape::TN;
  static constexpr int index(int m, int n) { return m * kCols + n; }
  int tm, tn;   // the thread's coordinates in the (THREADS_M, THREADS_N) grid
  GM_DEV explicit ThreadMap(int tid) {
    const int warp = tid / 32, lane = tid % 32;
    tm = (warp / Shape::WARPS_N) * Shape::WARP_M + lane / Shape::WARP_N;
    tn = (warp % Shape::WARPS_N) * Shape::WARP_N + lane % Shape::WARP_N;
  }
  // Offset in the block tile of the thread's fragment row m (0 <= m < TM) / column n.
  GM_DEV int row(int m) const {
    return (m / Shape::VM) * (Shape::THREADS_M * Shape::VM) + tm * Shape::VM + m % Shape::VM;
  }
  GM_DEV int col(int n) const {
    return (n / Shape::VN) * (Shape::THREADS_N * Shape::VN) + tn * Shape::VN + n % Shape::VN;
  }
};

// A thread's fragment of one k row of a shared tile: F elements, in runs of V, runs
// THREADS * V apart. `s` points at the k row; `t` is the thread's coordinate (tm or tn).
template <int F, int V, int THREADS, class T>
GM_DEV void load_frag(T (&f)[F], const T* s, int t) {
#pragma unroll
  for (int c = 0; c < F / V; ++c) {
    T v[V];
    vec_ld<T, V, false>(v, s + c * THREADS * V + t * V);
#pragma unroll
    for (int e = 0; e < V; ++e) f[c * V + e] = v[e];
  }
}

// threadIdx.x / blockIdx.x read afresh (volatile: not merged with earlier reads). The
// epilogue recomputes its coordinates from these instead of keeping them in registers
// across the mainloop, where the accumulators need every register.
GM_DEV int fresh_tid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(r));
  return int(r);
}
GM_DEV int fresh_ctaid() {
  unsigned r;
  asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(r));
  return int(r);
}

// Block -> tile when a top/bottom list keeps one threshold per row (per i): every row tile
// before the next column tile, so that a row's column tiles run one after the other and each
// finds the row's global threshold already lowered by the ones before (gm::TileSelect); with
// grouped rows, a wave ran ~33 column tiles of the same rows at once, all before any threshold.
// PER_COL: the same for one threshold per column (per j), columns first.
template <bool PER_COL>
GM_DEV void tile_coords_spread(int id, int tiles_m, int tiles_n, int& tile_m, int& tile_n) {
  if (PER_COL) {
    tile_n = id % tiles_n;
    tile_m = id / tiles_n;
  } else {
    tile_m = id % tiles_m;
    tile_n = id / tiles_m;
  }
}

// Block -> tile, column tiles grouped GROUP_M row tiles high so that consecutive blocks
// share their A and B slices in L2.
template <int GROUP_M>
GM_DEV void tile_coords(int id, int tiles_m, int tiles_n, int& tile_m, int& tile_n) {
  const int per_group = GROUP_M * tiles_n;
  const int group = id / per_group;
  const int first_m = group * GROUP_M;
  const int rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
  const int in_group = id % per_group;
  tile_m = first_m + in_group % rows;
  tile_n = in_group / rows;
}

// Stage::kStaged where the Stage declares it (the generator declares it only with staged tiles).
template <class S, class = void>
struct StagedOf {
  static constexpr bool value = false;
};
template <class S>
struct StagedOf<S, decltype(void(S::kStaged))> {
  static constexpr bool value = S::kStaged;
};

// Stage::kVotes likewise (integer tropical steps, codegen/mainloop_simt.cpp).
template <class S, class = void>
struct VotesOf {
  static constexpr bool value = false;
};
template <class S>
struct VotesOf<S, decltype(void(S::kVotes))> {
  static constexpr bool value = S::kVotes;
};

// The k loop, a 3-buffer pipeline with one barrier per slice. Stage provides
//   load(k0, k_end, buf): start fetching slice k0 (cp.async into buffer buf, or into registers),
//   store(buf): write register-staged operands of that slice into buffer buf,
//   compute<GUARD>(buf, k0, krem): the inner op over the slice (with GUARD only its first krem
//   k exist),
//   and where kStaged is declared true (StagedOf), stage(k0, k_end, buf) / widen(buf): the staged operands
//   (gm::StagedTileLoader): copy slice k0 raw into staging buffer buf / widen the slice in
//   staging buffer buf into tile buffer buf,
//   and where kVotes is declared true (VotesOf), own_within(buf): whether the values this thread
//   put into tile buffer buf allow the plain sums; the slice's barrier is then a vote of all the
//   block's threads, its result in st.plain for the slice's compute.
// Slice t+2 is fetched while slice t is computed; it goes to the buffer slice t-1 used, which
// every thread has finished with at the barrier. Staged operands run one slice ahead: slice t+3
// is copied into the staging buffer of slice t (widened in the previous iteration), and slice t+1
// is widened after slice t's compute (its copies were in the group waited for at the top, and
// its tile buffer was last read by slice t-2), so their copies have two slices to land, as the
// others' do, with no second barrier. k runs in increasing order in every thread, which is what
// general `ACC = e` updates need. Ends with a barrier: shared memory is free afterwards.
// (Measured: 4 or 5 buffers are no faster.)
template <int BK, class Stage>
GM_DEV void mainloop(Stage& st, int k_begin, int k_end) {
  static_assert(kStages == 3, "the pipeline is written for three buffers");
  constexpr bool staged = StagedOf<Stage>::value;
  if (k_end <= k_begin) return;
  const int nk = (k_end - k_begin + BK - 1) / BK;
  st.load(k_begin, k_end, 0);
  st.store(0);
  if constexpr (staged) {
    st.stage(k_begin, k_end, 0);
    if (nk > 1) st.stage(k_begin + BK, k_end, 1);
  }
  cp_async_commit();
  if (nk > 1) {
    st.load(k_begin + BK, k_end, 1);
    st.store(1);
  }
  if constexpr (staged)
    if (nk > 2) st.stage(k_begin + 2 * BK, k_end, 2);
  cp_async_commit();
  if constexpr (staged) {  // slice 0 widened before the loop; the loop's barrier publishes it
    cp_async_wait<1>();
    __syncthreads();
    st.widen(0);
  }
  int rb = 0, wb = 2;   // buffer read by this slice, written by the prefetch
#pragma unroll 1
  for (int t = 0; t < nk; ++t) {
    const int k0 = k_begin + t * BK;
    cp_async_wait<1>();  // slice t (staged operands: t+1) has landed (this thread's copies) ...
    if constexpr (VotesOf<Stage>::value)
      st.plain = __syncthreads_and(st.own_within(rb)) != 0;
    else
      __syncthreads();  // ... everybody's; and slice t-1's buffer is no longer read
    const bool pre = t + 2 < nk;
    if (pre) st.load(k0 + 2 * BK, k_end, wb);
    if constexpr (staged)
      if (t + 3 < nk) st.stage(k0 + 3 * BK, k_end, rb);
    cp_async_commit();   // possibly empty: keeps the group count in step
    if (k_end - k0 >= BK) st.template compute<false>(rb, k0, BK);
    else st.template compute<true>(rb, k0, k_end - k0);
    if (pre) st.store(wb);  // register-staged operands: the loads had a whole slice to land
    const int nb = rb + 1 == kStages ? 0 : rb + 1;
    if constexpr (staged)
      if (t + 1 < nk) st.widen(nb);
    rb = nb;
    wb = wb + 1 == kStages ? 0 : wb + 1;
  }
  cp_async_wait<0>();
  __syncthreads();
}

}  // namespace gm
