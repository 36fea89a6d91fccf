// `gamut peak` on a real device: every microbenchmark runs and gives a plausible rate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <string>

#include "cuda/runtime.h"
#include "peak/peak.h"
#include "gpu_skip.h"

namespace fs = std::filesystem;
using namespace gamut;

TEST(PeakDevice, MeasureGivesSaneRates) {
  SKIP_WITHOUT_GPU();
  // A private disk cache so the test neither reads nor fills the user's.
  std::string tmpl = (fs::temp_directory_path() / "gamut-peak-XXXXXX").string();
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  setenv("GAMUT_CACHE_DIR", tmpl.c_str(), 1);
  cuda::clear_memory_cache();

  const peak::Report r = peak::measure(1);
  std::cout << peak::table(r);
  // 15 steps x 3 operand kinds, and the copy.
  EXPECT_EQ(r.entries.size(), peak::steps().size() * 3 + 1);
  for (const peak::Entry& e : r.entries)
    EXPECT_GT(e.gops, 0) << e.op << " " << e.type << " " << e.operands;
  const double fma = peak::ceiling_gops(r, "fma", "f32");
  EXPECT_GE(fma, 1e3);
  EXPECT_LE(fma, 2e5);
  EXPECT_GT(r.copy_gbps, 10);
  // The saved report reads back.
  EXPECT_DOUBLE_EQ(peak::ceiling_gops(peak::from_json(peak::to_json(r)), "fma", "f32"), fma);

  cuda::clear_memory_cache();
  unsetenv("GAMUT_CACHE_DIR");
  fs::remove_all(tmpl);
}
