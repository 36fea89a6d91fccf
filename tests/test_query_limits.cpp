// Nesting limits (docs/semantics.md, "Limits"): generated queries exactly at the limits analyse,
// print, run on the CPU engine with the right values and generate CUDA source, all on a thread
// with a small stack; one level beyond and far beyond (50,000) are one clear query error, also
// through the `gamut` binary (check, explain, run --backend cpu).
#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>

#include "asan_skip.h"
#include "cuda/codegen/codegen.h"
#include "cpu/program.h"
#include "cuda/gpu_engine.h"
#include "data/npy.h"
#include "driver/pipeline.h"
#include "nvrtc_check.h"
#include "query_limits_cases.h"
#include "sema/analyze.h"

namespace fs = std::filesystem;
using namespace gamut;
using namespace gamut::limits;

namespace {

// The stack every pass must fit in at the limits: an eighth of the usual 8 MiB main-thread stack
// (ASan's frames are several times larger: half of it there). Measured use is in
// docs/semantics.md.
#ifdef GAMUT_TEST_UNDER_ASAN
constexpr size_t kStackBytes = size_t(4) << 20;
#else
constexpr size_t kStackBytes = size_t(1) << 20;
#endif

// Runs fn on a new thread with `bytes` of stack; rethrows what it throws.
void on_small_stack(const std::function<void()>& fn, size_t bytes = kStackBytes) {
  struct Arg {
    const std::function<void()>* fn;
    std::exception_ptr error;
  } arg{&fn, nullptr};
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, bytes);
  pthread_t t;
  int rc = pthread_create(
      &t, &attr,
      [](void* p) -> void* {
        auto* a = static_cast<Arg*>(p);
        try {
          (*a->fn)();
        } catch (...) {
          a->error = std::current_exception();
        }
        return nullptr;
      },
      &arg);
  pthread_attr_destroy(&attr);
  ASSERT_EQ(rc, 0);
  pthread_join(t, nullptr);
  if (arg.error) std::rethrow_exception(arg.error);
}

Bindings inputs_for(const std::string& text) {
  Bindings b;
  for (const char* n : {"A", "B", "J"})
    if (text.find(std::string(n) + "[") != std::string::npos) b.arrays[n] = make_input(n);
  return b;
}

// The rendered diagnostics of `text`, or "" when it analyses cleanly.
std::string errors_of(const std::string& text) {
  try {
    build_plan(Source{"limit.mmlt", text});
  } catch (const QueryError& e) {
    EXPECT_EQ(e.code(), ExitCode::Query);
    return e.what();
  }
  return "";
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// 1-based column of the operator of the n-th (1-based) " OP " in line `line` (1-based) of text.
int column_of(const std::string& text, int line, const std::string& op, int n) {
  size_t start = 0;
  for (int l = 1; l < line; ++l) start = text.find('\n', start) + 1;
  size_t p = start;
  for (int k = 0; k < n; ++k) p = text.find(" " + op + " ", k ? p + 1 : p);
  return int(p - start) + 2;
}

}  // namespace

TEST(QueryLimits, EveryPassAtTheLimitsOnASmallStack) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::string text = c.text(0);
    Results r;
    std::string plan_text, source;
    on_small_stack([&] {
      Source src{"limit.mmlt", text};
      Plan untyped = build_plan(src);                 // gamut check
      EXPECT_FALSE(print_plan(untyped).empty());       // gamut explain, no data
      auto p = prepare(src, inputs_for(text));         // typed analysis, rewrites, binding
      plan_text = print_plan(p->plan);                 // gamut explain with data
      RunOptions o;
      o.backend = Backend::Cpu;
      o.threads = 2;
      r = execute(*p, o, nullptr);                     // gamut run --backend cpu
      const cuda::KernelChoice k = cuda::choose_kernel(p->instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem);
      source = cuda::generate_source(p->plan, k.tile, k.options);   // the GPU backend's renderer
    });
    EXPECT_NE(plan_text.find("C[i, j] ="), std::string::npos);
    EXPECT_NE(source.find("__global__"), std::string::npos);
    ASSERT_EQ(r.dense.size(), 1u);
    const NDArray& C = r.dense[0];
    ASSERT_EQ(C.shape, (std::vector<int64_t>{kM, kN}));
    const NDArray A = make_input("A"), B = make_input("B"), J = make_input("J");
    bool some_nonzero = false;
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        const int64_t want = c.expect(A, B, J, i, j);
        some_nonzero |= want != 0;
        EXPECT_EQ(C.get_i64(i * kN + j), want) << "C[" << i << ", " << j << "]";
      }
    EXPECT_TRUE(some_nonzero);
  }
}

