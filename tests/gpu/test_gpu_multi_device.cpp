// The multi-device runner on the GPU (src/partition/multi_device, issue 14): every output
// operator run through the threaded runner with devices [0, 0] and [0, 0, 0] (the parts share
// one GPU, each from its own thread) gives the CPU engine's whole run bit for bit (integer-valued
// data); the NCCL merge with one rank; the library's devices= option. Skipped without a GPU
// (and the NCCL tests without NCCL).
#include <gtest/gtest.h>

#include <cstring>

#include "../partition_cases.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "cuda/nccl.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "gpu_skip.h"
#include "partition/multi_device.h"
#include "table_compare.h"

using namespace gamut;
using namespace gamut::partition_cases;

namespace {

void expect_same(const Results& want, const Results& got, const std::string& what) {
  ASSERT_EQ(got.dense.size(), want.dense.size()) << what;
  for (size_t d = 0; d < want.dense.size(); ++d)
    EXPECT_TRUE(got.dense[d].data == want.dense[d].data && got.dense[d].shape == want.dense[d].shape)
        << what << ", output " << d;
  ASSERT_EQ(got.lists.size(), want.lists.size()) << what;
  for (size_t l = 0; l < want.lists.size(); ++l)
    EXPECT_TRUE(test::same_table_bits(want.lists[l], got.lists[l], false)) << what << ", list " << l;
}

#define SKIP_WITHOUT_NCCL()                                         \
  do {                                                              \
    std::string why_;                                               \
    if (!gamut::cuda::nccl::available(&why_)) GTEST_SKIP() << why_; \
  } while (0)

}  // namespace

TEST(GpuMultiDevice, EveryOutputOperatorThroughTheThreadedRunner) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    const Instance& inst = prep->instance;
    const Results want = run_cpu(inst, 1);
    for (const std::vector<int>& devices : {std::vector<int>{0, 0}, {0, 0, 0}}) {
      MultiRunReport rep;
      const Results got = run_on_gpus(inst, devices, {}, MergePath::Auto, &rep);
      const std::string what = std::string(c.name) + " on " + std::to_string(devices.size()) + " parts";
      EXPECT_EQ(rep.partition.parts(), int(devices.size())) << what << ": " << rep.partition.why;
      EXPECT_EQ(rep.merge, "host") << what;  // one GPU twice: NCCL needs one rank per GPU
      ASSERT_EQ(rep.part_stats.size(), devices.size());
      expect_same(want, got, what);
    }
  }
}

// Every visible GPU once each (several only on a machine that has them): NCCL where it loads.
TEST(GpuMultiDevice, EveryVisibleGpuMatchesOneGpu) {
  SKIP_WITHOUT_GPU();
  const int n = cuda::device_count();
  if (n < 2) GTEST_SKIP() << "one GPU visible";
  std::vector<int> devices;
  for (int d = 0; d < n; ++d) devices.push_back(d);
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    MultiRunReport rep;
    const Results got = run_on_gpus(prep->instance, devices, {}, MergePath::Auto, &rep);
    expect_same(run_cpu(prep->instance, 1), got,
                std::string(c.name) + " over " + std::to_string(n) + " GPUs, merge " + rep.merge);
  }
}

TEST(GpuMultiDevice, NcclReducesWithOneRank) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NCCL();
  cuda::set_current_device(0);
  std::vector<float> host = {1.5f, -2.0f, 3.0f, 0.25f};
  cuda::DeviceBuffer buf(host.size() * sizeof(float));
  buf.upload(host.data(), host.size() * sizeof(float));
  cuda::nccl::Reduction r;
  r.send = {buf.get()};
  r.recv = buf.get();
  r.count = host.size();
  r.type = cuda::nccl::Type::F32;
  r.op = cuda::nccl::Op::Sum;
  cuda::nccl::reduce_to_first({0}, {r});
  std::vector<float> back(host.size());
  buf.download(back.data(), back.size() * sizeof(float));
  EXPECT_EQ(back, host);
  EXPECT_FALSE(cuda::nccl::version().empty());
}

