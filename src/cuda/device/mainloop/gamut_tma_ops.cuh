// Shared-memory barriers (mbarrier) and tensor-memory-accelerator copies (TMA, sm_90) for the
// TMA-fed wgmma mainloop (gamut_tc_wgmma_tma.cuh). Hand-written for the reason of
// gamut_tc_wgmma_ops.cuh: these are eight instructions, and libcu++'s cuda::ptx headers would
// have to be shipped to and parsed by NVRTC at every cold compile (docs/tensor-cores.md).
#pragma once
#include "gamut_math.cuh"

namespace gm {
namespace tc {

// An mbarrier that completes a phase after `count` arrivals (and the bytes they announced).
GM_DEV void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes initialized barriers visible to the async proxy (the TMA unit's completions).
GM_DEV void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also announces `bytes` the phase must receive before it completes.
GM_DEV void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
GM_DEV void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Whether the phase of parity `parity` has completed (a bounded wait in hardware; callers loop).
GM_DEV bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned done;
  asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
               : "=r"(done)
               : "r"(bar), "r"(parity)
               : "memory");
  return done != 0;
}
GM_DEV void mbar_wait(unsigned bar, unsigned parity) {
  while (!mbar_try_wait(bar, parity)) {
  }
}

// A named barrier of `count` threads (a multiple of 32): wait for them all (sync), or count this
// warp in without waiting (arrive; its partners sync).
GM_DEV void named_bar_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
GM_DEV void named_bar_arrive(unsigned id, unsigned count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// Hands registers back (dec) or takes them (inc) for the calling warpgroup: every thread of it
// runs the same one (sync.aligned). The launch gave each thread the same share; the producer
// warpgroup needs few, the consumers' accumulators many.
template <int N>
GM_DEV void regs_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <int N>
GM_DEV void regs_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

// Clusters (sm_90): this block's rank in its cluster; a barrier of every thread of the cluster
// (release / acquire: what one block wrote to shared memory before it is seen by the others
// after); an arrival on the mbarrier at the same shared offset in block `rank` of the cluster.
GM_DEV unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
GM_DEV void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}
GM_DEV void mbar_arrive_remote(unsigned bar, unsigned rank) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [remote];\n}\n" ::"r"(bar),
      "r"(rank)
      : "memory");
}

// A box of a tensor (CUtensorMap at the generic address `map`, a __grid_constant__ kernel
// argument) at coordinates (c0, c1, c2) into shared memory at `dst`; the bytes complete on
// the mbarrier `bar`. Elements outside the tensor arrive as zeros.
GM_DEV void tma_load_3d(unsigned dst, const void* map, int c0, int c1, int c2, unsigned bar) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::
          "r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
}
// The same box into shared memory at `dst` of every block of the cluster in `mask` (bit r: rank
// r), each completing its bytes on its own mbarrier at offset `bar`.
GM_DEV void tma_load_3d_multicast(unsigned dst, const void* map, int c0, int c1, int c2, unsigned bar,
                                  unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(dst),
      "l"(reinterpret_cast<u64>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar), "h"(mask)
      : "memory");
}

}  // namespace tc
}  // namespace gm
