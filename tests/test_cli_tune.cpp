// `gamut tune` and the kernel choice on the command line without a GPU: one clear line and the
// device error's exit status, usage errors before that, and explain's `kernel choice:` line
// (heuristic, or forced by --kernel-variant). The search itself: tests/gpu/test_gpu_tune.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "cli_process.h"
#include "cuda/gpu_engine.h"
#include "data/npy.h"

namespace fs = std::filesystem;
using cli_test::Exit;
using cli_test::run_gamut;

namespace {

std::string example(const char* name) { return std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt"; }

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

struct Data {
  fs::path dir = cli_test::scratch_name("tune");
  std::string A, B;
  Data() {
    fs::create_directories(dir);
    A = (dir / "a.npy").string();
    B = (dir / "b.npy").string();
    gamut::write_npy(A, gamut::NDArray::zeros(gamut::DType::BF16, {8, 4}));
    gamut::write_npy(B, gamut::NDArray::zeros(gamut::DType::BF16, {4, 6}));
  }
  ~Data() { fs::remove_all(dir); }
};

}  // namespace

TEST(CliTune, WithoutAGpuOneLineAndTheDeviceStatus) {
  if (gamut::cuda::gpu_available(nullptr)) GTEST_SKIP() << "a GPU is present (tests/gpu/test_gpu_tune.cpp searches)";
  const Exit e = run_gamut({"tune", "--family", "lists", "--seconds", "30"});
  EXPECT_EQ(e.code, 4) << e.err;
  EXPECT_EQ(e.err.rfind("device error: gamut tune needs a GPU: no usable CUDA device: ", 0), 0u) << e.err;
  EXPECT_EQ(lines(e.err), 1u) << e.err;
  EXPECT_EQ(e.out, "");
}

TEST(CliTune, UsageErrorsComeFirst) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"tune", "--family", "tiles"},
                                               {"tune", "--seconds", "0"},
                                               {"tune", "--sizes", "12"},
                                               {"tune", "--sizes", "1024x"},
                                               {"tune", "--repeat", "0"},
                                               {"tune", "extra"}}) {
    const Exit e = run_gamut(args);
    EXPECT_EQ(e.code, 2) << args[1] << ": " << e.err;
    EXPECT_EQ(e.err.rfind("usage error: ", 0), 0u) << e.err;
  }
}

TEST(CliTune, ExplainSaysWhoChoseTheKernel) {
  Data d;
  const Exit h = run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B});
  ASSERT_EQ(h.code, 0) << h.err;
  if (!gamut::cuda::gpu_available(nullptr))  // (with a GPU, a tuned table may hold a winner)
    EXPECT_NE(h.out.find("\nkernel choice: heuristic, family product.bf16\n"), std::string::npos) << h.out;
  const Exit f =
      run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B, "--kernel-variant", "wgmma 64x128 s3 b2"});
  ASSERT_EQ(f.code, 0) << f.err;
  EXPECT_NE(f.out.find("\nkernel choice: forced (kernel_variant), family product.bf16\n"), std::string::npos) << f.out;
  EXPECT_NE(f.out.find("64x128x64/2x32/s3/b2 wgmma+tma bf16"), std::string::npos) << f.out;
  const Exit bad = run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B, "--kernel-variant", "simt 64x64x8"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("does not apply: the query runs on tensor cores"), std::string::npos) << bad.err;
  const Exit malformed =
      run_gamut({"run", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu", "--kernel-variant", "wgmma 128"});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_EQ(malformed.err.rfind("usage error: kernel variant 'wgmma 128': ", 0), 0u) << malformed.err;
}
