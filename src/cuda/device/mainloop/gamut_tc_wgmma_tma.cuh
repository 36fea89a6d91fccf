// The TMA-fed wgmma mainloop (sm_90a): the products of gamut_tc_wgmma.cuh with the copies
// taken off the consumers. A producer warpgroup after the consumer warpgroups issues, from one
// thread, one TMA box per operand and slice (the 128-byte-swizzled layout the descriptors read,
// zeros outside the tensor); full / empty mbarriers per stage replace the block barrier, so
// each warpgroup runs as soon as its slice has landed and never waits for the other.
//
//   threads [0, THREADS)                 consumers: wait full[s], 4 wgmma k-steps, release the
//                                        stage of the slice before (its products are done)
//   threads [THREADS, THREADS + 128)     producer (its first thread, issuer()): wait empty[s],
//                                        expect the stage's bytes on full[s], issue the boxes;
//                                        then the warpgroup leaves
//
// The producer is a whole warpgroup so that it can hand its registers to the consumers
// (setmaxnreg): ptxas gives a wgmma kernel of 2 consumer warpgroups 168 registers a thread, and
// 128 x 256 tiles (128 accumulators a thread) spilled there; the consumers get 232.
//
// Contract as WgmmaMainloop (Acc, kAcc, Map, SMEM_BYTES), with TmaOperand instead of
// TcOperand, plus BLOCK_THREADS and producer(): after run() the kernel returns in the
// producer's threads, and the output operators synchronize the consumers only
// (gm::tile_sync<Shape::THREADS>, barrier 1), never with __syncthreads. A persistent kernel
// calls init(), then produce() per tile in feeds(), and consume() per tile in the consumers,
// the stage ring carrying on across its tiles.
//
// f32 operands (tf32, tf32x3) are read k-major only (the host hands over k-major copies of
// others, src/cuda/stages/k_major_copy.h). tf32: the tensor map's TFLOAT32 type rounds each
// element to TF32 as it lands. tf32x3: the map copies f32 bits, each x splits into big = x's
// bits (the instruction reads them truncated to TF32) and small = tf32(x - trunc(x)), and each
// k-step issues small*big, big*small, big*big (the small terms first, as the mma.sync form).
// B: once a slice has landed the producer's other three warps (the splitters) write its B
// tile's small parts into the stage's twin (B's layout, after the stages) and arrive on
// ready[s]; the consumers wait for ready[s] instead of full[s]. A: each consumer thread reads
// its fragments of the slice once and splits them in registers (wgmma with A from registers),
// so the three products read only B from shared memory: with both operands there, two
// warpgroups' m64n128k8 products ask ~192 bytes per cycle of a shared memory that gives 128.
// The twin lives and dies with its stage: written after full[s],
// read by the products that release empty[s].
//
// PANEL > 0 (resident B): where a tile's whole k range of B is at most PANEL slices, the B
// slices of one column tile (a "band" of tiles sharing it) stay in shared memory and the ring
// streams A only; a persistent block runs the tiles of a band one after the other, so that one
// B load serves them all (short-K kernels are bound by the operands' L2 traffic). Two more mbarriers: bfull (the issuer's arrival + the band's B
// bytes) and bempty (one arrival per consumer warp once the band's last products are done).
// PANEL = STAGES keeps the shared memory of the plain ring (STAGES A tiles + PANEL B tiles).
//
// EPI > 0 (epilogue warpgroups; the persistent resident-threshold kernel): EPI = THREADS more
// threads, placed first, run the tile's outputs while the consumers run the next tile's
// products, so that the tensor cores do not wait for the outputs:
//
//   threads [0, EPI)                     epilogue: wait full, the outputs of the tile whose
//                                        accumulators are in shared memory, signal empty
//   threads [EPI, EPI + THREADS)         consumers: the products, wait empty (from the second
//                                        tile on), hand_over() the accumulators, signal full
//   threads [EPI + THREADS, ... + 128)   producer, as above
//
// Epilogue thread t takes the pairs of consumer thread EPI + t (the same accumulator map), in
// shared memory as (Map::kRows * Map::kCols, THREADS): pair e of thread t at e * THREADS + t.
// full and empty are named barriers 2 and 3 (bar.arrive on one side, bar.sync on the other:
// release and acquire of the shared copy); barrier 1 stays the epilogue's tile_sync.
//
// GROUPS 2 (ping-pong; one warpgroup per group, BM 64): two consumer warpgroups, each running
// whole tiles of its own, products then outputs: group g takes the block's tiles g, g + 2, ...
// The producer loads the block's tiles in order, so a group's products wait for the stages the
// other group's products release: the products of one group run while the other group runs
// its tile's outputs. A slice is consumed (and released) by one group's warps; a group passes
// over the other's slices (pass_over). The groups' products take turns in the block's tile order
// (wait_turn, end_turn: named barriers 3 and 4): an mbarrier's parity tells only two phases
// apart, so a group that waited on a stage's barrier for a slice two turns of the ring ahead of
// the other group's would pass on the old phase. The outputs synchronize per group
// (gm::tile_sync with GM_TILE_GROUPS 2: barrier 1 + group).
#pragma once
#ifndef GM_TC_INSTRUCTIONS_PROVIDED
#include "gamut_tma_ops.cuh"
#endif
#include "gamut_tc_wgmma.cuh"

