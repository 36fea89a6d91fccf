// GPU tests skip, reported as skipped, where this build or machine has no CUDA device or driver.
// They fail instead
// - when GAMUT_REQUIRE_GPU=1 (set by the device scripts, tools/device_run.sh): a GPU run whose
//   device went missing must not pass as "skipped";
// - on a CUDA error of a machine that has a driver (a driver older than the runtime, out of
//   memory, an exclusive or busy device): the reason says which (cuda::device_absent).
#pragma once
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"

namespace gamut::testgpu {

// GAMUT_REQUIRE_GPU set to anything but "" or "0".
inline bool gpu_required() {
  const char* r = std::getenv("GAMUT_REQUIRE_GPU");
  return r && *r && std::string(r) != "0";
}

}  // namespace gamut::testgpu

#define SKIP_WITHOUT_GPU()                                                                                   \
  do {                                                                                                       \
    std::string why_;                                                                                        \
    if (!gamut::cuda::gpu_available(&why_)) {                                                                \
      if (gamut::testgpu::gpu_required()) GTEST_FAIL() << "GAMUT_REQUIRE_GPU=1 but no usable GPU: " << why_; \
      if (!gamut::cuda::device_absent(why_)) GTEST_FAIL() << "the GPU cannot be used: " << why_;             \
      GTEST_SKIP() << why_;                                                                                  \
    }                                                                                                        \
  } while (0)
