// The CUDA runtime layer without a GPU: device probing, NVRTC, and the module caches.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "cuda/runtime.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime/embedded_headers.h"
#endif

namespace fs = std::filesystem;
using namespace gamut;
using namespace gamut::cuda;

namespace {

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

[[maybe_unused]] fs::path make_temp_dir() {
  std::string tmpl = (fs::temp_directory_path() / "gamut-rt-XXXXXX").string();
  EXPECT_NE(mkdtemp(tmpl.data()), nullptr);
  return tmpl;
}

[[maybe_unused]] std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A distinct kernel per call so that tests never share cache entries by accident.
[[maybe_unused]] std::string small_kernel(const std::string& tag = "") {
  static std::atomic<int> n{0};
  return "// " + tag + " " + std::to_string(::getpid()) + "-" + std::to_string(n++) +
         "\nextern \"C\" __global__ void fill(float* out, int n) {\n"
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
         "  if (i < n) out[i] = 2.0f * i + 1.0f;\n}\n";
}

}  // namespace

TEST(CudaRuntime, ArchFor) {
  EXPECT_EQ(arch_for(9, 0), "sm_90a");
  EXPECT_EQ(arch_for(8, 0), "sm_80");
  EXPECT_EQ(arch_for(8, 6), "sm_86");
  EXPECT_EQ(arch_for(12, 0), "sm_120");
}

TEST(CudaRuntime, CacheDirResolution) {
  {
    ScopedEnv a("GAMUT_CACHE_DIR", "/x/gamut-cache"), b("XDG_CACHE_HOME", "/y");
    EXPECT_EQ(cache_dir(), "/x/gamut-cache");
  }
  {
    ScopedEnv a("GAMUT_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", "/y"), c("HOME", "/h");
    EXPECT_EQ(cache_dir(), "/y/gamut");
  }
  {
    ScopedEnv a("GAMUT_CACHE_DIR", nullptr), b("XDG_CACHE_HOME", nullptr), c("HOME", "/h");
    EXPECT_EQ(cache_dir(), "/h/.cache/gamut");
  }
}

#if GAMUT_HAVE_CUDA

// On a machine without a GPU or driver this must answer false, with cudart's reason, and
// must not crash: static cudart loads the driver itself. On a GPU machine it may be true.
TEST(CudaRuntime, DeviceAvailableDoesNotCrash) {
  std::string why;
  const bool available = device_available(&why);
  EXPECT_EQ(available, device_available());  // stable, and a null `why` is fine
  if (available) GTEST_SKIP() << "a CUDA device is present; the no-device path is not tested";
  EXPECT_FALSE(why.empty());
  EXPECT_NE(why.find("no usable CUDA device"), std::string::npos) << why;
  // Everything that needs the device fails as a device error, never an abort.
  try {
    device();
    FAIL() << "device() did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_EQ(std::string(e.what()).rfind("device error: ", 0), 0u) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  EXPECT_THROW(DeviceBuffer(1024), Error);
  EXPECT_THROW(synchronize(), Error);
  EXPECT_THROW(EventTimer(), Error);
  DeviceBuffer empty;  // default construction and destruction need no device
  EXPECT_EQ(empty.get(), nullptr);
}

TEST(CudaRuntime, NvrtcVersion) {
  const std::string v = nvrtc_version();
  ASSERT_FALSE(v.empty());
  EXPECT_NE(v.find('.'), std::string::npos) << v;
}

TEST(CudaRuntime, NvrtcCompilesForHopperAndAmpere) {
  for (const char* arch : {"sm_90a", "sm_80"}) {
    CompileOptions o;
    o.arch = arch;
    std::string log;
    const std::string cubin = nvrtc_compile(small_kernel(), o, &log);
    ASSERT_GE(cubin.size(), 4u) << arch;
    EXPECT_EQ(cubin.substr(0, 4), std::string("\x7f" "ELF")) << arch;
  }
}

TEST(CudaRuntime, NvrtcFindsToolkitHeaders) {
  // cuda_fp16.h is not built into NVRTC 13; the toolkit include dir is added when present.
  if (!fs::exists("/usr/local/cuda/include/cuda_fp16.h")) GTEST_SKIP() << "no toolkit headers";
  const std::string src =
      "#include <cuda_fp16.h>\n"
      "extern \"C\" __global__ void k(float* o) { o[0] = __half2float(__float2half(1.5f)); }\n";
  EXPECT_FALSE(nvrtc_compile(src, CompileOptions{}).empty());
}

TEST(CudaRuntime, CompileErrorNamesKeptSourceAndCarriesLog) {
  const fs::path dir = make_temp_dir();
  ScopedEnv env("GAMUT_CACHE_DIR", dir.c_str());
  const std::string bad =
      "extern \"C\" __global__ void broken(float* o) { o[0] = 1.0f }\n// " + small_kernel();
  for (int via_cache = 0; via_cache < 2; ++via_cache) {
    try {
      if (via_cache)
        compile_cached(bad, CompileOptions{});
      else
        nvrtc_compile(bad, CompileOptions{});
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Query);
      const std::string what = e.what();
      const std::string first = what.substr(0, what.find('\n'));
      EXPECT_EQ(first.rfind("query error: ", 0), 0u) << first;
      // The first line names the kept .cu, which holds the source.
      const size_t at = first.find(dir.string());
      ASSERT_NE(at, std::string::npos) << what;
      const std::string path = first.substr(at);
      EXPECT_EQ(fs::path(path).extension(), ".cu");
      EXPECT_EQ(read_file(path), bad);
      // The full NVRTC log follows on the next lines.
      EXPECT_NE(what.find('\n'), std::string::npos);
      EXPECT_NE(what.find("error"), std::string::npos);
      EXPECT_NE(what.find("expected a \";\""), std::string::npos) << what;
    }
  }
  fs::remove_all(dir);
}

