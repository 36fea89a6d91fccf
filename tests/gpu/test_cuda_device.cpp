// The CUDA runtime layer on a real device: memory, NVRTC -> load -> launch, errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "core/error.h"
#include "cuda/runtime.h"
#include "gpu_skip.h"

namespace fs = std::filesystem;
using namespace gamut;
using namespace gamut::cuda;

namespace {

class CudaDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    SKIP_WITHOUT_GPU();
    // A private disk cache so the test neither reads nor fills the user's.
    std::string tmpl = (fs::temp_directory_path() / "gamut-gpu-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    setenv("GAMUT_CACHE_DIR", dir_.c_str(), 1);
    clear_memory_cache();
  }
  void TearDown() override {
    if (dir_.empty()) return;
    clear_memory_cache();
    unsetenv("GAMUT_CACHE_DIR");
    fs::remove_all(dir_);
  }
  CompileOptions options() const {
    CompileOptions o;
    o.arch = arch_for(device().cc_major, device().cc_minor);
    return o;
  }
  fs::path dir_;
};

const char* const kPatternSource = R"(
extern "C" __global__ void pattern(float* out, int n, float a) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * i + 7.0f;
}
// Uses more than 48 KiB of dynamic shared memory: needs set_max_dynamic_smem.
extern "C" __global__ void smem_reverse(float* out, int n) {
  extern __shared__ float s[];
  for (int i = threadIdx.x; i < n; i += blockDim.x) s[i] = float(i);
  __syncthreads();
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = s[n - 1 - i];
}
)";

}  // namespace

TEST_F(CudaDevice, Info) {
  const DeviceInfo& d = device();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GT(d.cc_major, 0);
  EXPECT_GT(d.sm_count, 0);
  EXPECT_GE(d.smem_per_block_optin, 48u * 1024);
  EXPECT_GT(d.smem_per_sm, 0u);
  EXPECT_GT(d.regs_per_sm, 0);
  EXPECT_GT(d.l2_bytes, 0u);
  EXPECT_GT(d.total_mem, 0u);
  const std::string arch = arch_for(d.cc_major, d.cc_minor);
  EXPECT_EQ(arch, d.cc_major == 9 && d.cc_minor == 0 ? std::string("sm_90a")
                                                     : "sm_" + std::to_string(d.cc_major * 10 + d.cc_minor));
}

TEST_F(CudaDevice, BufferRoundTrip) {
  const size_t n = 1 << 20;
  std::vector<float> host(n), back(n, 0.0f);
  for (size_t i = 0; i < n; ++i) host[i] = 0.5f * i + 1.0f;
  DeviceBuffer buf(n * sizeof(float));
  EXPECT_NE(buf.get(), nullptr);
  EXPECT_EQ(buf.size(), n * sizeof(float));
  buf.upload(host.data(), n * sizeof(float));
  buf.download(back.data(), n * sizeof(float));
  EXPECT_EQ(back, host);

  // Offsets, then a move keeps the same device memory.
  const float patch[3] = {-1.0f, -2.0f, -3.0f};
  buf.upload(patch, sizeof patch, 10 * sizeof(float));
  DeviceBuffer moved = std::move(buf);
  EXPECT_EQ(buf.get(), nullptr);
  float got[4] = {};
  moved.download(got, sizeof got, 9 * sizeof(float));
  EXPECT_EQ(got[0], host[9]);
  EXPECT_EQ(got[1], -1.0f);
  EXPECT_EQ(got[3], -3.0f);

  moved.fill_bytes(0);
  moved.download(back.data(), n * sizeof(float));
  EXPECT_EQ(back, std::vector<float>(n, 0.0f));
  EXPECT_THROW(moved.upload(host.data(), 8, n * sizeof(float) - 4), Error);  // out of range
}

// Host-to-device copies through the page-locked staging buffers (GAMUT_STAGED_UPLOAD_MIN=0:
// every size; =off: none) land exactly as plain ones: rows to a pitch (the padding between rows
// left as it was), rows longer than a buffer (contiguous: cut anywhere; pitched: copied plainly),
// many buffers' worth (both rounds of buffers reused), and uploads at an offset.
TEST_F(CudaDevice, StagedUploadsEqualPlainOnes) {
  struct Shape {
    size_t rows, row_bytes, pitch;
  };
  const size_t mib = size_t(1) << 20;
  const std::vector<Shape> shapes = {
      {1, 3, 3},           {1000, 12, 16},    {3, 9 * mib, 9 * mib}, {2, 9 * mib + 4, 9 * mib + 16},
      {70000, 1000, 1008}, {4097, 4097, 4112}};
  for (const char* mode : {"0", "off"}) {
    setenv("GAMUT_STAGED_UPLOAD_MIN", mode, 1);
    for (const Shape& sh : shapes) {
      SCOPED_TRACE(std::string("GAMUT_STAGED_UPLOAD_MIN=") + mode + " rows " + std::to_string(sh.rows) + " x " +
                   std::to_string(sh.row_bytes) + " pitch " + std::to_string(sh.pitch));
      std::vector<unsigned char> host(sh.rows * sh.row_bytes);
      for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<unsigned char>((i * 2654435761u) >> 13);
      const size_t bytes = (sh.rows - 1) * sh.pitch + sh.row_bytes;
      DeviceBuffer buf(bytes);
      buf.fill_bytes(0xab);
      buf.upload_rows(host.data(), sh.rows, sh.row_bytes, sh.pitch);
      std::vector<unsigned char> back(bytes);
      buf.download(back.data(), bytes);
      size_t wrong = 0, padding_touched = 0;
      for (size_t r = 0; r < sh.rows; ++r) {
        wrong += std::memcmp(back.data() + r * sh.pitch, host.data() + r * sh.row_bytes, sh.row_bytes) != 0;
        for (size_t b = sh.row_bytes; b < sh.pitch && r + 1 < sh.rows; ++b)
          padding_touched += back[r * sh.pitch + b] != 0xab;
      }
      EXPECT_EQ(wrong, 0u);
      EXPECT_EQ(padding_touched, 0u);
      // The contiguous form at an offset.
      DeviceBuffer flat(host.size() + 64);
      flat.fill_bytes(0xab);
      flat.upload(host.data(), host.size(), 64);
      std::vector<unsigned char> got(host.size() + 64);
      flat.download(got.data(), got.size());
      EXPECT_EQ(std::vector<unsigned char>(got.begin(), got.begin() + 64), std::vector<unsigned char>(64, 0xab));
      EXPECT_TRUE(std::equal(host.begin(), host.end(), got.begin() + 64));
    }
  }
  unsetenv("GAMUT_STAGED_UPLOAD_MIN");
}

