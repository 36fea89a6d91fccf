// The tensor-core mainloop in generated kernels (src/cuda/codegen/mainloop_tensor_cores.cpp),
// without a GPU: which plans get it, what the launcher is told (threads, shared memory), and
// NVRTC compiles for sm_90a of the kernels of every math, output operator and operand layout
// (tests/gpu/tensor_queries.h; the GPU runs them against the CPU engine in
// tests/gpu/test_tensor_queries.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>

#include "cpu/engine.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#include "gpu/tensor_queries.h"
#include "nvrtc_check.h"

using namespace gamut;
using namespace gamut::cuda;
namespace tq = gamut::testtcq;

namespace {

std::unique_ptr<Prepared> prepared(const tq::TcQuery& q, DType t, const tq::Sizes& s = {7, 33, 45},
                                   std::optional<DType> rt = std::nullopt) {
  auto p = prepare(Source{std::string(q.name) + ".mmlt", q.text}, tq::bindings(q, t, rt.value_or(t), s), false);
  EXPECT_FALSE(p->program) << q.name << ": runs as one kernel";
  return p;
}

KernelChoice choice(const Prepared& p, F32Math f, const std::optional<TileConfig>& tile = std::nullopt,
                    bool masked_joins = false) {
  return choose_kernel(p.instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem, tile, masked_joins, f);
}

const tq::TcQuery& query(const std::string& name) {
  for (const auto* list : {&tq::operator_queries(), &tq::layout_queries()})
    for (const tq::TcQuery& q : *list)
      if (name == q.name) return q;
  throw std::runtime_error("no query " + name);
}

}  // namespace

TEST(CodegenTensor, ChoiceFollowsTheMath) {
  for (const tq::TcMath& m : tq::maths()) {
    SCOPED_TRACE(m.name);
    auto p = prepared(query("project"), m.type);
    const KernelChoice k = choice(*p, m.f32_math);
    EXPECT_EQ(k.options.tensor_math, m.math);
    // (7 x 33: one block, so the wgmma maths take the 128 x 128 tile)
    EXPECT_EQ(k.tile.str(), tc_kernel_tile(m.math, true, 7, 33, 1, testnvrtc::kH100Sms).str());
    EXPECT_EQ(tc_plan_spec(p->plan, k.tile, m.math).tile.wgmma, wgmma_math(m.math));
    // f16 / bf16 of gamut's own (16-byte pitched) copies: wgmma fed by TMA, a producer warp more.
    EXPECT_EQ(k.options.tma, wgmma_math(m.math));
    const KernelInfo info = kernel_info(p->plan, k.tile, k.options);
    const TcMainloopSpec s = tc_plan_spec(p->plan, k.tile, m.math, k.options.tma);
    EXPECT_EQ(info.threads, k.options.tma ? 384 : 256);
    EXPECT_EQ(info.threads, s.tile.threads());
    EXPECT_GE(info.smem_bytes, tc_smem_bytes(s));
    const std::string src = generate_source(p->plan, k.tile, k.options);
    EXPECT_NE(src.find(wgmma_math(m.math) ? "gm::tc::WgmmaTmaMainloop<" : "gm::tc::Mainloop<"), std::string::npos);
    EXPECT_EQ(src.find("gm::mainloop<"), std::string::npos) << "no SIMT mainloop";
    // A forced tile keeps the SIMT mainloop.
    const KernelChoice forced = choice(*p, m.f32_math, parse_tile("64x64x8/4x4"));
    EXPECT_FALSE(forced.options.tensor_cores());
    // So does a device without the instructions (compute capability below 8.0).
    EXPECT_FALSE(choose_kernel(p->instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem, std::nullopt, false, m.f32_math,
                               TensorIsa::None)
                     .options.tensor_cores());
  }
  // A key-grouped join keeps the SIMT mainloop (its tiles are key-ordered positions).
  auto join = prepared(query("join_masked"), DType::BF16);
  EXPECT_FALSE(choice(*join, F32Math::Ieee).options.tensor_cores());
  EXPECT_TRUE(choice(*join, F32Math::Ieee).options.grouped_join);
  EXPECT_TRUE(choice(*join, F32Math::Ieee, std::nullopt, true).options.tensor_cores());
  // f32 under ieee, and sums of products of other types, stay on SIMT.
  auto f = prepared(query("project"), DType::F32);
  EXPECT_FALSE(choice(*f, F32Math::Ieee).options.tensor_cores());
  auto i16 = prepared(query("project"), DType::I16);
  EXPECT_FALSE(choice(*i16, F32Math::Tf32).options.tensor_cores());
}