namespace gm {
namespace tc {

// One operand as the TMA unit reads it: a 3-d tensor map (contiguous axis, other axis, batch;
// built by the host, src/cuda/runtime/tensor_map.cpp), the tile's first row / column p0 and the
// batch instance.
struct TmaOperand {
  const void* map;
  int p0;
  int batch;
};

// CLUSTER 2: the kernel runs in clusters of two blocks (__cluster_dims__(2, 1, 1)) on row tiles
// 2p and 2p + 1 of one column tile; each block's producer loads its own A slice and half of the
// shared B slice, multicast into both blocks' stages, so that L2 serves each B slice once for
// two tiles (short-K kernels are bound by L2 traffic). A stage is refilled only once the consumers of both blocks released it: each consumer
// warp arrives on the empty barriers of both blocks.
// A persistent block's count of the bands it loaded (issuer) or waited for (consumers), whose
// parity is the phase of bfull / bempty (PANEL > 0).
struct Bands {
  unsigned count = 0;
};

template <class Math, class Shape, bool A_KC, bool B_KC, int CLUSTER = 1, int PANEL = 0, int EPI = 0, int GROUPS = 1>
struct WgmmaTmaMainloop {
  typedef WgmmaMainloop<Math, Shape, A_KC, B_KC> Products;  // descriptors, tiles, sizes
  typedef typename Math::Acc Acc;
  typedef typename Products::Map Map;
  typedef typename Products::ATile ATile;
  typedef typename Products::BTile BTile;
  typedef typename Products::Operand Operand;
  static constexpr bool kSplit = Math::kPasses == 3;  // tf32x3
  static constexpr int BK = Shape::BK, STAGES = Shape::STAGES, BN = Shape::BN, BM = Shape::BM;
  static constexpr int kAcc = Products::kAcc, KSTEPS = Products::KSTEPS;
  static constexpr int STAGE_BYTES = Products::STAGE_BYTES;
  // THREADS: one group's consumers (the output operators' Shape::THREADS); CONSUMERS: all groups'.
  static constexpr int THREADS = Shape::THREADS, CONSUMERS = GROUPS * THREADS, BLOCK_THREADS = EPI + CONSUMERS + 128;
  static_assert(EPI == 0 || (EPI == THREADS && CLUSTER == 1 && !kSplit), "epilogue warpgroups: one per consumer's");
  static_assert(GROUPS == 1 || (GROUPS == 2 && THREADS == 128 && EPI == 0 && CLUSTER == 1 && PANEL == 0 && !kSplit),
                "ping-pong: two groups of one warpgroup, one block, streamed B, one pass");
  // Registers after init(): 65536 in all, the producer warpgroup's 40 and the rest shared by
  // the consumers in steps of 8 (two consumer warpgroups: 232; one already has 256 at launch).
  // With epilogue warpgroups, the launch's share (640 threads: 96 each): the consumers keep it
  // (64 accumulators and the ring's state), the epilogue takes what the producer gives up. (ptxas
  // compiles every role to the launch's 96 all the same.)
  static constexpr int PRODUCER_REGS = 40;
  static constexpr int LAUNCH_REGS = 65536 / BLOCK_THREADS / 8 * 8 > 256 ? 256 : 65536 / BLOCK_THREADS / 8 * 8;
  static constexpr int CONSUMER_REGS = EPI > 0 ? LAUNCH_REGS
                                       : (65536 - 128 * PRODUCER_REGS) / CONSUMERS / 8 * 8 > 256
                                           ? 256
                                           : (65536 - 128 * PRODUCER_REGS) / CONSUMERS / 8 * 8;
  static constexpr int EPILOGUE_REGS =
      EPI > 0 ? (BLOCK_THREADS * LAUNCH_REGS - 128 * PRODUCER_REGS - THREADS * CONSUMER_REGS) / (EPI > 0 ? EPI : 1) /
                    8 * 8
              : 0;
  static_assert(EPI == 0 || (EPILOGUE_REGS >= LAUNCH_REGS && EPILOGUE_REGS <= 256), "the epilogue's registers");
  static constexpr bool kShiftRegs = CONSUMERS == 256;
  static constexpr int CONSUMER_WARPS = THREADS / 32;
  static_assert(CLUSTER == 1 || CLUSTER == 2, "clusters of one or two blocks");
  static_assert(CLUSTER == 1 || (B_KC ? BN % 16 == 0 : BN % 128 == 0), "B splits in two whole boxes");
  // The stage ring (Ring below) and 1024 bytes of alignment slack.
  static constexpr int SPLIT_BYTES = kSplit ? STAGES * BTile::BYTES : 0;  // tf32x3: B's small parts per stage
  static constexpr int RING_STAGE_BYTES = PANEL > 0 ? ATile::BYTES : STAGE_BYTES;  // resident B: A only
  static constexpr int PANEL_BYTES = PANEL * BTile::BYTES;
  static constexpr int SMEM_BYTES = STAGES * RING_STAGE_BYTES + PANEL_BYTES + SPLIT_BYTES + 1024 + 128;
  static_assert(int(sizeof(Operand)) == 2 || (A_KC && B_KC), "f32 operands come k-major");
  static_assert(STAGES <= (kSplit ? 5 : PANEL > 0 ? 7 : 8),
                "the barriers' 128 bytes: full, empty (and ready, or bfull and bempty) per stage");
  static_assert(PANEL == 0 || (CLUSTER == 1 && !kSplit), "resident B: one block, one pass of products");
  static_assert(ATile::BYTES % 1024 == 0 && BTile::BYTES % 1024 == 0, "tiles on 1024-byte swizzle atoms");

