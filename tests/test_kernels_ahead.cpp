// Kernels compiled ahead (driver/kernels_ahead.h) and the in-process cache's shared compiles
// (cuda::compile_ahead): NVRTC only, no GPU.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "driver/kernel_sources.h"
#include "driver/kernels_ahead.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "nvrtc_check.h"

#if GAMUT_HAVE_CUDA
#include "cuda/codegen/stage_sources.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

namespace fs = std::filesystem;
using namespace gamut;
using namespace gamut::cuda;

namespace {

// A fresh disk cache and an empty memory cache per test.
class KernelsAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "gamut-ahead-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    if (const char* old = std::getenv("GAMUT_CACHE_DIR")) old_ = old, had_ = true;
    setenv("GAMUT_CACHE_DIR", dir_.c_str(), 1);
    clear_memory_cache();
  }
  void TearDown() override {
    clear_memory_cache();
    if (had_)
      setenv("GAMUT_CACHE_DIR", old_.c_str(), 1);
    else
      unsetenv("GAMUT_CACHE_DIR");
    fs::remove_all(dir_);
  }
  fs::path dir_;
  std::string old_;
  bool had_ = false;
};

// A kernel no other test compiles.
std::string unique_kernel(const std::string& tag) {
  static std::atomic<int> n{0};
  return "// " + tag + " " + std::to_string(::getpid()) + "-" + std::to_string(n++) +
         "\nextern \"C\" __global__ void twice(float* out, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = 2.0f * out[i];\n}\n";
}

std::string detail_key(const KernelSource& k, const CompileOptions& co) {
  return detail::cache_key(k.source, co, k.schema);
}

NDArray ramp_f32(int64_t rows, int64_t cols, float scale) {
  NDArray a = NDArray::zeros(DType::F32, {rows, cols});
  float* p = a.as<float>();
  for (int64_t e = 0; e < rows * cols; ++e) p[e] = float((e * 7919) % 101) * scale + 0.5f;
  return a;
}

}  // namespace

// Four threads ask for the same new kernel at once: NVRTC runs once, the others wait for it
// (and report the compile they waited for; a thread that came after it, a memory hit).
TEST_F(KernelsAheadTest, ThreadsShareOneCompile) {
  const std::string src = unique_kernel("shared");
  std::atomic<bool> go{false};
  std::vector<CompiledModule> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t)
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      got[t] = compile_cached(src, CompileOptions{}, "ahead-test");
    });
  go = true;
  for (std::thread& t : threads) t.join();
  std::set<double> compile_ms;
  for (const CompiledModule& m : got) {
    EXPECT_TRUE(m.hit == CacheHit::Compiled || m.hit == CacheHit::Memory);
    if (m.hit == CacheHit::Compiled) compile_ms.insert(m.compile_ms);
    EXPECT_EQ(m.key, got[0].key);
    EXPECT_EQ(m.cubin, got[0].cubin);
    EXPECT_EQ(m.cubin.substr(0, 4),
              "\x7f"
              "ELF");
  }
  ASSERT_EQ(compile_ms.size(), 1u) << "one NVRTC run, its time reported by each thread that waited for it";
  EXPECT_GT(*compile_ms.begin(), 0);
}

// A module compiled ahead is the first caller's compile (its kind and time), a memory hit after.
TEST_F(KernelsAheadTest, CompiledAheadIsClaimedOnce) {
  const std::string src = unique_kernel("claimed");
  compile_ahead(src, CompileOptions{}, "ahead-test");
  compile_ahead(src, CompileOptions{}, "ahead-test");  // in memory: nothing
  const CompiledModule a = compile_cached(src, CompileOptions{}, "ahead-test");
  EXPECT_EQ(a.hit, CacheHit::Compiled);
  EXPECT_GT(a.compile_ms, 0);
  const CompiledModule b = compile_cached(src, CompileOptions{}, "ahead-test");
  EXPECT_EQ(b.hit, CacheHit::Memory);
  EXPECT_EQ(b.compile_ms, 0);
  EXPECT_EQ(b.cubin, a.cubin);
}

// A compile error found ahead reaches the run: the run's own compile fails the same way,
// whether it waited for the helper's or came after it.
TEST_F(KernelsAheadTest, CompileErrorsReachTheRun) {
  const std::string bad = unique_kernel("bad") + "extern \"C\" __global__ void broken() { undeclared_name = 1; }\n";
  // (The helper throws where it compiled, returns where the run was first.)
  std::thread helper([&] {
    try {
      compile_ahead(bad, CompileOptions{}, "ahead-test");
    } catch (const Error&) {
    }
  });
  try {
    compile_cached(bad, CompileOptions{}, "ahead-test");
    ADD_FAILURE() << "the broken kernel compiled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Query);
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
  }
  helper.join();
  EXPECT_THROW(compile_cached(bad, CompileOptions{}, "ahead-test"), Error);
}

