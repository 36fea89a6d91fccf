// `--gpus` on the command line (issue 14): malformed counts are usage errors (exit 2), more GPUs
// than visible a device error (exit 4) naming the count, each one line on stderr and no output
// file; `--gpus 1` is the normal run; `explain --gpus N` shows the partition without a GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "cuda/runtime.h"

namespace fs = std::filesystem;

namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome run_gamut(const std::string& args) {
  const fs::path err = fs::temp_directory_path() / ("gamut_gpus_err_" + std::to_string(::getpid()));
  const std::string cmd = std::string(GAMUT_BINARY) + " " + args + " 2>" + err.string();
  Outcome o{};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  FILE* e = fopen(err.c_str(), "r");
  while (e && (n = fread(buf.data(), 1, buf.size(), e)) > 0) o.err.append(buf.data(), n);
  if (e) fclose(e);
  fs::remove(err);
  return o;
}

size_t lines(const std::string& s) {
  size_t k = 0;
  for (char c : s) k += c == '\n';
  return k;
}

// sgemm with a scalar total too, on 3x2 and 2x4 constants given as -e text and --dim-free data.
const std::string kQuery = "-e 'where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; t += s; }'";

struct Data {
  fs::path dir = fs::temp_directory_path() / ("gamut_gpus_" + std::to_string(::getpid()));
  std::string args;
  Data() {
    fs::create_directories(dir);
    // Matrices written as .npy by the CLI itself would need a run; write them by hand instead.
    write(dir / "A.npy", 40, 6);
    write(dir / "B.npy", 6, 30);
    args = " A=" + (dir / "A.npy").string() + " B=" + (dir / "B.npy").string();
  }
  ~Data() { fs::remove_all(dir); }
  static void write(const fs::path& p, int r, int c) {
    std::string header =
        "{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::to_string(r) + ", " + std::to_string(c) + "), }";
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    std::string bytes = std::string("\x93NUMPY\x01\x00", 8);
    bytes += char(header.size() & 0xff);
    bytes += char(header.size() >> 8);
    bytes += header;
    for (int e = 0; e < r * c; ++e) {
      const float v = float(e % 5) - 2.0f;
      bytes.append(reinterpret_cast<const char*>(&v), 4);
    }
    FILE* f = fopen(p.c_str(), "wb");
    fwrite(bytes.data(), 1, bytes.size(), f);
    fclose(f);
  }
};

}  // namespace

TEST(CliGpus, MalformedCountsAreUsageErrors) {
  Data d;
  for (const char* bad : {"0", "abc", "-1", "1,x", "2.5"}) {
    const Outcome o = run_gamut("run " + kQuery + d.args + " --gpus " + bad);
    EXPECT_EQ(o.code, 2) << bad << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << o.err;
    EXPECT_EQ(o.err.rfind("usage error: --gpus", 0), 0u) << o.err;
    EXPECT_EQ(o.out, "");
  }
  const Outcome cpu = run_gamut("run " + kQuery + d.args + " --gpus 2 --backend cpu");
  EXPECT_EQ(cpu.code, 2) << cpu.err;
  EXPECT_EQ(lines(cpu.err), 1u) << cpu.err;
}

TEST(CliGpus, MoreGpusThanVisibleIsADeviceErrorNamingTheCount) {
  Data d;
  const fs::path out = d.dir / "out";
  const Outcome o = run_gamut("run " + kQuery + d.args + " --gpus 99 -o " + out.string());
  EXPECT_EQ(o.code, 4) << o.err;
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_EQ(o.err.rfind("device error: --gpus 99: ", 0), 0u) << o.err;
  const int visible = gamut::cuda::device_count();
  if (visible == 0)
    EXPECT_NE(o.err.find("(0 GPUs visible)"), std::string::npos) << o.err;
  else
    EXPECT_NE(o.err.find("only " + std::to_string(visible) + " GPU"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out / "C.npy"));
  const Outcome j = run_gamut("run " + kQuery + d.args + " --gpus 99 --json");
  EXPECT_EQ(j.code, 4);
  EXPECT_NE(j.out.find("\"exit_status\":4"), std::string::npos) << j.out;
}

TEST(CliGpus, OneGpuIsTheNormalRun) {
  Data d;
  const Outcome plain = run_gamut("run " + kQuery + d.args + " --quiet");
  const Outcome one = run_gamut("run " + kQuery + d.args + " --quiet --gpus 1");
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.substr(one.out.find('\n')), plain.out.substr(plain.out.find('\n')));  // (timing line aside)
  EXPECT_EQ(one.out.find("partition"), std::string::npos);
}

TEST(CliGpus, ExplainShowsThePartitionWithoutAGpu) {
  Data d;
  const Outcome o = run_gamut("explain " + kQuery + d.args + " --gpus 3");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("partition: 3 parts along i (0..14, 14..27, 27..40) on GPUs 0,1,2\n"), std::string::npos)
      << o.out;
  const Outcome list = run_gamut("explain " + kQuery + d.args + " --gpus 0,0");
  EXPECT_NE(list.out.find("partition: 2 parts along i (0..20, 20..40) on GPUs 0,0\n"), std::string::npos) << list.out;
  const Outcome one = run_gamut("explain " + kQuery + d.args + " --gpus 1");
  EXPECT_EQ(one.out.find("partition"), std::string::npos) << one.out;
  EXPECT_EQ(run_gamut("explain " + kQuery + d.args + " --gpus 0").code, 2);
}