  static GM_DEV bool producer() { return int(threadIdx.x) >= EPI + CONSUMERS; }
  static GM_DEV bool issuer() { return int(threadIdx.x) == EPI + CONSUMERS; }  // the producer's thread that issues
  // EPI > 0: the threads that run the products (else every thread but the producer's).
  static GM_DEV bool consumer() { return int(threadIdx.x) >= EPI && int(threadIdx.x) < EPI + CONSUMERS; }
  // GROUPS 2: the consumer's group (0 or 1), whose tiles are the block's tiles group, + 2, ...
  static GM_DEV int group() { return GROUPS > 1 ? (int(threadIdx.x) - EPI) / THREADS : 0; }
  // GROUPS 2: a group's slice count passes over the other group's tile (its k range's slices).
  static GM_DEV void pass_over(unsigned& slice, int k_begin, int k_end) {
    slice += unsigned((GROUPS - 1) * slices(k_begin, k_end));
  }
  // GROUPS 2, before a group's products of the block's tile t: wait until the other group's of
  // tile t - 1 are done (not at t = 0, `first`). Group 0 waits on barrier 3, group 1 on 4.
  static GM_DEV void wait_turn(bool first) {
    if (GROUPS > 1 && !first) named_bar_sync(unsigned(3 + group()), unsigned(2 * THREADS));
  }
  // GROUPS 2, after them: the other group may start its products of tile t + 1 (none after the
  // block's last tile, `last`, so that every arrival has its waiter).
  static GM_DEV void end_turn(bool last) {
    if (GROUPS > 1 && !last) named_bar_arrive(unsigned(4 - group()), unsigned(2 * THREADS));
  }
  // tf32x3: the producer's warps 1-3 split the landed slices (see above).
  static constexpr int SPLIT_WARPS = 3;
  static GM_DEV bool splitter() { return kSplit && int(threadIdx.x) >= THREADS + 32; }
  // The producer's threads that run produce() and drain(): the issuer and the splitters.
  static GM_DEV bool feeds() { return issuer() || splitter(); }

