// The tensor-core mainloop as a part of a generated kernel (mainloop.h): gm::tc::Mainloop
// (device/mainloop/gamut_tc_mainloop.cuh, declared by tensor_shapes.cpp) runs the plan's sum of
// products on the matrix units; the output operators get its fragment layout as the accumulator
// map (TcMap below) and the value init + factor * sum (MathChoice::factor) at every pair.
#include "cuda/codegen/mainloop.h"
#include "cuda/codegen/mainloop_tensor.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

class TensorMainloop final : public Mainloop {
 public:
  TensorMainloop(KernelContext& ctx, InnerMath math, bool tma, bool resident_b, bool epilogue_warpgroups, bool pingpong)
      : X(ctx),
        P(ctx.P),
        spec_(tc_plan_spec(ctx.P, ctx.T, math, tma, resident_b, epilogue_warpgroups, pingpong)),
        choice_(choose_math(ctx.P, f32_math_of(math))) {
    X.epilogue_warpgroups = spec_.tile.epilogue > 0;
    X.tile_groups = spec_.tile.groups;
  }

  // gamut_mainloop.cuh: the tile order and coordinate helpers the kernel's prologue uses.
  std::vector<std::string> headers() const override {
    std::vector<std::string> h = {"gamut_mainloop.cuh"};
    for (const std::string& t : tc_headers(spec_)) h.push_back(t);
    return h;
  }

  void declare_shape(Code& c) override {
    for (const std::string& line : split_lines(tc_mainloop_decls(spec_))) c.line(line);
    if (spec_.tile.wgmma) {
      c.line("// The accumulator map of the mainloop (gm::tc::WgmmaAccMap) for any thread tid, so that an");
      c.line("// operator can place another thread's pair: grid row m is block-tile row 64 warpgroup +");
      c.line("// 16 warp + g + 8 m, column n = 2 ni + e is 8 ni + 2 t + e (lane = 4 g + t).");
    } else {
      c.line("// The accumulator map of the mainloop (gm::tc::MmaAccMap) for any thread tid, so that an");
      c.line("// operator can place another thread's pair: grid row m = 2 mi + h is block-tile row");
      c.line("// warp_m WM + 16 mi + g + 8 h, column n = 2 ni + e is warp_n WN + 8 ni + 2 t + e.");
    }
    c.open("struct TcMap");
    c.line("static constexpr int kRows = Mainloop::Map::kRows, kCols = Mainloop::Map::kCols;");
    if (spec_.tile.wgmma)
      c.line("static constexpr bool kWarpRows = true;  // warp w holds the 16 rows from 16 w, every column");
    c.line("int tid;");
    c.line("__device__ __forceinline__ explicit TcMap(int t) : tid(t) {}");
    c.open("__device__ __forceinline__ int row(int m) const");
    if (spec_.tile.wgmma)
      c.line("return tid / 128 * 64 + tid / 32 % 4 * 16 + (tid % 32) / 4 + 8 * m;");
    else
      c.line("return (tid / 32) % TcShapeT::WARPS_M * TcShapeT::WM + (m >> 1) * 16 + (tid % 32) / 4 + 8 * (m & 1);");
    c.close();
    c.open("__device__ __forceinline__ int col(int n) const");
    if (spec_.tile.wgmma)
      c.line("return (n >> 1) * 8 + 2 * (tid % 4) + (n & 1);");
    else
      c.line("return (tid / 32) / TcShapeT::WARPS_M * TcShapeT::WN + (n >> 1) * 8 + 2 * (tid % 4) + (n & 1);");
    c.close();
    c.line("static constexpr __device__ int index(int m, int n) { return Mainloop::Map::index(m, n); }");
    c.close(";");
    c.line("// The block shape the output operators take: TM x TN is the map's grid.");
    c.open("struct Shape");
    c.line("static constexpr int BM = TcShapeT::BM, BN = TcShapeT::BN, THREADS = TcShapeT::THREADS;");
    c.line("static constexpr int TM = TcMap::kRows, TN = TcMap::kCols, VN = 2;");
    c.close(";");
    c.line("static_assert(gm::map_fits<TcMap, Shape>(), \"the map's grid is the shape's thread tile\");");
  }

