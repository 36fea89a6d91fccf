// The tensor-core mainloop's own code (src/cuda/device/mainloop/gamut_tc_mainloop.cuh) on the CPU, over
// a host emulation of its PTX instructions (tensor_sim.h): the loaders, shared-memory layouts,
// cp.async pipeline, fragment addressing and accumulator map of every math and orientation,
// checked against the same reference as the GPU test. No GPU needed: this runs in CI, where the
// GPU test skips. (What it cannot check: the real instructions' timing, bank conflicts, and
// the emulation's fidelity to the PTX ISA, which the GPU test covers.)
#include <gtest/gtest.h>

#include "tensor_sim.h"   // first: it provides the instructions and CUDA's names

#include <type_traits>

#include "cuda/device/mainloop/gamut_tc_mainloop.cuh"
#include "cuda/device/mainloop/gamut_tc_wgmma.cuh"
#include "cuda/device/mainloop/gamut_tc_wgmma_tma.cuh"
#include "tensor_mainloop_driver.h"

using namespace gamut;
using namespace gamut::testtc;

namespace {

struct AlignedBytes {
  explicit AlignedBytes(const std::vector<std::byte>& v) : n(std::max<size_t>(v.size(), 1)) {
    p = static_cast<std::byte*>(::operator new(n, std::align_val_t(64)));
    std::memcpy(p, v.data(), v.size());
  }
  ~AlignedBytes() { ::operator delete(p, std::align_val_t(64)); }
  AlignedBytes(const AlignedBytes&) = delete;
  AlignedBytes& operator=(const AlignedBytes&) = delete;
  size_t n;
  std::byte* p;
};

// The mainloop of a shape: mma.sync for TcShape, wgmma for WgShape (fed by TMA with TMA).
template <class Math, class Shape, bool A_KC, bool B_KC, bool TMA>
struct MainloopOf {
  typedef gm::tc::Mainloop<Math, Shape, A_KC, B_KC> type;
  static constexpr int kThreads = Shape::THREADS;
};
template <class Math, int BM, int BN, int S, int ES, bool A_KC, bool B_KC, bool TMA>
struct MainloopOf<Math, gm::tc::WgShape<BM, BN, S, ES>, A_KC, B_KC, TMA> {
  typedef gm::tc::WgShape<BM, BN, S, ES> Shape;
  typedef std::conditional_t<TMA, gm::tc::WgmmaTmaMainloop<Math, Shape, A_KC, B_KC>,
                             gm::tc::WgmmaMainloop<Math, Shape, A_KC, B_KC>>
      type;
  static constexpr int kThreads = TMA ? Shape::THREADS + 128 : Shape::THREADS;
};

// The tensor map of one operand laid out by lay_out (the host's encode_tile_map, emulated; f32
// maps of the tf32 math round to TF32 as the TFLOAT32 type does).
sim::TensorMap tensor_map(const Layout& l, const std::byte* base, DType t, int batch, int p_extent, int k_extent,
                          bool kc, int box_p, bool tf32) {
  const int es = int(dtype_size(t));
  sim::TensorMap m{reinterpret_cast<const unsigned char*>(base), es, {}, {}, {}, tf32};
  m.dims[0] = kc ? k_extent : p_extent;
  m.dims[1] = kc ? p_extent : k_extent;
  m.dims[2] = batch;
  m.strides[0] = l.ld * es;
  m.strides[1] = l.bstride * es;
  m.box[0] = 128 / es;
  m.box[1] = kc ? box_p : 64;
  return m;
}

// A problem's operands as the mainloops read them: laid out (lay_out) in aligned memory.
struct SimOperands {
  Layout la, lb;
  AlignedBytes da, db;
  SimOperands(const Problem& p, DType ta, DType tb, bool a_kc, bool b_kc, bool aligned)
      : la(lay_out(ta, p.batch, p.rows, p.red, a_kc, aligned, a_kc ? p.red_begin : p.row_begin,
                   [&](int b, int i, int k) { return p.at(p.a, b, i, k, p.red, p.rows); })),
        lb(lay_out(tb, p.batch, p.cols, p.red, b_kc, aligned, b_kc ? p.red_begin : p.col_begin,
                   [&](int b, int j, int k) { return p.at(p.b, b, k, j, p.cols, p.red); })),
        da(la.bytes),
        db(lb.bytes) {}
};

// One tile's accumulators (Map's order) into the raw output, where they lie in the problem.
template <class Map, class Acc>
void store_tile(std::vector<uint32_t>& raw, const Problem& p, int bz, int i0, int j0, const Acc* acc) {
  for (int m = 0; m < Map::kRows; ++m) {
    const int i = i0 + Map::row(m);
    if (i >= p.rows) continue;
    for (int n = 0; n < Map::kCols; ++n) {
      const int j = j0 + Map::col(n);
      if (j < p.cols) std::memcpy(&raw[(size_t(bz) * size_t(p.rows) + size_t(i)) * size_t(p.cols) + size_t(j)],
                                  &acc[Map::index(m, n)], 4);
    }
  }
}

// The test kernel of tensor_mainloop_driver.h, as host code: every block of the grid.
template <class Math, class Shape, bool A_KC, bool B_KC, bool TMA = false>
Outcome run_sim(const Problem& p, DType ta, DType tb, bool aligned, bool exact, double tol,
                const Reference* given = nullptr) {
  typedef MainloopOf<Math, Shape, A_KC, B_KC, TMA> Of;
  typedef typename Of::type ML;
  const SimOperands ops(p, ta, tb, A_KC, B_KC, aligned);
  const Layout &la = ops.la, &lb = ops.lb;
  const AlignedBytes &da = ops.da, &db = ops.db;
  const bool int_acc = sizeof(typename ML::Acc) == 4 && typename ML::Acc(0.5) == typename ML::Acc(0);
  const uint32_t poison = int_acc ? 0x5a5a5a5au : 0xffffffffu;
  const size_t n_out = size_t(p.batch) * size_t(p.rows) * size_t(p.cols);
  std::vector<uint32_t> raw(n_out + 64, poison);
  const int tiles_m = (p.rows - p.row_begin + Shape::BM - 1) / Shape::BM;
  const int tiles_n = (p.cols - p.col_begin + Shape::BN - 1) / Shape::BN;
  for (int bz = 0; bz < p.batch; ++bz)
    for (int bx = 0; bx < tiles_m; ++bx)
      for (int by = 0; by < tiles_n; ++by)
        sim::run_block(Of::kThreads, ML::SMEM_BYTES, [&] {
          const int i0 = p.row_begin + bx * Shape::BM, j0 = p.col_begin + by * Shape::BN;
          typename ML::Acc acc[ML::kAcc];
          for (auto& v : acc) v = 0;
          if constexpr (TMA) {
            const bool tf32 = Math::kK == 8 && Math::kPasses == 1;
            const sim::TensorMap ma = tensor_map(la, da.p, ta, p.batch, p.rows, p.red, A_KC, Shape::BM, tf32),
                                 mb = tensor_map(lb, db.p, tb, p.batch, p.cols, p.red, B_KC, Shape::BN, tf32);
            ML::run(acc, sim::block->smem.data(), gm::tc::TmaOperand{&ma, i0, bz}, gm::tc::TmaOperand{&mb, j0, bz},
                    p.red_begin, p.red);
            if (ML::producer()) return;
          } else {
            const gm::tc::TcOperand op_a{da.p + int64_t(bz) * la.bstride * int64_t(dtype_size(ta)), la.ld, i0, p.rows,
                                         la.vec};
            const gm::tc::TcOperand op_b{db.p + int64_t(bz) * lb.bstride * int64_t(dtype_size(tb)), lb.ld, j0, p.cols,
                                         lb.vec};
            ML::run(acc, sim::block->smem.data(), op_a, op_b, p.red_begin, p.red);
          }
          if (!sim::wgmma_groups.empty() || !sim::wgmma_open.empty())
            throw std::runtime_error("the mainloop returned with wgmma products pending");
          store_tile<typename ML::Map>(raw, p, bz, i0, j0, acc);
        }, Shape::THREADS);
  return compare(p, given ? *given : reference(p), raw, poison, int_acc, exact, tol);
}

// Persistent blocks (KernelInfo::persistent): `blocks` blocks each run a contiguous run of the
// problem's tiles, the producer's issuer() issuing all their slices (tf32x3: its splitters
// splitting them) into one stage ring and the consumers taking them tile after tile (init /
// produce / consume), the ring's phases carried across tiles. Resident B (PANEL > 0): the tiles
// go in band order (rows fastest, as the generated kernel's schedule), so that a block's run
// crosses bands mid-way: B's slices are loaded once per band, A's stream through the ring, and
// bfull / bempty turn at every band change. Without it, columns first.
// What the persistent emulations share: the TMA-read operands and their tensor maps, the
// poisoned output, the grid of BM x BN tiles (batch instances included).
template <class Math, class Shape, bool A_KC, bool B_KC>
struct TmaTiles {
  static constexpr uint32_t kPoison = 0xffffffffu;
  static constexpr bool kTf32 = Math::kK == 8 && Math::kPasses == 1;
  const SimOperands ops;
  std::vector<uint32_t> raw;
  const int tiles_m, tiles_n, tiles_all;
  const sim::TensorMap ma, mb;
  TmaTiles(const Problem& p, DType ta, DType tb)
      : ops(p, ta, tb, A_KC, B_KC, true),
        raw(size_t(p.batch) * size_t(p.rows) * size_t(p.cols) + 64, kPoison),
        tiles_m((p.rows - p.row_begin + Shape::BM - 1) / Shape::BM),
        tiles_n((p.cols - p.col_begin + Shape::BN - 1) / Shape::BN),
        tiles_all(p.batch * tiles_m * tiles_n),
        ma(tensor_map(ops.la, ops.da.p, ta, p.batch, p.rows, p.red, A_KC, Shape::BM, kTf32)),
        mb(tensor_map(ops.lb, ops.db.p, tb, p.batch, p.cols, p.red, B_KC, Shape::BN, kTf32)) {}
};

template <class Math, class Shape, bool A_KC, bool B_KC, int PANEL = 0>
Outcome run_sim_persistent(const Problem& p, DType ta, DType tb, bool exact, double tol, int blocks = 1) {
  typedef gm::tc::WgmmaTmaMainloop<Math, Shape, A_KC, B_KC, 1, PANEL> ML;
  TmaTiles<Math, Shape, A_KC, B_KC> t(p, ta, tb);
  const int tiles_m = t.tiles_m, tiles_n = t.tiles_n, tiles_all = t.tiles_all;
  std::vector<uint32_t>& raw = t.raw;
  const sim::TensorMap &ma = t.ma, &mb = t.mb;
  for (int blk = 0; blk < blocks; ++blk) {
    const int lo = int(int64_t(blk) * tiles_all / blocks), hi = int(int64_t(blk + 1) * tiles_all / blocks);
    sim::run_block(
        ML::BLOCK_THREADS, ML::SMEM_BYTES,
        [&] {
          void* smem = sim::block->smem.data();
          ML::init(smem);
          unsigned slice = 0;
          gm::tc::Bands bands;
          for (int tile = lo; tile < hi; ++tile) {
            const int bz = tile / (tiles_m * tiles_n), in = tile % (tiles_m * tiles_n);
            const int bx = PANEL > 0 ? in % tiles_m : in / tiles_n, by = PANEL > 0 ? in / tiles_m : in % tiles_n;
            const int i0 = p.row_begin + bx * Shape::BM, j0 = p.col_begin + by * Shape::BN;
            const bool new_band = tile == lo || tile % tiles_m == 0;  // (read with PANEL only)
            const bool band_ends = tile + 1 == hi || (tile + 1) % tiles_m == 0;
            if (ML::producer()) {
              if (ML::feeds())
                ML::produce(smem, gm::tc::TmaOperand{&ma, i0, bz}, gm::tc::TmaOperand{&mb, j0, bz}, p.red_begin,
                            p.red, slice, bands, new_band);
              continue;
            }
            typename ML::Acc acc[ML::kAcc];
            for (auto& v : acc) v = -7.0f;  // consume sets them: stale values must not show
            ML::consume(acc, smem, p.red_begin, p.red, slice, bands, new_band, band_ends);
            if (!sim::wgmma_groups.empty() || !sim::wgmma_open.empty())
              throw std::runtime_error("consume returned with wgmma products pending");
            store_tile<typename ML::Map>(raw, p, bz, i0, j0, acc);
          }
        },
        Shape::THREADS);
  }
  return compare(p, reference(p), raw, t.kPoison, false, exact, tol);
}

// Ping-pong consumer groups (GROUPS 2): `blocks` blocks each run tiles blk, + blocks, ...;
// the producer loads all of them in order, group g consumes every other one (g, g + 2, ...),
// the groups' products taking turns (wait_turn / end_turn). The emulated mbarriers keep phase
// parity as the hardware does, so a group that waited two phases ahead would read a stale stage.
template <class Math, class Shape, bool A_KC, bool B_KC>
Outcome run_sim_pingpong(const Problem& p, DType ta, DType tb, bool exact, double tol, int blocks) {
  typedef gm::tc::WgmmaTmaMainloop<Math, Shape, A_KC, B_KC, 1, 0, 0, 2> ML;
  static_assert(Shape::BM == 64 && ML::BLOCK_THREADS == 384, "two groups of one warpgroup and the producer");
  TmaTiles<Math, Shape, A_KC, B_KC> t(p, ta, tb);
  const int tiles_m = t.tiles_m, tiles_n = t.tiles_n, tiles_all = t.tiles_all;
  std::vector<uint32_t>& raw = t.raw;
  const sim::TensorMap &ma = t.ma, &mb = t.mb;
  auto corner = [&](int tile, int& bz, int& i0, int& j0) {
    bz = tile / (tiles_m * tiles_n);
    const int in = tile % (tiles_m * tiles_n);
    i0 = p.row_begin + in / tiles_n * Shape::BM;
    j0 = p.col_begin + in % tiles_n * Shape::BN;
  };
  for (int blk = 0; blk < blocks; ++blk)
    sim::run_block(
        ML::BLOCK_THREADS, ML::SMEM_BYTES,
        [&] {
          void* smem = sim::block->smem.data();
          ML::init(smem);
          unsigned slice = 0;
          int bz, i0, j0;
          if (ML::producer()) {
            if (ML::feeds())
              for (int tile = blk; tile < tiles_all; tile += blocks) {
                corner(tile, bz, i0, j0);
                ML::produce(smem, gm::tc::TmaOperand{&ma, i0, bz}, gm::tc::TmaOperand{&mb, j0, bz}, p.red_begin,
                            p.red, slice);
              }
            return;
          }
          const int g = ML::group();
          if (g > 0) ML::pass_over(slice, p.red_begin, p.red);
          for (int tile = blk + g * blocks; tile < tiles_all; tile += 2 * blocks) {
            typename ML::Acc acc[ML::kAcc];
            for (auto& v : acc) v = -7.0f;  // consume sets them: stale values must not show
            ML::wait_turn(tile == blk);
            ML::consume(acc, smem, p.red_begin, p.red, slice);
            ML::end_turn(tile + blocks >= tiles_all);
            ML::pass_over(slice, p.red_begin, p.red);
            corner(tile, bz, i0, j0);
            // (The mainloop's map places a thread by its warpgroup, 64 rows apart; a group's tile
            // is its own 64 rows: the generated kernel's map takes the thread's place in its group.)
            store_tile<typename ML::Map>(raw, p, bz, i0 - 64 * g, j0, acc);
          }
        },
        2 * Shape::THREADS);
  return compare(p, reference(p), raw, t.kPoison, false, exact, tol);
}

struct SimShape {
  int rows, cols, red, batch, row_begin, col_begin, red_begin;
  bool small, aligned;
};
// Edges in every direction, k past a slice and not a multiple of the instruction's k, ranges
// from 3 / 5 / 9, batches; aligned (cp.async) and unaligned (element) copies.
const SimShape kSimShapes[] = {
    {7, 7, 7, 1, 0, 0, 0, true, false},
    {40, 72, 77, 1, 3, 5, 9, true, true},
    {33, 65, 100, 2, 0, 0, 0, false, true},
    {20, 36, 45, 1, 0, 0, 0, true, false},
};

template <class Math, class Shape, bool A_KC, bool B_KC, bool TMA = false>
void check_orientation(DType ta, DType tb, double tol, const char* name) {
  for (const SimShape& s : kSimShapes) {
    if (TMA && !s.aligned) continue;   // TMA reads 16-byte aligned rows only (the engine checks)
    SCOPED_TRACE(std::string(name) + (A_KC ? " X[i,k]" : " X[k,i]") + (B_KC ? " Y[j,k] " : " Y[k,j] ") +
                 std::to_string(s.rows) + "x" + std::to_string(s.cols) + "x" + std::to_string(s.red) +
                 (s.aligned ? " aligned" : " unaligned") + (s.small ? " small integers" : " random"));
    const bool int8 = ta == DType::I8 || ta == DType::U8;
    const Problem p = make_problem(ta, tb, s.rows, s.cols, s.red, s.batch, s.small && !int8, 5u + unsigned(s.red),
                                   s.row_begin, s.col_begin, s.red_begin);
    const Outcome o = run_sim<Math, Shape, A_KC, B_KC, TMA>(p, ta, tb, s.aligned, s.small || int8, tol);
    EXPECT_TRUE(o.guard_intact);
    EXPECT_EQ(o.wrong, 0) << "first: " << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
    EXPECT_GT(o.ref_nonzero, 0);
    EXPECT_GT(o.nonzero, 0);
  }
}

// A small tile (2 warps, 32 x 32) so that the emulation stays quick, every orientation.
template <class Math, int BK>
void check_math(DType ta, DType tb, double tol, const char* name) {
  typedef gm::tc::TcShape<32, 32, BK, 1, 2, 3> Small;
  check_orientation<Math, Small, true, true>(ta, tb, tol, name);
  check_orientation<Math, Small, true, false>(ta, tb, tol, name);
  check_orientation<Math, Small, false, true>(ta, tb, tol, name);
  check_orientation<Math, Small, false, false>(ta, tb, tol, name);
}

}  // namespace