// Every query and math of the GPU tests prepares, gets the tensor-core mainloop and renders;
// the CPU engine's results on their data are not all empty or zero (the GPU tests compare
// against them).
TEST(CodegenTensor, EveryGpuTestCaseRenders) {
  for (const auto* list : {&tq::operator_queries(), &tq::layout_queries()})
    for (const tq::TcQuery& q : *list)
      for (const auto* ms : {&tq::maths(), &tq::mixed_8bit()})
        for (const tq::TcMath& m : *ms) {
          SCOPED_TRACE(std::string(q.name) + " " + m.name);
          auto p = prepared(q, m.type, {33, 7, 45}, m.r_type);
          const KernelChoice k = choice(*p, m.f32_math, std::nullopt, q.masked_joins);
          // (the plans executed_math keeps on SIMT)
          EXPECT_EQ(k.options.tensor_math,
                    executed_math(p->plan, m.f32_math).tensor_cores() ? m.math : InnerMath::Simt);
          EXPECT_NO_THROW(generate_source(p->plan, k.tile, k.options));
          const Results r = run_cpu(p->instance);
          bool nonzero = false;
          for (const NDArray& d : r.dense)
            for (std::byte b : d.data) nonzero = nonzero || b != std::byte{0};
          for (const Table& t : r.lists) nonzero = nonzero || t.rows > 0;
          EXPECT_TRUE(nonzero);
        }
}

// TMA feeds wgmma where its boxes start on 16 bytes of the contiguous axis; the cp.async wgmma
// kernel otherwise, with the same output code. Device inputs whose start or pitches TMA cannot
// address keep TMA: the engine reads them from a re-pitched copy (stages/k_major_copy.h).
TEST(CodegenTensor, TmaWhereItCanReadTheOperands) {
  auto p = prepared(query("project"), DType::BF16);
  KernelChoice k = choice(*p, F32Math::Ieee);
  ASSERT_TRUE(k.options.tma);
  const MathChoice m = executed_math(p->plan, F32Math::Ieee);
  EXPECT_TRUE(tma_operands_fit(p->instance, m));
  Instance inst = p->instance;
  inst.red.begin = 3;  // boxes would start 6 bytes into a row
  EXPECT_FALSE(tma_operands_fit(inst, m));
  inst.red.begin = 8;
  EXPECT_TRUE(tma_operands_fit(inst, m));
  // A device input with rows of 4100 bf16 (8200 bytes: not whole 16-byte chunks), or unaligned.
  const size_t o = size_t(p->plan.accesses[size_t(m.row_access)].operand);
  inst.device_inputs.resize(p->plan.operands.size());
  inst.device_inputs[o].data = reinterpret_cast<const void*>(uintptr_t(0x10000));
  inst.device_inputs[o].strides = {4100, 1};
  EXPECT_FALSE(tma_operands_fit(inst, m));
  inst.device_inputs[o].strides = {4104, 1};
  EXPECT_TRUE(tma_operands_fit(inst, m));
  inst.device_inputs[o].data = reinterpret_cast<const void*>(uintptr_t(0x10008));
  EXPECT_FALSE(tma_operands_fit(inst, m));
  EXPECT_TRUE(tma_starts_fit(inst, m));
  const auto on = [&](const Instance& i) {
    return choose_kernel(i, testnvrtc::kH100Sms, testnvrtc::kH100Smem, std::nullopt, false, F32Math::Ieee).options.tma;
  };
  EXPECT_TRUE(on(inst));  // (copied with 16-byte rows)
  inst.red.begin = 3;
  EXPECT_FALSE(tma_starts_fit(inst, m));
  EXPECT_FALSE(on(inst));
  inst.red.begin = 0;
  // Without TMA: the cp.async wgmma kernel, 256 threads, no tensor maps.
  k.options.tma = false;
  const std::string src = generate_source(p->plan, k.tile, k.options);
  EXPECT_NE(src.find("gm::tc::WgmmaMainloop<"), std::string::npos);
  EXPECT_EQ(src.find("tma_a"), std::string::npos);
  EXPECT_EQ(kernel_info(p->plan, k.tile, k.options).threads, 256);
  // Gamut's own copies of inputs are pitched to whole 16-byte chunks (and 4 elements).
  EXPECT_EQ(input_pitch(4097, DType::BF16), 4104);
  EXPECT_EQ(input_pitch(4097, DType::F32), 4100);
  EXPECT_EQ(input_pitch(5, DType::I8), 16);
  EXPECT_EQ(input_pitch(5, DType::F64), 8);
}

TEST(CodegenTensor, ValueIsInitPlusFactorTimesSum) {
  auto p = prepared(query("scaled_ki_jk"), DType::BF16);
  const KernelChoice k = choice(*p, F32Math::Ieee);
  ASSERT_TRUE(k.options.tensor_cores());
  const std::string src = generate_source(p->plan, k.tile, k.options);
  EXPECT_NE(src.find("(3.0f + (-2.0f) * acc[TcMap::index(m, n)])"), std::string::npos) << src;
  EXPECT_NE(src.find("Mainloop<gm::tc::MathBF16, TcShapeT, false, true"), std::string::npos) << "X[k,i] x Y[j,k]";
  auto i = prepared(query("scaled_ki_kj"), DType::I8);
  const KernelChoice ki = choice(*i, F32Math::Ieee);
  const std::string isrc = generate_source(i->plan, ki.tile, ki.options);
  EXPECT_NE(isrc.find("gm::add(3, gm::mul((-2), acc[TcMap::index(m, n)]))"), std::string::npos) << isrc;
  EXPECT_NE(isrc.find("Mainloop<gm::tc::MathI8<signed char, signed char>, TcShapeT, false, false>"), std::string::npos);
}