// The runner's NCCL path (device outputs, ncclReduce of the aggregates, host copy of the rest)
// with one part on GPU 0: every output operator as the whole CPU run.
TEST(GpuMultiDevice, NcclMergePathWithOneRank) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_NCCL();
  for (const Case& c : kCases) {
    auto prep = prepare(Source{"q.mmlt", c.text}, bindings(c), false);
    bool aggregate = false;
    for (const DenseOutput& d : prep->plan.dense) aggregate = aggregate || !d.is_project();
    if (!aggregate) continue;
    MultiRunReport rep;
    const Results got = run_on_gpus(prep->instance, {0}, {}, MergePath::Nccl, &rep);
    EXPECT_EQ(rep.merge, "nccl") << c.name;
    expect_same(run_cpu(prep->instance, 1), got, std::string(c.name) + " through NCCL");
  }
}

TEST(GpuMultiDevice, ForcedNcclOnOneGpuTwiceIsOneClearError) {
  SKIP_WITHOUT_GPU();
  auto prep = prepare(Source{"q.mmlt", kCases[4].text}, bindings(kCases[4]), false);
  try {
    run_on_gpus(prep->instance, {0, 0}, {}, MergePath::Nccl);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

// The library: devices = [0, 0] and [0, 0, 0] give a single run's outputs; the statistics
// name the partition.
TEST(GpuMultiDevice, LibraryDevicesOption) {
  SKIP_WITHOUT_GPU();
  const Case& c = kCases[4];  // a scalar sum, min and max
  const Bindings b = bindings(c);
  Inputs in;
  for (const auto& [name, a] : b.arrays) in.array(name, ArrayRef::host(a.data.data(), a.dtype, a.shape));
  const Query q = Query::compile(c.text);
  const Result one = q.run(in);
  for (const std::vector<int>& devices : {std::vector<int>{0, 0}, {0, 0, 0}}) {
    Options o;
    o.devices = Devices::list(devices);
    const Result r = q.run(in, o);
    EXPECT_EQ(r.stats.devices, devices);
    EXPECT_EQ(r.stats.partition.rfind("partition: " + std::to_string(devices.size()) + " parts along", 0), 0u)
        << r.stats.partition;
    ASSERT_EQ(r.outputs.size(), one.outputs.size());
    for (size_t k = 0; k < one.outputs.size(); ++k)
      EXPECT_EQ(std::memcmp(r.outputs[k].array.data, one.outputs[k].array.data, one.outputs[k].array.nbytes()), 0)
          << one.outputs[k].name;
  }
  // Lists after a single run of the same query: the parts run a plan with list provenance and
  // must not take the single run's kernels from the query's memo (a segfault in the Python
  // tests of the first device run, session 7).
  for (const Case& lc : {kCases[6], kCases[7], kCases[8]}) {
    const Bindings lb = bindings(lc);
    Inputs lin;
    for (const auto& [name, a] : lb.arrays) lin.array(name, ArrayRef::host(a.data.data(), a.dtype, a.shape));
    const Query lq = Query::compile(lc.text);
    const Result single = lq.run(lin);
    Options o;
    o.devices = Devices::list({0, 0});
    const Result r = lq.run(lin, o);
    ASSERT_EQ(r.outputs.size(), single.outputs.size()) << lc.name;
    for (size_t k = 0; k < single.outputs.size(); ++k) {
      const Output &want = single.outputs[k], &got = r.outputs[k];
      ASSERT_TRUE(want.is_list && got.is_list) << lc.name;
      EXPECT_GT(want.rows, 0) << lc.name;
      ASSERT_EQ(got.rows, want.rows) << lc.name;
      ASSERT_EQ(got.columns.size(), want.columns.size()) << lc.name;
      for (size_t c = 0; c < want.columns.size(); ++c)
        EXPECT_EQ(std::memcmp(got.columns[c].second.data, want.columns[c].second.data, want.columns[c].second.nbytes()),
                  0)
            << lc.name << " column " << want.columns[c].first;
    }
  }
  Options too_many;
  too_many.devices = Devices::first(cuda::device_count() + 1);
  try {
    q.run(in, too_many);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_NE(std::string(e.what()).find("only " + std::to_string(cuda::device_count()) + " GPU"), std::string::npos)
        << e.what();
  }
}

// A rewritten program on several GPUs: its first stages on the first GPU, its last stage in parts
// (src/driver/pipeline.cpp execute_program). kNN as users write it under tf32 (the one-sided
// rewrite: norms, then the cross product) and an aggregate by groups (push-down: group sums, then
// the groups' product), integer-valued data: every sum is exact, so the parts give the one-GPU
// result bit for bit, and the run's statistics name the parts.
TEST(GpuMultiDevice, RewrittenProgramsSplitTheirLastStage) {
  SKIP_WITHOUT_GPU();
  const int64_t M = 300, N = 257, K = 40;
  auto ints = [](DType t, std::vector<int64_t> shape, int lo, int hi, unsigned seed) {
    NDArray a = NDArray::zeros(t, std::move(shape));
    unsigned s = seed;
    for (int64_t e = 0; e < a.size(); ++e) {
      s = s * 1103515245u + 12345u;
      const int v = lo + int((s >> 16) % unsigned(hi - lo + 1));
      if (t == DType::F32)
        a.as<float>()[e] = float(v);
      else
        a.as<int32_t>()[e] = v;
    }
    return a;
  };
  struct Program {
    const char* name;
    const char* text;
    Bindings b;
    std::string math;
  };
  std::vector<Program> programs;
  {
    Bindings b;
    b.arrays["Q"] = ints(DType::F32, {M, K}, -3, 3, 1);
    b.arrays["X"] = ints(DType::F32, {N, K}, -3, 3, 2);
    programs.push_back({"kNN as written, tf32",
                        "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }"
                        " emit Near(i, j, dist) bottom 3 by dist per i; }",
                        b, "tf32"});
  }
  {
    Bindings b;
    b.arrays["A"] = ints(DType::F32, {M, K}, 1, 3, 3);
    b.arrays["B"] = ints(DType::F32, {K, N}, 1, 3, 4);
    b.arrays["g"] = ints(DType::I32, {M}, 0, 3, 5);
    b.arrays["h"] = ints(DType::I32, {N}, 0, 2, 6);
    programs.push_back({"aggregate by groups",
                        "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } T[g[i], h[j]] += s; }", b,
                        "ieee"});
  }
  for (const Program& pr : programs) {
    Inputs in;
    for (const auto& [name, a] : pr.b.arrays) in.array(name, ArrayRef::host(a.data.data(), a.dtype, a.shape));
    const Query q = Query::compile(pr.text);
    Options one;
    one.f32_math = pr.math;
    const Result single = q.run(in, one);
    ASSERT_FALSE(single.stats.rewrites.empty()) << pr.name << ": no rewrite, no program to split";
    for (const std::vector<int>& devices : {std::vector<int>{0, 0}, {0, 0, 0}}) {
      Options o = one;
      o.devices = Devices::list(devices);
      const Result r = q.run(in, o);
      const std::string what = std::string(pr.name) + " on " + std::to_string(devices.size()) + " parts";
      EXPECT_EQ(r.stats.devices, devices) << what;
      EXPECT_EQ(r.stats.partition.rfind("partition: " + std::to_string(devices.size()) + " parts along", 0), 0u)
          << what << ": " << r.stats.partition;
      EXPECT_EQ(r.stats.rewrites, single.stats.rewrites) << what;
      ASSERT_EQ(r.outputs.size(), single.outputs.size()) << what;
      for (size_t k = 0; k < single.outputs.size(); ++k) {
        const Output &want = single.outputs[k], &got = r.outputs[k];
        if (!want.is_list) {
          ASSERT_EQ(got.array.nbytes(), want.array.nbytes()) << what;
          EXPECT_EQ(std::memcmp(got.array.data, want.array.data, want.array.nbytes()), 0) << what;
          continue;
        }
        EXPECT_GT(want.rows, 0) << what;
        ASSERT_EQ(got.rows, want.rows) << what;
        for (size_t c = 0; c < want.columns.size(); ++c)
          EXPECT_EQ(
              std::memcmp(got.columns[c].second.data, want.columns[c].second.data, want.columns[c].second.nbytes()), 0)
              << what << " column " << want.columns[c].first;
      }
    }
  }
}