  // The boxes of one operand's slice at k0 into the stage tile at `dst`: k contiguous: one box
  // of BK k x P rows; else (16-bit) P / 64 boxes of 64 p x 64 k, 64 x 64 x 2 bytes apart.
  template <bool KC, int P>
  static GM_DEV void load(unsigned dst, const TmaOperand& op, int k0, unsigned bar) {
    if constexpr (KC) {
      tma_load_3d(dst, op.map, k0, op.p0, op.batch, bar);
    } else {
#pragma unroll
      for (int q = 0; q < P / 64; ++q)
        tma_load_3d(dst + unsigned(q * BK * 128), op.map, op.p0 + 64 * q, k0, op.batch, bar);
    }
  }

  // tf32x3: the small parts of the B tile of the stage at shared address `stage` into its twin
  // (the big parts are the stage's own bits, small_tf32_of_truncated), 16 bytes per thread and
  // step, by the splitters' threads.
  static GM_DEV void split(void* smem, unsigned stage, unsigned twin) {
    unsigned char* base = static_cast<unsigned char*>(smem) + (stage + unsigned(ATile::BYTES) - smem_addr(smem));
    unsigned char* small_at = static_cast<unsigned char*>(smem) + (twin - smem_addr(smem));
#pragma unroll 4
    for (int c = int(threadIdx.x) - (THREADS + 32); c < BTile::BYTES / 16; c += 32 * SPLIT_WARPS) {
      const uint4 x = *reinterpret_cast<const uint4*>(base + 16 * c);
      unsigned v[4] = {x.x, x.y, x.z, x.w}, small[4];
      small_tf32_of_truncated(v, small);
      *reinterpret_cast<uint4*>(small_at + 16 * c) = make_uint4(small[0], small[1], small[2], small[3]);
    }
  }

  // The stage ring in shared memory: the stages (1024-byte aligned), the resident B slices or
  // the tf32x3 twins, then full[STAGES], empty[STAGES] and tf32x3's ready[STAGES] (or resident
  // B's bfull, bempty) mbarriers of 8 bytes.
  struct Ring {
    unsigned s0, full0, empty0, ready0;
    GM_DEV explicit Ring(void* smem)
        : s0((smem_addr(smem) + 1023u) & ~1023u),
          full0(s0 + unsigned(STAGES * RING_STAGE_BYTES + PANEL_BYTES + SPLIT_BYTES)),
          empty0(full0 + 8u * STAGES),
          ready0(empty0 + 8u * STAGES) {}
    GM_DEV unsigned stage(unsigned slice) const { return s0 + unsigned(int(slice % STAGES) * RING_STAGE_BYTES); }
    // Resident B: slice t of the band's B tiles, and the band's barriers.
    GM_DEV unsigned panel(int t) const { return s0 + unsigned(STAGES * RING_STAGE_BYTES + t * BTile::BYTES); }
    GM_DEV unsigned bfull() const { return ready0; }
    GM_DEV unsigned bempty() const { return ready0 + 8u; }
    GM_DEV unsigned full(unsigned slice) const { return full0 + 8u * (slice % STAGES); }
    GM_DEV unsigned empty(unsigned slice) const { return empty0 + 8u * (slice % STAGES); }
    GM_DEV unsigned ready(unsigned slice) const { return ready0 + 8u * (slice % STAGES); }
    // tf32x3: the stage's twin, its B tile's small parts (1024-byte aligned, after the stages).
    GM_DEV unsigned twin(unsigned slice) const {
      return s0 + unsigned(STAGES * STAGE_BYTES) + unsigned(int(slice % STAGES) * BTile::BYTES);
    }
    // The phase parity of slice's use of its stage (the ring turns once per STAGES slices).
    static GM_DEV unsigned parity(unsigned slice) { return (slice / STAGES) & 1u; }
  };