// Every output operator on bf16, and the project / top-per-i kernels of every other math, the
// operand layouts of bf16, i8 and tf32 (ldmatrix.trans, the 8-bit transpose, scalar f32 reads):
// NVRTC accepts them for sm_90a, without spills.
TEST(CodegenTensor, KernelsCompileForSm90a) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  struct Case {
    const char* query;
    const char* math;
  };
  std::vector<Case> cases;
  for (const tq::TcQuery& q : tq::operator_queries()) cases.push_back({q.name, "bf16"});
  for (const char* m : {"f16", "i8", "tf32x3", "tf32"}) {
    cases.push_back({"project", m});
    cases.push_back({"bottom_per_i", m});
  }
  for (const char* m : {"bf16", "i8", "tf32"})
    for (const tq::TcQuery& q : tq::layout_queries()) cases.push_back({q.name, m});
  cases.push_back({"project", "u8xi8"});
  cases.push_back({"scaled_ki_jk", "i8xu8"});
  for (const Case& c : cases) {
    const tq::TcMath* m = nullptr;
    for (const auto* ms : {&tq::maths(), &tq::mixed_8bit()})
      for (const tq::TcMath& x : *ms)
        if (std::string(x.name) == c.math) m = &x;
    ASSERT_TRUE(m);
    SCOPED_TRACE(std::string(c.query) + " " + c.math);
    const tq::TcQuery& q = query(c.query);
    auto p = prepared(q, m->type, {7, 33, 45}, m->r_type);
    const KernelChoice k = choice(*p, m->f32_math, std::nullopt, q.masked_joins);
    if (!executed_math(p->plan, m->f32_math).tensor_cores()) {
      // a plan executed_math keeps on SIMT: compiled elsewhere
      ASSERT_EQ(k.options.tensor_math, InnerMath::Simt);
      continue;
    }
    ASSERT_EQ(k.options.tensor_math, m->math);
    // f16 / bf16: the TMA-fed kernel, and the cp.async one that operands TMA cannot read get
    // (tf32 wgmma is TMA-fed only: the engine copies such operands k-major).
    CodegenOptions o = k.options;
    const bool both = k.options.tma && !wgmma_needs_tma(m->math);
    for (bool tma : both ? std::vector<bool>{true, false} : std::vector<bool>{k.options.tma}) {
      o.tma = tma;
      SCOPED_TRACE(tma ? "TMA" : "no TMA");
      const std::string log = testnvrtc::compile(generate_source(p->plan, k.tile, o), "sm_90a");
      EXPECT_EQ(log.find("bytes spill stores") != std::string::npos &&
                    log.find(" 0 bytes spill stores, 0 bytes spill loads") == std::string::npos,
                false)
          << log;
    }
  }
#endif
}

