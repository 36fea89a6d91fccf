// Every reference query's generated kernel compiles with NVRTC for sm_90 (Hopper, sm_90a) and
// sm_80, with the tile the engine would choose on an H100/H200. Needs NVRTC, not a GPU.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "sema/analyze.h"

using namespace gamut;

namespace {

// Input types the reference queries are used with (integers where the query is integral).
const std::map<std::string, TypeEnv>& reference_types() {
  auto f = [](std::initializer_list<const char*> names) {
    TypeEnv e;
    for (const char* n : names) e.inputs[n] = DType::F32;
    return e;
  };
  static const std::map<std::string, TypeEnv> t = [&] {
    std::map<std::string, TypeEnv> m;
    m["sgemm"] = f({"A", "B"});
    m["q1_amplify"] = f({"S", "W", "thres"});
    for (const char* q : {"q2_zip_aggregate", "q3_count_pairs", "q4_join_area"}) {
      m[q] = f({"P", "R"});
      m[q].inputs["Pzip"] = DType::I32;
      m[q].inputs["Rzip"] = DType::I32;
    }
    m["q5_select"] = f({"P", "R"});
    m["q6_complementary"] = f({"A"});
    m["q7_top128"] = f({"P", "R"});
    m["knn"] = f({"Q", "X"});
    m["maxplus"] = TypeEnv{{{"A", DType::I32}, {"B", DType::I32}}};
    m["minplus_batched"] = f({"D", "E"});
    m["reachability"] = TypeEnv{{{"Adj", DType::U8}}};
    return m;
  }();
  return t;
}

}  // namespace

class ReferenceKernel : public ::testing::TestWithParam<std::string> {};

TEST_P(ReferenceKernel, CompilesForSm90aAndSm80) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA (no NVRTC)";
#else
  const std::string q = GetParam();
  std::ifstream f(std::string(GAMUT_SOURCE_DIR) + "/examples/" + q + ".mmlt");
  std::stringstream ss;
  ss << f.rdbuf();
  Plan plan = build_plan(Source{q, ss.str()}, reference_types().at(q));
  ASSERT_TRUE(plan.typed);
  // 132 SMs and 227 KiB of shared memory per block: an H100 / H200.
  cuda::TileConfig tile = cuda::choose_tile(plan, 132, 227 * 1024);
  std::string src = cuda::generate_source(plan, tile);
  ASSERT_NE(src.find(cuda::kMainKernelName), std::string::npos);
  for (const char* arch : {"sm_90a", "sm_80"}) {
    cuda::CompileOptions o;
    o.arch = arch;
    std::string cubin;
    EXPECT_NO_THROW(cubin = cuda::nvrtc_compile(src, o)) << q << " for " << arch;
    ASSERT_GE(cubin.size(), 4u);
    EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF") << q << " for " << arch;
  }
#endif
}

INSTANTIATE_TEST_SUITE_P(All, ReferenceKernel,
                         ::testing::Values("sgemm", "q1_amplify", "q2_zip_aggregate", "q3_count_pairs", "q4_join_area",
                                           "q5_select", "q6_complementary", "q7_top128", "knn", "maxplus",
                                           "minplus_batched", "reachability"),
                         [](const auto& info) { return info.param; });
