// The `gamut` binary end to end: subcommands, exit statuses of spec section 9, one-line errors,
// no partial output on failure, --json.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <sys/wait.h>

#include "cli_process.h"
#include "cuda/gpu_engine.h"
#include "data/npy.h"
#include "driver/pipeline.h"

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
  size_t examples = 0;  // one line per example
  for (const auto& e : std::filesystem::directory_iterator(std::string(GAMUT_SOURCE_DIR) + "/examples"))
    examples += e.path().extension() == ".mmlt";
  EXPECT_EQ(line_count(o.out), examples) << o.out;
  EXPECT_GE(examples, 13u);
  EXPECT_EQ(o.out.find("FAILED"), std::string::npos) << o.out;
}

// ---------------------------------------------------------------------------------------------
// Options and messages (issue 11, item 5): each mistake is one line with the right status.

namespace {

struct QueryData {
  TempDir d;
  std::string P, R, Pzip, Rzip;
  QueryData() {
    P = (d.path / "P.npy").string();
    R = (d.path / "R.npy").string();
    Pzip = (d.path / "Pzip.npy").string();
    Rzip = (d.path / "Rzip.npy").string();
    write_npy(P, matrix(4, 3, 1));
    write_npy(R, matrix(3, 2, 1));
    NDArray g = NDArray::zeros(DType::I32, {4}), h = NDArray::zeros(DType::I32, {2});
    for (int e = 0; e < 4; ++e) g.as<int32_t>()[e] = e % 2;
    for (int e = 0; e < 2; ++e) h.as<int32_t>()[e] = 1 - e;
    write_npy(Pzip, g);
    write_npy(Rzip, h);
  }
};

cli_test::Exit gamut_args(const std::vector<std::string>& args) { return cli_test::run_gamut(args); }

}  // namespace