TEST(TensorMainloopSim, BF16) { check_math<gm::tc::MathBF16, 32>(DType::BF16, DType::BF16, 1e-5, "bf16"); }
TEST(TensorMainloopSim, F16) { check_math<gm::tc::MathF16, 32>(DType::F16, DType::F16, 1e-5, "f16"); }
TEST(TensorMainloopSim, I8) { check_math<gm::tc::MathI8<signed char, signed char>, 64>(DType::I8, DType::I8, 0, "i8"); }
TEST(TensorMainloopSim, U8xI8) {
  check_math<gm::tc::MathI8<unsigned char, signed char>, 64>(DType::U8, DType::I8, 0, "u8xi8");
}
TEST(TensorMainloopSim, Tf32) { check_math<gm::tc::MathTf32, 16>(DType::F32, DType::F32, 1.1e-3, "tf32"); }
TEST(TensorMainloopSim, Tf32x3) { check_math<gm::tc::MathTf32x3, 16>(DType::F32, DType::F32, 1e-5, "tf32x3"); }

// The production tile shape (8 warps, 128 x 128, 4 stages) on one problem per element size.
TEST(TensorMainloopSim, LargeTile) {
  typedef gm::tc::TcShape<128, 128, 32, 2, 4, 4> Bf16Tile;
  typedef gm::tc::TcShape<128, 128, 64, 2, 4, 4> I8Tile;
  const Problem p = make_problem(DType::BF16, DType::BF16, 130, 136, 150, 1, true, 3);
  Outcome o = run_sim<gm::tc::MathBF16, Bf16Tile, true, false>(p, DType::BF16, DType::BF16, true, true, 0);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_EQ(o.unwritten, 0);
  const Problem q = make_problem(DType::I8, DType::I8, 130, 136, 150, 1, false, 4);
  o = run_sim<gm::tc::MathI8<signed char, signed char>, I8Tile, false, false>(q, DType::I8, DType::I8, true, true, 0);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_EQ(o.unwritten, 0);
}

