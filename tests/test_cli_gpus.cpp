// `--gpus` on the command line (issue 14): malformed counts are usage errors (exit 2), more GPUs
// than visible a device error (exit 4) naming the count, each one line on stderr and no output
// file; `--gpus 1` is the normal run; `explain --gpus N` shows the partition without a GPU.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli_process.h"
#include "cuda/runtime.h"
#include "data/npy.h"

namespace fs = std::filesystem;
using cli_test::Exit;

namespace {

size_t lines(const std::string& s) {
  size_t k = 0;
  for (char c : s) k += c == '\n';
  return k;
}

// sgemm with a scalar total too, on 40x6 and 6x30 small-integer matrices.
const std::vector<std::string> kQuery = {
    "-e", "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; t += s; }"};

struct Data {
  fs::path dir = fs::temp_directory_path() / ("gamut_gpus_" + std::to_string(::getpid()));
  std::vector<std::string> args;
  Data() {
    fs::create_directories(dir);
    gamut::write_npy((dir / "A.npy").string(), matrix(40, 6));
    gamut::write_npy((dir / "B.npy").string(), matrix(6, 30));
    args = {"A=" + (dir / "A.npy").string(), "B=" + (dir / "B.npy").string()};
  }
  ~Data() { fs::remove_all(dir); }
  static gamut::NDArray matrix(int64_t r, int64_t c) {
    gamut::NDArray a = gamut::NDArray::zeros(gamut::DType::F32, {r, c});
    float* v = reinterpret_cast<float*>(a.data.data());
    for (int64_t e = 0; e < r * c; ++e) v[e] = float(e % 5) - 2.0f;
    return a;
  }
  // gamut COMMAND -e QUERY A=... B=... EXTRA...
  Exit run(const std::string& command, const std::vector<std::string>& extra) const {
    std::vector<std::string> all = {command};
    all.insert(all.end(), kQuery.begin(), kQuery.end());
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), extra.begin(), extra.end());
    return cli_test::run_gamut(all);
  }
};

}  // namespace

TEST(CliGpus, MalformedCountsAreUsageErrors) {
  Data d;
  for (const char* bad : {"0", "abc", "-1", "1,x", "2.5"}) {
    const Exit o = d.run("run", {"--gpus", bad});
    EXPECT_EQ(o.code, 2) << bad << ": " << o.err;
    EXPECT_EQ(lines(o.err), 1u) << o.err;
    EXPECT_EQ(o.err.rfind("usage error: --gpus", 0), 0u) << o.err;
    EXPECT_EQ(o.out, "");
  }
  const Exit cpu = d.run("run", {"--gpus", "2", "--backend", "cpu"});
  EXPECT_EQ(cpu.code, 2) << cpu.err;
  EXPECT_EQ(lines(cpu.err), 1u) << cpu.err;
}

TEST(CliGpus, MoreGpusThanVisibleIsADeviceErrorNamingTheCount) {
  Data d;
  const fs::path out = d.dir / "out";
  const Exit o = d.run("run", {"--gpus", "99", "-o", out.string()});
  EXPECT_EQ(o.code, 4) << o.err;
  EXPECT_EQ(lines(o.err), 1u) << o.err;
  EXPECT_EQ(o.err.rfind("device error: --gpus 99: ", 0), 0u) << o.err;
  const int visible = gamut::cuda::device_count();
  if (visible == 0)
    EXPECT_NE(o.err.find("(0 GPUs visible)"), std::string::npos) << o.err;
  else
    EXPECT_NE(o.err.find("only " + std::to_string(visible) + " GPU"), std::string::npos) << o.err;
  EXPECT_FALSE(fs::exists(out / "C.npy"));
  const Exit j = d.run("run", {"--gpus", "99", "--json"});
  EXPECT_EQ(j.code, 4);
  EXPECT_NE(j.out.find("\"exit_status\":4"), std::string::npos) << j.out;
}

TEST(CliGpus, OneGpuIsTheNormalRun) {
  Data d;
  const Exit plain = d.run("run", {"--quiet"});
  const Exit one = d.run("run", {"--quiet", "--gpus", "1"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.substr(one.out.find('\n')), plain.out.substr(plain.out.find('\n')));  // (timing line aside)
  EXPECT_EQ(one.out.find("partition"), std::string::npos);
}

TEST(CliGpus, ExplainShowsThePartitionWithoutAGpu) {
  Data d;
  const Exit o = d.run("explain", {"--gpus", "3"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("partition: 3 parts along i (0..14, 14..27, 27..40) on GPUs 0,1,2\n"), std::string::npos)
      << o.out;
  const Exit list = d.run("explain", {"--gpus", "0,0"});
  EXPECT_NE(list.out.find("partition: 2 parts along i (0..20, 20..40) on GPUs 0,0\n"), std::string::npos) << list.out;
  const Exit one = d.run("explain", {"--gpus", "1"});
  EXPECT_EQ(one.out.find("partition"), std::string::npos) << one.out;
  EXPECT_EQ(d.run("explain", {"--gpus", "0"}).code, 2);
}