TEST(CliOptions, ThreadCountIsChecked) {
  QueryData q;
  for (const char* bad : {"0", "-1", "-3", "100000", "1025"}) {
    cli_test::Exit e = gamut_args({"run", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=1", "--threads", bad});
    EXPECT_EQ(e.code, 2) << bad << ": " << e.err;
    EXPECT_EQ(e.err, std::string("usage error: --threads ") + bad +
                         ": give a count from 1 to 1024 (without --threads, every hardware thread is used)\n");
    EXPECT_EQ(e.out, "");
  }
  cli_test::Exit ok = gamut_args({"run", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=1", "--threads", "3"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  // The engine runs at most the threads asked for, fewer when there are fewer row tiles.
  EXPECT_TRUE(ok.out.find("(3 threads)") != std::string::npos || ok.out.find("(2 threads)") != std::string::npos ||
              ok.out.find("(1 threads)") != std::string::npos)
      << ok.out;
}

TEST(CliOptions, RepeatedDimIsAUsageError) {
  QueryData q;
  cli_test::Exit e = gamut_args({"run", example("q2_zip_aggregate"), "P=" + q.P, "R=" + q.R, "Pzip=" + q.Pzip,
                                 "Rzip=" + q.Rzip, "--dim", "C=3,3", "--dim", "C=4,4"});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err, "usage error: --dim C is given twice\n");
}

TEST(CliOptions, UnknownSubcommandIsNamed) {
  cli_test::Exit e = gamut_args({"frobnicate"});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err, "usage error: unknown subcommand 'frobnicate'; the subcommands are run, explain, check, cache, "
                   "peak, device, demo, tune\n");
  cli_test::Exit near = gamut_args({"rnu", example("sgemm")});
  EXPECT_EQ(near.code, 2);
  EXPECT_NE(near.err.find("unknown subcommand 'rnu' (did you mean 'run'?)"), std::string::npos) << near.err;
  cli_test::Exit none = gamut_args({});
  EXPECT_EQ(none.code, 2);
  EXPECT_EQ(none.err.rfind("usage error: give a subcommand: run, explain", 0), 0u) << none.err;
}

TEST(CliOptions, DirectoryAsQueryIsAUsageError) {
  TempDir d;
  for (const char* cmd : {"check", "run", "explain"}) {
    cli_test::Exit e = gamut_args({cmd, d.path.string()});
    EXPECT_EQ(e.code, 2) << cmd;
    EXPECT_EQ(e.err, "usage error: query file '" + d.path.string() + "' is a directory\n");
  }
}

TEST(CliOptions, EmptyQueryTextAndEmptyOutputDirAreUsageErrors) {
  QueryData q;
  cli_test::Exit e = gamut_args({"check", "-e", ""});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err, "usage error: -e '': the query text is empty\n");
  cli_test::Exit o = gamut_args({"run", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=1", "-o", ""});
  EXPECT_EQ(o.code, 2);
  EXPECT_EQ(o.err, "usage error: -o '': give the directory to write the outputs to (-o . for this one)\n");
  EXPECT_EQ(o.out, "");
}

TEST(CliOptions, ScalarBindingThatIsNotANumberIsADataError) {
  QueryData q;
  cli_test::Exit e = gamut_args({"run", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=abc"});
  EXPECT_EQ(e.code, 3);
  EXPECT_EQ(e.err, "data error: thres: 'abc' is not a number (thres is a scalar parameter of the query, " +
                       example("q5_select") + ":8:15)\n");
  // `explain` reads bindings the same way.
  EXPECT_EQ(gamut_args({"explain", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=x.npy"}).code, 3);
}

TEST(CliOptions, UnknownBindingIsAUsageErrorBeforeAnyFileIsRead) {
  QueryData q;
  cli_test::Exit e = gamut_args({"run", example("q2_zip_aggregate"), "P=" + q.P, "R=" + q.R, "Pzip=" + q.Pzip,
                                 "Rzp=/nonexistent/Rzip.npy"});
  EXPECT_EQ(e.code, 2);
  EXPECT_EQ(e.err, "usage error: binding 'Rzp' matches no input or parameter of the query (did you mean 'Rzip'?)\n");
}

TEST(CliOptions, FloatIndexVectorIsADataError) {
  QueryData q;
  NDArray g = NDArray::zeros(DType::F32, {4});
  for (int e = 0; e < 4; ++e) g.as<float>()[e] = float(e % 2);
  const std::string fz = (q.d.path / "fz.npy").string();
  write_npy(fz, g);
  cli_test::Exit e = gamut_args({"run", example("q2_zip_aggregate"), "P=" + q.P, "R=" + q.R, "Pzip=" + fz, "Rzip=" + q.Rzip});
  EXPECT_EQ(e.code, 3) << e.err;
  EXPECT_EQ(e.err, "data error: Pzip: an index vector must hold integers, got f32 (" + fz + "; used as an output index at " +
                       example("q2_zip_aggregate") + ":8:5)\n");
}

TEST(CliOptions, DeviceErrorSaysItsReasonOnce) {
  if (cuda::gpu_available()) GTEST_SKIP() << "a GPU is present";
  QueryData q;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"device"},
           {"run", example("q5_select"), "P=" + q.P, "R=" + q.R, "thres=1", "--backend", "gpu"},
           {"demo", "--backend", "gpu", "--size", "8"}}) {   // once, not once per example
    cli_test::Exit e = gamut_args(args);
    EXPECT_EQ(e.code, 4);
    EXPECT_EQ(line_count(e.err), 1u) << e.err;
    const size_t first = e.err.find("no usable CUDA device");
    ASSERT_NE(first, std::string::npos) << e.err;
    EXPECT_EQ(e.err.find("no usable CUDA device", first + 1), std::string::npos) << e.err;
  }
}

// ---------------------------------------------------------------------------------------------
// What a user sees (item 7): outputs without -o, JSON errors, the progress bar.

TEST(CliShow, SmallOutputsArePrintedWithoutOutputDir) {
  QueryData q;
  NDArray P = matrix(4, 3, 1), R = matrix(3, 2, 1);
  // C = P R, printed in full; the expected text is built from an independent product.
  cli_test::Exit e = gamut_args({"run", "-e", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } C[i, j] = s; }",
                                 "P=" + q.P, "R=" + q.R, "--backend", "cpu"});
  ASSERT_EQ(e.code, 0) << e.err;
  std::vector<std::string> cells;
  size_t width = 0;
  bool nonzero = false;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      float v = 0;
      for (int k = 0; k < 3; ++k) v += P.as<float>()[i * 3 + k] * R.as<float>()[k * 2 + j];
      nonzero |= v != 0;
      std::ostringstream t;
      t << v;
      cells.push_back(t.str());
      width = std::max(width, cells.back().size());
    }
  EXPECT_TRUE(nonzero);
  auto pad = [&](const std::string& s) { return std::string(width - s.size(), ' ') + s; };
  std::string want = "  C: f32 (4, 2) =\n";
  for (int i = 0; i < 4; ++i)
    want += std::string(i ? "     [" : "    [[") + pad(cells[size_t(2 * i)]) + ", " + pad(cells[size_t(2 * i + 1)]) +
            (i == 3 ? "]]\n" : "],\n");
  EXPECT_NE(e.out.find(want), std::string::npos) << e.out << "\nwanted:\n" << want;

  // A scalar aggregate: its value on the line.
  cli_test::Exit t = gamut_args({"run", "-e", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } T += s; }",
                                 "P=" + q.P, "R=" + q.R, "--backend", "cpu"});
  ASSERT_EQ(t.code, 0) << t.err;
  float total = 0;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j)
      for (int k = 0; k < 3; ++k) total += P.as<float>()[i * 3 + k] * R.as<float>()[k * 2 + j];
  std::ostringstream tt;
  tt << "  T: f32 () = " << total << "\n";
  EXPECT_NE(t.out.find(tt.str()), std::string::npos) << t.out;
}