// The emulation and comparison can fail: one operand element changed after the reference was
// taken makes a row of results wrong.
TEST(TensorMainloopSim, DetectsAChangedElement) {
  typedef gm::tc::TcShape<32, 32, 32, 1, 2, 3> Small;
  Problem p = make_problem(DType::BF16, DType::BF16, 20, 20, 40, 1, true, 9);
  const Reference ref = reference(p);
  p.a[size_t(3 * 40 + 37)] += 1;   // A[3, 37]: in the last, partial k-slice
  const Outcome o = run_sim<gm::tc::MathBF16, Small, true, false>(p, DType::BF16, DType::BF16, true, true, 0, &ref);
  int64_t nonzero_b = 0;
  for (int j = 0; j < 20; ++j) nonzero_b += p.b[size_t(37 * 20 + j)] != 0;
  EXPECT_EQ(o.wrong, nonzero_b) << "row 3 differs where B[37, j] != 0";
  EXPECT_GT(o.wrong, 0);
}

// The wgmma mainloop (gamut_tc_wgmma.cuh): swizzled tiles, descriptors and the asynchronous
// pipeline, every orientation, one and two warpgroups.
template <class Math, class Shape>
void check_wgmma(DType t, const char* name) {
  for (bool eager : {false, true}) {   // copies landing as late and as early as allowed
    sim::eager_copies = eager;
    check_orientation<Math, Shape, true, true>(t, t, 1e-5, name);
    check_orientation<Math, Shape, true, false>(t, t, 1e-5, name);
    check_orientation<Math, Shape, false, true>(t, t, 1e-5, name);
    check_orientation<Math, Shape, false, false>(t, t, 1e-5, name);
  }
  sim::eager_copies = false;
}
TEST(TensorMainloopSim, WgmmaBF16) { check_wgmma<gm::tc::MathBF16, gm::tc::WgShape<64, 128, 3>>(DType::BF16, "wgmma bf16"); }
TEST(TensorMainloopSim, WgmmaF16) { check_wgmma<gm::tc::MathF16, gm::tc::WgShape<64, 128, 4>>(DType::F16, "wgmma f16"); }
TEST(TensorMainloopSim, WgmmaTwoWarpgroups) {
  typedef gm::tc::WgShape<128, 256, 4> Big;
  const Problem p = make_problem(DType::BF16, DType::BF16, 150, 270, 200, 1, true, 21, 3, 5, 9);
  for (const Outcome& o : {run_sim<gm::tc::MathBF16, Big, true, false>(p, DType::BF16, DType::BF16, true, true, 0),
                           run_sim<gm::tc::MathBF16, Big, false, true>(p, DType::BF16, DType::BF16, true, true, 0)}) {
    EXPECT_EQ(o.wrong, 0) << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
  }
}