// Persistent tiles (KernelInfo::persistent, docs/tensor-cores.md): TMA-fed wgmma kernels without
// a `when` pass whose outputs have shared memory (tables, ranks) loop over tiles, that memory
// after the stage ring, and so do plain selects over short k, by the kernel choice
// (CodegenOptions::persistent); GAMUT_EXPERIMENT_PERSISTENT=1 makes every such kernel persistent,
// =0 none where the choice left it open; the cp.async kernel and `when` passes keep one tile per block.
TEST(CodegenTensor, PersistentTilesForTmaKernels) {
  struct Case {
    const char* name;
    bool by_default;
    bool shared;  // outputs with shared memory
  };
  int checked = 0;
  for (const Case& q : {Case{"project", false, false}, Case{"aggregate", true, true}, Case{"select", true, false},
                        Case{"top", true, true}}) {
    SCOPED_TRACE(q.name);
    auto p = prepared(query(q.name), DType::BF16);
    KernelChoice k = choice(*p, F32Math::Ieee);
    ASSERT_TRUE(k.options.tma);
    ++checked;
    EXPECT_EQ(kernel_info(p->plan, k.tile, k.options).persistent, q.by_default);
    // (A plain select over short k: the choice asks for it, on the 128 x 128 tile.)
    EXPECT_EQ(k.options.persistent, std::string(q.name) == "select" ? 1 : -1);
    if (std::string(q.name) == "select") EXPECT_EQ(k.tile.bn, 128);
    k.options.persistent = -1;  // the rest: what the form and the environment decide
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "1", 1), 0);
    const KernelInfo info = kernel_info(p->plan, k.tile, k.options);
    EXPECT_TRUE(info.persistent);
    const TcMainloopSpec spec = tc_plan_spec(p->plan, k.tile, k.options.tensor_math, true);
    EXPECT_EQ(info.out_smem_offset, tc_smem_bytes(spec));
    EXPECT_GE(info.smem_bytes, info.out_smem_offset);
    EXPECT_LE(info.smem_bytes, kSm90SmemPerBlock);
    EXPECT_EQ(info.threads, 384);  // two consumer warpgroups and the producer warpgroup
    const std::string src = generate_source(p->plan, k.tile, k.options);
    EXPECT_NE(src.find("Mainloop::produce(smem, tc_a, tc_b, red_begin, red_end, slice);"), std::string::npos);
    EXPECT_NE(src.find("for (int tile = int(blockIdx.x); tile < tiles_all; tile += int(gridDim.x))"),
              std::string::npos);
    // Output operators with shared memory use the space after the ring.
    if (q.shared) EXPECT_NE(src.find("(out_smem + "), std::string::npos) << src;
    EXPECT_EQ(src.find("(smem + "), std::string::npos) << src;
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "0", 1), 0);
    EXPECT_FALSE(kernel_info(p->plan, k.tile, k.options).persistent);
    const std::string one = generate_source(p->plan, k.tile, k.options);
    EXPECT_EQ(one.find("tiles_all"), std::string::npos);
    EXPECT_NE(one.find("Mainloop::consume(acc, smem, red_begin, red_end, slice);"), std::string::npos);
    unsetenv("GAMUT_EXPERIMENT_PERSISTENT");
    k.options.tma = false;
    EXPECT_FALSE(kernel_info(p->plan, k.tile, k.options).persistent);
  }
  EXPECT_EQ(checked, 4);
  auto when = prepared(query("when_filter"), DType::BF16);
  const KernelChoice kw = choice(*when, F32Math::Ieee);
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "1", 1), 0);
  if (kw.options.tma) EXPECT_FALSE(kernel_info(when->plan, kw.tile, kw.options).persistent);
  // tf32x3: the split stages' twins fit beside a product's (empty) outputs.
  auto x3 = prepared(query("project"), DType::F32);
  const KernelChoice k3 = choice(*x3, F32Math::Tf32x3);
  ASSERT_TRUE(k3.options.tma);
  EXPECT_TRUE(kernel_info(x3->plan, k3.tile, k3.options).persistent);
  unsetenv("GAMUT_EXPERIMENT_PERSISTENT");
  // Clusters of two (GAMUT_EXPERIMENT_CLUSTER=2, not the default): the kernel's cluster
  // attribute, the mainloop's CLUSTER, row tiles in pairs, the launcher told.
  auto prod = prepared(query("project"), DType::BF16);
  const KernelChoice kc = choice(*prod, F32Math::Ieee);
  EXPECT_EQ(kernel_info(prod->plan, kc.tile, kc.options).cluster, 1);
  EXPECT_EQ(generate_source(prod->plan, kc.tile, kc.options).find("__cluster_dims__"), std::string::npos);
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_CLUSTER", "2", 1), 0);
  EXPECT_EQ(kernel_info(prod->plan, kc.tile, kc.options).cluster, 2);
  const std::string csrc = generate_source(prod->plan, kc.tile, kc.options);
  EXPECT_NE(csrc.find("__launch_bounds__(384, 1) __cluster_dims__(2, 1, 1) gamut_main"), std::string::npos) << csrc;
  EXPECT_NE(csrc.find("TcShapeT, true, false, 2> Mainloop;"), std::string::npos) << csrc;
  EXPECT_NE(csrc.find("tile_m = 2 * tile_m + int(blockIdx.x) % 2;"), std::string::npos) << csrc;
  EXPECT_NE(csrc.find("Mainloop::drain(smem, slice);"), std::string::npos) << csrc;
  EXPECT_EQ(kernel_info(when->plan, kw.tile, kw.options).cluster, 1);  // (a `when` pass: one block)
  unsetenv("GAMUT_EXPERIMENT_CLUSTER");
}

