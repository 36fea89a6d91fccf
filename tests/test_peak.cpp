// `gamut peak` without a GPU: the microbenchmark source compiles with NVRTC for both sides of
// its DPX #if, the report's table and JSON, the ceiling lookup, and measure()'s device error.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "cuda/runtime.h"
#include "peak/peak.h"

using namespace gamut;
using namespace gamut::peak;

namespace {

Report sample_report() {
  Report r;
  r.device = "Test GPU (sm_90a, 132 SMs)";
  r.copy_gbps = 3012.5;
  r.entries = {
      {"fma", "f32", "registers", 60123.4, 2, "FFMA"},
      {"fma", "f32", "both smem", 50000.5, 2, "FFMA"},
      {"add-max", "i32", "registers", 30000, 2, "VIADDMNMX (DPX)"},
      {"add-max", "i32", "registers", 29000, 2, "VIADDMNMX (plain, fused by ptxas)"},
      {"or-and", "b32", "one smem", 1.0e6, 64, "LOP3"},
      {"copy", "bytes", "copy", 3012.5, 1, "LDG.E.128+STG.E.128"},
  };
  return r;
}

// The cubin names every kernel as a plain (extern "C") symbol.
[[maybe_unused]] void expect_all_kernels(const std::string& cubin) {
  for (const Step& s : steps())
    for (int kind = 0; kind < 3; ++kind)
      EXPECT_NE(cubin.find(kernel_name(s, kind)), std::string::npos) << kernel_name(s, kind);
  EXPECT_NE(cubin.find(kCopyKernel), std::string::npos);
}

void compile_for(const std::string& arch) {
#if GAMUT_HAVE_CUDA
  cuda::CompileOptions o;
  o.arch = arch;
  std::string log;
  std::string cubin;
  try {
    cubin = cuda::nvrtc_compile(kernel_source(), o, &log);
  } catch (const Error& e) {
    FAIL() << e.what() << "\n" << log;
  }
  EXPECT_FALSE(cubin.empty());
  expect_all_kernels(cubin);
#else
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#endif
}

}  // namespace

// sm_90a takes the DPX branch (__viaddmax_s32 ...), sm_80 the plain sequence.
TEST(Peak, SourceCompilesForSm90a) { compile_for("sm_90a"); }
TEST(Peak, SourceCompilesForSm80) { compile_for("sm_80"); }

TEST(Peak, SourceHasBothDpxPaths) {
  const std::string src = kernel_source();
  EXPECT_NE(src.find("#if __CUDA_ARCH__ >= 900"), std::string::npos);
  for (const char* f : {"__viaddmax_s32", "__viaddmin_s32", "__viaddmax_s16x2", "__viaddmin_s16x2",
                        "__vadd2"})
    EXPECT_NE(src.find(f), std::string::npos) << f;
  EXPECT_NE(src.find("extern \"C\" __global__"), std::string::npos);
}

TEST(Peak, StepTable) {
  std::set<std::string> ids, names;
  for (const Step& s : steps()) {
    EXPECT_TRUE(ids.insert(s.id).second) << s.id;
    for (int kind = 0; kind < 3; ++kind) EXPECT_TRUE(names.insert(kernel_name(s, kind)).second);
    const double expected = s.type == "b32" ? 64 : s.type == "i16x2" ? 4 : 2;
    EXPECT_EQ(s.ops_per_element, expected) << s.id;
    EXPECT_FALSE(s.instruction.empty());
  }
  // Every (operation, type) the brief lists is there.
  auto has = [&](const char* op, const char* type) {
    for (const Step& s : steps())
      if (s.op == op && s.type == type) return true;
    return false;
  };
  for (auto [op, type] : {std::pair{"fma", "f32"}, {"add-max", "f32"}, {"add-min", "f32"},
                          {"add-max", "f64"}, {"add-min", "f64"}, {"add-max", "i32"},
                          {"add-min", "i32"}, {"add-max", "i16x2"}, {"add-min", "i16x2"},
                          {"max-min", "f32"}, {"max-min", "i32"}, {"or-and", "b32"}})
    EXPECT_TRUE(has(op, type)) << op << " " << type;
  EXPECT_EQ(kernel_name(steps()[0], 0), "peak_fma_f32_reg");
  EXPECT_EQ(kernel_name(steps()[0], 2), "peak_fma_f32_smem2");
  EXPECT_EQ(steps_per_iteration(0), 16 * 8);        // chains x rounds
  EXPECT_EQ(steps_per_iteration(1), 8 * 8 * 8);     // BK x TM x TN
  EXPECT_EQ(steps_per_iteration(2), 8 * 8 * 8);
}

