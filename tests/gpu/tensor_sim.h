// A host emulation of the PTX instructions gamut_tc_mainloop.cuh uses, so that the header's own
// code (loaders, shared-memory layout, pipeline, fragment addressing, accumulator map) runs on
// the CPU, where there is no GPU. A block runs as one std::thread per CUDA thread; warp-wide
// instructions (ldmatrix, mma) meet at a per-warp barrier. The semantics follow the PTX ISA's
// definitions (ldmatrix; "Matrix fragments for mma.m16n8k8 / k16 / k32"), written from the
// element's point of view, independently of the mainloop's addressing. cp.async copies are
// deferred to the cp.async.wait_group that must complete them, so a missing wait shows.
#pragma once
#include <barrier>
#include <cmath>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <mutex>
#include <stdexcept>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/types.h"

// ---- what CUDA C++ provides, for the header ---------------------------------------------------
#define GM_DEV inline
#define GM_TC_INSTRUCTIONS_PROVIDED 1

namespace sim {

struct Dim3 {
  unsigned x, y, z;
};

struct Warp {
  std::barrier<> bar{32};
  unsigned addr[32];
  unsigned a[32][4], b[32][2];
};

// An mbarrier: a phase completes when its arrivals and announced bytes are all in.
struct Mbar {
  int expected = 0, pending = 0;
  int64_t tx = 0;
  unsigned phase = 0;   // phases completed
};

struct Block {
  // `consumers`: the threads gm::tile_sync counts (the block's first ones).
  Block(int threads, size_t smem_bytes, int consumers)
      : bar(threads), tile_bar(consumers), consumers(consumers), warps(size_t(threads / 32)), smem(smem_bytes) {
    for (auto& w : warps) w = std::make_unique<Warp>();
  }
  std::barrier<> bar, tile_bar;
  int consumers;
  std::vector<std::unique_ptr<Warp>> warps;
  std::vector<unsigned char> smem;
  std::mutex mu;                  // the mbarriers and named barriers
  std::condition_variable changed;
  std::map<unsigned, Mbar> mbars;
  std::map<unsigned, std::pair<unsigned, unsigned>> named;  // id -> (threads arrived, generation)
};

// A TMA tensor map as the emulation reads it: 3-d, dims[0] contiguous, byte strides of dims 1
// and 2, a box of box[0] x box[1] x 1 elements written 128-byte swizzled.
struct TensorMap {
  const unsigned char* base;
  int es;
  int64_t dims[3];
  int64_t strides[2];
  int box[2];
  bool tf32 = false;   // the TFLOAT32 type: f32 elements rounded to TF32 as they land
};

struct Copy {
  unsigned dst;
  const unsigned char* src;
  int size, bytes;   // copy `bytes` of `size`, zero-fill the rest
};

struct PendingWgmma {
  float* d;
  int n;
  int kind;   // gm::tc::Kind: F16, BF16 or TF32
  int tnsp_a, tnsp_b;
  unsigned long long desc_a, desc_b;
  bool accumulate;   // false: d = A * B (scale-d 0)
  // A from registers (tf32 only): the thread's two rows g, g + 8 of its warp's 16, k = 0..7,
  // gathered from the warp's fragments when the wgmma was issued.
  bool a_regs = false;
  unsigned a_rows[2][8] = {};
};
inline thread_local std::vector<std::vector<PendingWgmma>> wgmma_groups;   // committed, oldest first
inline thread_local std::vector<PendingWgmma> wgmma_open;

// cp.async copies land at the wait that must complete them (false: catches a missing wait) or
// at once (true: catches a stage overwritten while an asynchronous wgmma may still read it).
inline bool eager_copies = false;

inline thread_local Block* block = nullptr;
inline thread_local unsigned tid = 0;
inline thread_local std::vector<std::vector<Copy>> groups;   // committed, oldest first
inline thread_local std::vector<Copy> open_group;

inline Dim3 thread_idx() { return Dim3{tid, 0, 0}; }
inline Warp& warp() { return *block->warps[tid / 32]; }
inline unsigned char* shared(unsigned addr, int bytes) {
  if (size_t(addr) + size_t(bytes) > block->smem.size()) throw std::runtime_error("shared memory access out of bounds");
  return block->smem.data() + addr;
}

// Runs body() as `threads` threads of one block with `smem_bytes` of shared memory.
template <class Body>
void run_block(int threads, size_t smem_bytes, Body body, int consumers = 0) {
  Block b(threads, smem_bytes, consumers > 0 ? consumers : threads);
  std::memset(b.smem.data(), 0xcd, b.smem.size());   // stale data, not zeros
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      block = &b;
      tid = unsigned(t);
      groups.clear();
      open_group.clear();
      wgmma_groups.clear();
      wgmma_open.clear();
      body();
    });
  for (auto& t : ts) t.join();
}

}  // namespace sim