// The TMA-fed wgmma mainloop (gamut_tc_wgmma_tma.cuh): the producer warp, the full / empty
// mbarriers, the boxes' swizzle against the descriptors, zeros outside the tensor, every
// orientation, one and two warpgroups, fewer stages than slices.
template <class Math, class Shape>
void check_wgmma_tma(DType t, const char* name) {
  check_orientation<Math, Shape, true, true, true>(t, t, 1e-5, name);
  check_orientation<Math, Shape, true, false, true>(t, t, 1e-5, name);
  check_orientation<Math, Shape, false, true, true>(t, t, 1e-5, name);
  check_orientation<Math, Shape, false, false, true>(t, t, 1e-5, name);
  // More slices than stages: every stage refilled several times (the empty barriers' phases).
  const Problem p = make_problem(t, t, 40, 72, 700, 1, true, 31, 1, 2, 3);
  const Outcome o = run_sim<Math, Shape, true, false, true>(p, t, t, true, true, 0);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_EQ(o.unwritten, 0);
  EXPECT_GT(o.nonzero, 0);
}
TEST(TensorMainloopSim, WgmmaTmaBF16) {
  check_wgmma_tma<gm::tc::MathBF16, gm::tc::WgShape<64, 128, 3>>(DType::BF16, "wgmma+tma bf16");
}
TEST(TensorMainloopSim, WgmmaTmaTwoWarpgroups) {
  typedef gm::tc::WgShape<128, 256, 4> Big;
  const Problem p = make_problem(DType::F16, DType::F16, 150, 270, 600, 2, true, 23, 3, 5, 9);
  for (const Outcome& o : {run_sim<gm::tc::MathF16, Big, true, false, true>(p, DType::F16, DType::F16, true, true, 0),
                           run_sim<gm::tc::MathF16, Big, false, true, true>(p, DType::F16, DType::F16, true, true, 0)}) {
    EXPECT_EQ(o.wrong, 0) << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
    EXPECT_GT(o.nonzero, 0);
  }
}

