// Memory exhaustion (issue 11, item 3): what the host has available (MemAvailable, cgroups v1
// and v2, RLIMIT_AS), what a run will hold (bind/footprint.h), the CPU engine's thread count
// under a memory limit, and lists that outgrow their budget while they grow.
#include <gtest/gtest.h>

#include "asan_skip.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "bind/footprint.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "cpu/engine.h"
#include "cpu/program.h"
#include "driver/pipeline.h"

namespace fs = std::filesystem;
using namespace gamut;

namespace {

struct TempTree {
  fs::path root;
  TempTree() {
    static int n = 0;
    root = fs::temp_directory_path() / ("gamut_mem_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::create_directories(root);
  }
  ~TempTree() { fs::remove_all(root); }
  void put(const std::string& rel, const std::string& text) const {
    fs::create_directories((root / rel).parent_path());
    std::ofstream(root / rel) << text;
  }
  HostMemorySources sources() const {
    HostMemorySources s;
    s.meminfo = (root / "proc/meminfo").string();
    s.self_cgroup = (root / "proc/self/cgroup").string();
    s.self_status = (root / "proc/self/status").string();
    s.cgroup_root = (root / "sys/fs/cgroup").string();
    s.address_space_limit = false;
    return s;
  }
};

constexpr int64_t kMiB = int64_t(1) << 20;

NDArray filled(DType t, std::vector<int64_t> shape, int64_t modulo) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  for (int64_t e = 0; e < a.size(); ++e) {
    if (t == DType::F32) a.as<float>()[e] = float(1 + e % modulo);
    else if (t == DType::I32) a.as<int32_t>()[e] = int32_t(e % modulo);
    else a.as<int64_t>()[e] = e % modulo;
  }
  return a;
}

std::unique_ptr<Prepared> prepared(const std::string& text, Bindings b) {
  return prepare(Source{"q.mmlt", text}, std::move(b), false);
}

// Two aggregates by g[i]: their extents come from --dim, their rows are shared by many i.
const char* kTwoAggregates =
    "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[g[i]] += a; D[g[i], j] max= a; }";

Bindings two_aggregates(int64_t c_rows, int64_t d_rows) {
  Bindings b;
  b.arrays["A"] = filled(DType::F32, {6, 3}, 5);
  b.arrays["B"] = filled(DType::F32, {3, 5}, 3);
  b.arrays["g"] = filled(DType::I32, {6}, 4);
  b.dims["C"] = {c_rows};
  b.dims["D"] = {d_rows, 5};
  return b;
}

}  // namespace

TEST(HostMemory, MemAvailableAlone) {
  TempTree t;
  t.put("proc/meminfo", "MemTotal:       24684092 kB\nMemFree:   100 kB\nMemAvailable:   23099736 kB\n");
  t.put("proc/self/cgroup", "0::/\n");
  HostMemory m = host_memory(t.sources());
  EXPECT_EQ(m.available, int64_t(23099736) * 1024);
  EXPECT_EQ(m.limited_by, "MemAvailable");
}

TEST(HostMemory, CgroupV1LimitOfAnAncestorCountsAndCacheIsFree) {
  TempTree t;
  t.put("proc/meminfo", "MemAvailable:   23099736 kB\n");
  t.put("proc/self/cgroup", "9:name=systemd:/\n4:memory:/jobs/42\n1:cpu:/\n0::/\n");
  const std::string m = "sys/fs/cgroup/memory/";
  t.put(m + "memory.limit_in_bytes", "9223372036854771712\n");   // v1's "no limit"
  t.put(m + "jobs/memory.limit_in_bytes", std::to_string(2048 * kMiB) + "\n");
  t.put(m + "jobs/memory.usage_in_bytes", std::to_string(1024 * kMiB) + "\n");
  t.put(m + "jobs/memory.stat", "cache 5\ntotal_inactive_file " + std::to_string(256 * kMiB) + "\n");
  t.put(m + "jobs/42/memory.limit_in_bytes", "9223372036854771712\n");
  t.put(m + "jobs/42/memory.usage_in_bytes", "123\n");
  HostMemory h = host_memory(t.sources());
  EXPECT_EQ(h.available, (2048 - 1024 + 256) * kMiB);
  EXPECT_EQ(h.limited_by, "cgroup memory.limit_in_bytes");
}