#define threadIdx (::sim::thread_idx())
inline void __syncthreads() { sim::block->bar.arrive_and_wait(); }
inline void __syncwarp() { sim::warp().bar.arrive_and_wait(); }
[[noreturn]] inline void __trap() { throw std::runtime_error("__trap"); }
inline unsigned __ldg(const unsigned* p) { return *p; }
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
  const uint64_t v = uint64_t(x) | (uint64_t(y) << 32);
  unsigned r = 0;
  for (int i = 0; i < 4; ++i) r |= unsigned((v >> (8 * ((s >> (4 * i)) & 7u))) & 0xffu) << (8 * i);
  return r;
}

namespace gm {

typedef long long i64;
typedef unsigned long long u64;
struct f16 { unsigned short x; };
struct bf16 { unsigned short x; };
struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{x, y, z, w}; }

inline void cp_async_commit() {
  sim::groups.push_back(std::move(sim::open_group));
  sim::open_group.clear();
}
template <int N>
inline void cp_async_wait() {
  while (sim::groups.size() > size_t(N)) {
    for (const sim::Copy& c : sim::groups.front()) {
      unsigned char* d = sim::shared(c.dst, c.size);
      std::memset(d, 0, size_t(c.size));
      if (c.bytes > 0) std::memcpy(d, c.src, size_t(c.bytes));
    }
    sim::groups.erase(sim::groups.begin());
  }
}