  static GM_DEV int slices(int k_begin, int k_end) { return k_end > k_begin ? (k_end - k_begin + BK - 1) / BK : 0; }

  // The ring's barriers, made by thread 0 and visible to the whole block after this (the
  // kernel's last whole-block barrier); then the registers move from producer to consumers.
  static GM_DEV void init(void* smem) {
    const Ring r(smem);
    if (threadIdx.x == 0) {
#pragma unroll
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(r.full(unsigned(s)), 1);                          // the producer's arrival + bytes
        mbar_init(r.empty(unsigned(s)), unsigned(CONSUMER_WARPS * CLUSTER));  // one per consumer warp
        if constexpr (kSplit) mbar_init(r.ready(unsigned(s)), unsigned(SPLIT_WARPS));  // one per splitter warp
      }
      if constexpr (PANEL > 0) {
        mbar_init(r.bfull(), 1);                         // the issuer's arrival + the band's B bytes
        mbar_init(r.bempty(), unsigned(CONSUMER_WARPS));  // one per consumer warp, at the band's end
      }
      mbar_fence_init();
    }
    __syncthreads();
    if constexpr (CLUSTER > 1) cluster_sync();  // the other block's barriers exist before any multicast
    if constexpr (EPI > 0) {
      if (producer())
        regs_dec<PRODUCER_REGS>();
      else if (!consumer())
        regs_inc<EPILOGUE_REGS>();
    } else if constexpr (kShiftRegs) {
      if (producer())
        regs_dec<PRODUCER_REGS>();
      else
        regs_inc<CONSUMER_REGS>();
    }
  }

  // EPI > 0, the hand-over of one tile's accumulators (see the top of this file). A consumer
  // thread, after its products: wait until the epilogue is done with the tile before (not at the
  // block's first tile), store its accumulators, signal them full.
  static GM_DEV void hand_over(const Acc (&acc)[kAcc], Acc* accs, bool first_tile) {
    static_assert(EPI > 0, "epilogue warpgroups only");
    if (!first_tile) asm volatile("bar.sync 3, %0;\n" ::"n"(EPI + THREADS) : "memory");
    const int t = int(threadIdx.x) - EPI;
#pragma unroll
    for (int m = 0; m < Map::kRows; ++m)
#pragma unroll
      for (int n = 0; n < Map::kCols; ++n) accs[(m * Map::kCols + n) * THREADS + t] = acc[Map::index(m, n)];
    asm volatile("bar.arrive 2, %0;\n" ::"n"(EPI + THREADS) : "memory");
  }
  // An epilogue thread: wait until the tile's accumulators are in shared memory.
  static GM_DEV void wait_full() { asm volatile("bar.sync 2, %0;\n" ::"n"(EPI + THREADS) : "memory"); }
  // An epilogue thread, after the tile's outputs (not after the block's last tile: no consumer
  // waits for it): the accumulators' copy may be overwritten.
  static GM_DEV void signal_empty() { asm volatile("bar.arrive 3, %0;\n" ::"n"(EPI + THREADS) : "memory"); }

