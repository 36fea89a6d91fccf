// Shared by the NVRTC compile checks (no GPU needed): the device shape tile choice is checked
// against, and a compile that returns the ptxas -v log.
#pragma once
#include <gtest/gtest.h>

#include <string>

#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

namespace gamut::testnvrtc {

constexpr int kH100Sms = 132;
constexpr size_t kH100Smem = 227 * 1024;

#if GAMUT_HAVE_CUDA
// NVRTC must accept the source; returns the log (ptxas -v output).
inline std::string compile(const std::string& src, const std::string& arch) {
  cuda::CompileOptions o;
  o.arch = arch;
  o.extra = {"-Xptxas=-v"};
  std::string log;
  EXPECT_NO_THROW(cuda::nvrtc_compile(src, o, &log)) << src;
  return log;
}
#endif

}  // namespace gamut::testnvrtc