namespace tc {

inline unsigned smem_addr(const void* p) {
  return unsigned(static_cast<const unsigned char*>(p) - sim::block->smem.data());
}
inline unsigned lds32(unsigned a) {
  unsigned v;
  std::memcpy(&v, sim::shared(a, 4), 4);
  return v;
}
inline void sts32(unsigned a, unsigned v) { std::memcpy(sim::shared(a, 4), &v, 4); }
inline void sts16(unsigned a, unsigned v) {
  const uint16_t h = uint16_t(v);
  std::memcpy(sim::shared(a, 2), &h, 2);
}
inline void sts8(unsigned a, unsigned v) { *sim::shared(a, 1) = uint8_t(v); }
inline void copy_now(const sim::Copy& c) {
  unsigned char* d = sim::shared(c.dst, c.size);
  std::memset(d, 0, size_t(c.size));
  if (c.bytes > 0) std::memcpy(d, c.src, size_t(c.bytes));
}
inline void cp_async16_zfill(unsigned d, const void* g, int bytes) {
  if (d % 16 != 0 || (bytes > 0 && reinterpret_cast<uintptr_t>(g) % 16 != 0)) throw std::runtime_error("cp.async 16 unaligned");
  const sim::Copy c{d, static_cast<const unsigned char*>(g), 16, bytes};
  if (sim::eager_copies) copy_now(c);
  else sim::open_group.push_back(c);
}
inline void cp_async4_zfill(unsigned d, const void* g, int bytes) {
  if (d % 4 != 0) throw std::runtime_error("cp.async 4 unaligned");
  const sim::Copy c{d, static_cast<const unsigned char*>(g), 4, bytes};
  if (sim::eager_copies) copy_now(c);
  else sim::open_group.push_back(c);
}

// ldmatrix .x4: lane l gives the address of row l % 8 of matrix l / 8; register j of lane l
// gets row l / 4 of matrix j, 16-bit elements 2 (l % 4) and 2 (l % 4) + 1.
inline void ldmatrix_x4(unsigned (&r)[4], unsigned a) {
  sim::Warp& w = sim::warp();
  const unsigned l = sim::tid % 32;
  if (a % 16 != 0) throw std::runtime_error("ldmatrix row address not 16-byte aligned");
  w.addr[l] = a;
  w.bar.arrive_and_wait();
  for (int j = 0; j < 4; ++j) r[j] = lds32(w.addr[8 * j + l / 4] + 4 * (l % 4));
  w.bar.arrive_and_wait();
}
// .trans: register j of lane l gets element (row 2 (l % 4), column l / 4) of matrix j in its low
// half and (row 2 (l % 4) + 1, column l / 4) in its high half.
inline void ldmatrix_x4_trans(unsigned (&r)[4], unsigned a) {
  sim::Warp& w = sim::warp();
  const unsigned l = sim::tid % 32;
  if (a % 16 != 0) throw std::runtime_error("ldmatrix row address not 16-byte aligned");
  w.addr[l] = a;
  w.bar.arrive_and_wait();
  for (int j = 0; j < 4; ++j) {
    uint16_t lo, hi;
    std::memcpy(&lo, sim::shared(w.addr[8 * j + 2 * (l % 4)] + 2 * (l / 4), 2), 2);
    std::memcpy(&hi, sim::shared(w.addr[8 * j + 2 * (l % 4) + 1] + 2 * (l / 4), 2), 2);
    r[j] = unsigned(lo) | (unsigned(hi) << 16);
  }
  w.bar.arrive_and_wait();
}

// Element kinds of the emulated mma.
enum class Kind { F16, BF16, S8, U8, TF32 };

inline double element(Kind k, unsigned reg, int sub) {
  switch (k) {
    case Kind::F16: return gamut::half_to_float(uint16_t(reg >> (16 * sub)));
    case Kind::BF16: return gamut::bf16_to_float(uint16_t(reg >> (16 * sub)));
    case Kind::S8: return double(int8_t(uint8_t(reg >> (8 * sub))));
    case Kind::U8: return double(uint8_t(reg >> (8 * sub)));
    case Kind::TF32: {   // the instruction reads 19 bits: sign, exponent, 10 mantissa bits
      const unsigned bits = reg & 0xffffe000u;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
  }
  return 0;
}

// m16n8kK: A(row, k) and B(k, col) as (lane, register, sub-element) of the fragments.
inline double a_at(Kind kind, const unsigned (&a)[32][4], int row, int k) {
  const int g = row % 8, h = row / 8;
  if (kind == Kind::TF32) return element(kind, a[g * 4 + k % 4][h + 2 * (k / 4)], 0);
  if (kind == Kind::S8 || kind == Kind::U8) return element(kind, a[g * 4 + (k % 16) / 4][h + 2 * (k / 16)], k % 4);
  return element(kind, a[g * 4 + (k % 8) / 2][h + 2 * (k / 8)], k % 2);
}
inline double b_at(Kind kind, const unsigned (&b)[32][2], int k, int col) {
  if (kind == Kind::TF32) return element(kind, b[col * 4 + k % 4][k / 4], 0);
  if (kind == Kind::S8 || kind == Kind::U8) return element(kind, b[col * 4 + (k % 16) / 4][k / 16], k % 4);
  return element(kind, b[col * 4 + (k % 8) / 2][k / 8], k % 2);
}

// D = A B + C on one m16n8 tile; C/D register r of lane l is (row l/4 + 8 (r/2), col 2 (l%4) + r%2).
template <class Acc>
inline void mma(Kind ka, Kind kb, int kk, Acc& d0, Acc& d1, Acc& d2, Acc& d3, const unsigned (&a)[4],
                const unsigned (&b)[2]) {
  sim::Warp& w = sim::warp();
  const unsigned l = sim::tid % 32;
  std::memcpy(w.a[l], a, sizeof a);
  std::memcpy(w.b[l], b, sizeof b);
  w.bar.arrive_and_wait();
  Acc* d[4] = {&d0, &d1, &d2, &d3};
  for (int r = 0; r < 4; ++r) {
    const int row = int(l / 4) + 8 * (r / 2), col = 2 * int(l % 4) + r % 2;
    double s = 0;
    for (int k = 0; k < kk; ++k) s += a_at(ka, w.a, row, k) * b_at(kb, w.b, k, col);
    if constexpr (sizeof(Acc) == 4 && Acc(0.5) == Acc(0)) *d[r] = Acc(uint32_t(*d[r]) + uint32_t(int64_t(s)));
    else *d[r] = Acc(double(*d[r]) + s);
  }
  w.bar.arrive_and_wait();
}

struct MathF16 {
  typedef f16 A;
  typedef f16 B;
  typedef float Acc;
  static constexpr int kK = 16, kPasses = 1;
  static void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
    tc::mma(Kind::F16, Kind::F16, 16, d0, d1, d2, d3, a, b);
  }
};
struct MathBF16 {
  typedef bf16 A;
  typedef bf16 B;
  typedef float Acc;
  static constexpr int kK = 16, kPasses = 1;
  static void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
    tc::mma(Kind::BF16, Kind::BF16, 16, d0, d1, d2, d3, a, b);
  }
};
template <class SA, class SB>
struct MathI8 {
  typedef SA A;
  typedef SB B;
  typedef int Acc;
  static constexpr int kK = 32, kPasses = 1;
  static void mma(int& d0, int& d1, int& d2, int& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
    tc::mma(SA(-1) < SA(0) ? Kind::S8 : Kind::U8, SB(-1) < SB(0) ? Kind::S8 : Kind::U8, 32, d0, d1, d2, d3, a, b);
  }
};
struct MathTf32 {
  typedef float A;
  typedef float B;
  typedef float Acc;
  static constexpr int kK = 8, kPasses = 1;
  static void mma(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4], const unsigned (&b)[2]) {
    tc::mma(Kind::TF32, Kind::TF32, 8, d0, d1, d2, d3, a, b);
  }
};
struct MathTf32x3 : MathTf32 {
  static constexpr int kPasses = 3;
};