// f32 on wgmma + TMA (k-major operands only): tf32 rounds as boxes land (the TFLOAT32 map),
// tf32x3 splits each landed slice in place and into its stage's twin, both warpgroups meeting
// before the products; more slices than stages so that twins are rewritten.
TEST(TensorMainloopSim, WgmmaTmaTf32) {
  typedef gm::tc::WgShape<64, 128, 3, 4> One;
  typedef gm::tc::WgShape<128, 128, 3, 4> Two;
  check_orientation<gm::tc::MathTf32, One, true, true, true>(DType::F32, DType::F32, 1.1e-3, "wgmma+tma tf32");
  check_orientation<gm::tc::MathTf32x3, One, true, true, true>(DType::F32, DType::F32, 1e-5, "wgmma+tma tf32x3");
  const Problem p = make_problem(DType::F32, DType::F32, 150, 140, 300, 2, false, 41, 3, 5, 8);
  for (const Outcome& o : {run_sim<gm::tc::MathTf32, Two, true, true, true>(p, DType::F32, DType::F32, true, false, 1.1e-3),
                           run_sim<gm::tc::MathTf32x3, Two, true, true, true>(p, DType::F32, DType::F32, true, false, 1e-5)}) {
    EXPECT_EQ(o.wrong, 0) << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
    EXPECT_GT(o.nonzero, 0);
  }
}

