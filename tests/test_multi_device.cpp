// The multi-device runner's host side (src/partition/multi_device, issue 14) on the CPU: the
// device list's parsing and checks, the threaded runner with the CPU engine standing in for the
// GPUs (every output operator, several parts at once, identical to the whole run), one error
// for a failing part, and NCCL's loader (a missing library is one line; the host merge then runs).
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>
#include <thread>

#include "cpu/engine.h"
#include "cuda/nccl.h"
#include "driver/pipeline.h"
#include "partition/multi_device.h"
#include "partition_cases.h"

using namespace gamut;
using namespace gamut::partition_cases;

namespace {

template <class F>
std::string error_of(F f, ExitCode* code = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (code) *code = e.code();
    return e.what();
  }
  return "";
}

bool same_results(const Results& x, const Results& y) {
  if (x.dense.size() != y.dense.size() || x.lists.size() != y.lists.size()) return false;
  for (size_t d = 0; d < x.dense.size(); ++d)
    if (x.dense[d].shape != y.dense[d].shape || x.dense[d].data != y.dense[d].data) return false;
  for (size_t l = 0; l < x.lists.size(); ++l) {
    const Table &a = x.lists[l], &b = y.lists[l];
    if (a.rows != b.rows || a.columns.size() != b.columns.size()) return false;
    for (size_t c = 0; c < a.columns.size(); ++c)
      if (a.columns[c].name != b.columns[c].name || a.columns[c].data != b.columns[c].data) return false;
  }
  return true;
}

}  // namespace

TEST(MultiDevice, DeviceRequestsParse) {
  EXPECT_EQ(parse_device_request("2", "--gpus").count, 2);
  EXPECT_EQ(parse_device_request("all", "--gpus").count, -1);
  EXPECT_EQ(parse_device_request("0,1", "--gpus").ordinals, (std::vector<int>{0, 1}));
  EXPECT_EQ(parse_device_request("0,0,0", "--gpus").ordinals, (std::vector<int>{0, 0, 0}));
  for (const char* bad : {"0", "abc", "-1", "", "2.0", " 2", "1,", ",1", "1,,2", "ALL", "9999999"}) {
    ExitCode code{};
    const std::string e = error_of([&] { parse_device_request(bad, "--gpus"); }, &code);
    EXPECT_EQ(code, ExitCode::Usage) << bad;
    EXPECT_EQ(e.rfind("usage error: --gpus '" + std::string(bad) + "'", 0), 0u) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

TEST(MultiDevice, DeviceListsAreCheckedAgainstTheVisibleGpus) {
  EXPECT_TRUE(resolve_devices({}, 0, true, "--gpus").empty());       // not asked
  EXPECT_TRUE(resolve_devices({1, {}}, 0, true, "--gpus").empty());  // one GPU: the normal path
  EXPECT_EQ(resolve_devices({2, {}}, 4, false, "--gpus"), (std::vector<int>{0, 1}));
  EXPECT_EQ(resolve_devices({-1, {}}, 3, false, "--gpus"), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(resolve_devices({0, {0, 0}}, 1, false, "--gpus"), (std::vector<int>{0, 0}));
  ExitCode code{};
  std::string e = error_of([] { resolve_devices({99, {}}, 0, false, "--gpus", "no usable CUDA device: none"); }, &code);
  EXPECT_EQ(code, ExitCode::Device);
  EXPECT_EQ(e, "device error: --gpus 99: no usable CUDA device: none (0 GPUs visible)");
  e = error_of([] { resolve_devices({4, {}}, 2, false, "devices="); }, &code);
  EXPECT_EQ(code, ExitCode::Device);
  EXPECT_EQ(e, "device error: devices= 4: only 2 GPUs are visible");
  e = error_of([] { resolve_devices({0, {0, 3}}, 1, false, "--gpus"); }, &code);
  EXPECT_EQ(e, "device error: --gpus: no GPU 3 (1 GPU is visible, ordinals 0 to 0)");
  e = error_of([] { resolve_devices({2, {}}, 0, true, "--gpus"); }, &code);
  EXPECT_EQ(code, ExitCode::Usage);
  EXPECT_NE(e.find("not --backend cpu"), std::string::npos) << e;
  e = error_of([] { resolve_devices({0, {-1}}, 2, false, "devices="); }, &code);
  EXPECT_EQ(code, ExitCode::Usage);
  e = error_of([] { resolve_devices({-5, {}}, 2, false, "devices="); }, &code);
  EXPECT_EQ(code, ExitCode::Usage);
}

// The CPU engine standing in for the GPUs: ordinals repeat (one "device" runs several parts at
// once), as devices=[0, 0] runs on one GPU.
TEST(MultiDevice, ThreadedPartsMergeToTheWholeRunForEveryOutputOperator) {
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    const Instance& inst = prep->instance;
    const Results whole = run_cpu(inst, 1);
    for (const std::vector<int>& devices : {std::vector<int>{0, 0}, {0, 0, 0}, {0, 1, 0, 1, 0, 1, 0}}) {
      std::mutex mu;
      std::set<std::thread::id> threads;
      MultiRunReport rep;
      const Results got = run_threaded(
          inst, devices,
          [&](const Instance& part, int) {
            {
              std::lock_guard<std::mutex> lock(mu);
              threads.insert(std::this_thread::get_id());
            }
            return run_cpu(part, 1);
          },
          &rep);
      EXPECT_TRUE(same_results(got, whole)) << c.name << " on " << devices.size() << " devices";
      EXPECT_EQ(rep.partition.parts(), int(devices.size())) << c.name << ": " << rep.partition.why;
      EXPECT_EQ(int(threads.size()), rep.partition.parts()) << c.name;
      EXPECT_EQ(rep.devices.size(), devices.size());
      EXPECT_EQ(rep.merge, "host");
    }
  }
}

TEST(MultiDevice, AFailingPartIsOneErrorNamingItAndNoResult) {
  auto prep = prepare(Source{"q.mmlt", kCases[0].text}, bindings(kCases[0]), false);
  ExitCode code{};
  const std::string e = error_of(
      [&] {
        run_threaded(prep->instance, {0, 1, 2}, [](const Instance& part, int device) -> Results {
          if (device >= 1) throw_device_error("out of device memory: asked for 12 bytes");
          return run_cpu(part, 1);
        });
      },
      &code);
  EXPECT_EQ(code, ExitCode::Device);
  EXPECT_EQ(e, "device error: out of device memory: asked for 12 bytes (part 2 of 3, device 1)");
  // Something that is not a gamut error (a bug) is still one line, an internal error.
  const std::string bug = error_of([&] {
    run_threaded(prep->instance, {0, 0}, [](const Instance&, int) -> Results { throw std::logic_error("oops"); });
  });
  EXPECT_EQ(bug, "internal error: oops (part 1 of 2, device 0)");
}

TEST(MultiDevice, DescribesThePartitionWithItsDevices) {
  auto prep = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 200, 8, 3}), false);
  EXPECT_EQ(describe_devices(choose_partition(prep->instance, 2), {0, 1}),
            "partition: 2 parts along i (0..100, 100..200) on GPUs 0,1\n");
  auto flat = prepare(Source{"q.mmlt", kCases[0].text}, bindings({"", "", 1, 1, 3}), false);
  const std::string one = describe_devices(choose_partition(flat->instance, 2), {3, 4});
  EXPECT_EQ(one.rfind("partition: one part (", 0), 0u) << one;
  EXPECT_EQ(one.substr(one.size() - 11), " on GPUs 3\n") << one;
}