TEST(Peak, JsonRoundTrip) {
  const Report r = sample_report();
  const Report back = from_json(to_json(r));
  EXPECT_EQ(back.device, r.device);
  EXPECT_DOUBLE_EQ(back.copy_gbps, r.copy_gbps);
  ASSERT_EQ(back.entries.size(), r.entries.size());
  for (size_t i = 0; i < r.entries.size(); ++i) {
    EXPECT_EQ(back.entries[i].op, r.entries[i].op);
    EXPECT_EQ(back.entries[i].type, r.entries[i].type);
    EXPECT_EQ(back.entries[i].operands, r.entries[i].operands);
    EXPECT_DOUBLE_EQ(back.entries[i].gops, r.entries[i].gops);
    EXPECT_DOUBLE_EQ(back.entries[i].ops_per_element, r.entries[i].ops_per_element);
    EXPECT_EQ(back.entries[i].instruction, r.entries[i].instruction);
  }
  EXPECT_EQ(to_json(back), to_json(r));
}

TEST(Peak, FromJsonRejectsMalformed) {
  for (const char* text : {"", "{", "[]", R"({"device": "x", "copy_gbps": 1})",
                           R"({"device": "x", "copy_gbps": 1, "entries": [{"op": "fma"}]})",
                           R"({"device": 3, "copy_gbps": 1, "entries": []})"}) {
    try {
      from_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Data) << text;
      EXPECT_EQ(std::string(e.what()).rfind("data error: peak report: ", 0), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    }
  }
}

TEST(Peak, Table) {
  const std::string t = table(sample_report());
  EXPECT_NE(t.find("Test GPU (sm_90a, 132 SMs)"), std::string::npos);
  EXPECT_NE(t.find("60123.4"), std::string::npos) << t;
  EXPECT_NE(t.find("VIADDMNMX (DPX)"), std::string::npos);
  EXPECT_NE(t.find("both smem"), std::string::npos);
  EXPECT_NE(t.find("copy bandwidth: 3012.5 GB/s"), std::string::npos) << t;
  // One header, one line per ALU entry, the copy line, the legend.
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 1 + 1 + 5 + 1 + 1) << t;
}

TEST(Peak, CeilingLookup) {
  const Report r = sample_report();
  EXPECT_DOUBLE_EQ(ceiling_gops(r, "fma", "f32"), 60123.4);
  EXPECT_DOUBLE_EQ(ceiling_gops(r, "fma", "f32", "both smem"), 50000.5);
  EXPECT_DOUBLE_EQ(ceiling_gops(r, "add-max", "i32"), 30000);   // the better of DPX and plain
  EXPECT_DOUBLE_EQ(ceiling_gops(r, "or-and", "b32", "one smem"), 1.0e6);
  EXPECT_DOUBLE_EQ(ceiling_gops(r, "copy", "bytes", "copy"), 3012.5);
  EXPECT_EQ(ceiling_gops(r, "fma", "f64"), 0);
  EXPECT_EQ(ceiling_gops(r, "or-and", "b32"), 0);
}

TEST(Peak, MeasureNeedsDevice) {
  if (cuda::device_available()) GTEST_SKIP() << "a device is present";
  try {
    measure(1);
    FAIL() << "measure() without a device returned";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_EQ(std::string(e.what()).rfind("device error: ", 0), 0u) << e.what();
  }
}