// cvt.rna.tf32.f32: round to 10 mantissa bits, ties away from zero (finite values).
inline unsigned to_tf32(unsigned x) { return (x + 0x1000u) & 0xffffe000u; }
template <int N>
inline void round_tf32(unsigned (&x)[N]) {
  for (int r = 0; r < N; ++r) x[r] = to_tf32(x[r]);
}
template <int N>
inline void split_tf32(unsigned (&x)[N], unsigned (&small)[N]) {
  for (int r = 0; r < N; ++r) {
    const unsigned big = to_tf32(x[r]);
    float fx, fb;
    std::memcpy(&fx, &x[r], 4);
    std::memcpy(&fb, &big, 4);
    const float d = fx - fb;
    unsigned db;
    std::memcpy(&db, &d, 4);
    small[r] = to_tf32(db);
    x[r] = big;
  }
}

// The small part beside an untouched big one (the instruction truncates x to TF32): the
// difference x - trunc(x), rounded to TF32 to nearest (ties away); 0 for infinities and NaN.
template <int N>
inline void small_tf32_of_truncated(const unsigned (&x)[N], unsigned (&small)[N]) {
  for (int r = 0; r < N; ++r) {
    float fx, ft;
    const unsigned t = x[r] & 0xffffe000u;
    std::memcpy(&fx, &x[r], 4);
    std::memcpy(&ft, &t, 4);
    if (!std::isfinite(fx)) {
      small[r] = 0;
      continue;
    }
    const float d = fx - ft;
    unsigned db;
    std::memcpy(&db, &d, 4);
    small[r] = to_tf32(db);
  }
}

