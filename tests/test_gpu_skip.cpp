// How GPU tests decide between skipping and failing (tests/gpu/gpu_skip.h) and what the device
// probe says on a machine without a device or driver (src/cuda/runtime/device.cpp).
#include <dlfcn.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/runtime.h"
#include "gpu/gpu_skip.h"

using namespace gamut;

namespace {

// Sets an environment variable for one scope.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~EnvVar() {
    if (had_)
      ::setenv(name_.c_str(), old_.c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

void skip_without_gpu() { SKIP_WITHOUT_GPU(); }

bool libcuda_loadable() {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h) dlclose(h);
  return h != nullptr;
}

}  // namespace

// "Nothing to run on" (skip) is told from a CUDA error on a machine with a driver (fail).
TEST(GpuSkip, ReasonsTellNoDeviceFromACudaError) {
  EXPECT_TRUE(cuda::device_absent("no usable CUDA device: no NVIDIA GPU found (0 devices)"));
  EXPECT_TRUE(cuda::device_absent("built without CUDA"));
  EXPECT_TRUE(cuda::device_absent("no usable CUDA device: built without CUDA"));
  EXPECT_FALSE(cuda::device_absent(
      "no usable CUDA device: CUDA error: CUDA driver version is insufficient for CUDA runtime version "
      "(cudaErrorInsufficientDriver)"));
  EXPECT_FALSE(cuda::device_absent("no usable CUDA device: CUDA error: out of memory (cudaErrorMemoryAllocation)"));
  EXPECT_FALSE(
      cuda::device_absent("no usable CUDA device: CUDA error: CUDA-capable device(s) is/are busy or unavailable "
                          "(cudaErrorDevicesUnavailable)"));
}

// Without a driver library the probe says so, not "driver version is insufficient" (what cudart
// answers when it cannot load libcuda.so.1).
TEST(GpuSkip, NoDriverIsNoDevice) {
  std::string why;
  if (cuda::device_available(&why)) GTEST_SKIP() << "a CUDA device is present";
  if (libcuda_loadable()) GTEST_SKIP() << "a driver library is present: " << why;
  EXPECT_TRUE(cuda::device_absent(why)) << why;
  EXPECT_EQ(why.find("insufficient"), std::string::npos) << why;
#if GAMUT_HAVE_CUDA
  EXPECT_NE(why.find("no usable CUDA device: no NVIDIA GPU found"), std::string::npos) << why;
  EXPECT_NE(why.find("libcuda.so.1"), std::string::npos) << why;
#endif
}

// Where no GPU is present SKIP_WITHOUT_GPU skips, and fails under GAMUT_REQUIRE_GPU=1.
TEST(GpuSkip, RequireGpuTurnsTheSkipIntoAFailure) {
  std::string why;
  if (cuda::device_available(&why)) GTEST_SKIP() << "a CUDA device is present: SKIP_WITHOUT_GPU passes through";
  {
    EnvVar require("GAMUT_REQUIRE_GPU", "1");
    EXPECT_TRUE(testgpu::gpu_required());
    EXPECT_FATAL_FAILURE(skip_without_gpu(), "GAMUT_REQUIRE_GPU=1 but no usable GPU");
  }
  {
    EnvVar require("GAMUT_REQUIRE_GPU", "0");
    EXPECT_FALSE(testgpu::gpu_required());
  }
  EnvVar require("GAMUT_REQUIRE_GPU", nullptr);
  EXPECT_FALSE(testgpu::gpu_required());
  // Without it: a skip (intercepted here, so that this test itself passes).
  ASSERT_TRUE(cuda::device_absent(why)) << why;
  ::testing::TestPartResultArray results;
  {
    ::testing::ScopedFakeTestPartResultReporter intercept(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ONLY_CURRENT_THREAD, &results);
    skip_without_gpu();
  }
  ASSERT_EQ(results.size(), 1);
  EXPECT_TRUE(results.GetTestPartResult(0).skipped());
  EXPECT_NE(std::string(results.GetTestPartResult(0).message()).find(why), std::string::npos);
}
