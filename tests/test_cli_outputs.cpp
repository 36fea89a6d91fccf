// Outputs are all-or-nothing (spec section 9): `gamut run -o` commits every output or none, and
// leaves no hidden temporary file and no directory it created behind when a write fails, when
// the file-size limit is hit, or when the process is interrupted mid-write; an output never
// replaces one of the run's own input files. Run as child processes of the real binary.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <set>

#include "cli_process.h"
#include "core/error.h"
#include "data/npy.h"
#include "data/output_files.h"

namespace fs = std::filesystem;
using namespace gamut;
using cli_test::run_gamut;

namespace {

// Two dense outputs of M x N: C = A B and D = 2 A B (integer-valued data: exact).
const char* const kTwoOutputs =
    "where (i, j) { s = 0; reduce (k) { s += A[i, k] * B[k, j]; } C[i, j] = s; D[i, j] = s * 2; }";

struct Scratch {
  fs::path path;
  Scratch() {
    static int n = 0;
    path = fs::temp_directory_path() / ("gamut_outputs_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

NDArray ramp(int64_t r, int64_t c, int32_t mod) {
  NDArray a = NDArray::zeros(DType::I32, {r, c});
  for (int64_t e = 0; e < a.size(); ++e) a.as<int32_t>()[e] = int32_t(e % mod) - mod / 2;
  return a;
}

// Writes A (M x K) and B (K x N); returns the bindings.
std::vector<std::string> inputs(const Scratch& s, int64_t M, int64_t N, int64_t K) {
  write_npy(s / "A.npy", ramp(M, K, 7));
  write_npy(s / "B.npy", ramp(K, N, 5));
  return {"A=" + (s / "A.npy"), "B=" + (s / "B.npy")};
}

std::vector<std::string> run_args(const std::vector<std::string>& bindings, const std::string& out_dir) {
  std::vector<std::string> a{"run", "-e", kTwoOutputs, "--backend", "cpu", "-o", out_dir};
  a.insert(a.end(), bindings.begin(), bindings.end());
  return a;
}

std::set<std::string> listing(const fs::path& d) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.insert(e.path().filename().string());
  return names;
}

size_t lines(const std::string& s) { return size_t(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST(CliOutputs, OneUnwritableOutputCommitsNone) {
  Scratch s;
  auto b = inputs(s, 6, 5, 4);
  fs::create_directory(s / "out");
  write_npy(s / "out/C.npy", ramp(2, 2, 3));   // from an earlier run: must survive
  const std::string before = cli_test::slurp(s / "out/C.npy");
  fs::create_directory(s / "out/D.npy");        // where D goes: a directory
  cli_test::Exit e = run_gamut(run_args(b, s / "out"));
  EXPECT_EQ(e.code, 4) << e.err;
  EXPECT_EQ(e.err.rfind("device error: cannot write " + (s / "out/D.npy") + ": ", 0), 0u) << e.err;
  EXPECT_EQ(lines(e.err), 1u) << e.err;
  EXPECT_EQ(cli_test::slurp(s / "out/C.npy"), before) << "C was committed although D failed";
  EXPECT_EQ(listing(s.path / "out"), (std::set<std::string>{"C.npy", "D.npy"}));
}

TEST(CliOutputs, EveryOutputIsCommittedWhenAllCanBe) {
  Scratch s;
  auto b = inputs(s, 6, 5, 4);
  fs::create_directory(s / "out");
  write_npy(s / "out/C.npy", ramp(2, 2, 3));   // replaced
  cli_test::Exit e = run_gamut(run_args(b, s / "out"));
  ASSERT_EQ(e.code, 0) << e.err;
  EXPECT_EQ(listing(s.path / "out"), (std::set<std::string>{"C.npy", "D.npy"}));
  NDArray A = ramp(6, 4, 7), B = ramp(4, 5, 5);
  NDArray C = read_npy(s / "out/C.npy", "C"), D = read_npy(s / "out/D.npy", "D");
  ASSERT_EQ(C.shape, (std::vector<int64_t>{6, 5}));
  bool nonzero = false;
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      int32_t want = 0;
      for (int64_t k = 0; k < 4; ++k) want += A.as<int32_t>()[i * 4 + k] * B.as<int32_t>()[k * 5 + j];
      EXPECT_EQ(C.as<int32_t>()[i * 5 + j], want);
      EXPECT_EQ(D.as<int32_t>()[i * 5 + j], 2 * want);
      nonzero |= want != 0;
    }
  EXPECT_TRUE(nonzero);
}

TEST(CliOutputs, FileSizeLimitFailsCleanly) {
  Scratch s;
  auto b = inputs(s, 200, 200, 3);   // two outputs of 160 kB each
  cli_test::ChildOptions o;
  o.file_size_limit = 64 * 1024;
  cli_test::Exit e = run_gamut(run_args(b, s / "new/out"), o);
  EXPECT_EQ(e.signal, 0) << "ended by signal " << e.signal << " (SIGXFSZ is " << SIGXFSZ << ")";
  EXPECT_EQ(e.code, 4) << e.err;
  EXPECT_EQ(e.err, "device error: cannot write " + (s / "new/out/C.npy") + ": File too large\n");
  EXPECT_FALSE(fs::exists(s / "new")) << "a directory the run created stayed";
  EXPECT_EQ(listing(s.path), (std::set<std::string>{"A.npy", "B.npy"}));
}

TEST(CliOutputs, ReadOnlyDirectoryFailsCleanly) {
  Scratch s;
  auto b = inputs(s, 6, 5, 4);
  fs::create_directory(s / "ro");
  write_npy(s / "ro/C.npy", ramp(2, 2, 3));   // from an earlier run: must survive
  const std::string before = cli_test::slurp(s / "ro/C.npy");
  fs::permissions(s / "ro", fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                fs::perms::group_exec | fs::perms::others_read | fs::perms::others_exec);
  cli_test::ChildOptions o;
  o.unprivileged = true;   // root may write anywhere
  if (run_gamut({"--version"}, o).code != 0) GTEST_SKIP() << "the binary cannot be run as user nobody here";
  if (::geteuid() != 0 && ::access((s / "ro").c_str(), W_OK) == 0) GTEST_SKIP() << "permissions are not enforced";
  for (const std::string& out : {s / "ro", s / "ro/sub/out"}) {
    cli_test::Exit e = run_gamut(run_args(b, out), o);
    EXPECT_EQ(e.code, 4) << e.err;
    EXPECT_EQ(lines(e.err), 1u) << e.err;
    EXPECT_NE(e.err.find("Permission denied"), std::string::npos) << e.err;
    EXPECT_EQ(listing(s.path / "ro"), (std::set<std::string>{"C.npy"}));
    EXPECT_EQ(cli_test::slurp(s / "ro/C.npy"), before);
  }
}

// True once some file under `dir` (at any depth, hidden ones too) has data in it.
bool writing_under(const fs::path& dir) {
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec) && it->file_size(size_ec) > 0 && !size_ec) return true;
  }
  return false;
}

// The signal arrives while the outputs are written: once a staged file has data in it (2 x 36 MB
// take a while to write).
class CliInterrupt : public ::testing::TestWithParam<int> {};

TEST_P(CliInterrupt, MidWriteLeavesNothingBehind) {
  const int sig = GetParam();
  Scratch s;
  NDArray col = NDArray::zeros(DType::F32, {3000, 1}), row = NDArray::zeros(DType::F32, {1, 3000});
  for (int64_t e = 0; e < 3000; ++e) col.as<float>()[e] = float(e % 11), row.as<float>()[e] = float(e % 13);
  write_npy(s / "A.npy", col);
  write_npy(s / "B.npy", row);
  const std::string out_file = cli_test::scratch_name("out"), err_file = cli_test::scratch_name("err");
  pid_t pid = cli_test::start_gamut(run_args({"A=" + (s / "A.npy"), "B=" + (s / "B.npy")}, s / "new/out"), out_file,
                                    err_file);
  bool seen = false;
  for (int spin = 0; spin < 600000 && !seen; ++spin) {   // up to about a minute
    seen = writing_under(s.path / "new");
    if (!seen) ::usleep(100);
    int status;
    if (!seen && ::waitpid(pid, &status, WNOHANG) == pid) FAIL() << "gamut ended before writing: " << cli_test::slurp(err_file);
  }
  ASSERT_TRUE(seen);
  ::kill(pid, sig);
  cli_test::Exit e = cli_test::wait_for(pid, out_file, err_file);
  EXPECT_EQ(e.signal, sig) << "exit " << e.code << ": " << e.err;
  EXPECT_FALSE(fs::exists(s / "new")) << "left behind: "
                                      << (fs::exists(s / "new/out") ? testing::PrintToString(listing(s.path / "new/out")) : "");
  EXPECT_EQ(listing(s.path), (std::set<std::string>{"A.npy", "B.npy"}));
}

INSTANTIATE_TEST_SUITE_P(Signals, CliInterrupt, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const testing::TestParamInfo<int>& i) {
                           return std::string(i.param == SIGINT ? "SIGINT" : i.param == SIGTERM ? "SIGTERM" : "SIGHUP");
                         });