TEST(QueryLimits, OneLevelBeyondIsAQueryError) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::string e;
    on_small_stack([&] { e = errors_of(c.text(1)); });
    const std::string want = c.name == "nested_ifs"
                                 ? "error: 'if' statements nested too deeply: more than " + std::to_string(kMaxIfDepth) + " levels"
                                 : "error: expression nested too deeply: more than " + std::to_string(kMaxExprDepth) + " levels";
    EXPECT_NE(first_line(e).find(want), std::string::npos) << first_line(e);
    EXPECT_EQ(e.rfind("\nlimit.mmlt:"), std::string::npos) << "one error, no cascade: " << e;
  }
}

TEST(QueryLimits, FlatChainErrorPointsAtTheOperatorBeyondTheLimit) {
  // kMaxExprDepth terms of A[i,k]: the (kMaxExprDepth - 1)-th '+' makes the tree one level too deep.
  const std::string text = cases()[0].text(1);
  const std::string e = errors_of(text);
  const int col = column_of(text, 4, "+", kMaxExprDepth - 1);
  EXPECT_EQ(first_line(e).rfind("limit.mmlt:4:" + std::to_string(col) + ": error: expression nested too deeply", 0), 0u)
      << first_line(e);
  // The long source line is shown as a window around that column, the caret under the '+'.
  const size_t l2 = e.find('\n') + 1, l3 = e.find('\n', l2) + 1;
  const std::string shown = e.substr(l2, l3 - l2 - 1), caret = e.substr(l3, e.find('\n', l3) - l3);
  EXPECT_LT(shown.size(), 120u);
  ASSERT_LT(caret.find('^'), shown.size());
  EXPECT_EQ(shown[caret.find('^')], '+') << shown << "\n" << caret;
}

TEST(QueryLimits, FarBeyondTheLimitsIsAQueryErrorNotACrash) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    std::string e;
    on_small_stack([&] { e = errors_of(c.text(50000)); });
    EXPECT_NE(first_line(e).find("nested too deeply"), std::string::npos) << first_line(e);
  }
  // Long flat chains that are not one expression tree stay fine: 50,000 terms split by 'let'.
  const int lets_needed = 50000 / (kMaxExprDepth - 2) + 1;
  std::string lets;
  for (int n = 0; n < lets_needed; ++n)
    lets += "let s" + std::to_string(n) + " = " + (n ? "s" + std::to_string(n - 1) + " + " : "") +
            chain("A[i,k]", "+", kMaxExprDepth - 2) + ";\n    ";
  EXPECT_EQ(errors_of(query(lets + "a += s" + std::to_string(lets_needed - 1) + ";")), "");
}

// Any number of lets, each reading the one before (docs/semantics.md, "Limits"): every pass on a
// small stack (the rewrites that read through lets walked them recursively: 20,000 chained lets
// overflowed the stack, a let used twice at each of 40 levels never finished), the CPU results
// right, and the CPU engine's per-thread storage independent of the number of lets.
TEST(QueryLimits, LongLetChainsOnASmallStack) {
  struct Chain {
    std::string name;
    int lets;
    std::function<std::string(int)> let;            // the let t<x>, x >= 1
    std::function<int64_t(int64_t ab)> term;         // t<last> of a pair's product A * B
  };
  const int kLong = 20000, kDoubling = 40;
  const std::vector<Chain> chains = {
      {"plus one", kLong, [](int x) { return "t" + std::to_string(x - 1) + " + 1"; },
       [&](int64_t ab) { return ab + (kLong - 1); }},
      {"times one", kLong, [](int x) { return "t" + std::to_string(x - 1) + " * 1"; }, [](int64_t ab) { return ab; }},
      {"doubled", kDoubling, [](int x) { return "t" + std::to_string(x - 1) + " + t" + std::to_string(x - 1); },
       [&](int64_t ab) { return ab * (int64_t(1) << (kDoubling - 1)); }},
      {"squared", kDoubling, [](int x) { return "t" + std::to_string(x - 1) + " * t" + std::to_string(x - 1); },
       [](int64_t) { return int64_t(1); }},  // (its t0 is +-1: every square after it is 1)
  };
  for (const Chain& ch : chains) {
    SCOPED_TRACE(ch.name);
    const bool squared = ch.name == "squared";
    std::string inner = squared ? "let t0 = (A[i, k] * B[k, j]) * (A[i, k] * B[k, j]) == 1 ? 1 : -1;\n"
                                : "let t0 = i64(A[i, k] * B[k, j]);\n";
    for (int x = 1; x < ch.lets; ++x) inner += "    let t" + std::to_string(x) + " = " + ch.let(x) + ";\n";
    inner += "    a += t" + std::to_string(ch.lets - 1) + ";";
    const std::string text = query(inner);
    Results r;
    size_t regions = 0;
    std::string source;
    on_small_stack([&] {
      Source src{"lets.mmlt", text};
      auto p = prepare(src, inputs_for(text));
      EXPECT_FALSE(print_plan(p->plan).empty());
      RunOptions o;
      o.backend = Backend::Cpu;
      o.threads = 2;
      r = execute(*p, o, nullptr);
      regions = size_t(cpu::compile_module(p->instance).regions);
      const cuda::KernelChoice k = cuda::choose_kernel(p->instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem);
      source = cuda::generate_source(p->plan, k.tile, k.options);
    });
    EXPECT_NE(source.find("__global__"), std::string::npos);
    EXPECT_LT(regions, 64u) << "slots of kLanes values per thread";
    ASSERT_EQ(r.dense.size(), 1u);
    const NDArray A = make_input("A"), B = make_input("B"), J = make_input("J");
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) {
        int64_t want = J.as<int32_t>()[j];
        for (int64_t k = 0; k < kK; ++k) {
          const int64_t ab = at(A, i, k, kK) * at(B, k, j, kN);
          want += ch.term(ab);
        }
        EXPECT_EQ(r.dense[0].get_i64(i * kN + j), want) << "C[" << i << ", " << j << "]";
      }
  }
}