TEST_F(CudaDevice, CompileLaunchAndCheck) {
  CompiledModule m = compile_cached(kPatternSource, options());
  Kernel k(m, "pattern");
  EXPECT_GT(k.max_active_blocks_per_sm(256, 0), 0);

  const int n = 100003;
  DeviceBuffer out(n * sizeof(float));
  out.fill_bytes(0xff);
  void* ptr = out.get();
  int count = n;
  float a = 3.0f;
  void* args[] = {&ptr, &count, &a};
  EventTimer timer;
  timer.start();
  k.launch((n + 255) / 256, 1, 1, 256, 1, 1, 0, args);
  EXPECT_GE(timer.stop_ms(), 0.0);
  synchronize();
  std::vector<float> host(n);
  out.download(host.data(), n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], 3.0f * i + 7.0f) << i;

  // The same module from the memory cache loads and runs again.
  clear_memory_cache();
  CompiledModule again = compile_cached(kPatternSource, options());
  EXPECT_EQ(again.hit, CacheHit::Disk);
  Kernel k2(again, "pattern");
  a = -1.0f;
  k2.launch((n + 255) / 256, 1, 1, 256, 1, 1, 0, args);
  synchronize();
  out.download(host.data(), n * sizeof(float));
  EXPECT_EQ(host[n - 1], -1.0f * (n - 1) + 7.0f);
}

TEST_F(CudaDevice, LargeDynamicSharedMemory) {
  const size_t smem = 96 * 1024;
  if (device().smem_per_block_optin < smem) GTEST_SKIP() << "device allows less opt-in smem";
  Kernel k(compile_cached(kPatternSource, options()), "smem_reverse");
  const int n = smem / sizeof(float);
  DeviceBuffer out(n * sizeof(float));
  void* ptr = out.get();
  int count = n;
  void* args[] = {&ptr, &count};
  // Past the device's opt-in limit: a device error, and nothing launched.
  EXPECT_THROW(k.launch(1, 1, 1, 256, 1, 1, size_t(device().smem_per_block_optin) + 1024, args), Error);
  // Above 48 KiB without asking first: the launch sets the attribute itself.
  k.launch(1, 1, 1, 256, 1, 1, smem, args);
  EXPECT_GT(k.max_active_blocks_per_sm(256, smem), 0);
  synchronize();
  std::vector<float> host(n);
  out.download(host.data(), n * sizeof(float));
  for (int i = 0; i < n; ++i) ASSERT_EQ(host[i], float(n - 1 - i)) << i;
}

TEST_F(CudaDevice, ErrorsAreDeviceErrors) {
  CompiledModule m = compile_cached(kPatternSource, options());
  try {
    Kernel missing(m, "no_such_kernel");
    FAIL() << "missing kernel loaded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_NE(std::string(e.what()).find("no_such_kernel"), std::string::npos) << e.what();
  }
  // A bad launch configuration is reported and does not poison later work.
  Kernel k(m, "pattern");
  DeviceBuffer out(4 * sizeof(float));
  void* ptr = out.get();
  int count = 4;
  float a = 1.0f;
  void* args[] = {&ptr, &count, &a};
  EXPECT_THROW(k.launch(1, 1, 1, 4096, 1, 1, 0, args), Error);
  k.launch(1, 1, 1, 32, 1, 1, 0, args);
  synchronize();
  float host[4];
  out.download(host, sizeof host);
  EXPECT_EQ(host[3], 10.0f);
}

TEST_F(CudaDevice, OutOfMemoryNamesBytesAndFree) {
  const size_t huge = device().total_mem * 4;
  try {
    DeviceBuffer b(huge);
    FAIL() << "allocated " << huge << " bytes";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), ExitCode::Device);
    EXPECT_NE(what.find("free"), std::string::npos) << what;
    EXPECT_NE(what.find(std::to_string(huge)), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  DeviceBuffer small(1024);  // the failure is not sticky
  EXPECT_NE(small.get(), nullptr);
}