// ---- wgmma (gamut_tc_wgmma_ops.cuh): executed when the wait that must complete it comes, from
// the shared memory of that moment, so a stage overwritten too early shows.
using sim::PendingWgmma;
using sim::wgmma_groups;
using sim::wgmma_open;

// Byte address of element (p, k) of a 128-byte-swizzled operand: k-major (rows p of 128 bytes,
// 8-row atoms SBO apart) or p-major (128-byte blocks of p LBO apart, 8-k-row groups SBO apart);
// the swizzle XORs address bits 4-6 with bits 7-9.
// (es: element bytes; p-major operands are 16-bit.)
inline unsigned swizzled_address(u64 desc, bool p_major, int p, int k, int es) {
  if ((desc >> 62) != 1) throw std::runtime_error("wgmma descriptor: not the 128-byte swizzle");
  const unsigned start = unsigned(desc & 0x3fffu) << 4, lbo = unsigned((desc >> 16) & 0x3fffu) << 4,
                 sbo = unsigned((desc >> 32) & 0x3fffu) << 4;
  const unsigned a = p_major ? start + unsigned(p / 64) * lbo + unsigned(k / 8) * sbo + unsigned(k % 8) * 128 + unsigned(p % 64) * 2
                             : start + unsigned(p / 8) * sbo + unsigned(p % 8) * 128 + unsigned(k * es);
  return a ^ (((a >> 7) & 7u) << 4);
}

inline void run_wgmma(const PendingWgmma& w) {
  const unsigned t = sim::tid % 128;
  const Kind kind = Kind(w.kind);
  const int es = kind == Kind::TF32 ? 4 : 2, kk = 32 / es;
  if (kind == Kind::TF32 && (w.tnsp_a || w.tnsp_b)) throw std::runtime_error("tf32 wgmma with a transposed operand");
  auto at = [&](u64 desc, bool p_major, int p, int k) {
    unsigned v = 0;
    std::memcpy(&v, sim::shared(swizzled_address(desc, p_major, p, k, es), es), size_t(es));
    return element(kind, v, 0);
  };
  for (int i = 0; i < w.n / 8; ++i)
    for (int r = 0; r < 4; ++r) {
      const int row = int(t / 32) * 16 + int(t % 32) / 4 + 8 * (r / 2), col = 8 * i + 2 * int(t % 4) + r % 2;
      double s = 0;
      for (int k = 0; k < kk; ++k)
        s += (w.a_regs ? element(kind, w.a_rows[r / 2][k], 0) : at(w.desc_a, w.tnsp_a != 0, row, k)) *
             at(w.desc_b, w.tnsp_b != 0, col, k);
      w.d[4 * i + r] = float((w.accumulate ? double(w.d[4 * i + r]) : 0.0) + s);
    }
}