// tf32 rounds to nearest (like cvt.rna and PyTorch's allow_tf32), not toward zero as wgmma
// reads raw f32 bits: A = 1 + 3 * 2^-12 becomes 1 + 2^-10, and with small-integer B the sums of
// the rounded products are exact in f32, so the result must equal them exactly. A map that did
// not round (or a split that truncated) fails this.
TEST(TensorMainloopSim, WgmmaTmaTf32RoundsToNearest) {
  typedef gm::tc::WgShape<64, 128, 3, 4> One;
  Problem p = make_problem(DType::F32, DType::F32, 20, 24, 40, 1, true, 43);
  Problem rounded = p;
  for (size_t e = 0; e < p.a.size(); ++e) {
    p.a[e] = 1.0 + 3.0 / 4096.0;
    rounded.a[e] = 1.0 + 1.0 / 1024.0;
  }
  const Reference want = reference(rounded);
  const Outcome o = run_sim<gm::tc::MathTf32, One, true, true, true>(p, DType::F32, DType::F32, true, true, 0, &want);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_GT(o.nonzero, 0);
  const Outcome x3 = run_sim<gm::tc::MathTf32x3, One, true, true, true>(p, DType::F32, DType::F32, true, true, 0, &want);
  EXPECT_GT(x3.wrong, 0) << "tf32x3 keeps the bits tf32 rounds away";
}