// Ping-pong consumer groups (GAMUT_EXPERIMENT_PINGPONG=256 / =128, CodegenOptions::pingpong): a
// plain select over short k takes 64 x BN tiles and two groups of one warpgroup, each looping
// over every other tile of its block (the producer over all), outputs synchronized per group
// (GM_TILE_GROUPS); every other output kind and a `when` pass keep the one-group kernel.
// NVRTC accepts each for sm_90a in bf16, f16 and tf32; tf32x3 keeps its own tile.
TEST(CodegenTensor, PingpongGroupsForPlainSelects) {
  int compiled = 0;
  for (const char* bn : {"256", "128"}) {
    SCOPED_TRACE(std::string("GAMUT_EXPERIMENT_PINGPONG=") + bn);
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PINGPONG", bn, 1), 0);
    for (const auto& [t, f] : {std::pair{DType::BF16, F32Math::Ieee}, std::pair{DType::F16, F32Math::Ieee},
                               std::pair{DType::F32, F32Math::Tf32}}) {
      SCOPED_TRACE(std::string(dtype_name(t)));
      auto p = prepared(query("select"), t);
      const KernelChoice k = choice(*p, f);
      ASSERT_TRUE(k.options.tma);
      EXPECT_TRUE(k.options.pingpong);
      EXPECT_EQ(k.tile.bm, 64);
      EXPECT_EQ(k.tile.bn, std::atoi(bn));
      const KernelInfo info = kernel_info(p->plan, k.tile, k.options);
      EXPECT_TRUE(info.persistent);
      EXPECT_EQ(info.threads, 384);  // two groups of one warpgroup, and the producer's
      const TcMainloopSpec spec =
          tc_plan_spec(p->plan, k.tile, k.options.tensor_math, true, false, false, k.options.pingpong);
      EXPECT_EQ(spec.tile.groups, 2);
      EXPECT_EQ(info.out_smem_offset, tc_smem_bytes(spec));
      const std::string src = generate_source(p->plan, k.tile, k.options);
      EXPECT_NE(src.find("#define GM_TILE_GROUPS 2"), std::string::npos) << src;
      EXPECT_NE(src.find(", 1, 0, 0, 2> Mainloop;"), std::string::npos) << src;
      EXPECT_NE(src.find("tile < tiles_all; tile += 2 * int(gridDim.x))"), std::string::npos) << src;
      EXPECT_NE(src.find("Mainloop::pass_over(slice, red_begin, red_end);"), std::string::npos) << src;
      // (The groups' products take turns: an mbarrier's parity tells two phases apart.)
      EXPECT_NE(src.find("Mainloop::wait_turn(tile == int(blockIdx.x));"), std::string::npos) << src;
      EXPECT_NE(src.find("Mainloop::end_turn(tile + int(gridDim.x) >= tiles_all);"), std::string::npos) << src;
      EXPECT_NE(src.find("TcMap(gm::fresh_tid() % Shape::THREADS)"), std::string::npos) << src;
#if GAMUT_HAVE_CUDA
      const std::string log = testnvrtc::compile(src, "sm_90a");
      EXPECT_EQ(log.find("error"), std::string::npos) << log;
      ++compiled;
#endif
    }
    // Other outputs, a `when` pass and tf32x3: no groups.
    for (const char* other : {"project", "aggregate", "top", "distinct", "when_filter"}) {
      auto p = prepared(query(other), DType::BF16);
      EXPECT_FALSE(choice(*p, F32Math::Ieee).options.pingpong) << other;
    }
    auto x3 = prepared(query("select"), DType::F32);
    EXPECT_FALSE(choice(*x3, F32Math::Tf32x3).options.pingpong);
  }
  unsetenv("GAMUT_EXPERIMENT_PINGPONG");
  auto p = prepared(query("select"), DType::BF16);
  EXPECT_FALSE(choice(*p, F32Math::Ieee).options.pingpong);  // (no history: one group)
#if GAMUT_HAVE_CUDA
  EXPECT_EQ(compiled, 6);
#endif
}

// By default (GAMUT_EXPERIMENT_PINGPONG unset or =auto), where the query's last run kept few pairs
// (KernelRequest::few_kept, from the engine's memo), a plain select over short k in bf16 / f16 takes
// ping-pong groups over 64 x 256; tf32, longer k, other outputs and the variable unset keep the
// one-group kernel, and =0 turns the rule off; explain's choice (no history) the same.
// choose_kernel_spec passes the flag on.
TEST(CodegenTensor, FewKeptPairsTakePingpongGroups) {
  unsetenv("GAMUT_EXPERIMENT_PINGPONG");
  auto chosen = [](const Prepared& p, F32Math f, bool few) {
    return choose_kernel(p.instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem, std::nullopt, false, f,
                         TensorIsa::Wgmma, false, few);
  };
  for (const DType t : {DType::BF16, DType::F16}) {
    auto p = prepared(query("select"), t, {300, 520, 200});
    EXPECT_FALSE(chosen(*p, F32Math::Ieee, false).options.pingpong);
    const KernelChoice k = chosen(*p, F32Math::Ieee, true);
    EXPECT_TRUE(k.options.pingpong);
    EXPECT_EQ(k.tile.bm, 64);
    EXPECT_EQ(k.tile.bn, 256);
    KernelRequest r;
    r.few_kept = true;
    const KernelSpec spec = choose_kernel_spec(p->instance, KernelTarget{}, r);
    EXPECT_NE(spec.label.find("pingpong"), std::string::npos) << spec.label;
    EXPECT_EQ(spec.choice, "heuristic");
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PINGPONG", "0", 1), 0);
    EXPECT_FALSE(chosen(*p, F32Math::Ieee, true).options.pingpong);
    ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PINGPONG", "auto", 1), 0);
    EXPECT_TRUE(chosen(*p, F32Math::Ieee, true).options.pingpong);
    unsetenv("GAMUT_EXPERIMENT_PINGPONG");
    // Longer k (bf16 K = 1024: 2 KiB a row) keeps 128 x 256.
    auto long_k = prepared(query("select"), t, {300, 520, 1024});
    EXPECT_FALSE(chosen(*long_k, F32Math::Ieee, true).options.pingpong);
  }
  auto f32 = prepared(query("select"), DType::F32, {300, 520, 200});
  EXPECT_FALSE(chosen(*f32, F32Math::Tf32, true).options.pingpong);
  for (const char* other : {"project", "aggregate", "top", "distinct", "when_filter"}) {
    auto p = prepared(query(other), DType::BF16);
    EXPECT_FALSE(chosen(*p, F32Math::Ieee, true).options.pingpong) << other;
  }
  unsetenv("GAMUT_EXPERIMENT_PINGPONG");
}