inline void fence_proxy_async() {}
inline void wgmma_fence() {}
inline void wgmma_commit() {
  wgmma_groups.push_back(std::move(wgmma_open));
  wgmma_open.clear();
}
// (wgmma.wait_group is warp-wide: the lanes leave it together.)
template <int N>
inline void wgmma_wait() {
  while (wgmma_groups.size() > size_t(N)) {
    for (const PendingWgmma& w : wgmma_groups.front()) run_wgmma(w);
    wgmma_groups.erase(wgmma_groups.begin());
  }
  sim::warp().bar.arrive_and_wait();
}
template <int N, class T, int TNSP_A, int TNSP_B>
inline void wgmma_f32(float (&d)[N / 2], u64 desc_a, u64 desc_b, bool accumulate = true) {
  const Kind k = sizeof(T) == 4 ? Kind::TF32 : std::is_same_v<T, bf16> ? Kind::BF16 : Kind::F16;
  wgmma_open.push_back({d, N, int(k), TNSP_A, TNSP_B, desc_a, desc_b, accumulate});
}
// A from registers: the warp's lanes meet to hand each other their fragments (PTX's register
// layout for m64nNk8 tf32 A, written independently of the mainloop: lane 4g + t holds
// a[0] = (g, t), a[1] = (g + 8, t), a[2] = (g, t + 4), a[3] = (g + 8, t + 4)).
inline void wgmma_tf32_rs_n128(float (&d)[64], const unsigned (&a)[4], u64 desc_b, bool accumulate = true) {
  sim::Warp& w = sim::warp();
  const unsigned lane = sim::tid % 32;
  for (int v = 0; v < 4; ++v) w.a[lane][v] = a[v];
  w.bar.arrive_and_wait();
  PendingWgmma p{d, 128, int(Kind::TF32), 0, 0, 0, desc_b, accumulate};
  p.a_regs = true;
  const unsigned g = lane / 4;
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 8; ++k) p.a_rows[h][k] = w.a[4 * g + unsigned(k % 4)][h + 2 * (k / 4)];
  w.bar.arrive_and_wait();   // (the table is the warp's, reused by the next instruction)
  wgmma_open.push_back(p);
}
template <int N>
inline void fence_registers(float (&)[N]) {}   // a compiler fence: nothing to emulate