  void declare(Code&) override {}

  void prologue(Code& c) override {
    c.line("int tc_i0 = row_begin + tile_m * Shape::BM, tc_j0 = col_begin + tile_n * Shape::BN;");
    c.line(X.tile_groups > 1 ? "TcMap tc_map(gm::tile_thread<Shape::THREADS>());  // (its place in its group)"
                             : "TcMap tc_map(int(threadIdx.x));");
  }

  void run(Code& c) override {
    if (X.persistent) return run_persistent(c);
    c.line("// The sum of products on the tensor cores: acc over k in [red_begin, red_end).");
    if (spec_.tile.tma) {
      // The operands' tensor maps (built by the launcher for this batch range and these
      // ranges), the tile's first row / column and the batch instance.
      c.line("const gm::tc::TmaOperand tc_a{&" + X.arg(X.A.tma_a) + ", tc_i0, b};  // " +
             access_name(choice_.row_access));
      c.line("const gm::tc::TmaOperand tc_b{&" + X.arg(X.A.tma_b) + ", tc_j0, b};  // " +
             access_name(choice_.col_access));
    } else {
      operand(c, "tc_a", choice_.row_access, spec_.a_kcontig, "tc_i0", "row_end", "row_begin");
      operand(c, "tc_b", choice_.col_access, spec_.b_kcontig, "tc_j0", "col_end", "col_begin");
    }
    for (const std::string& line : split_lines(tc_mainloop_call(spec_, "tc_a", "tc_b", "red_begin", "red_end", "smem")))
      c.line(line);
    refresh(c, "gm::fresh_ctaid()");
  }

