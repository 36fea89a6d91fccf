// GPU tests skip, reported as skipped, where this build or machine has no usable CUDA device.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "cuda/gpu_engine.h"

#define SKIP_WITHOUT_GPU()                                        \
  do {                                                            \
    std::string why_;                                             \
    if (!gamut::cuda::gpu_available(&why_)) GTEST_SKIP() << why_; \
  } while (0)