  // feeds(): the slices of one tile, k in [k_begin, k_end): the issuer issues them, the
  // splitters split them. `slice` counts the slices this block issued before (they carry on
  // across the tiles of a persistent block) and comes back advanced past this tile's.
  static GM_DEV void produce(void* smem, const TmaOperand& a, const TmaOperand& b, int k_begin, int k_end,
                             unsigned& slice) {
    Bands bands;  // (resident B, one tile: a band of its own)
    produce(smem, a, b, k_begin, k_end, slice, bands, true);
  }

  // The same with resident B's band state (ignored without PANEL): where the tile starts a band
  // (`new_band`), first the band's B slices, once the consumers are done with the band before
  // (bempty); the ring then carries A only.
  static GM_DEV void produce(void* smem, const TmaOperand& a, const TmaOperand& b, int k_begin, int k_end,
                             unsigned& slice, Bands& bands, bool new_band) {
    const Ring r(smem);
    const int nk = slices(k_begin, k_end);
    if constexpr (kSplit) {
      if (splitter()) {
#pragma unroll 1
        for (int t = 0; t < nk; ++t, ++slice) {
          mbar_wait(r.full(slice), Ring::parity(slice));  // the slice has landed
          split(smem, r.stage(slice), r.twin(slice));
          fence_proxy_async();  // the parts' stores before the products' reads (async proxy)
          __syncwarp();
          if (threadIdx.x % 32 == 0) mbar_arrive(r.ready(slice));
        }
        return;
      }
    }
    if constexpr (PANEL > 0) {
      if (nk > PANEL) __trap();  // the host keeps longer k ranges off this form (choose_kernel)
      if (new_band) {
        if (bands.count > 0) mbar_wait(r.bempty(), (bands.count - 1u) & 1u);
        mbar_arrive_expect_tx(r.bfull(), unsigned(nk * BTile::BYTES));
#pragma unroll 1
        for (int t = 0; t < nk; ++t) load<B_KC, BN>(r.panel(t), b, k_begin + t * BK, r.bfull());
        ++bands.count;
      }
    }
#pragma unroll 1
    for (int t = 0; t < nk; ++t, ++slice) {
      // The stage's previous slice's products are done (its first use waits for nothing).
      if (slice >= unsigned(STAGES)) mbar_wait(r.empty(slice), Ring::parity(slice) ^ 1u);
      const unsigned stage = r.stage(slice), full = r.full(slice);
      mbar_arrive_expect_tx(full, unsigned(RING_STAGE_BYTES));
      load<A_KC, BM>(stage, a, k_begin + t * BK, full);
      if constexpr (PANEL > 0)
        ;  // (B is the band's)
      else if constexpr (CLUSTER == 1)
        load<B_KC, BN>(stage + unsigned(ATile::BYTES), b, k_begin + t * BK, full);
      else
        load_shared_half(stage + unsigned(ATile::BYTES), b, k_begin + t * BK, full);
    }
  }

  // CLUSTER 2: this block's half of the B slice at k0, multicast into both blocks: k
  // contiguous, one box of BK k x BN / 2 rows (the host's map has boxes of BN / 2 rows); else
  // half of the BN / 64 boxes of 64 n x 64 k.
  static GM_DEV void load_shared_half(unsigned dst, const TmaOperand& op, int k0, unsigned bar) {
    const int rank = int(cluster_rank());
    if constexpr (B_KC) {
      tma_load_3d_multicast(dst + unsigned(rank * (BN / 2) * 128), op.map, k0, op.p0 + rank * (BN / 2), op.batch, bar,
                            3);
    } else {
#pragma unroll
      for (int h = 0; h < BN / 128; ++h) {
        const int q = rank * (BN / 128) + h;
        tma_load_3d_multicast(dst + unsigned(q * BK * 128), op.map, op.p0 + 64 * q, k0, op.batch, bar, 3);
      }
    }
  }