  // Persistent tiles (KernelInfo::persistent): the block takes tiles blockIdx.x, + gridDim.x,
  // ... in the grid's tile order. The producer's issuer() runs ahead through the slices of the
  // block's next tiles as far as the ring's free stages allow, so that they land while the
  // consumers run this tile's outputs (whose shared memory, out_smem, is apart from the ring).
  // The consumers' tile loop closes in finish(). With resident B (X.bands) the block runs a
  // contiguous run of tiles in band order instead, and the mainloop loads a band's B slices at
  // its first tile and frees them after its last.
  void run_persistent(Code& c) {
    const TcMainloopNames n;
    const std::string loop = X.contiguous_tiles()
                                 ? "for (int tile = tile_lo; tile < tile_hi; ++tile)"
                                 : "for (int tile = int(blockIdx.x); tile < tiles_all; tile += int(gridDim.x))";
    // Ping-pong: consumer group g runs the block's tiles g, g + 2, ... (the producer all of them).
    const std::string group_loop =
        "for (int tile = int(blockIdx.x) + tc_group * int(gridDim.x); tile < tiles_all; tile += " +
        to_string(X.tile_groups) + " * int(gridDim.x))";
    if (X.bands) {
      c.line("// Persistent tiles, resident B: this block runs tiles [tile_lo, tile_hi) of the grid's band order");
      c.line("// (row tiles fastest), so that consecutive tiles share their column tile, whose B slices stay loaded.");
    } else if (X.resident_top) {
      c.line("// Persistent tiles, resident thresholds: this block runs tiles [tile_lo, tile_hi) of the grid's");
      c.line("// order, in which consecutive tiles share the list's groups (its rows per i, its columns per j).");
    } else if (X.tile_groups > 1) {
      c.line("// Persistent tiles, ping-pong: this block runs tiles blockIdx.x, + gridDim.x, ... of the grid's");
      c.line("// order, its consumer groups taking turns: one group's products run while the other runs its outputs.");
    } else {
      c.line("// Persistent tiles: this block runs tiles blockIdx.x, + gridDim.x, ... of the grid's order.");
    }
    c.line("const int tiles_all = " + X.coords->blocks_per_instance() + " * gm::arg_i32(" + X.arg(ArgLayout::kBatch) +
           ");");
    if (X.contiguous_tiles()) {
      c.line("const int tile_lo = int(gm::i64(blockIdx.x) * tiles_all / int(gridDim.x));");
      c.line("const int tile_hi = int(gm::i64(blockIdx.x + 1) * tiles_all / int(gridDim.x));");
    }
    if (X.bands) c.line("gm::tc::Bands bands;  // the bands this block loaded (issuer) or waited for (consumers)");
    c.line("Mainloop::init(smem);  // the stage ring's barriers; the producer's registers go to the consumers");
    c.line("unsigned char* const out_smem = smem + Mainloop::SMEM_BYTES;  // the outputs' space, after the ring");
    c.line("(void)out_smem;");
    const bool handoff = X.epilogue_warpgroups;
    if (handoff)
      c.line(n.acc_type + "* const tc_accs = reinterpret_cast<" + n.acc_type + "*>(" +
             X.out_smem_at("resident_accs", X.resident_accs_offset(), "the tile's accumulators, pair-major") +
             ");  // (TcMap::kRows * TcMap::kCols, Shape::THREADS)");
    c.line("unsigned slice = 0;  // slices of this block's tiles before the current one");
    c.open("if (Mainloop::producer())");
    c.open("if (Mainloop::feeds())");
    c.line("#pragma unroll 1");
    c.open(loop);
    X.coords->refresh(c, "tile");
    c.line("const gm::tc::TmaOperand tc_a{&" + X.arg(X.A.tma_a) + ", row_begin + tile_m * Shape::BM, b};  // " +
           access_name(choice_.row_access));
    c.line("const gm::tc::TmaOperand tc_b{&" + X.arg(X.A.tma_b) + ", col_begin + tile_n * Shape::BN, b};  // " +
           access_name(choice_.col_access));
    if (X.bands)
      c.line(
          "Mainloop::produce(smem, tc_a, tc_b, red_begin, red_end, slice, bands, tile == tile_lo || tile % tm_e == "
          "0);");
    else
      c.line("Mainloop::produce(smem, tc_a, tc_b, red_begin, red_end, slice);");
    c.close();
    c.line("Mainloop::drain(smem, slice);  // (a cluster's partner has released every stage)");
    c.close();
    c.line("return;  // the producer's loads are all issued");
    c.close();
    if (handoff) {
      // The consumers run the products of every tile and hand each tile's accumulators over;
      // the epilogue warpgroups (the threads before them) run the outputs below.
      c.open("if (Mainloop::consumer())");
      c.line("#pragma unroll 1");
      c.open(loop);
      c.line(n.acc_type + " " + n.acc + "[" + n.acc_count +
             "];  // (Map::kRows, Map::kCols) per thread, Map::index order: set by consume");
      c.line("Mainloop::consume(" + n.acc + ", smem, red_begin, red_end, slice);");
      c.line("Mainloop::hand_over(" + n.acc +
             ", tc_accs, tile == tile_lo);  // once the epilogue is done with the last");
      c.close();
      c.line("return;  // every tile's accumulators are handed over");
      c.close();
      c.line("#pragma unroll 1");
      c.open(loop);
      c.line("Mainloop::wait_full();  // this tile's accumulators are in tc_accs");
      c.line("int tile_e = tile;");
      c.line("gm::opaque(tile_e);");
      refresh(c, "tile_e");
      return;
    }
    if (X.tile_groups > 1) {
      c.line("const int tc_group = Mainloop::group();  // this consumer group");
      c.line("if (tc_group > 0) Mainloop::pass_over(slice, red_begin, red_end);  // the first tile's, group 0's");
    }
    c.line("#pragma unroll 1");
    c.open(X.tile_groups > 1 ? group_loop : loop);
    c.line("// The sum of products on the tensor cores: acc over k in [red_begin, red_end) (set by");
    c.line("// consume, whose first k-step does not add: no zeroed accumulators).");
    c.line(n.acc_type + " " + n.acc + "[" + n.acc_count +
           "];  // (Map::kRows, Map::kCols) per thread, Map::index order");
    if (X.bands) {
      c.line("const bool new_band = tile == tile_lo || tile % tiles_m == 0;  // (tile_m == 0: a column tile's first)");
      c.line("const bool band_ends = tile + 1 == tile_hi || (tile + 1) % tiles_m == 0;");
      c.line("Mainloop::consume(" + n.acc + ", smem, red_begin, red_end, slice, bands, new_band, band_ends);");
    } else if (X.tile_groups > 1) {
      c.line(
          "Mainloop::wait_turn(tile == int(blockIdx.x));  // the other group's products of the tile before are done");
      c.line("Mainloop::consume(" + n.acc + ", smem, red_begin, red_end, slice);");
      c.line("Mainloop::end_turn(tile + int(gridDim.x) >= tiles_all);  // the next tile's products may start");
      c.line("Mainloop::pass_over(slice, red_begin, red_end);  // the other group's next tile");
    } else {
      c.line("Mainloop::consume(" + n.acc + ", smem, red_begin, red_end, slice);");
    }
    c.line("int tile_e = tile;");
    c.line("gm::opaque(tile_e);");
    refresh(c, "tile_e");
  }

