// The tensor-core mainloop's host side: its shapes and shared memory mirrored from
// gamut_tc_mainloop.cuh (kept in step by a static_assert in every generated kernel), and the
// lines that declare and run it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "cuda/codegen/mainloop_tensor.h"

namespace gamut::cuda {

using std::to_string;

namespace {

// GAMUT_EXPERIMENT_WGMMA_TILE=BMxBNxSTAGESxBLOCKS replaces the wgmma tile of every f16 / bf16 /
// tf32 kernel (bm, bn, stages, and the blocks per SM asked of __launch_bounds__), for measuring
// whether two resident blocks per SM hide one tile's outputs behind another's products. Shapes
// the generated source, hence the cache key. tf32x3 keeps its own tile (its stages' twins).
struct WgmmaExperiment {
  int bm = 0, bn = 0, stages = 0, blocks = 0;
};
const WgmmaExperiment* wgmma_experiment(InnerMath m) {
  static const WgmmaExperiment* e = []() -> const WgmmaExperiment* {
    const char* v = std::getenv("GAMUT_EXPERIMENT_WGMMA_TILE");
    static WgmmaExperiment x;
    if (!v || std::sscanf(v, "%dx%dx%dx%d", &x.bm, &x.bn, &x.stages, &x.blocks) != 4) return nullptr;
    return &x;
  }();
  return m == InnerMath::Tf32x3 ? nullptr : e;
}

}  // namespace

std::string TcTile::str() const {
  return to_string(bm) + "x" + to_string(bn) + "x" + to_string(bk) + "/" +
         (wgmma ? std::string(tma ? "wgmma-tma" : "wgmma") : to_string(warps_m) + "x" + to_string(warps_n)) + "/s" +
         to_string(stages) + (cluster > 1 ? "/c" + to_string(cluster) : "") + (panel > 0 ? "/resident-b" : "") +
         (epilogue > 0 ? "/epilogue-wg" : "") + (groups > 1 ? "/pingpong" : "") +
         (blocks > 1 ? "/b" + to_string(blocks) : "");
}

std::string tc_kernel_attributes(const TcMainloopSpec& s) {
  return s.tile.cluster > 1 ? " __cluster_dims__(" + to_string(s.tile.cluster) + ", 1, 1)" : "";
}

std::vector<std::string> tc_headers(const TcMainloopSpec& s) {
  return {s.tile.tma ? "gamut_tc_wgmma_tma.cuh" : s.tile.wgmma ? "gamut_tc_wgmma.cuh" : "gamut_tc_mainloop.cuh"};
}

TcMainloopSpec tc_spec(const MathChoice& c, bool a_kcontig, bool b_kcontig, const TcTile& tile) {
  if (!c.tensor_cores()) throw Error(ExitCode::Query, "internal error: no tensor-core math for this plan: " + c.why);
  TcMainloopSpec s;
  s.math = c.math;
  s.a_type = c.row_type;
  s.b_type = c.col_type;
  s.tile = tile;
  s.a_kcontig = a_kcontig;
  s.b_kcontig = b_kcontig;
  return s;
}

int tc_instruction_k(InnerMath m) {
  switch (m) {
    case InnerMath::F16:
    case InnerMath::BF16: return 16;
    case InnerMath::Int8: return 32;
    case InnerMath::Tf32:
    case InnerMath::Tf32x3: return 8;
    case InnerMath::Simt: break;
  }
  return 0;
}

int element_bytes(InnerMath m) { return 32 / tc_instruction_k(m); }  // a k-step is 32 bytes

namespace {

// gm::tc::TcTile's layout for one operand: rows, stride, and the even spread of its copies.
struct OperandLayout {
  int bytes = 0;
  std::string why;  // non-empty: the device header would reject it
};

OperandLayout operand_layout(int es, int p, int bk, int threads, bool kc) {
  OperandLayout o;
  const bool transpose = es == 1 && !kc, skc = kc || transpose, scalar = es == 4 && !kc;
  const int rows = skc ? p : bk, row_bytes = (skc ? bk : p) * es;
  if (row_bytes % 32 != 0) o.why = "a shared row of " + to_string(row_bytes) + " bytes is not whole 32-byte k-steps";
  const int pad = scalar ? ((8 - (row_bytes / 4) % 32 + 32) % 32) * 4 : ((row_bytes / 16) % 2 == 0 ? 16 : 0);
  o.bytes = rows * (row_bytes + pad);
  if (transpose) {
    const int kw = bk / 4;
    if (threads % kw != 0 || ((p / 4) * kw) % threads != 0)
      o.why = "8-bit 4x4 blocks do not spread evenly over the threads";
  } else {
    const int cpr = row_bytes / 16;
    if (cpr == 0 || threads % cpr != 0 || (rows * cpr) % threads != 0)
      o.why = "16-byte chunks do not spread evenly over the threads";
  }
  return o;
}

std::string math_cpp(const TcMainloopSpec& s) {
  switch (s.math) {
    case InnerMath::F16: return "gm::tc::MathF16";
    case InnerMath::BF16: return "gm::tc::MathBF16";
    case InnerMath::Int8:
      return std::string("gm::tc::MathI8<") + (s.a_type == DType::I8 ? "signed char" : "unsigned char") + ", " +
             (s.b_type == DType::I8 ? "signed char" : "unsigned char") + ">";
    case InnerMath::Tf32: return "gm::tc::MathTf32";
    case InnerMath::Tf32x3: return "gm::tc::MathTf32x3";
    case InnerMath::Simt: break;
  }
  throw Error(ExitCode::Query, "internal error: the SIMT math has no tensor-core mainloop");
}

}  // namespace

bool tc_spec_valid(const TcMainloopSpec& s, std::string* why) {
  auto no = [&](const std::string& w) {
    if (why) *why = w;
    return false;
  };
  const TcTile& t = s.tile;
  if (s.math == InnerMath::Simt) return no("the SIMT math has no tensor-core mainloop");
  if (t.tma && !t.wgmma) return no("TMA feeds the wgmma mainloop only");
  if (t.wgmma) {
    if (!wgmma_math(s.math)) return no("the wgmma mainloop takes f16 / bf16, and f32 as tf32 / tf32x3");
    const bool f32 = element_bytes(s.math) == 4;
    if (f32 && !t.tma) return no("tf32 wgmma is fed by TMA");
    if (f32 && !(s.a_kcontig && s.b_kcontig)) return no("tf32 wgmma reads both operands k-major");
    if (t.bm != 64 && t.bm != 128) return no("wgmma BM is 64 or 128 (one or two warpgroups)");
    if (t.bn != 128 && t.bn != 256) return no("wgmma BN is 128 or 256");
    if (t.bk * element_bytes(s.math) != 128) return no("wgmma BK is one 128-byte swizzle row (64 or 32 elements)");
    if (t.stages < 3 || t.stages > 6) return no("3 to 6 stages");
    if (t.panel > 0 && (!t.tma || t.cluster > 1 || s.math == InnerMath::Tf32x3 || t.panel != t.stages))
      return no("resident B: TMA, one block per cluster, one pass, as many slices as stages");
    if (t.epilogue > 0 && (!t.tma || t.cluster > 1 || t.panel > 0 || s.math == InnerMath::Tf32x3 ||
                           t.epilogue != 128 * (t.bm / 64) || t.bn != 128))
      return no("epilogue warpgroups: TMA, one block, no resident B, one pass, one per consumer's, BN 128");
    if (t.groups != 1 && (t.groups != 2 || !t.tma || t.cluster > 1 || t.panel > 0 || t.epilogue > 0 ||
                          s.math == InnerMath::Tf32x3 || t.bm != 64 || t.blocks > 1))
      return no("ping-pong: two groups of one warpgroup (BM 64), TMA, one block, streamed B, one pass");
    return true;
  }
  if (t.warps_m < 1 || t.warps_n < 1 || t.threads() > 1024) return no("1 to 32 warps");
  if (t.bm <= 0 || t.bm % (16 * t.warps_m) != 0) return no("BM must be whole m16 slabs per warp");
  if (t.bn <= 0 || t.bn % (16 * t.warps_n) != 0) return no("BN must be whole pairs of n8 groups per warp");
  if ((t.bm / t.warps_m / 16) * (t.bn / t.warps_n / 8) * 4 > 128) return no("more than 128 accumulators per thread");
  if (t.stages < 2 || t.stages > 6) return no("2 to 6 stages");
  const int k = tc_instruction_k(s.math);
  if (t.bk <= 0 || t.bk % k != 0) return no("BK must be a multiple of the instruction's k (" + to_string(k) + ")");
  const int es = element_bytes(s.math);
  for (const OperandLayout& o : {operand_layout(es, t.bm, t.bk, t.threads(), s.a_kcontig),
                                 operand_layout(es, t.bn, t.bk, t.threads(), s.b_kcontig)})
    if (!o.why.empty()) return no(o.why);
  return true;
}

int tc_min_blocks(const TcMainloopSpec& s) {
  const TcTile& t = s.tile;
  if (t.wgmma) return t.blocks > 0 ? t.blocks : wgmma_experiment(s.math) ? wgmma_experiment(s.math)->blocks : 1;
  const int accs = (t.bm / t.warps_m / 16) * (t.bn / t.warps_n / 8) * 4;
  // (Two register-staged 8-bit operands spill 8 bytes at 128 registers.)
  const bool both_staged = s.math == InnerMath::Int8 && !s.a_kcontig && !s.b_kcontig;
  return accs >= 128 || both_staged ? 1 : std::max(1, 65536 / (t.threads() * 128));
}

size_t tc_smem_bytes(const TcMainloopSpec& s) {
  const int es = element_bytes(s.math);
  const TcTile& t = s.tile;
  // wgmma: 128-byte swizzled rows (P x 128 bytes per operand either way), + 1024 for alignment.
  // TMA: + 128 bytes of mbarriers (full, empty and tf32x3's ready per stage). tf32x3: each
  // stage has a twin holding its B tile's small parts (A's are split in registers).
  if (t.wgmma)
    return size_t(t.stages) * size_t(t.bm + t.bn + (s.math == InnerMath::Tf32x3 ? t.bn : 0)) * 128 + 1024 +
           (t.tma ? 128 : 0);
  return size_t(t.stages) * size_t(operand_layout(es, t.bm, t.bk, t.threads(), s.a_kcontig).bytes +
                                   operand_layout(es, t.bn, t.bk, t.threads(), s.b_kcontig).bytes);
}

std::vector<TcTile> tc_tiles(InnerMath m) {
  // 64 bytes of k per slice whatever the element size: two k-steps of the instruction.
  const int bk = 64 / element_bytes(m);
  return {TcTile{128, 256, bk, 2, 4, 3}, TcTile{128, 128, bk, 2, 4, 4}, TcTile{64, 64, bk, 2, 2, 4}};
}

std::vector<TcTile> tc_wgmma_tiles(InnerMath m, bool tma) {
  if (!wgmma_math(m)) return {};
  const int bk = 128 / element_bytes(m);
  if (m == InnerMath::Tf32x3)  // (4 stages of 32 KiB and their B twins of 16 KiB; 128 x 256 does not fit)
    return tma ? std::vector<TcTile>{TcTile{128, 128, bk, 0, 0, 4, true, true}} : std::vector<TcTile>{};
  if (m == InnerMath::Tf32 && !tma) return {};
  TcTile big{128, 256, bk, 0, 0, 4, true, tma}, square{128, 128, bk, 0, 0, 4, true, tma};
  return {big, square};
}

bool wgmma_math(InnerMath m) { return m != InnerMath::Simt && m != InnerMath::Int8; }
bool wgmma_needs_tma(InnerMath m) { return m == InnerMath::Tf32 || m == InnerMath::Tf32x3; }

TileConfig tc_kernel_tile(InnerMath m, bool wgmma, int64_t rows, int64_t cols, int64_t batch, int sm_count,
                          bool square) {
  if (wgmma && wgmma_math(m)) {
    // 128 x 256 (the fastest of tc_wgmma_tiles on large problems) where its grid fills the SMs,
    // else 128 x 128. The map's grid per thread: 2 x BN/4.
    const std::vector<TcTile> t = tc_wgmma_tiles(m, wgmma_needs_tma(m));
    if (const WgmmaExperiment* e = wgmma_experiment(m)) return TileConfig{e->bm, e->bn, t[0].bk, 2, e->bn / 4};
    const TcTile& big = t[0];
    const int64_t blocks =
        ((rows + big.bm - 1) / big.bm) * ((cols + big.bn - 1) / big.bn) * std::max<int64_t>(batch, 1);
    const TcTile& w =
        t.size() > 1 && (square || (rows >= 0 && cols >= 0 && sm_count > 0 && blocks < sm_count)) ? t[1] : big;
    return TileConfig{w.bm, w.bn, w.bk, 2, w.bn / 4};
  }
  const TcTile t = tc_tiles(m)[1];                                                      // 128 x 128, 2 x 4 warps
  const int rows_t = 2 * (t.bm / t.warps_m / 16), cols_t = 2 * (t.bn / t.warps_n / 8);  // the map's grid
  return TileConfig{t.bm, t.bn, t.bk, rows_t, cols_t};
}

TcTile tc_tile_of(const TileConfig& t, InnerMath m, bool tma) {
  TcTile r;
  r.bm = t.bm;
  r.bn = t.bn;
  r.bk = t.bk;
  r.stages = 4;
  if (wgmma_math(m) && t.tm == 2) {  // (the mma.sync maps' grids have 4 or 8 rows)
    r.warps_m = r.warps_n = 0;
    r.wgmma = true;
    r.tma = tma || wgmma_needs_tma(m);
    if (const WgmmaExperiment* e = wgmma_experiment(m)) r.stages = e->stages;
    if (t.stages > 0) r.stages = t.stages;  // a kernel variant's (kernel_variants.h)
    r.blocks = t.blocks;
    return r;
  }
  r.warps_m = 2;
  r.warps_n = 4;
  return r;
}

TcMainloopSpec tc_plan_spec(const Plan& plan, const TileConfig& t, InnerMath m, bool tma, bool resident_b,
                            bool epilogue_warpgroups, bool pingpong) {
  // The f32 setting under which choose_math gives m (the orientations do not depend on it).
  const F32Math f = m == InnerMath::Tf32 ? F32Math::Tf32 : m == InnerMath::Tf32x3 ? F32Math::Tf32x3 : F32Math::Ieee;
  const MathChoice c = choose_math(plan, f);
  if (c.math != m)
    throw Error(ExitCode::Query, "internal error: the plan does not choose this tensor-core math (" + c.why + ")");
  const bool a_kc = plan.accesses[size_t(c.row_access)].pattern == Pattern::RowRed;  // X[i, k]
  const bool b_kc = plan.accesses[size_t(c.col_access)].pattern == Pattern::ColRed;  // Y[j, k]
  TcTile tile = tc_tile_of(t, m, tma);
  // GAMUT_EXPERIMENT_CLUSTER=2: clusters of two blocks sharing the column operand's slices
  // (multicast) where TMA feeds plain tiles, not with `when` pass bits (a block may leave before
  // the mainloop, its partner waiting on it). Slower than one block where measured, so not the
  // default; it shapes the source, hence the cache key.
  if (tile.tma && !plan.when.present()) {
    const char* e = std::getenv("GAMUT_EXPERIMENT_CLUSTER");
    tile.cluster = e && std::string(e) == "2" ? 2 : 1;
  }
  // Resident B (choose_kernel decides where the k range fits): as many B slices as stages.
  if (resident_b && tile.tma && tile.cluster == 1 && m != InnerMath::Tf32x3) tile.panel = tile.stages;
  // Epilogue warpgroups run a tile's outputs while the consumers run the next tile's products,
  // so that the tensor cores do not wait for the outputs.
  if (epilogue_warpgroups && tile.tma && tile.wgmma && tile.cluster == 1 && tile.panel == 0 && m != InnerMath::Tf32x3)
    tile.epilogue = 128 * (tile.bm / 64);
  // Ping-pong (choose_kernel decides: plain selects; 64-row tiles): two consumer groups.
  if (pingpong && tile.tma && tile.wgmma && tile.cluster == 1 && tile.panel == 0 && tile.epilogue == 0 &&
      m != InnerMath::Tf32x3 && tile.bm == 64)
    tile.groups = 2;
  // tf32 wgmma reads k-major copies of operands that are not (the engine makes them).
  const bool copies = tile.wgmma && wgmma_needs_tma(m);
  return tc_spec(c, a_kc || copies, b_kc || copies, tile);
}

std::string tc_mainloop_decls(const TcMainloopSpec& s, const std::string& in) {
  std::string why;
  if (!tc_spec_valid(s, &why))
    throw Error(ExitCode::Query, "internal error: tensor-core tile " + s.tile.str() + ": " + why);
  const TcTile& t = s.tile;
  const bool g = t.groups > 1;
  // (Neutral words: the query's operands may be named X and Y.)
  const std::string orient = std::string("row operand as ") + (s.a_kcontig ? "[i,k]" : "[k,i]") +
                             " x column operand as " + (s.b_kcontig ? "[j,k]" : "[k,j]");
  std::string r;
  r += in + "// Tensor-core mainloop (" +
       (t.tma     ? "wgmma fed by TMA"
        : t.wgmma ? "wgmma"
                  : "mma.sync") +
       "): " + std::string(dtype_name(s.a_type)) + " x " + std::string(dtype_name(s.b_type)) + " -> " +
       (s.math == InnerMath::Int8 ? "i32" : "f32") + ", " +
       (s.math == InnerMath::Tf32     ? "operands rounded to tf32, "
        : s.math == InnerMath::Tf32x3 ? "3xTF32 split, "
                                      : "") +
       orient + (t.wgmma && wgmma_needs_tma(s.math) ? " (as read: the engine copies other layouts k-major)" : "") +
       ", tile " + t.str() + ".\n";
  if (t.wgmma) {
    r += in + "typedef gm::tc::WgShape<" + to_string(t.bm) + ", " + to_string(t.bn) + ", " + to_string(t.stages) +
         (element_bytes(s.math) == 4 ? ", 4" : "") + "> TcShapeT;  // BM, BN, STAGES" +
         (element_bytes(s.math) == 4 ? ", element bytes" : "") + "\n";
  } else {
    r += in + "typedef gm::tc::TcShape<" + to_string(t.bm) + ", " + to_string(t.bn) + ", " + to_string(t.bk) + ", " +
         to_string(t.warps_m) + ", " + to_string(t.warps_n) + ", " + to_string(t.stages) +
         "> TcShapeT;  // BM, BN, BK, WARPS_M, WARPS_N, STAGES\n";
  }
  r += in + "typedef gm::tc::" +
       (t.tma     ? "WgmmaTmaMainloop<"
        : t.wgmma ? "WgmmaMainloop<"
                  : "Mainloop<") +
       math_cpp(s) + ", TcShapeT, " + (s.a_kcontig ? "true" : "false") + ", " + (s.b_kcontig ? "true" : "false") +
       (t.cluster > 1 || t.panel > 0 || t.epilogue > 0 || g ? ", " + to_string(t.cluster) : "") +
       (t.panel > 0 || t.epilogue > 0 || g ? ", " + to_string(t.panel) : "") +
       (t.epilogue > 0 || g ? ", " + to_string(t.epilogue) : "") + (g ? ", " + to_string(t.groups) : "") +
       "> Mainloop;  // math, shape, row / column operand k-major" +
       (t.cluster > 1 || t.panel > 0 || t.epilogue > 0 || g ? ", CLUSTER" : "") +
       (t.panel > 0 || t.epilogue > 0 || g ? ", PANEL" : "") + (t.epilogue > 0 || g ? ", EPILOGUE warpgroups" : "") +
       (g ? ", GROUPS (ping-pong)" : "") + "\n";
  r += in + "static_assert(Mainloop::SMEM_BYTES == " + to_string(tc_smem_bytes(s)) +
       ", \"shared memory as the host computed it\");\n";
  return r;
}

std::string tc_mainloop_call(const TcMainloopSpec& s, const std::string& a, const std::string& b,
                             const std::string& k_begin, const std::string& k_end, const std::string& smem,
                             const std::string& in) {
  const TcMainloopNames n;
  std::string r;
  if (s.tile.tma) {
    r += in + "Mainloop::init(" + smem +
         ");  // the stage ring's barriers; the producer's registers go to the consumers\n";
    r += in + "unsigned slice = 0;  // slices this block's ring carried before\n";
    r += in + "if (Mainloop::producer()) {\n";
    r += in + "  if (Mainloop::feeds()) {  // the issuer (and tf32x3's splitters)\n";
    r += in + "    Mainloop::produce(" + smem + ", " + a + ", " + b + ", " + k_begin + ", " + k_end + ", slice);\n";
    r += in + "    Mainloop::drain(" + smem + ", slice);  // (a cluster's partner has released every stage)\n";
    r += in + "  }\n";
    r += in + "  return;  // the producer's loads are all issued\n";
    r += in + "}\n";
    r += in + n.acc_type + " " + n.acc + "[" + n.acc_count +
         "];  // (Map::kRows, Map::kCols) per thread, Map::index order: set by consume\n";
    r += in + "Mainloop::consume(" + n.acc + ", " + smem + ", " + k_begin + ", " + k_end + ", slice);\n";
    r += in + "gm::tile_sync<Mainloop::THREADS>();  // every consumer's products are done: the stages may be reused\n";
    return r;
  }
  r += in + n.acc_type + " " + n.acc + "[" + n.acc_count +
       "];  // (Map::kRows, Map::kCols) per thread, Map::index order\n";
  r += in + "#pragma unroll\n";
  r += in + "for (int e = 0; e < " + n.acc_count + "; ++e) " + n.acc + "[e] = 0;\n";
  r += in + "Mainloop::run(" + n.acc + ", " + smem + ", " + a + ", " + b + ", " + k_begin + ", " + k_end + ");\n";
  return r;
}

}  // namespace gamut::cuda