TEST(CudaRuntime, BadOptionIsDeviceErrorNotCrash) {
  CompileOptions o;
  o.arch = "sm_1";
  try {
    nvrtc_compile(small_kernel(), o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device) << e.what();
  }
}

TEST(CudaRuntime, EmbeddedHeaderIncludes) {
  if (kEmbeddedHeaderCount == 0) GTEST_SKIP() << "src/cuda/device has no headers";
  for (int i = 0; i < kEmbeddedHeaderCount; ++i) {
    const std::string src = std::string("#include \"") + kEmbeddedHeaders[i].name +
                            "\"\nextern \"C\" __global__ void probe(float* o) { o[0] = 1.0f; }\n";
    std::string log;
    EXPECT_NO_THROW(nvrtc_compile(src, CompileOptions{}, &log))
        << kEmbeddedHeaders[i].name << "\n" << log;
  }
}

class CudaCache : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = make_temp_dir();
    env_ = std::make_unique<ScopedEnv>("GAMUT_CACHE_DIR", dir_.c_str());
    clear_memory_cache();
  }
  void TearDown() override {
    clear_memory_cache();
    env_.reset();
    fs::remove_all(dir_);
  }
  fs::path file(const CompiledModule& m, const char* ext) { return dir_ / (m.key + ext); }
  fs::path dir_;
  std::unique_ptr<ScopedEnv> env_;
};

TEST_F(CudaCache, CompiledThenMemoryThenDisk) {
  const std::string src = small_kernel();
  CompiledModule a = compile_cached(src, CompileOptions{}, "plan-1");
  EXPECT_EQ(a.hit, CacheHit::Compiled);
  EXPECT_GT(a.compile_ms, 0);
  EXPECT_EQ(a.key.size(), 32u);
  EXPECT_EQ(a.source_path, file(a, ".cu").string());
  EXPECT_EQ(read_file(a.source_path), src);
  EXPECT_TRUE(fs::exists(file(a, ".cubin")));
  EXPECT_TRUE(fs::exists(file(a, ".meta")));

  CompiledModule b = compile_cached(src, CompileOptions{}, "plan-1");
  EXPECT_EQ(b.hit, CacheHit::Memory);
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.cubin, a.cubin);

  clear_memory_cache();
  CompiledModule c = compile_cached(src, CompileOptions{}, "plan-1");
  EXPECT_EQ(c.hit, CacheHit::Disk);
  EXPECT_EQ(c.cubin, a.cubin);
  EXPECT_EQ(c.source_path, a.source_path);
}

TEST_F(CudaCache, KeyCoversEveryInput) {
  const std::string src = small_kernel();
  CompileOptions o;
  const std::string k = compile_cached(src, o, "x").key;
  EXPECT_NE(compile_cached(src, o, "y").key, k);
  EXPECT_NE(compile_cached(src + " ", o, "x").key, k);
  CompileOptions o80;
  o80.arch = "sm_80";
  EXPECT_NE(compile_cached(src, o80, "x").key, k);
  CompileOptions ofmad;
  ofmad.extra = {"--fmad=false"};
  EXPECT_NE(compile_cached(src, ofmad, "x").key, k);
  EXPECT_EQ(compile_cached(src, o, "x").key, k);
}

TEST_F(CudaCache, TruncatedCubinIsRebuilt) {
  const std::string src = small_kernel();
  CompiledModule a = compile_cached(src, CompileOptions{});
  fs::resize_file(file(a, ".cubin"), a.cubin.size() / 2);
  clear_memory_cache();
  CompiledModule b = compile_cached(src, CompileOptions{});
  EXPECT_EQ(b.hit, CacheHit::Compiled);
  EXPECT_EQ(b.cubin.size(), a.cubin.size());
  clear_memory_cache();
  EXPECT_EQ(compile_cached(src, CompileOptions{}).hit, CacheHit::Disk);  // repaired on disk
}