// A global top / bottom list over K <= 256 takes 128 x 128 tiles where the grid would fill the
// SMs with 128 x 256 (session 17); longer reductions and other outputs keep 128 x 256.
TEST(CodegenTensor, GlobalRankedListsTakeSquareTilesOnShortReductions) {
  for (const int64_t k : {256, 257}) {
    auto top = prepared(query("top"), DType::BF16, tq::Sizes{4096, 4096, k});
    const KernelChoice kt = choice(*top, F32Math::Ieee);
    ASSERT_TRUE(kt.options.tma);
    EXPECT_EQ(kt.tile.bn, k <= 256 ? 128 : 256) << k;
    auto prod = prepared(query("project"), DType::BF16, tq::Sizes{4096, 4096, k});
    EXPECT_EQ(choice(*prod, F32Math::Ieee).tile.bn, 256) << k;
  }
}

// Resident B (CodegenOptions::resident_b): where the k range fits the stages' B halves (bf16:
// K <= 4 x 64) the choice keeps B's slices for a band of tiles; the kernel is persistent (even a
// global top list whose ranks no longer fit beside the ring), runs contiguous tiles rows first
// and hands the band flags to the mainloop. Longer k, tf32x3, `when`, top per j and the
// experiment's switch keep B streamed.
TEST(CodegenTensor, ResidentBForShortReductions) {
  auto plain = prepared(query("project"), DType::BF16, tq::Sizes{300, 600, 64});
  EXPECT_FALSE(choice(*plain, F32Math::Ieee).options.resident_b);  // an experiment, not the default
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_RESIDENT_B", "1", 1), 0);
  for (const char* name : {"project", "aggregate", "select", "top"}) {
    SCOPED_TRACE(name);
    auto p = prepared(query(name), DType::BF16, tq::Sizes{300, 600, 256});
    const KernelChoice k = choice(*p, F32Math::Ieee);
    ASSERT_TRUE(k.options.tma);
    EXPECT_TRUE(k.options.resident_b);
    const KernelInfo info = kernel_info(p->plan, k.tile, k.options);
    EXPECT_TRUE(info.persistent);
    EXPECT_TRUE(info.bands);
    const TcMainloopSpec spec = tc_plan_spec(p->plan, k.tile, k.options.tensor_math, true, true);
    EXPECT_EQ(spec.tile.panel, spec.tile.stages);
    const std::string src = generate_source(p->plan, k.tile, k.options);
    EXPECT_NE(src.find("TcShapeT, true, false, 1, 4> Mainloop;"), std::string::npos) << src;
    EXPECT_NE(src.find("for (int tile = tile_lo; tile < tile_hi; ++tile)"), std::string::npos);
    EXPECT_NE(src.find("gm::tile_coords_spread<false>(tile - b * tm_e * tn_e"), std::string::npos);
    EXPECT_NE(src.find("Mainloop::produce(smem, tc_a, tc_b, red_begin, red_end, slice, bands, tile == tile_lo || "
                       "tile % tm_e == 0);"),
              std::string::npos);
    EXPECT_NE(src.find("Mainloop::consume(acc, smem, red_begin, red_end, slice, bands, new_band, band_ends);"),
              std::string::npos);
    // The same shared memory as the streamed ring: 4 A stages and 4 B slices.
    TcMainloopSpec streamed = spec;
    streamed.tile.panel = 0;
    EXPECT_EQ(tc_smem_bytes(spec), tc_smem_bytes(streamed));
  }
  // One k-slice more than the stages hold: B streams.
  auto longer = prepared(query("project"), DType::BF16, tq::Sizes{300, 600, 257});
  EXPECT_FALSE(choice(*longer, F32Math::Ieee).options.resident_b);
  // tf32: 32 k a slice, so K <= 128; tf32x3 never (its twins).
  auto f = prepared(query("project"), DType::F32, tq::Sizes{300, 600, 128});
  EXPECT_TRUE(choice(*f, F32Math::Tf32).options.resident_b);
  EXPECT_FALSE(choice(*f, F32Math::Tf32x3).options.resident_b);
  auto f2 = prepared(query("project"), DType::F32, tq::Sizes{300, 600, 129});
  EXPECT_FALSE(choice(*f2, F32Math::Tf32).options.resident_b);
  // `when` (one tile per block) keeps B streamed.
  auto when = prepared(query("when_filter"), DType::BF16, tq::Sizes{300, 600, 64});
  const KernelChoice kw = choice(*when, F32Math::Ieee);
  if (kw.options.tma) EXPECT_FALSE(kw.options.resident_b);
  unsetenv("GAMUT_EXPERIMENT_RESIDENT_B");
  const KernelChoice off = choice(*plain, F32Math::Ieee);
  EXPECT_TRUE(off.options.tma);
  EXPECT_FALSE(off.options.resident_b);
  EXPECT_FALSE(kernel_info(plain->plan, off.tile, off.options).bands);
}