// ---- mbarriers and TMA (gamut_tma_ops.cuh). A phase completes when its arrivals and
// announced bytes are in; a box lands in shared memory when issued, 128-byte swizzled, zeros
// outside the tensor, and then completes its bytes on the barrier.
inline void mbar_complete_if_done(sim::Mbar& m) {
  if (m.pending == 0 && m.tx == 0) {
    ++m.phase;
    m.pending = m.expected;
    sim::block->changed.notify_all();
  }
}
inline sim::Mbar& mbar_at(unsigned bar) {
  auto it = sim::block->mbars.find(bar);
  if (it == sim::block->mbars.end()) throw std::runtime_error("mbarrier used before mbarrier.init");
  return it->second;
}
inline void mbar_init(unsigned bar, unsigned count) {
  std::lock_guard<std::mutex> l(sim::block->mu);
  sim::Mbar& m = sim::block->mbars[bar];
  m.expected = m.pending = int(count);
  m.tx = 0;
  m.phase = 0;
}
inline void mbar_fence_init() {}
// Clusters are not emulated: the mainloop's CLUSTER 2 paths run on the device only.
inline unsigned cluster_rank() { throw std::runtime_error("clusters are not emulated"); }
inline void cluster_sync() { throw std::runtime_error("clusters are not emulated"); }
inline void mbar_arrive_remote(unsigned, unsigned) { throw std::runtime_error("clusters are not emulated"); }
inline void tma_load_3d_multicast(unsigned, const void*, int, int, int, unsigned, unsigned short) {
  throw std::runtime_error("clusters are not emulated");
}
template <int N>
inline void regs_dec() {}   // (registers: nothing to emulate)
template <int N>
inline void regs_inc() {}
inline void mbar_arrive_expect_tx(unsigned bar, unsigned bytes) {
  std::lock_guard<std::mutex> l(sim::block->mu);
  sim::Mbar& m = mbar_at(bar);
  m.tx += bytes;
  if (--m.pending < 0) throw std::runtime_error("mbarrier: more arrivals than its count");
  mbar_complete_if_done(m);
}
inline void mbar_arrive(unsigned bar) {
  std::lock_guard<std::mutex> l(sim::block->mu);
  sim::Mbar& m = mbar_at(bar);
  if (--m.pending < 0) throw std::runtime_error("mbarrier: more arrivals than its count");
  mbar_complete_if_done(m);
}
inline bool mbar_try_wait(unsigned bar, unsigned parity) {
  std::lock_guard<std::mutex> l(sim::block->mu);
  return (mbar_at(bar).phase & 1u) != parity;
}
// A wait not done after this long is a deadlock of the emulated block (a broken order of
// barriers): it throws (the test process ends with the message) rather than hanging until ctest's timeout.
constexpr std::chrono::seconds kDeadlock{120};
inline void mbar_wait(unsigned bar, unsigned parity) {
  std::unique_lock<std::mutex> l(sim::block->mu);
  if (!sim::block->changed.wait_for(l, kDeadlock, [&] { return (mbar_at(bar).phase & 1u) != parity; }))
    throw std::runtime_error("mbarrier wait: not done in 120 s (a deadlock of the emulated block)");
}
// Named barriers (bar.sync / bar.arrive): a generation completes after `count` threads.
inline unsigned named_bar_count_in(unsigned id, unsigned count) {
  auto& [arrived, generation] = sim::block->named[id];
  const unsigned g = generation;
  if (++arrived == count) {
    arrived = 0;
    ++generation;
    sim::block->changed.notify_all();
  }
  return g;
}
inline void named_bar_arrive(unsigned id, unsigned count) {
  std::lock_guard<std::mutex> l(sim::block->mu);
  named_bar_count_in(id, count);
}
inline void named_bar_sync(unsigned id, unsigned count) {
  std::unique_lock<std::mutex> l(sim::block->mu);
  const unsigned g = named_bar_count_in(id, count);
  if (!sim::block->changed.wait_for(l, kDeadlock, [&] { return sim::block->named[id].second != g; }))
    throw std::runtime_error("named barrier " + std::to_string(id) +
                             ": not done in 120 s (a deadlock of the emulated block)");
}
inline void tma_load_3d(unsigned dst, const void* map, int c0, int c1, int c2, unsigned bar) {
  const sim::TensorMap& t = *static_cast<const sim::TensorMap*>(map);
  if (t.box[0] * t.es != 128) throw std::runtime_error("TMA emulation: 128-byte swizzle needs 128-byte box rows");
  if (dst % 1024 != 0) throw std::runtime_error("TMA emulation: a 128-byte-swizzled box starts 1024-byte aligned");
  const int bytes = t.box[0] * t.box[1] * t.es;
  unsigned char* d = sim::shared(dst, bytes);
  for (int y = 0; y < t.box[1]; ++y)
    for (int x = 0; x < t.box[0]; ++x) {
      const int64_t g0 = int64_t(c0) + x, g1 = int64_t(c1) + y;
      const unsigned o = unsigned((y * t.box[0] + x) * t.es), sw = o ^ (((o >> 7) & 7u) << 4);
      if (g0 >= 0 && g0 < t.dims[0] && g1 >= 0 && g1 < t.dims[1] && c2 >= 0 && c2 < t.dims[2]) {
        std::memcpy(d + sw, t.base + c2 * t.strides[1] + g1 * t.strides[0] + g0 * t.es, size_t(t.es));
        if (t.tf32) {
          unsigned v;
          std::memcpy(&v, d + sw, 4);
          v = (v + 0x1000u) & 0xffffe000u;   // (to_tf32, defined below: nearest, ties away)
          std::memcpy(d + sw, &v, 4);
        }
      } else
        std::memset(d + sw, 0, size_t(t.es));
    }
  std::lock_guard<std::mutex> l(sim::block->mu);
  sim::Mbar& m = mbar_at(bar);
  m.tx -= bytes;
  mbar_complete_if_done(m);
}

}  // namespace tc

template <int THREADS>
inline void tile_sync() {
  if (THREADS != sim::block->consumers) throw std::runtime_error("tile_sync: not the block's consumer count");
  if (int(sim::tid) >= THREADS) throw std::runtime_error("tile_sync in a thread it does not count");
  sim::block->tile_bar.arrive_and_wait();
}

}  // namespace gm