  // After the mainloop: the thread's map and the tile's coordinates again, rather than held in
  // registers through it.
  void refresh(Code& c, const std::string& block) {
    c.line("// Coordinates again, rather than held in registers through the mainloop.");
    c.line(X.tile_groups > 1 ? "tc_map = TcMap(gm::fresh_tid() % Shape::THREADS);  // (its place in its group)"
                             : "tc_map = TcMap(gm::fresh_tid());");
    X.coords->refresh(c, block);
    c.line("tc_i0 = row_begin + tile_m * Shape::BM;");
    c.line("tc_j0 = col_begin + tile_n * Shape::BN;");
  }

  void finish(Code& c) override {
    if (!X.persistent) return;
    if (!X.warp_outputs)
      c.line("gm::tile_sync<Shape::THREADS>();  // the outputs' shared memory is free for the next tile");
    else
      c.line("// (No tile barrier: each warp's outputs use shared memory of its own, gm::ResidentTop::WARP.)");
    if (X.epilogue_warpgroups)
      c.line("if (tile + 1 < tile_hi) Mainloop::signal_empty();  // the consumers may hand the next tile over");
    c.close();
  }

  AccumulatorMap map() const override {
    AccumulatorMap m;
    m.type = "TcMap";
    m.object = "tc_map";
    m.rows = "TcMap::kRows";
    m.cols = "TcMap::kCols";
    m.col_run = "Shape::VN";
    m.tile_row0 = "tc_i0";
    m.tile_col0 = "tc_j0";
    m.pairs = X.T.tm * X.T.tn;
    m.warp_rows = spec_.tile.wgmma;
    m.value = [v = value()](int) { return v; };
    return m;
  }