TEST(HostMemory, CgroupV2MaxAndAContainerThatSeesItsCgroupAsRoot) {
  TempTree t;
  t.put("proc/meminfo", "MemAvailable:   23099736 kB\n");
  // The path names the cgroup in the host's hierarchy; inside the container it is the root.
  t.put("proc/self/cgroup", "0::/kubepods/pod7/abc\n");
  t.put("sys/fs/cgroup/cgroup.controllers", "cpu memory\n");
  t.put("sys/fs/cgroup/memory.max", std::to_string(512 * kMiB) + "\n");
  t.put("sys/fs/cgroup/memory.current", std::to_string(100 * kMiB) + "\n");
  t.put("sys/fs/cgroup/memory.stat", "anon 1\ninactive_file " + std::to_string(10 * kMiB) + "\n");
  HostMemory h = host_memory(t.sources());
  EXPECT_EQ(h.available, (512 - 90) * kMiB);
  EXPECT_EQ(h.limited_by, "cgroup memory.max");
  t.put("sys/fs/cgroup/memory.max", "max\n");
  h = host_memory(t.sources());
  EXPECT_EQ(h.limited_by, "MemAvailable");
}

TEST(HostMemory, AddressSpaceLimitLeavesLimitMinusWhatIsMapped) {
  SKIP_UNDER_ASAN();
  // In a child: the limit must not constrain the test process.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit rl{};
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = rlim_t(64) << 30;   // above what the test maps, below the machine's memory
    if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    HostMemory m = host_memory();
    std::ifstream status("/proc/self/status");
    std::string line;
    int64_t vm = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm = std::atoll(line.c_str() + 7) * 1024;
    const bool ok = m.limited_by == "RLIMIT_AS" ? std::llabs(m.available - ((int64_t(64) << 30) - vm)) < 64 * kMiB
                                                : m.available < (int64_t(64) << 30);   // MemAvailable is smaller
    _exit(ok ? 0 : 1);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

TEST(Footprint, CpuHostMemoryCountsOutputsAndPerThreadCopies) {
  auto p = prepared(kTwoAggregates, two_aggregates(1000, 300));
  const Plan& P = p->plan;
  ASSERT_EQ(P.dense.size(), 2u);
  EXPECT_TRUE(dense_output_shared(P, 0));
  EXPECT_TRUE(dense_output_shared(P, 1)) << "D[g[i], j]: several i share a row";
  MemoryEstimate one = cpu_host_memory(p->instance, 1);
  ASSERT_EQ(one.items.size(), 2u);
  EXPECT_EQ(one.items[0].what, "output C");
  EXPECT_EQ(one.items[0].bytes, 4000);
  EXPECT_EQ(one.items[1].bytes, 300 * 5 * 4);
  EXPECT_EQ(one.total(), 4000 + 6000);
  MemoryEstimate four = cpu_host_memory(p->instance, 4);
  EXPECT_EQ(four.total(), 5 * (4000 + 6000)) << "the result plus a copy per thread";
}

TEST(Footprint, SharedOutputsAgreeWithTheCpuEngine) {
  // dense_output_shared is the plan-level form of the engine's own rule (Module::dense_unique).
  const std::vector<std::string> outputs = {"C[i, j] = a;", "C[j, i] = a;", "C[i] += a;", "C[g[i], j] += a;",
                                            "C[i, h[j]] max= a;", "total += a;", "C[j] min= a;"};
  for (const std::string& out : outputs) {
    Bindings b;
    b.arrays["A"] = filled(DType::F32, {4, 3}, 5);
    b.arrays["B"] = filled(DType::F32, {3, 5}, 3);
    b.arrays["g"] = filled(DType::I32, {4}, 2);
    b.arrays["h"] = filled(DType::I32, {5}, 2);
    std::string text = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } " + out + " }";
    if (out.find("g[") == std::string::npos) b.arrays.erase("g");
    if (out.find("h[") == std::string::npos) b.arrays.erase("h");
    auto p = prepared(text, std::move(b));
    cpu::Module m = cpu::compile_module(p->instance);
    EXPECT_EQ(dense_output_shared(p->plan, 0), !m.dense_unique[0]) << out;
  }
}

TEST(Footprint, TopListsAreBoundedByNPerGroupAndByThePairs) {
  const char* q = "where (i, j) { d = 0; reduce (k) { d += A[i, k] * B[k, j]; } emit L(i, j, d) top n by d per i; }";
  Bindings b;
  b.arrays["A"] = filled(DType::F32, {6, 3}, 5);
  b.arrays["B"] = filled(DType::F32, {3, 5}, 3);
  b.scalars["n"] = "2";
  auto p = prepared(q, b);
  EXPECT_EQ(list_row_bound(p->instance, 0), 12) << "2 per row, 6 rows";
  EXPECT_EQ(list_row_bytes(p->plan, 0), 4 + 4 + 4 + 4 + 12) << "i, j, d, the key d, and b, i, j";
  b.scalars["n"] = "9223372036854775807";   // N far beyond the pairs: bounded by them, no overflow
  auto huge = prepared(q, b);
  EXPECT_EQ(list_row_bound(huge->instance, 0), 30);
  EXPECT_EQ(cpu_host_memory(huge->instance, 1).total(), 2 * 30 * 28);
  EXPECT_EQ(cpu_host_memory(huge->instance, 1).total_fixed(), 0) << "lists are also counted as they grow";
}