// Persistent tiles: 3 x 3 tiles x 2 batch instances in one block (bf16: 5 slices of 64 per
// tile; f32: 2 x 3 tiles, 7 slices of 32) through 3 stages (the ring's phases turn mid-tile and carry across tiles);
// tf32x3's split stages and twins likewise.
TEST(TensorMainloopSim, WgmmaTmaPersistentRing) {
  typedef gm::tc::WgShape<64, 128, 3> One;
  const Problem p = make_problem(DType::BF16, DType::BF16, 150, 270, 300, 2, true, 51, 3, 5, 8);
  for (const Outcome& o :
       {run_sim_persistent<gm::tc::MathBF16, One, true, false>(p, DType::BF16, DType::BF16, true, 0),
        run_sim_persistent<gm::tc::MathBF16, One, false, true>(p, DType::BF16, DType::BF16, true, 0)}) {
    EXPECT_EQ(o.wrong, 0) << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
    EXPECT_GT(o.nonzero, 0);
  }
  typedef gm::tc::WgShape<64, 128, 3, 4> OneF32;
  const Problem f = make_problem(DType::F32, DType::F32, 150, 140, 232, 1, false, 53, 3, 5, 8);
  for (const Outcome& o :
       {run_sim_persistent<gm::tc::MathTf32, OneF32, true, true>(f, DType::F32, DType::F32, false, 1.1e-3),
        run_sim_persistent<gm::tc::MathTf32x3, OneF32, true, true>(f, DType::F32, DType::F32, false, 1e-5)}) {
    EXPECT_EQ(o.wrong, 0) << o.first;
    EXPECT_EQ(o.unwritten, 0);
    EXPECT_EQ(o.stray, 0);
    EXPECT_GT(o.nonzero, 0);
  }
}