// kNN as users write it under tf32 is a program of four kernels (two norm stages, the cross
// term's kernel and its selection): the helpers compile every one after the first, each found
// by the compile the run makes (same source, options and schema), and only once.
TEST_F(KernelsAheadTest, HelpersCompileWhatTheRunAsksFor) {
  const std::string text =
      "where (i, j) { dist = 0; reduce (k) { let t = Q[i, k] - X[j, k]; dist += t * t; }\n"
      "  emit Nearest(i, j, dist) bottom 10 by dist per i; }\n";
  Bindings b;
  b.arrays["Q"] = ramp_f32(300, 64, 0.01f);
  b.arrays["X"] = ramp_f32(500, 64, 0.02f);
  auto p = prepare(Source{"knn.mmlt", text}, b, RewriteChoice{true, true, F32Math::Tf32});
  ASSERT_TRUE(p->program) << "the expand-squares rewrite applies under tf32";
  const std::vector<KernelSource> kernels =
      kernel_sources(*p, testnvrtc::kH100Sms, testnvrtc::kH100Smem, "", false, F32Math::Tf32);
  ASSERT_EQ(kernels.size(), 4u);
  std::set<std::string> schemas;
  for (const KernelSource& k : kernels) schemas.insert(k.schema);
  EXPECT_EQ(schemas, (std::set<std::string>{kCodegenSchema, kSelectSchema}));
  CompileOptions co;
  co.arch = "sm_90a";
  {
    KernelsAhead ahead(kernels, "sm_90a", 3);
    EXPECT_EQ(ahead.helpers(), 3);
    ahead.wait();
    // In the disk cache: every kernel but the first, which the helpers leave to the run.
    std::set<std::string> on_disk;
    for (const cuda::CacheEntry& e : cache_list()) on_disk.insert(e.key);
    EXPECT_EQ(on_disk.size(), kernels.size() - 1);
    for (size_t k = 0; k < kernels.size(); ++k)
      EXPECT_EQ(on_disk.count(detail_key(kernels[k], co)), k == 0 ? 0u : 1u) << kernels[k].name;
    // The run asks for them in order: each is its compile (the helpers' claimed), then in memory.
    for (size_t k = 0; k < kernels.size(); ++k) {
      SCOPED_TRACE(kernels[k].name);
      const CompiledModule m = compile_cached(kernels[k].source, co, kernels[k].schema);
      EXPECT_EQ(m.hit, CacheHit::Compiled);
      EXPECT_GT(m.compile_ms, 0);
      EXPECT_EQ(compile_cached(kernels[k].source, co, kernels[k].schema).hit, CacheHit::Memory);
    }
  }
  // One helper for two kernels; none for one.
  KernelsAhead two(std::vector<KernelSource>(kernels.begin(), kernels.begin() + 2), "sm_90a", 8);
  EXPECT_EQ(two.helpers(), 1);
  KernelsAhead one(std::vector<KernelSource>(kernels.begin(), kernels.begin() + 1), "sm_90a", 8);
  EXPECT_EQ(one.helpers(), 0);
}

// What the helpers compiled and the run never asked for is an ordinary memory hit once the run
// ends: a later call does not report it as its own compile.
TEST_F(KernelsAheadTest, UnclaimedAtTheRunsEndIsAMemoryHit) {
  const std::vector<KernelSource> kernels{{"a", "", unique_kernel("first"), "ahead-test"},
                                          {"b", "", unique_kernel("second"), "ahead-test"}};
  {
    KernelsAhead ahead(kernels, "sm_90a", 1);
    ahead.wait();
  }
  const CompiledModule m = compile_cached(kernels[1].source, CompileOptions{}, "ahead-test");
  EXPECT_EQ(m.hit, CacheHit::Memory);
  EXPECT_EQ(m.compile_ms, 0);
}

// A tf32 product reads B[k, j] through a k-major copy, a kernel of its own: listed after the main
// kernel with the copy's source and schema (stages/k_major_copy.cpp compiles the same), so the
// helpers compile it. B[j, k] needs none, nor does IEEE f32 on the SIMT mainloop.
TEST_F(KernelsAheadTest, TheKMajorCopyIsOneOfTheKernels) {
  const auto kernels = [](const std::string& b_access, F32Math math) {
    Bindings b;
    b.arrays["A"] = ramp_f32(256, 128, 0.01f);
    b.arrays["B"] = b_access == "B[k, j]" ? ramp_f32(128, 256, 0.01f) : ramp_f32(256, 128, 0.01f);
    auto p = prepare(
        Source{"p.mmlt", "where (i, j) { a = 0; reduce (k) { a += A[i, k] * " + b_access + "; } C[i, j] = a; }\n"}, b);
    return kernel_sources(*p, testnvrtc::kH100Sms, testnvrtc::kH100Smem, "", false, math);
  };
  for (F32Math math : {F32Math::Tf32, F32Math::Tf32x3}) {
    const std::vector<KernelSource> ks = kernels("B[k, j]", math);
    ASSERT_EQ(ks.size(), 2u);
    EXPECT_EQ(ks[0].name, "main");
    EXPECT_EQ(ks[1].name, "copy-k-major");
    EXPECT_EQ(ks[1].source, k_major_copy_source(4));
    EXPECT_EQ(ks[1].schema, k_major_copy_schema(4));
    testnvrtc::compile(ks[1].source, "sm_90a");
  }
  EXPECT_EQ(kernels("B[j, k]", F32Math::Tf32).size(), 1u);
  EXPECT_EQ(kernels("B[k, j]", F32Math::Ieee).size(), 1u);
}