TEST(Footprint, GpuDeviceMemoryPadsMatrixRowsToFourElements) {
  auto p = prepared("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; emit L(i, j); }",
                    [] {
                      Bindings b;
                      b.arrays["A"] = filled(DType::F32, {5, 3}, 5);
                      b.arrays["B"] = filled(DType::F32, {3, 7}, 3);
                      return b;
                    }());
  MemoryEstimate d = gpu_device_memory(p->instance, 100);
  ASSERT_EQ(d.items.size(), 4u);
  EXPECT_EQ(d.items[0].bytes, 5 * 4 * 4) << "A: rows of 3 padded to 4";
  EXPECT_EQ(d.items[1].bytes, 3 * 8 * 4) << "B: rows of 7 padded to 8";
  EXPECT_EQ(d.items[2].bytes, 5 * 8 * 4) << "C";
  EXPECT_EQ(d.items[3].bytes, 100 * (4 + 4 + 12)) << "L: 100 rows of i, j and b, i, j";
  EXPECT_EQ(gpu_host_memory(p->instance).total(), 5 * 7 * 4);
}

TEST(Footprint, RequireFitsNamesTheLargestItemsAndBothAmounts) {
  MemoryEstimate e;
  e.add("output C", 3 * kMiB);
  e.add("output D", 5 * kMiB);
  EXPECT_NO_THROW(require_fits(e, 8 * kMiB, "host memory", "MemAvailable"));
  try {
    require_fits(e, 6 * kMiB, "host memory", "cgroup memory.max");
    FAIL() << "8 MiB fitted in 6";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::Device);
    EXPECT_EQ(std::string(err.what()),
              "resource error: not enough host memory: output D needs 5.00 MiB, output C needs 3.00 MiB: 8.00 MiB "
              "(8388608 bytes) in all; 6.00 MiB (6291456 bytes) available (cgroup memory.max)");
  }
}

TEST(CpuThreads, FewerThreadsWhenTheirCopiesWouldNotFit) {
  auto p = prepared(kTwoAggregates, two_aggregates(100000, 1000));   // C 400 kB, D 20 kB
  const int64_t base = cpu_host_memory(p->instance, 1).total();
  ASSERT_EQ(base, 420000);
  EXPECT_EQ(cpu_thread_count(p->instance, 3), 3) << "3 tiles of 2 rows";
  EXPECT_EQ(cpu_thread_count(p->instance, 3, 4 * base), 3);
  EXPECT_EQ(cpu_thread_count(p->instance, 3, 3 * base), 2);
  EXPECT_EQ(cpu_thread_count(p->instance, 3, base), 1) << "no copies: the result alone";
  // And the run with fewer threads still computes the same result.
  Results r1 = run_cpu(p->instance, 1), r2 = run_cpu(p->instance, cpu_thread_count(p->instance, 3, 3 * base));
  EXPECT_EQ(r1.dense[0].data, r2.dense[0].data);
  double sum = 0;
  for (int64_t e = 0; e < r1.dense[0].size(); ++e) sum += r1.dense[0].get_f64(e);
  EXPECT_GT(sum, 0);
}

TEST(CpuLists, APlainListThatOutgrowsItsBudgetStopsWithAResourceError) {
  // 400 x 300 pairs emitted, 24 bytes a row: about 2.9 MB, twice that to order them.
  const char* q = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Pairs(i, j, a); }";
  Bindings b;
  b.arrays["A"] = filled(DType::F32, {400, 2}, 5);
  b.arrays["B"] = filled(DType::F32, {2, 300}, 3);
  auto p = prepared(q, b);
  ListMemoryGuard small(2 * kMiB, "test");
  try {
    run_cpu(p->instance, 2, &small);
    FAIL() << "the list grew past its budget";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_EQ(std::string(e.what()).rfind("resource error: not enough host memory: list Pairs has grown to ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("available (test)"), std::string::npos) << e.what();
  }
  ListMemoryGuard enough(64 * kMiB, "test");
  Results r = run_cpu(p->instance, 2, &enough);
  ASSERT_EQ(r.lists.size(), 1u);
  EXPECT_EQ(r.lists[0].rows, 400 * 300);
}
