// The `gamut` binary on hostile sizes and too little memory (issue 11, items 1 and 3): one line,
// the spec's exit status, no signal, no output left behind. Memory limits are set with
// `ulimit -v` in the child's shell; nothing here allocates much for real.
#include <gtest/gtest.h>

#include "asan_skip.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>

#include "data/npy.h"

namespace fs = std::filesystem;
using namespace gamut;

namespace {

struct Outcome {
  int code = -1;       // exit status; -1 when killed by a signal
  int signal = 0;
  std::string out, err;
};

// Runs `gamut ARGS` through the shell, after `prefix` (e.g. "ulimit -v 600000;").
Outcome run_gamut(const std::string& args, const std::string& prefix = "") {
  const fs::path err = fs::temp_directory_path() / ("gamut_sizes_err_" + std::to_string(::getpid()));
  const std::string cmd = prefix + " exec " + std::string(GAMUT_BINARY) + " " + args + " 2>" + err.string();
  Outcome o;
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  const int st = pclose(p);
  if (WIFEXITED(st)) o.code = WEXITSTATUS(st);
  if (WIFSIGNALED(st)) o.signal = WTERMSIG(st);
  FILE* e = fopen(err.c_str(), "r");
  while (e && (n = fread(buf.data(), 1, buf.size(), e)) > 0) o.err.append(buf.data(), n);
  if (e) fclose(e);
  fs::remove(err);
  return o;
}

struct TempDir {
  fs::path path;
  TempDir() {
    static int n = 0;
    path = fs::temp_directory_path() / ("gamut_sizes_cli_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string npy(const std::string& name, const NDArray& a) const {
    const std::string p = (path / (name + ".npy")).string();
    write_npy(p, a);
    return name + "=" + p;
  }
  std::string out() const { return (path / "out").string(); }
};

NDArray vec(DType t, const std::vector<int64_t>& v) {
  NDArray a = NDArray::zeros(t, {int64_t(v.size())});
  for (size_t e = 0; e < v.size(); ++e) {
    if (t == DType::I64) a.as<int64_t>()[e] = v[e];
    else a.as<float>()[e] = float(v[e]);
  }
  return a;
}

NDArray matrix(int64_t r, int64_t c) {
  NDArray a = NDArray::zeros(DType::F32, {r, c});
  for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = float(1 + e % 3);
  return a;
}

std::string zip_query() { return std::string(GAMUT_SOURCE_DIR) + "/examples/q2_zip_aggregate.mmlt"; }

std::string zip_inputs(const TempDir& d, const std::vector<int64_t>& pzip) {
  return d.npy("P", matrix(int64_t(pzip.size()), 3)) + " " + d.npy("R", matrix(3, 2)) + " " +
         d.npy("Pzip", vec(DType::I64, pzip)) + " " + d.npy("Rzip", vec(DType::I64, {0, 1}));
}

// One line, exit `code`, no signal, no output directory.
void expect_clean_failure(const Outcome& o, int code, const std::string& starts, const TempDir& d) {
  EXPECT_EQ(o.signal, 0) << "killed by signal " << o.signal << "; stderr: " << o.err;
  EXPECT_EQ(o.code, code) << o.err;
  EXPECT_EQ(o.err.rfind(starts, 0), 0u) << o.err;
  EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  EXPECT_FALSE(fs::exists(d.path / "out")) << "output left behind";
}

}  // namespace

TEST(SizesCli, HugeDimIsADataErrorNotASegfault) {
  TempDir d;
  // Before: the (2^62, 4) f32 output wrapped to 0 bytes and the store crashed (SIGSEGV).
  Outcome o = run_gamut("run " + zip_query() + " " + zip_inputs(d, {0, 1, 1, 0}) + " --backend cpu --dim C=4611686018427387904,4 -o " + d.out());
  expect_clean_failure(o, 3, "data error: C: output shape (4611686018427387904, 4) of f32 needs more than 2^63-1 bytes", d);
  // Past 64 bits: a usage error, not a silent clamp to 2^63-1.
  Outcome u = run_gamut("run " + zip_query() + " " + zip_inputs(d, {0, 1}) + " --backend cpu --dim C=99999999999999999999999,4 -o " + d.out());
  expect_clean_failure(u, 2, "usage error: --dim C=99999999999999999999999,4: extent 99999999999999999999999 does not fit in 64 bits", d);
}

TEST(SizesCli, HugeIndexValueIsADataErrorNotAWrappedFile) {
  TempDir d;
  // Before: exit 0 and a C.npy whose header promised 2^62+1 rows over 8 bytes of data.
  Outcome o = run_gamut("run " + zip_query() + " " + zip_inputs(d, {0, 1, 2, int64_t(1) << 62}) + " --backend cpu -o " + d.out());
  expect_clean_failure(o, 3, "data error: C: output shape (4611686018427387905, 2) of f32 needs more than 2^63-1 bytes", d);
}

TEST(SizesCli, ExtentsFromScalarsAndBatchRangesAreBounded) {
  TempDir d;
  const std::string proj = "'where (i in [0, M], j in [0, N]) { a = 0; reduce (k in [0, 1]) { a += 1; } C[i, j] = a + i + j; }'";
  // Before: "internal error: cannot create std::vector larger than max_size()", or minutes of work.
  Outcome o = run_gamut("run -e " + proj + " M=4294967296 N=4294967296 --backend cpu -o " + d.out());
  expect_clean_failure(o, 3, "data error: M: axis 'i' would run to 4294967296", d);
  // Before: SIGSEGV (2^61 instances of a 2x2 output wrapped to 0 bytes).
  const std::string batch = "'batch (b in [0, n]) where (i in [0, 2], j in [0, 2]) { a = 0; reduce (k in [0, 1]) { a += 1; } C[b, i, j] = a; }'";
  Outcome b = run_gamut("run -e " + batch + " n=2305843009213693952 --backend cpu -o " + d.out());
  expect_clean_failure(b, 3, "data error: n: axis 'b' would run to 2305843009213693952", d);
}

TEST(SizesCli, OutputsThatTogetherExceedMemoryFailBeforeAllocating) {
  SKIP_UNDER_ASAN();
  TempDir d;
  // Two aggregates of 400 MB each under a 600 MB address-space limit: each alone would fit.
  const std::string q = "'where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[g[i]] += a; D[g[i]] max= a; }'";
  const std::string in = d.npy("A", matrix(4, 3)) + " " + d.npy("B", matrix(3, 2)) + " " + d.npy("g", vec(DType::I64, {0, 1, 2, 1}));
  Outcome o = run_gamut("run -e " + q + " " + in + " --backend cpu --threads 1 --dim C=100000000 --dim D=100000000 -o " + d.out(),
                    "ulimit -v 600000;");
  expect_clean_failure(o, 4, "resource error: not enough host memory: output C needs 381.47 MiB, output D needs 381.47 MiB: 762.94 MiB (800000000 bytes) in all; ", d);
  EXPECT_NE(o.err.find("available (RLIMIT_AS)"), std::string::npos) << o.err;
  // The same under the same limit with outputs that fit runs (the check is not a blanket refusal).
  Outcome ok = run_gamut("run -e " + q + " " + in + " --backend cpu --threads 1 --dim C=1000000 --dim D=1000000 -o " + d.out(),
                     "ulimit -v 600000;");
  EXPECT_EQ(ok.code, 0) << ok.err;
  NDArray c = read_npy(d.out() + "/C.npy", "C");
  EXPECT_EQ(c.shape, (std::vector<int64_t>{1000000}));
  // Every row of A is (1, 2, 3); B's columns are (1, 3, 2) and (2, 1, 3): a = 13 for every (i, j).
  EXPECT_EQ(c.get_f64(1), 4 * 13.0) << "g[1] = g[3] = 1: two rows, two columns";
}

TEST(SizesCli, AListThatOutgrowsMemoryFailsNamingIt) {
  SKIP_UNDER_ASAN();
  TempDir d;
  // 4000 x 4000 pairs, 24 bytes a row: 384 MB of rows under a 300 MB limit.
  const std::string q = "'where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } emit Pairs(i, j, a); }'";
  const std::string in = d.npy("A", matrix(4000, 1)) + " " + d.npy("B", matrix(1, 4000));
  Outcome o = run_gamut("run -e " + q + " " + in + " --backend cpu --threads 2 -o " + d.out(), "ulimit -v 300000;");
  expect_clean_failure(o, 4, "resource error: not enough host memory: list Pairs has grown to ", d);
}