// Ping-pong groups: 1, 2 and 3 blocks over 3 x 3 tiles x 2 batch instances (a group runs one
// more tile than the other, or as many), bf16 with 5 slices a tile and tf32 with 7 through 3
// stages (a group's next tile starts two ring turns later: the turns keep the phases apart),
// and one slice a tile (K = 45). Without wait_turn / end_turn the groups deadlock on the ring once
// one has passed on an old phase (checked: the emulation's wait gives up after 120 s and aborts).
TEST(TensorMainloopSim, WgmmaTmaPingpongGroups) {
  typedef gm::tc::WgShape<64, 128, 3> One;
  for (int red : {300, 45})
    for (int blocks : {1, 2, 3}) {
      SCOPED_TRACE("K " + std::to_string(red) + ", blocks " + std::to_string(blocks));
      const Problem p = make_problem(DType::BF16, DType::BF16, 150, 270, red, 2, true, 71u + unsigned(red), 3, 5, 8);
      for (const Outcome& o :
           {run_sim_pingpong<gm::tc::MathBF16, One, true, false>(p, DType::BF16, DType::BF16, true, 0, blocks),
            run_sim_pingpong<gm::tc::MathBF16, One, false, true>(p, DType::BF16, DType::BF16, true, 0, blocks)}) {
        EXPECT_EQ(o.wrong, 0) << o.first;
        EXPECT_EQ(o.unwritten, 0);
        EXPECT_EQ(o.stray, 0);
        EXPECT_GT(o.nonzero, 0);
      }
    }
  typedef gm::tc::WgShape<64, 128, 3, 4> OneF32;
  const Problem f = make_problem(DType::F32, DType::F32, 150, 140, 232, 1, false, 73, 3, 5, 8);
  const Outcome o = run_sim_pingpong<gm::tc::MathTf32, OneF32, true, true>(f, DType::F32, DType::F32, false, 1.1e-3, 1);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_EQ(o.unwritten, 0);
  EXPECT_GT(o.nonzero, 0);
}

// Resident B: 3 blocks over 3 x 3 tiles (and 2 batch instances), so that runs start and end
// mid-band; K = 130 (3 of 4 slices, the last partial) and K = 256 (all 4); every orientation but
// X[k,i] x Y[k,j]; tf32 at K = 100 (4 slices of 32).
TEST(TensorMainloopSim, WgmmaTmaResidentB) {
  typedef gm::tc::WgShape<64, 128, 4> One;
  for (int red : {130, 256}) {
    const Problem p = make_problem(DType::BF16, DType::BF16, 150, 270, red, 2, true, 61u + unsigned(red), 3, 5, 0);
    for (const Outcome& o :
         {run_sim_persistent<gm::tc::MathBF16, One, true, false, 4>(p, DType::BF16, DType::BF16, true, 0, 3),
          run_sim_persistent<gm::tc::MathBF16, One, false, true, 4>(p, DType::BF16, DType::BF16, true, 0, 4),
          run_sim_persistent<gm::tc::MathBF16, One, true, true, 4>(p, DType::BF16, DType::BF16, true, 0, 1)}) {
      SCOPED_TRACE("K " + std::to_string(red));
      EXPECT_EQ(o.wrong, 0) << o.first;
      EXPECT_EQ(o.unwritten, 0);
      EXPECT_EQ(o.stray, 0);
      EXPECT_GT(o.nonzero, 0);
    }
  }
  typedef gm::tc::WgShape<64, 128, 4, 4> OneF32;
  const Problem f = make_problem(DType::F32, DType::F32, 150, 140, 100, 1, false, 67, 3, 5, 0);
  const Outcome o =
      run_sim_persistent<gm::tc::MathTf32, OneF32, true, true, 4>(f, DType::F32, DType::F32, false, 1.1e-3, 2);
  EXPECT_EQ(o.wrong, 0) << o.first;
  EXPECT_EQ(o.unwritten, 0);
  EXPECT_GT(o.nonzero, 0);
}