TEST(CliShow, LargeOutputsSayWhereTheyWouldGo) {
  TempDir d;
  write_npy((d.path / "A.npy").string(), matrix(40, 3, 1));
  write_npy((d.path / "B.npy").string(), matrix(3, 30, 1));
  cli_test::Exit e = gamut_args({"run", example("sgemm"), "A=" + (d.path / "A.npy").string(),
                                 "B=" + (d.path / "B.npy").string(), "--backend", "cpu"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("  C: f32 (40, 30): 1200 values, not shown (-o DIR writes it to DIR/C.npy)\n"), std::string::npos)
      << e.out;
  EXPECT_FALSE(fs::exists("C.npy"));
}

TEST(CliShow, ListsShowTheirFirstRows) {
  TempDir d;
  // Every pair qualifies (P, R > 0): 12 x 2 = 24 rows; the first 10 are (0,0) (0,1) ... (4,1).
  NDArray P = NDArray::zeros(DType::I32, {12, 2}), R = NDArray::zeros(DType::I32, {2, 2});
  for (int64_t e = 0; e < P.size(); ++e) P.as<int32_t>()[e] = int32_t(e + 1);
  for (int64_t e = 0; e < R.size(); ++e) R.as<int32_t>()[e] = int32_t(2 * e + 1);
  write_npy((d.path / "P.npy").string(), P);
  write_npy((d.path / "R.npy").string(), R);
  cli_test::Exit e = gamut_args({"run", example("q5_select"), "P=" + (d.path / "P.npy").string(),
                                 "R=" + (d.path / "R.npy").string(), "thres=0", "--backend", "cpu"});
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_NE(e.out.find("  Pairs: 24 rows, the first 10:\n"), std::string::npos) << e.out;
  EXPECT_NE(e.out.find("    ... 14 more rows (-o DIR writes all 24 to DIR/Pairs.npy)\n"), std::string::npos) << e.out;
  // Row (4, 1): P[4,:] . R[:,1] = 9*3 + 10*7 = 97.
  int32_t v = P.as<int32_t>()[8] * R.as<int32_t>()[1] + P.as<int32_t>()[9] * R.as<int32_t>()[3];
  EXPECT_EQ(v, 97);
  EXPECT_NE(e.out.find("  4  1     97\n"), std::string::npos) << e.out;
}

TEST(CliShow, JsonErrorsAreAlsoOnStdout) {
  cli_test::Exit q = gamut_args({"run", "--json", "-e", "where (i, j) { a = 0; reduce (k) { a += A[i, j]; } C[i, j] = a; }"});
  EXPECT_EQ(q.code, 1);
  EXPECT_EQ(q.err.rfind("<expr>:1:41: error: ", 0), 0u) << q.err;
  auto j = nlohmann::json::parse(q.out);
  EXPECT_EQ(j["error"]["kind"], "query");
  EXPECT_EQ(j["error"]["exit_status"], 1);
  EXPECT_EQ(j["error"]["file"], "<expr>");
  EXPECT_EQ(j["error"]["line"], 1);
  EXPECT_EQ(j["error"]["col"], 41);
  EXPECT_EQ(j["error"]["message"], q.err.substr(0, q.err.find('\n')));

  QueryData d;
  cli_test::Exit data = gamut_args({"run", example("q5_select"), "P=" + d.P, "R=" + d.R, "thres=abc", "--json"});
  EXPECT_EQ(data.code, 3);
  auto jd = nlohmann::json::parse(data.out);
  EXPECT_EQ(jd["error"]["kind"], "data");
  EXPECT_EQ(jd["error"]["binding"], "thres");
  EXPECT_EQ(jd["error"]["message"].get<std::string>() + "\n", data.err);

  cli_test::Exit usage = gamut_args({"run", example("q5_select"), "--json", "--threads", "0"});
  EXPECT_EQ(usage.code, 2);
  EXPECT_EQ(nlohmann::json::parse(usage.out)["error"]["kind"], "usage");
  cli_test::Exit flag = gamut_args({"run", example("q5_select"), "--json", "--no-such-flag"});
  EXPECT_EQ(flag.code, 2);
  EXPECT_EQ(nlohmann::json::parse(flag.out)["error"]["exit_status"], 2);
  // Without --json, stdout stays empty.
  EXPECT_EQ(gamut_args({"run", example("q5_select"), "--threads", "0"}).out, "");
}

TEST(CliShow, JsonHasSmallValuesWithoutOutputDir) {
  QueryData q;
  cli_test::Exit e = gamut_args({"run", "-e", "where (i, j) { s = 0; reduce (k) { s += P[i, k] * R[k, j]; } C[i, j] = s; }",
                                 "P=" + q.P, "R=" + q.R, "--backend", "cpu", "--json"});
  ASSERT_EQ(e.code, 0) << e.err;
  auto j = nlohmann::json::parse(e.out);
  NDArray P = matrix(4, 3, 1), R = matrix(3, 2, 1);
  const auto& values = j["outputs"][0]["values"];
  ASSERT_EQ(values.size(), 4u);
  for (int i = 0; i < 4; ++i)
    for (int jj = 0; jj < 2; ++jj) {
      float v = 0;
      for (int k = 0; k < 3; ++k) v += P.as<float>()[i * 3 + k] * R.as<float>()[k * 2 + jj];
      EXPECT_FLOAT_EQ(values[size_t(i)][size_t(jj)].get<float>(), v);
    }
}

namespace {
// Enough row tiles for several progress steps, still quick.
std::vector<std::string> progress_run(const TempDir& d) {
  write_npy((d.path / "A.npy").string(), matrix(600, 32, 1));
  write_npy((d.path / "B.npy").string(), matrix(32, 64, 1));
  return {"run", example("sgemm"), "A=" + (d.path / "A.npy").string(), "B=" + (d.path / "B.npy").string(),
          "--backend", "cpu", "--threads", "2"};
}
bool has_bar(const std::string& s) {
  return std::regex_search(s, std::regex("\r\\[[#.]{30}\\] +[0-9]+%  [0-9]+\\.[0-9] s"));
}
}  // namespace

TEST(CliShow, ProgressBarOnATerminalOnly) {
  TempDir d;
  std::vector<std::string> args = progress_run(d);
  cli_test::ChildOptions now;
  now.env["GAMUT_PROGRESS_DELAY"] = "0";   // draw from the start instead of after 2 s
  cli_test::Exit tty = cli_test::run_gamut_on_terminal(args, now);
  ASSERT_EQ(tty.code, 0) << tty.out;
  EXPECT_TRUE(has_bar(tty.out)) << testing::PrintToString(tty.out);
  EXPECT_NE(tty.out.find("C: f32 (600, 64)"), std::string::npos) << tty.out;

  std::vector<std::string> quiet = args;
  quiet.push_back("--quiet");
  cli_test::Exit q = cli_test::run_gamut_on_terminal(quiet, now);
  ASSERT_EQ(q.code, 0) << q.out;
  EXPECT_FALSE(has_bar(q.out)) << q.out;
  EXPECT_EQ(q.out.find('['), std::string::npos) << q.out;

  cli_test::Exit piped = cli_test::run_gamut(args, now);   // stderr is a file: no bar
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.err, "");
  cli_test::Exit later = cli_test::run_gamut_on_terminal(args);   // short run, default delay: no bar
  EXPECT_FALSE(has_bar(later.out)) << later.out;
}