#if GAMUT_HAVE_CUDA
TEST(QueryLimits, KernelsAtTheLimitCompileWithNvrtc) {
  // Integer chains render as nested gm:: calls, conversions as nested gm::to_*: NVRTC takes them.
  for (const Case& c : cases()) {
    if (c.name != "sub_chain" && c.name != "compare_chain" && c.name != "calls") continue;
    SCOPED_TRACE(c.name);
    const std::string text = c.text(0);
    auto p = prepare(Source{"limit.mmlt", text}, inputs_for(text));
    const cuda::KernelChoice k = cuda::choose_kernel(p->instance, testnvrtc::kH100Sms, testnvrtc::kH100Smem);
    testnvrtc::compile(cuda::generate_source(p->plan, k.tile, k.options), "sm_90a");
  }
}
#endif

// ---- the same through the binary ----

namespace {

struct Outcome {
  int code;
  std::string out, err;
};

Outcome gamut_cli(const std::string& args) {
  fs::path err = fs::temp_directory_path() / ("gamut_limits_err_" + std::to_string(::getpid()));
  std::string cmd = std::string(GAMUT_BINARY) + " " + args + " 2>" + err.string();
  Outcome o{};
  FILE* p = popen(cmd.c_str(), "r");
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) o.out.append(buf.data(), n);
  int st = pclose(p);
  o.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::ifstream e(err);
  o.err.assign(std::istreambuf_iterator<char>(e), {});
  fs::remove(err);
  return o;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("gamut_limits_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(QueryLimits, BinaryAtAndBeyondTheLimits) {
  TempDir dir;
  std::string binds;
  for (const char* n : {"A", "B", "J"}) {
    write_npy((dir.path / (std::string(n) + ".npy")).string(), make_input(n));
    binds += std::string(" ") + n + "=" + (dir.path / (std::string(n) + ".npy")).string();
  }
  for (const Case& c : cases()) {
    if (c.name != "add_chain" && c.name != "parentheses" && c.name != "nested_ifs" && c.name != "when_chain") continue;
    SCOPED_TRACE(c.name);
    const std::string q = (dir.path / "q.mmlt").string();
    std::ofstream(q) << c.text(0);
    std::string used;
    for (const char* n : {"A", "B", "J"})
      if (c.text(0).find(std::string(n) + "[") != std::string::npos)
        used += std::string(" ") + n + "=" + (dir.path / (std::string(n) + ".npy")).string();
    EXPECT_EQ(gamut_cli("check " + q).code, 0);
    Outcome ex = gamut_cli("explain " + q + used);
    EXPECT_EQ(ex.code, 0) << ex.err;
    const fs::path out = dir.path / "out";
    Outcome run = gamut_cli("run " + q + used + " --backend cpu -o " + out.string());
    ASSERT_EQ(run.code, 0) << run.err;
    NDArray C = read_npy((out / "C.npy").string(), "C");
    const NDArray A = make_input("A"), B = make_input("B"), J = make_input("J");
    for (int64_t i = 0; i < kM; ++i)
      for (int64_t j = 0; j < kN; ++j) EXPECT_EQ(C.get_i64(i * kN + j), c.expect(A, B, J, i, j));
    fs::remove_all(out);
    for (int extra : {1, 50000}) {
      std::ofstream(q, std::ios::trunc) << c.text(extra);
      for (const std::string& cmd : {"check " + q, "explain " + q + used, "run " + q + used + " --backend cpu -o " + out.string()}) {
        Outcome o = gamut_cli(cmd);
        EXPECT_EQ(o.code, 1) << cmd;
        EXPECT_EQ(o.err.rfind(q + ":", 0), 0u) << o.err.substr(0, 300);
        EXPECT_NE(first_line(o.err).find("nested too deeply"), std::string::npos) << first_line(o.err);
        EXPECT_LT(o.err.size(), 1000u) << "a long line is shown as a window";
      }
      EXPECT_FALSE(fs::exists(out));
    }
  }
}
