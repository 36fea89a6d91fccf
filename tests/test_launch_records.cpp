// The signature of a library call that launch records are keyed by (src/api/launch_records.h),
// without a GPU: equal for calls that differ only in where their arrays lie (at the same
// alignment), different for a change of anything a run reads before its launch. The records'
// replays themselves run on the device (ApiDevice.RepeatedCallsReplayTheRecordedLaunch).
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "api/launch_records.h"

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::Inputs;
using gamut::Options;
using gamut::api::LaunchRecords;

// Two device arrays at `a` and `b` (addresses), 8 x 4 and 4 x 6 f32, and a scalar.
Inputs call(uintptr_t a, uintptr_t b) {
  Inputs in;
  in.array("A", ArrayRef::cuda(reinterpret_cast<const void*>(a), DType::F32, {8, 4}))
      .array("B", ArrayRef::cuda(reinterpret_cast<const void*>(b), DType::F32, {4, 6}))
      .scalar("t", 2.0);
  return in;
}

TEST(LaunchRecords, SignatureIsWhatARunReadsBeforeItsLaunch) {
  const uintptr_t a = 0x7f0000001000, b = 0x7f0000100000;
  const Options o;
  const std::string base = LaunchRecords::key(call(a, b), o, 0);
  EXPECT_FALSE(base.empty());
  // Other memory at the same alignment (modulo 256): the same signature.
  EXPECT_EQ(LaunchRecords::key(call(a + 4096, b + 256), o, 0), base);

  // Each change below gives another signature.
  std::vector<std::pair<std::string, std::function<std::string()>>> changes = {
      {"device", [&] { return LaunchRecords::key(call(a, b), o, 1); }},
      {"alignment", [&] { return LaunchRecords::key(call(a + 4, b), o, 0); }},
      {"null data", [&] { return LaunchRecords::key(call(0, b), o, 0); }},
      {"shape",
       [&] {
         Inputs in = call(a, b);
         in.arrays["A"].shape = {9, 4};
         return LaunchRecords::key(in, o, 0);
       }},
      {"strides",
       [&] {
         Inputs in = call(a, b);
         in.arrays["A"].strides = {8, 1};
         return LaunchRecords::key(in, o, 0);
       }},
      {"element type",
       [&] {
         Inputs in = call(a, b);
         in.arrays["B"].dtype = DType::BF16;
         return LaunchRecords::key(in, o, 0);
       }},
      {"device of an array",
       [&] {
         Inputs in = call(a, b);
         in.arrays["B"].device.id = 1;
         return LaunchRecords::key(in, o, 0);
       }},
      {"binding name",
       [&] {
         Inputs in = call(a, b);
         in.arrays["C"] = in.arrays["B"];
         in.arrays.erase("B");
         return LaunchRecords::key(in, o, 0);
       }},
      {"scalar value", [&] { return LaunchRecords::key(call(a, b).scalar("t", 3.0), o, 0); }},
      {"scalar type", [&] { return LaunchRecords::key(call(a, b).scalar("t", int64_t(2)), o, 0); }},
      {"extent", [&] { return LaunchRecords::key(call(a, b).extent("H", {13}), o, 0); }},
  };
  auto option = [&](const char* what, std::function<void(Options&)> set) {
    changes.emplace_back(what, [&, set] {
      Options x;
      set(x);
      return LaunchRecords::key(call(a, b), x, 0);
    });
  };
  option("f32_math", [](Options& x) { x.f32_math = "tf32"; });
  option("backend", [](Options& x) { x.backend = "gpu"; });
  option("tile", [](Options& x) { x.tile = "64x64x8/4x4"; });
  option("kernel_variant", [](Options& x) { x.kernel_variant = "wgmma 64x128 s3 b2"; });
  option("tuned", [](Options& x) { x.tuned = false; });
  option("rewrites", [](Options& x) { x.rewrites = false; });
  option("as_written", [](Options& x) { x.as_written = true; });
  option("finish", [](Options& x) { x.finish = false; });
  option("allocator", [](Options& x) {
    x.allocator = [](DType, const std::vector<int64_t>&, gamut::Device) { return gamut::Allocation{}; };
  });
  for (const auto& [what, key] : changes) EXPECT_NE(key(), base) << what;

  // The environment a kernel choice reads (GAMUT_ variables).
  ASSERT_EQ(setenv("GAMUT_LAUNCH_RECORDS_TEST", "1", 1), 0);
  EXPECT_NE(LaunchRecords::key(call(a, b), o, 0), base);
  unsetenv("GAMUT_LAUNCH_RECORDS_TEST");
  EXPECT_EQ(LaunchRecords::key(call(a, b), o, 0), base);
}

TEST(LaunchRecords, NotForBenchmarksProgressOrSeveralGpus) {
  Options o;
  EXPECT_TRUE(LaunchRecords::may_record(o));
  o.repeats = 3;
  EXPECT_FALSE(LaunchRecords::may_record(o));
  o = Options{};
  o.progress = [](double) {};
  EXPECT_FALSE(LaunchRecords::may_record(o));
  o = Options{};
  o.devices = gamut::Devices::first(2);
  EXPECT_FALSE(LaunchRecords::may_record(o));
  o = Options{};
  o.backend = "cpu";
  EXPECT_FALSE(LaunchRecords::may_record(o));
}

TEST(LaunchRecords, NoSignatureBeforeARecordIsKept) {
  LaunchRecords r;
  EXPECT_EQ(r.signature(call(0x1000, 0x2000), Options{}), "");
  EXPECT_EQ(r.find(""), nullptr);
}

}  // namespace