// Block-resident thresholds (CodegenOptions::resident_top, gm::ResidentTop; session 20): a top /
// bottom list per i or per j of N <= 32 over f16 / bf16 (K <= 1024) or tf32 (K <= 512) runs
// on a persistent TMA-fed wgmma kernel of 128 x 128 tiles whose blocks take contiguous tiles,
// column tiles fastest per i (row tiles per j), with the state and the tile's accumulators
// beside the ring. N = 33, longer k ranges, tf32x3, 8-bit math, a device without wgmma and
// other output forms keep the tile selection.
TEST(CodegenTensor, ResidentThresholdsForSmallGroupedLists) {
  for (const char* name : {"bottom_per_i", "knn_expanded"}) {
    SCOPED_TRACE(name);
    auto p = prepared(query(name), DType::BF16, tq::Sizes{4096, 4096, 256});
    const KernelChoice k = choice(*p, F32Math::Ieee);
    ASSERT_TRUE(k.options.tma);
    EXPECT_TRUE(k.options.resident_top);
    EXPECT_EQ(k.tile.bm, 128);
    EXPECT_EQ(k.tile.bn, 128);
    const KernelInfo info = kernel_info(p->plan, k.tile, k.options);
    EXPECT_TRUE(info.persistent);
    EXPECT_TRUE(info.resident_top);
    EXPECT_FALSE(info.bands);
    EXPECT_LE(info.smem_bytes + 256, size_t(227) << 10);  // (sm_90's limit with static words)
    const std::string src = generate_source(p->plan, k.tile, k.options);
    EXPECT_NE(src.find("#include \"gamut_resident_top.cuh\""), std::string::npos);
    EXPECT_NE(src.find("typedef gm::ResidentTop<Shape, gm::kGroupRow, TcMap> Resident;"), std::string::npos) << src;
    // The warps select their own rows (TcMap::kWarpRows): one reserve per warp, no tile barrier.
    EXPECT_NE(src.find("static constexpr bool kWarpRows = true;"), std::string::npos);
    EXPECT_NE(src.find("if (Resident::reserve("), std::string::npos);
    EXPECT_EQ(src.find("gm::tile_sync<Shape::THREADS>();  // the outputs' shared memory"), std::string::npos);
    EXPECT_NE(src.find("for (int tile = tile_lo; tile < tile_hi; ++tile)"), std::string::npos);
    EXPECT_NE(src.find("gm::tile_coords_spread<true>(tile - b * tm_e * tn_e"), std::string::npos);
    EXPECT_NE(src.find("if (tile == tile_lo || tile_n == 0) Resident::reset(rs);"), std::string::npos);
    EXPECT_EQ(src.find("gthr"), std::string::npos);  // no global thresholds, no reservoirs
    // K = 256: the consumers run the outputs too (no epilogue warpgroups).
    EXPECT_FALSE(k.options.epilogue_warpgroups);
    EXPECT_EQ(info.threads, 384);
    EXPECT_EQ(src.find("hand_over"), std::string::npos);
    // N = 33 in the run: the tile selection.
    p->instance.list_limits[0] = 33;
    const KernelChoice k33 = choice(*p, F32Math::Ieee);
    EXPECT_FALSE(k33.options.resident_top);
    EXPECT_FALSE(kernel_info(p->plan, k33.tile, k33.options).resident_top);
    // No wgmma on the device: mma.sync, no resident state.
    p->instance.list_limits[0] = 10;
    EXPECT_FALSE(choose_kernel(p->instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem, std::nullopt, false,
                               F32Math::Ieee, TensorIsa::MmaSync)
                     .options.resident_top);
  }
  // Per j: row tiles fastest, the columns' state.
  const tq::TcQuery per_j{
      "top_per_j", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } emit L(i, j, s) top 7 by s per j; }"};
  auto pj = prepared(per_j, DType::F16, tq::Sizes{1000, 3000, 100});
  const KernelChoice kj = choice(*pj, F32Math::Ieee);
  EXPECT_TRUE(kj.options.resident_top);
  const std::string sj = generate_source(pj->plan, kj.tile, kj.options);
  EXPECT_NE(sj.find("typedef gm::ResidentTop<Shape, gm::kGroupCol, TcMap> Resident;"), std::string::npos);
  // (Per j the block selects: its tile barrier stays.)
  EXPECT_NE(sj.find("gm::tile_sync<Shape::THREADS>();  // the outputs' shared memory"), std::string::npos);
  EXPECT_NE(sj.find("gm::tile_coords_spread<false>(tile - b * tm_e * tn_e"), std::string::npos);
  EXPECT_NE(sj.find("if (tile == tile_lo || tile_m == 0) Resident::reset(rs);"), std::string::npos);
  // Epilogue warpgroups (session 21) from 1792 bytes of k per row (bf16 K > 896, tf32 K > 448):
  // 256 threads run the outputs before the consumers and the producer, the accumulators handed
  // over in shared memory and read there by the outputs.
  for (const int64_t kk : {896, 897}) {
    auto b = prepared(query("knn_expanded"), DType::BF16, tq::Sizes{700, 900, kk});
    const KernelChoice kb = choice(*b, F32Math::Ieee);
    ASSERT_TRUE(kb.options.resident_top) << kk;
    EXPECT_EQ(kb.options.epilogue_warpgroups, kk > 896) << kk;
    const KernelInfo info = kernel_info(b->plan, kb.tile, kb.options);
    const std::string src = generate_source(b->plan, kb.tile, kb.options);
    if (kk == 896) {
      EXPECT_EQ(info.threads, 384);
      EXPECT_NE(src.find("accs[(m * TcMap::kCols + n) * Shape::THREADS + int(threadIdx.x)] = dot;"), std::string::npos);
      continue;
    }
    EXPECT_EQ(info.threads, 640);
    EXPECT_EQ(info.smem_bytes, kernel_info(b->plan, kb.tile,
                                           [&] {
                                             CodegenOptions o = kb.options;
                                             o.epilogue_warpgroups = false;
                                             return o;
                                           }())
                                   .smem_bytes);  // (the same shared memory)
    EXPECT_NE(src.find("__launch_bounds__(640, 1)"), std::string::npos);
    EXPECT_NE(src.find("TcShapeT, true, true, 1, 0, 256> Mainloop;"), std::string::npos) << src;
    EXPECT_NE(src.find("Mainloop::hand_over(acc, tc_accs, tile == tile_lo);"), std::string::npos);
    EXPECT_NE(src.find("Mainloop::wait_full();"), std::string::npos);
    EXPECT_NE(src.find("if (tile + 1 < tile_hi) Mainloop::signal_empty();"), std::string::npos);
    // (The outputs' tile barrier stays before the hand-over's signal: racecheck, session 39.)
    EXPECT_NE(src.find("gm::tile_sync<Shape::THREADS>();  // the outputs' shared memory"), std::string::npos);
    EXPECT_EQ(src.find("acc[TcMap::index(m, n)]"), std::string::npos);  // (no accumulator read from registers)
    EXPECT_EQ(src.find("] = dot;"), std::string::npos);                 // (nor stored by the outputs)
  }
  auto f512 = prepared(query("bottom_per_i"), DType::F32, tq::Sizes{500, 500, 512});
  EXPECT_TRUE(choice(*f512, F32Math::Tf32).options.epilogue_warpgroups);
  // GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS=1 / =0 (measurements, tests): wherever resident / never.
  setenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS", "1", 1);
  const KernelChoice on = choice(*pj, F32Math::Ieee);
  setenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS", "0", 1);
  const KernelChoice off = choice(*f512, F32Math::Tf32);
  unsetenv("GAMUT_EXPERIMENT_EPILOGUE_WARPGROUPS");
  EXPECT_TRUE(on.options.epilogue_warpgroups);
  EXPECT_EQ(kernel_info(pj->plan, on.tile, on.options).threads, 640);
  EXPECT_TRUE(off.options.resident_top);
  EXPECT_FALSE(off.options.epilogue_warpgroups);
  // The k range: bf16 to 1024, tf32 to 512; tf32x3 and i8 never.
  for (const int64_t kk : {1024, 1025}) {
    auto b = prepared(query("bottom_per_i"), DType::BF16, tq::Sizes{500, 500, kk});
    EXPECT_EQ(choice(*b, F32Math::Ieee).options.resident_top, kk <= 1024) << kk;
  }
  for (const int64_t kk : {512, 513}) {
    auto f = prepared(query("bottom_per_i"), DType::F32, tq::Sizes{500, 500, kk});
    EXPECT_EQ(choice(*f, F32Math::Tf32).options.resident_top, kk <= 512) << kk;
    EXPECT_FALSE(choice(*f, F32Math::Tf32x3).options.resident_top) << kk;
  }
  auto i8 = prepared(query("bottom_per_i"), DType::I8, tq::Sizes{500, 500, 64});
  EXPECT_FALSE(choice(*i8, F32Math::Ieee).options.resident_top);
  // A global top list keeps its tile selection.
  auto top = prepared(query("top"), DType::BF16, tq::Sizes{500, 500, 64});
  EXPECT_FALSE(choice(*top, F32Math::Ieee).options.resident_top);
}