TEST(CliShow, EngineReportsProgressPerTile) {
  Bindings b;
  b.arrays["A"] = matrix(600, 8, 1);
  b.arrays["B"] = matrix(8, 16, 1);
  auto prep = prepare(read_query_file(example("sgemm")), b);
  std::mutex mu;
  std::vector<double> seen;
  RunOptions opt;
  opt.backend = Backend::Cpu;
  opt.threads = 3;
  opt.progress = [&](double f) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(f);
  };
  Results r = execute(*prep, opt, nullptr);
  ASSERT_GT(seen.size(), 2u);
  EXPECT_DOUBLE_EQ(*std::max_element(seen.begin(), seen.end()), 1.0);
  for (double f : seen) EXPECT_GT(f, 0.0);
  EXPECT_EQ(r.dense.size(), 1u);
}

// docs/language.md stays true: every complete query in it (a code block that starts with
// `where` or `batch`) is accepted, and it shows every example query.
TEST(CliDocs, LanguageReferenceQueriesAreAccepted) {
  std::ifstream f(std::string(GAMUT_SOURCE_DIR) + "/docs/language.md");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string doc = ss.str();
  ASSERT_FALSE(doc.empty());
  // Fenced blocks, line by line: "```LANG" opens one, "```" closes it.
  std::vector<std::string> blocks;
  std::istringstream lines(doc);
  std::string line, block;
  bool inside = false;
  while (std::getline(lines, line)) {
    if (line.rfind("```", 0) == 0) {
      if (inside) blocks.push_back(block);
      inside = !inside;
      block.clear();
    } else if (inside) {
      block += line + "\n";
    }
  }
  EXPECT_FALSE(inside) << "an unclosed code block";
  int queries = 0;
  for (const std::string& b : blocks) {
    if (b.rfind("where", 0) != 0 && b.rfind("batch", 0) != 0) continue;
    ++queries;
    EXPECT_NO_THROW(build_plan(Source{"language.md block " + std::to_string(queries), b})) << b;
  }
  EXPECT_GE(queries, 12);
  for (const char* q : {"sgemm", "maxplus", "minplus_batched", "reachability", "q1_amplify", "q2_zip_aggregate",
                        "q3_count_pairs", "q4_join_area", "q5_select", "q6_complementary", "q7_top128", "knn"})
    EXPECT_NE(doc.find(std::string(q) + ".mmlt"), std::string::npos) << q;
}