  // `when` pass bits held through the mainloop, and top / bottom lists' selection passes that
  // compute ranks again from the accumulators, spilled at 128 registers per thread next to the
  // accumulators (ptxas, sm_90a, every math): those kernels get the whole register file. With
  // the ranks in shared memory (tile_ranks_offset) the selection fits, and a second block per
  // SM runs its products while one selects; except tf32x3, whose split operands spill there.
  int min_blocks() const override {
    if (X.has_pass()) return 1;
    const bool ranks_fit = X.tile_ranks_offset() >= 0 && spec_.math != InnerMath::Tf32x3;
    for (const ListOutput& l : P.lists)
      if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && !ranks_fit) return 1;
    return tc_min_blocks(spec_);
  }
  std::string resources() const override { return "tensor-core mainloop " + spec_.tile.str(); }
  std::string attributes() const override { return tc_kernel_attributes(spec_); }

 private:
  static F32Math f32_math_of(InnerMath m) {
    return m == InnerMath::Tf32 ? F32Math::Tf32 : m == InnerMath::Tf32x3 ? F32Math::Tf32x3 : F32Math::Ieee;
  }

  static std::vector<std::string> split_lines(const std::string& s) {
    std::vector<std::string> out;
    size_t p = 0;
    while (p < s.size()) {
      const size_t e = s.find('\n', p);
      out.push_back(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
      if (e == std::string::npos) break;
      p = e + 1;
    }
    return out;
  }

  std::string access_name(int a) const {
    return P.operands[size_t(P.accesses[size_t(a)].operand)].name + pattern_name(P.accesses[size_t(a)].pattern);
  }

  // gm::tc::TcOperand `name` of access a: element (p, k) of this batch instance, the tile's first
  // row (column) `first`, the range end, and whether 16-byte chunks along the contiguous axis
  // are aligned (the base, the row pitch, and the first k (k contiguous) or the range's first p).
  void operand(Code& c, const std::string& name, int a, bool kc, const std::string& first, const std::string& end,
               const std::string& range_first) const {
    const auto& s = X.A.access[size_t(a)];
    const std::string st = dtype_cpp(access_dtype(P, a));
    const int es = int(dtype_size(access_dtype(P, a)));
    const std::string pat = access_name(a);
    c.line("const " + st + "* const " + name + "_base = reinterpret_cast<const " + st + "*>(" + X.arg(s.ptr) +
           ") + gm::i64(b) * gm::arg_i64(" + X.arg(s.bstride) + ");  // " + pat);
    c.line("const gm::i64 " + name + "_ld = gm::arg_i64(" + X.arg(s.ld) + ");");
    const std::string contiguous_first = kc ? "red_begin" : range_first;
    c.line("const bool " + name + "_vec = ((reinterpret_cast<unsigned long long>(" + name +
           "_base) | (unsigned long long)(" + name + "_ld * " + to_string(es) + ") | (unsigned long long)(" +
           contiguous_first + " * " + to_string(es) + ")) & 15ull) == 0;");
    c.line("const gm::tc::TcOperand " + name + "{" + name + "_base, " + name + "_ld, " + first + ", " + end + ", " +
           name + "_vec};");
  }

  // The plan's accumulator at the map's (m, n): init + factor * the mainloop's sum.
  std::string value() const {
    const CType t = P.accs[0].type;
    const std::string init = Renderer::literal(P.accs[0].init, t);
    const TcMainloopNames n;
    // (Epilogue warpgroups read the consumers' copy in shared memory.)
    const std::string sum = X.epilogue_warpgroups ? KernelContext::resident_acc_at("tc_accs", "(m * TcMap::kCols + n)")
                                                  : n.acc + "[TcMap::index(m, n)]";
    const bool one = is_float(t) ? choice_.factor.f == 1.0 : choice_.factor.i == 1;
    const std::string factor = Renderer::literal(choice_.factor, t);
    if (is_float(t)) return "(" + init + " + " + (one ? sum : factor + " * " + sum) + ")";
    return "gm::add(" + init + ", " + (one ? sum : "gm::mul(" + factor + ", " + sum + ")") + ")";
  }

  KernelContext& X;
  const Plan& P;
  TcMainloopSpec spec_;
  MathChoice choice_;
};

}  // namespace

std::unique_ptr<Mainloop> make_tensor_mainloop(KernelContext& ctx, InnerMath math, bool tma, bool resident_b,
                                               bool epilogue_warpgroups, bool pingpong) {
  return std::make_unique<TensorMainloop>(ctx, math, tma, resident_b, epilogue_warpgroups, pingpong);
}

}  // namespace gamut::cuda::cg