TEST_F(CudaCache, CorruptChecksumIsRebuilt) {
  const std::string src = small_kernel();
  CompiledModule a = compile_cached(src, CompileOptions{});
  std::string meta = read_file(file(a, ".meta"));
  const size_t at = meta.find("cubin_fnv1a64");
  ASSERT_NE(at, std::string::npos);
  const size_t digit = meta.find('"', at + 16) + 1;  // first hex digit of the value
  meta[digit] = meta[digit] == '0' ? '1' : '0';
  std::ofstream(file(a, ".meta"), std::ios::binary | std::ios::trunc) << meta;
  EXPECT_FALSE(cache_list().at(0).valid);
  clear_memory_cache();
  EXPECT_EQ(compile_cached(src, CompileOptions{}).hit, CacheHit::Compiled);
  EXPECT_TRUE(cache_list().at(0).valid);

  // A flipped byte inside the cubin is caught by the same checksum.
  std::string bin = read_file(file(a, ".cubin"));
  bin[bin.size() / 2] ^= 0x5a;
  std::ofstream(file(a, ".cubin"), std::ios::binary | std::ios::trunc) << bin;
  clear_memory_cache();
  EXPECT_EQ(compile_cached(src, CompileOptions{}).hit, CacheHit::Compiled);
}

TEST_F(CudaCache, UnusableDirectoryFallsBackToMemory) {
  // A directory cannot be created below a regular file.
  const fs::path blocker = dir_ / "not-a-dir";
  std::ofstream(blocker) << "x";
  ScopedEnv env("GAMUT_CACHE_DIR", (blocker / "cache").c_str());
  const std::string src = small_kernel();
  CompiledModule a = compile_cached(src, CompileOptions{});
  EXPECT_EQ(a.hit, CacheHit::Compiled);
  EXPECT_EQ(a.source_path, "");
  EXPECT_EQ(compile_cached(src, CompileOptions{}).hit, CacheHit::Memory);
  EXPECT_TRUE(cache_list().empty());
}

TEST_F(CudaCache, ListAndClearCount) {
  EXPECT_TRUE(cache_list().empty());
  const std::string src_a = small_kernel();
  CompiledModule a = compile_cached(src_a, CompileOptions{});
  CompiledModule b = compile_cached(small_kernel(), CompileOptions{});
  std::ofstream(dir_ / "unrelated.txt") << "keep me";
  auto list = cache_list();
  ASSERT_EQ(list.size(), 2u);
  for (const auto& e : list) {
    EXPECT_TRUE(e.valid) << e.key;
    EXPECT_GT(e.cubin_bytes, 0u);
    EXPECT_TRUE(e.key == a.key || e.key == b.key);
    EXPECT_EQ(e.source_path, (dir_ / (e.key + ".cu")).string());
  }
  EXPECT_EQ(cache_clear(), 2u);
  EXPECT_TRUE(cache_list().empty());
  EXPECT_TRUE(fs::exists(dir_ / "unrelated.txt"));  // only cache files are removed
  EXPECT_EQ(cache_clear(), 0u);
  // cache_clear also empties the memory cache.
  EXPECT_EQ(compile_cached(src_a, CompileOptions{}).hit, CacheHit::Compiled);
}

TEST_F(CudaCache, TwoProcessesCompileTheSameSourceAtOnce) {
  const std::string src = small_kernel("race");
  const std::string key = compile_cached(src, CompileOptions{}).key;
  ASSERT_EQ(cache_clear(), 1u);
  // Several rounds: each time two children wait on a pipe and start together.
  for (int round = 0; round < 3; ++round) {
    if (round > 0) cache_clear();
    int go[2];
    ASSERT_EQ(pipe(go), 0);
    pid_t kids[2];
    for (pid_t& kid : kids) {
      kid = fork();
      ASSERT_GE(kid, 0);
      if (kid == 0) {
        close(go[1]);
        char c;
        (void)!read(go[0], &c, 1);  // returns 0 when the parent closes its end
        int rc = 1;
        try {
          CompiledModule m = compile_cached(src, CompileOptions{});
          rc = (m.key == key && m.cubin.substr(0, 4) == "\x7f" "ELF") ? 0 : 2;
        } catch (...) {
          rc = 3;
        }
        _exit(rc);  // no gtest teardown in the child
      }
    }
    close(go[0]);
    close(go[1]);
    for (pid_t kid : kids) {
      int status = 0;
      ASSERT_EQ(waitpid(kid, &status, 0), kid);
      ASSERT_TRUE(WIFEXITED(status));
      EXPECT_EQ(WEXITSTATUS(status), 0) << "round " << round;
    }
    auto list = cache_list();
    ASSERT_EQ(list.size(), 1u);
    EXPECT_EQ(list[0].key, key);
    EXPECT_TRUE(list[0].valid);
    for (const auto& e : fs::directory_iterator(dir_))  // no temporaries left behind
      EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
  }
  clear_memory_cache();
  EXPECT_EQ(compile_cached(src, CompileOptions{}).hit, CacheHit::Disk);
}

#else  // built without CUDA: the stub

TEST(CudaRuntime, StubReportsNoCuda) {
  std::string why;
  EXPECT_FALSE(device_available(&why));
  EXPECT_EQ(why, "built without CUDA");
  try {
    nvrtc_compile("", CompileOptions{});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
  }
  EXPECT_THROW(device(), Error);
  EXPECT_THROW(DeviceBuffer(16), Error);
}

#endif