TEST(CliOutputs, OutputThatWouldReplaceAnInputIsRefused) {
  Scratch s;
  inputs(s, 6, 5, 4);
  fs::create_directory(s / "d");
  fs::copy_file(s / "B.npy", s / "d/C.npy");
  fs::create_symlink(s / "d/C.npy", s / "d/link.npy");
  fs::create_hard_link(s / "d/C.npy", s / "d/hard.npy");
  const std::string before = cli_test::slurp(s / "d/C.npy");
  // The same file under other names: a different spelling, a symbolic link, a hard link.
  for (const std::string& b_path : {s / "d/C.npy", s / "d/../d/./C.npy", s / "d/link.npy", s / "d/hard.npy"}) {
    cli_test::Exit e = run_gamut(run_args({"A=" + (s / "A.npy"), "B=" + b_path}, s / "d"));
    EXPECT_EQ(e.code, 2) << b_path << ": " << e.err;
    EXPECT_EQ(e.err.rfind("usage error: output C would replace the input file " + b_path + " (", 0), 0u) << e.err;
    EXPECT_EQ(lines(e.err), 1u) << e.err;
    EXPECT_EQ(cli_test::slurp(s / "d/C.npy"), before);
    EXPECT_EQ(listing(s.path / "d"), (std::set<std::string>{"C.npy", "link.npy", "hard.npy"}));
  }
  // The query file is an input too.
  std::ofstream(s / "d/D.npy") << kTwoOutputs;
  cli_test::Exit q = run_gamut({"run", s / "d/D.npy", "A=" + (s / "A.npy"), "B=" + (s / "B.npy"), "-o", s / "d"});
  EXPECT_EQ(q.code, 2) << q.err;
  EXPECT_EQ(q.err.rfind("usage error: output D would replace the input file " + (s / "d/D.npy"), 0), 0u) << q.err;
  // A copy with the same name elsewhere is not the same file.
  cli_test::Exit ok = run_gamut(run_args({"A=" + (s / "A.npy"), "B=" + (s / "B.npy")}, s / "d2"));
  EXPECT_EQ(ok.code, 0) << ok.err;
}