TEST(MultiDevice, NcclMergeNeedsDistinctGpusAndAnAggregate) {
  auto agg = prepare(Source{"q.mmlt", kCases[4].text}, bindings(kCases[4]), false);   // sum, min, max
  auto proj = prepare(Source{"q.mmlt", kCases[0].text}, bindings(kCases[0]), false);  // a projection
  EXPECT_EQ(nccl_merge_obstacle(agg->plan, {0}, false), "one part");
  EXPECT_NE(nccl_merge_obstacle(agg->plan, {0, 0}, false).find("several parts"), std::string::npos);
  EXPECT_EQ(nccl_merge_obstacle(proj->plan, {0, 1}, false), "no dense aggregate output to reduce");
}

TEST(MultiDevice, NcclLoaderNamesWhatItTried) {
  std::string why;
  EXPECT_FALSE(cuda::nccl::try_library("/nonexistent/libnccl.so.2", &why));
  EXPECT_EQ(why.rfind("NCCL library /nonexistent/libnccl.so.2 not usable: ", 0), 0u) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  // A library without NCCL's entry points is refused too (libc has none of them).
  EXPECT_FALSE(cuda::nccl::try_library("libc.so.6", &why));
#ifdef GAMUT_HAVE_CUDA
  EXPECT_NE(why.find("has no ncclGetErrorString"), std::string::npos) << why;
  ::setenv("GAMUT_NCCL_LIBRARY", "/opt/x/libnccl.so.2", 1);
  EXPECT_EQ(cuda::nccl::library_candidates(), (std::vector<std::string>{"/opt/x/libnccl.so.2"}));
  ::unsetenv("GAMUT_NCCL_LIBRARY");
  const std::vector<std::string> c = cuda::nccl::library_candidates();
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0], "libnccl.so.2");
#endif
}

// In a child process (the loader runs once per process): a missing library makes the runner's
// merge the host's, with the loader's line as the reason.
TEST(MultiDevice, MissingNcclFallsBackToTheHostMerge) {
#ifndef GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: NCCL is never loaded";
#endif
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto agg = prepare(Source{"q.mmlt", kCases[4].text}, bindings(kCases[4]), false);
  const Plan& plan = agg->plan;
  EXPECT_EXIT(
      {
        ::setenv("GAMUT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
        const std::string why = nccl_merge_obstacle(plan, {0, 1}, false);
        std::cerr << why << "\n";
        std::exit(why.find("/nonexistent/libnccl.so.2") != std::string::npos ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "NCCL");
}