  // issuer(), after its last produce(): CLUSTER 2 waits until the consumers of both blocks
  // released every stage, so that no arrival of the other block's consumers reaches this
  // block's barriers after it exited. (Nothing to wait for in a block of its own.)
  static GM_DEV void drain(void* smem, unsigned slice) {
    if constexpr (CLUSTER > 1) {
      if (!issuer()) return;
      const Ring r(smem);
#pragma unroll 1
      for (int s = 0; s < STAGES; ++s, ++slice)
        if (slice >= unsigned(STAGES)) mbar_wait(r.empty(slice), Ring::parity(slice) ^ 1u);
    }
  }

  // A consumer warp's release of the stage of `slice`: in every block of the cluster.
  static GM_DEV void release(const Ring& r, unsigned slice) {
    mbar_arrive(r.empty(slice));
    if constexpr (CLUSTER > 1) mbar_arrive_remote(r.empty(slice), cluster_rank() ^ 1u);
  }

  // tf32x3's consumers. The tensor cores add products into the accumulators rounding toward
  // zero: summed over all of K, tf32x3's error grows with K far past SGEMM's. So each slice's products go into a fresh partial (its first
  // product with scale-d 0), added to acc with f32 adds (to nearest). The two consumer
  // warpgroups meet at no barrier: one adds its partial while the other's products run.
  static_assert(!kSplit || BN == 128, "tf32x3: m64n128k8 products with A from registers");

  // The thread's A fragments of every k-step of the stage at `stage` (the 128-byte-swizzled
  // k-major tile: element (r, k) at r * 128 + ((k / 4) ^ (r % 8)) * 16 + (k % 4) * 4, r % 8 = g
  // here), split: big[ks], small[ks] in wgmma's register order. Lanes read 32 distinct banks.
  static GM_DEV void a_fragments(void* smem, unsigned stage, unsigned (&big)[KSTEPS][4],
                                 unsigned (&small)[KSTEPS][4]) {
    const unsigned char* base = static_cast<const unsigned char*>(smem) + (stage - smem_addr(smem));
    const int lane = int(threadIdx.x % 32), g = lane / 4, t = lane % 4;
    const int r0 = int(threadIdx.x / 32) * 16 + g;  // (warpgroup, warp): rows 64 wg + 16 w + g (+ 8)
#pragma unroll
    for (int ks = 0; ks < KSTEPS; ++ks) {
#pragma unroll
      for (int v = 0; v < 4; ++v) {  // v = h + 2 hk: row r0 + 8h, k = 8 ks + t + 4 hk
        const int r = r0 + 8 * (v & 1), chunk = 2 * ks + (v >> 1);
        big[ks][v] = *reinterpret_cast<const unsigned*>(base + r * 128 + ((chunk ^ g) * 16) + t * 4);
      }
      small_tf32_of_truncated(big[ks], small[ks]);
    }
  }

  static GM_DEV void consume_split(Acc (&acc)[kAcc], void* smem, int nk, unsigned& slice) {
    const Ring r(smem);
    Acc part[kAcc];
#pragma unroll 1
    for (int t = 0; t < nk; ++t, ++slice) {
      mbar_wait(r.ready(slice), Ring::parity(slice));  // landed, B split
      const unsigned stage = r.stage(slice);
      unsigned ab[KSTEPS][4], as[KSTEPS][4];
      a_fragments(smem, stage, ab, as);
      wgmma_fence();  // the partial's adds and the fragments' registers are done
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks) {
        const u64 db = Products::template desc<BTile, true>(stage + unsigned(ATile::BYTES), 0, ks),
                  sb = Products::template desc<BTile, true>(r.twin(slice), 0, ks);
        wgmma_tf32_rs_n128(part, as[ks], db, ks > 0);  // small terms first (part starts at 0)
        wgmma_tf32_rs_n128(part, ab[ks], sb);
        wgmma_tf32_rs_n128(part, ab[ks], db);
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_registers(part);
#pragma unroll
      for (int e = 0; e < kAcc; ++e) acc[e] = t > 0 ? acc[e] + part[e] : part[e];
      if (threadIdx.x % 32 == 0) release(r, slice);  // the slice's products are done
    }
  }