// Where threads cannot start (the address space exhausted), the helpers that did start are all
// there are and nothing aborts: the run compiles the rest (std::thread's error is not thrown on).
// The kernel is in memory before the fork, so the helpers that start find it there.
TEST_F(KernelsAheadTest, NoThreadToBeHadIsNoHelper) {
  const std::string src = unique_kernel("in-memory");
  compile_cached(src, CompileOptions{}, "ahead-test");
  const std::vector<KernelSource> kernels(65, KernelSource{"k", "", src, "ahead-test"});
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::ifstream status("/proc/self/status");
    std::string line;
    rlim_t vm = 0;
    while (std::getline(status, line))
      if (line.rfind("VmSize:", 0) == 0) vm = rlim_t(std::atoll(line.c_str() + 7)) * 1024;
    rlimit rl{};
    getrlimit(RLIMIT_AS, &rl);
    rl.rlim_cur = vm + (rlim_t(1) << 20);  // room for a few cached thread stacks at most
    if (vm == 0 || setrlimit(RLIMIT_AS, &rl) != 0) _exit(2);
    int started = 0;
    {
      KernelsAhead ahead(kernels, "sm_90a", 64);
      started = ahead.helpers();
    }
    _exit(started < 64 ? 0 : 3);  // (3: every thread started, the failure path did not run)
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "the child aborted";
  EXPECT_EQ(WEXITSTATUS(st), 0);
}

// Without a GPU nothing is started; a CPU run never starts helpers.
TEST_F(KernelsAheadTest, NothingWithoutTheGpu) {
  Bindings b;
  b.arrays["A"] = ramp_f32(8, 4, 1.0f);
  b.arrays["B"] = ramp_f32(8, 4, 1.0f);
  auto p = prepare(Source{"t.mmlt",
                          "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[j, k]; }\n"
                          "  emit Top(i, j, s) top 3 by s per i; }\n"},
                   b);
  RunOptions cpu;
  cpu.backend = Backend::Cpu;
  EXPECT_EQ(compile_kernels_ahead(p.get(), p->instance, cpu), nullptr);
  RunOptions off;
  off.compile_ahead = false;
  EXPECT_EQ(compile_kernels_ahead(p.get(), p->instance, off), nullptr);
  if (!cuda::gpu_available(nullptr)) EXPECT_EQ(compile_kernels_ahead(p.get(), p->instance, RunOptions{}), nullptr);
}

// Query::compile_ahead (`gamut tune`): the kernels of several runs, one kernel variant each,
// compiled on helper threads into the caches; those of the variants explain --source shows, each
// once, whatever the order; a second call finds them all (nothing new on disk); a malformed run
// is left to that run. NVRTC only: without a GPU the variants are an H100's.
TEST_F(KernelsAheadTest, QueryCompilesTheKernelsOfEveryRun) {
  const Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }");
  std::vector<float> A(300 * 40), B(40 * 500);
  for (size_t e = 0; e < A.size(); ++e) A[e] = float(e % 7);
  for (size_t e = 0; e < B.size(); ++e) B[e] = float(e % 5);
  Inputs in;
  in.array("A", ArrayRef::host(A.data(), DType::F32, {300, 40}))
      .array("B", ArrayRef::host(B.data(), DType::F32, {40, 500}));
  Options base;
  base.backend = "gpu";
  base.f32_math = "tf32";
  const std::vector<std::string> variants = q.kernel_variants(in, base);
  ASSERT_GE(variants.size(), 3u);
  std::vector<Options> runs(3, base);
  std::set<std::string> sources;
  for (size_t v = 0; v < runs.size(); ++v) {
    runs[v].kernel_variant = variants[v];
    sources.insert(q.kernel_source(in, runs[v]));
  }
  Options bad = base;
  bad.kernel_variant = "wgmma 7x7";
  runs.push_back(bad);
  q.compile_ahead(in, runs, 2);
  const size_t stored = cache_list().size();
  // (each variant's main kernel, and the k-major copy of B that tf32 reads, shared)
  EXPECT_EQ(stored, sources.size() + 1);
  for (const cuda::CacheEntry& e : cache_list()) EXPECT_TRUE(e.valid) << e.key;
  q.compile_ahead(in, runs, 2);
  EXPECT_EQ(cache_list().size(), stored);
}

#endif