// The library side: a rename that fails part way puts back what the earlier ones replaced.
TEST(OutputCommitRollback, FailedRenameRestoresEarlierFiles) {
  Scratch s;
  write_npy(s / "A.npy", ramp(3, 3, 4));
  write_npy(s / "C.npy", ramp(2, 2, 3));
  const std::string a_before = cli_test::slurp(s / "A.npy");
  {
    OutputCommit oc(s.path.string());
    oc.stage("A", ramp(4, 4, 9));   // replaces A.npy ...
    oc.stage("B", ramp(1, 5, 9));   // ... creates B.npy ...
    oc.stage("C", ramp(5, 1, 9));   // ... and C.npy is made unreplaceable below
    fs::remove(s / "C.npy");
    fs::create_directory(s / "C.npy");
    EXPECT_THROW(oc.commit(), Error);
  }
  EXPECT_EQ(cli_test::slurp(s / "A.npy"), a_before);
  EXPECT_FALSE(fs::exists(s / "B.npy"));
  EXPECT_EQ(listing(s.path), (std::set<std::string>{"A.npy", "C.npy"}));
  EXPECT_TRUE(fs::is_directory(s / "C.npy"));
}

TEST(OutputCommitRollback, ProtectedInputIsCheckedBeforeAnyRename) {
  Scratch s;
  write_npy(s / "A.npy", ramp(3, 3, 4));
  write_npy(s / "in.npy", ramp(2, 2, 3));
  fs::create_hard_link(s / "in.npy", s / "Z.npy");
  const std::string a_before = cli_test::slurp(s / "A.npy");
  {
    OutputCommit oc(s.path.string());
    oc.protect({s / "in.npy"});
    oc.stage("A", ramp(4, 4, 9));
    oc.stage("Z", ramp(1, 5, 9));
    try {
      oc.commit();
      ADD_FAILURE() << "commit replaced an input";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Usage);
    }
  }
  EXPECT_EQ(cli_test::slurp(s / "A.npy"), a_before);
  EXPECT_EQ(listing(s.path), (std::set<std::string>{"A.npy", "in.npy", "Z.npy"}));
  EXPECT_EQ(replaced_input(s / "Z.npy", {s / "in.npy"}), s / "in.npy");
  EXPECT_EQ(replaced_input(s / "A.npy", {s / "in.npy"}), "");
  EXPECT_EQ(replaced_input(s / "missing.npy", {s / "in.npy"}), "");
}