  // The consumers: acc = the products of one tile's nk slices (acc's values before are not
  // read), the first slice being `slice` (which comes back advanced past them). Every stage read
  // is released: the producer may refill it with the next tile's slices while the outputs run.
  // The k range is not empty (the host keeps empty ones off this mainloop, tile_choice.cpp):
  // zeroing acc here for that case made ptxas spill 144 bytes in a persistent Q3 kernel.
  static GM_DEV void consume(Acc (&acc)[kAcc], void* smem, int k_begin, int k_end, unsigned& slice) {
    Bands bands;  // (resident B, one tile: a band of its own, whose end no one waits for)
    consume(acc, smem, k_begin, k_end, slice, bands, true, false);
  }

  // The same with resident B's band state (ignored without PANEL): B from the band's slices,
  // waited for where the tile starts a band; where the band ends after this tile (`band_ends`),
  // each consumer warp releases it once its products are done, so that the issuer may load the
  // next band's.
  static GM_DEV void consume(Acc (&acc)[kAcc], void* smem, int k_begin, int k_end, unsigned& slice, Bands& bands,
                             bool new_band, bool band_ends) {
    const int nk = slices(k_begin, k_end);
    if constexpr (kSplit) {
      consume_split(acc, smem, nk, slice);
      return;
    }
    const Ring r(smem);
    if constexpr (PANEL > 0) {
      if (new_band) {
        mbar_wait(r.bfull(), bands.count & 1u);  // the band's B slices have landed
        ++bands.count;
      }
    }
    const int wg = GROUPS > 1 ? 0 : (int(threadIdx.x) - EPI) / 128;  // (ping-pong: each group's tile is its own)
    unsigned prev = 0;
#pragma unroll 1
    for (int t = 0; t < nk; ++t, ++slice) {
      mbar_wait(r.full(slice), Ring::parity(slice));  // the slice has landed
      const unsigned stage = r.stage(slice), b_tile = PANEL > 0 ? r.panel(t) : stage + unsigned(ATile::BYTES);
      fence_registers(acc);
      wgmma_fence();
#pragma unroll
      for (int ks = 0; ks < KSTEPS; ++ks)
        wgmma_f32<BN, Operand, A_KC ? 0 : 1, B_KC ? 0 : 1>(acc, Products::template desc<ATile, A_KC>(stage, wg, ks),
                                                           Products::template desc<BTile, B_KC>(b_tile, 0, ks),
                                                           t > 0 || ks > 0);
      wgmma_commit();
      wgmma_wait<1>();  // the slice before's products are done: its stage may be refilled
      fence_registers(acc);
      if (t > 0 && threadIdx.x % 32 == 0) release(r, prev);
      prev = slice;
    }
    wgmma_wait<0>();
    fence_registers(acc);
    if (threadIdx.x % 32 == 0) {
      if (nk > 0) release(r, prev);
      if constexpr (PANEL > 0)
        if (band_ends) mbar_arrive(r.bempty());  // this warp's products of the band are done
    }
  }

  // One tile per block: feeds() issues (and splits) every slice and the producer warpgroup returns (the
  // kernel returns in the producer's threads); the consumers end with a consumer barrier, after
  // which the output operators may reuse the stages.
  static GM_DEV void run(Acc (&acc)[kAcc], void* smem, const TmaOperand& a, const TmaOperand& b, int k_begin,
                         int k_end) {
    init(smem);
    unsigned slice = 0;
    if (producer()) {
      if (feeds()) {
        produce(smem, a, b, k_begin, k_end, slice);
        drain(smem, slice);
      }
      return;
    }
    consume(acc, smem, k_begin, k_end, slice);
    tile_sync<THREADS>();  // every consumer's products are done: the stages may be reused
  }
};

}  // namespace tc
}  // namespace gm
