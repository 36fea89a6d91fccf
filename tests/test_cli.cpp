// The `gamut` binary end to end: subcommands, exit statuses of spec section 9, one-line errors,
// no partial output on failure, --json.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "cuda/gpu_engine.h"
#include "data/npy.h"

namespace fs = std::filesystem;
using namespace gamut;

namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome gamut_run(const std::string& args) {
  fs::path err = fs::temp_directory_path() / ("gamut_cli_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(GAMUT_BINARY) + " " + args + " 2>" + err.string();
  Outcome o{};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  FILE* e = fopen(err.c_str(), "r");
  while (e && (n = fread(buf.data(), 1, buf.size(), e)) > 0) o.err.append(buf.data(), n);
  if (e) fclose(e);
  fs::remove(err);
  return o;
}

std::string example(const char* name) { return std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt"; }

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("gamut_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter()++));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  static int& counter() { static int c = 0; return c; }
};

NDArray matrix(int64_t r, int64_t c, float scale) {
  NDArray a = NDArray::zeros(DType::F32, {r, c});
  for (int64_t e = 0; e < a.size(); ++e) a.as<float>()[e] = scale * float((e * 7) % 5 - 2);
  return a;
}

size_t line_count(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST(Cli, VersionAndHelp) {
  Outcome v = gamut_run("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("gamut "), std::string::npos);
  Outcome h = gamut_run("--help");
  EXPECT_EQ(h.code, 0);
  EXPECT_NE(h.out.find("explain"), std::string::npos);
}

TEST(Cli, CheckAcceptsEveryExample) {
  for (const char* q : {"sgemm", "q1_amplify", "q2_zip_aggregate", "q7_top128", "minplus_batched"}) {
    Outcome o = gamut_run("check " + example(q));
    EXPECT_EQ(o.code, 0) << q << ": " << o.err;
    EXPECT_NE(o.out.find(": ok"), std::string::npos);
  }
}

TEST(Cli, QueryErrorIsExit1WithPositionFirst) {
  Outcome o = gamut_run("check -e 'where (i, j) { a = 0; reduce (k) { a += A[i, j]; } C[i, j] = a; }'");
  EXPECT_EQ(o.code, 1);
  EXPECT_EQ(o.err.rfind("<expr>:1:41: error: access pattern A[i, j] is not allowed inside 'reduce'", 0), 0u) << o.err;
  EXPECT_EQ(o.out, "");
}

TEST(Cli, UsageErrorsAreExit2) {
  EXPECT_EQ(gamut_run("run " + example("sgemm") + " --no-such-flag").code, 2);
  EXPECT_EQ(gamut_run("frobnicate").code, 2);
  Outcome o = gamut_run("run /nonexistent/q.mmlt");
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(line_count(o.err), 1u) << o.err;
  EXPECT_EQ(gamut_run("run " + example("sgemm") + " notabinding").code, 2);
}

TEST(Cli, DataErrorsAreExit3AndLeaveNoOutput) {
  TempDir d;
  write_npy((d.path / "A.npy").string(), matrix(4, 3, 1));
  write_npy((d.path / "B.npy").string(), matrix(5, 2, 1));  // K disagrees
  fs::path out = d.path / "out";
  Outcome o = gamut_run("run " + example("sgemm") + " A=" + (d.path / "A.npy").string() + " B=" +
                        (d.path / "B.npy").string() + " -o " + out.string());
  EXPECT_EQ(o.code, 3);
  EXPECT_EQ(o.err, "data error: B: extent 5 along axis 'k' disagrees with A's extent 3\n");
  EXPECT_FALSE(fs::exists(out / "C.npy"));
  Outcome m = gamut_run("run " + example("sgemm") + " A=" + (d.path / "missing.npy").string());
  EXPECT_EQ(m.code, 3);
  EXPECT_EQ(m.err.rfind("data error: A: ", 0), 0u) << m.err;
  EXPECT_EQ(line_count(m.err), 1u);
}

TEST(Cli, GpuBackendWithoutDeviceIsExit4) {
  if (cuda::gpu_available()) GTEST_SKIP() << "a GPU is present";
  TempDir d;
  write_npy((d.path / "A.npy").string(), matrix(4, 3, 1));
  write_npy((d.path / "B.npy").string(), matrix(3, 2, 1));
  Outcome o = gamut_run("run " + example("sgemm") + " A=" + (d.path / "A.npy").string() + " B=" +
                        (d.path / "B.npy").string() + " --backend gpu -o " + (d.path / "out").string());
  EXPECT_EQ(o.code, 4);
  EXPECT_EQ(o.err.rfind("device error: --backend gpu: no usable CUDA device", 0), 0u) << o.err;
  EXPECT_EQ(line_count(o.err), 1u);
  EXPECT_FALSE(fs::exists(d.path / "out" / "C.npy"));
  EXPECT_EQ(gamut_run("device").code, 4);
}

TEST(Cli, RunWritesOutputsAndJsonSummary) {
  TempDir d;
  NDArray A = matrix(6, 4, 0.5f), B = matrix(4, 3, 2.0f);
  write_npy((d.path / "A.npy").string(), A);
  write_npy((d.path / "B.npy").string(), B);
  Outcome o = gamut_run("run -e 'where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; }' A=" +
                        (d.path / "A.npy").string() + " B=" + (d.path / "B.npy").string() + " --backend cpu --json -o " +
                        (d.path / "out").string());
  ASSERT_EQ(o.code, 0) << o.err;
  auto j = nlohmann::json::parse(o.out);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["M"], 6);
  EXPECT_EQ(j["N"], 3);
  EXPECT_EQ(j["K"], 4);
  ASSERT_EQ(j["outputs"].size(), 1u);
  NDArray C = read_npy((d.path / "out" / "C.npy").string(), "C");
  ASSERT_EQ(C.shape, (std::vector<int64_t>{6, 3}));
  bool nonzero = false;
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t jj = 0; jj < 3; ++jj) {
      float want = 0;
      for (int64_t k = 0; k < 4; ++k) want += A.as<float>()[i * 4 + k] * B.as<float>()[k * 3 + jj];
      EXPECT_FLOAT_EQ(C.as<float>()[i * 3 + jj], want);
      nonzero |= want != 0;
    }
  EXPECT_TRUE(nonzero);
  for (const auto& e : fs::directory_iterator(d.path / "out"))
    EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << "temporary left: " << e.path();
}

TEST(Cli, ExplainPrintsThePlan) {
  Outcome o = gamut_run("explain " + example("q4_join_area"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("join key: Pzip[i] == Rzip[j]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("AreaTotal[Pzip[i]]: aggregate (group by, direct mapping)"), std::string::npos) << o.out;
}

TEST(Cli, DemoRunsEveryExample) {
  Outcome o = gamut_run("demo --backend cpu --size 24");
  EXPECT_EQ(o.code, 0) << o.out << o.err;
  EXPECT_EQ(line_count(o.out), 12u) << o.out;
  EXPECT_EQ(o.out.find("FAILED"), std::string::npos) << o.out;
}
