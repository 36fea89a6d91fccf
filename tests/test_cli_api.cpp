// The CLI is a user of the library API (issue 13, item 1): one path. `gamut run --json` reports
// the statistics a gamut::Query run reports for the same query, data and options, with the same
// results; an error the API raises reaches the CLI's stderr with the same text and its category
// as the exit status. And the API additions the CLI needs (progress, command-line scalars, the
// query's bindings, every kernel's source).
#include <gtest/gtest.h>

#include <gamut/gamut.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "data/npy.h"
#include "test_api_data.h"
#include "gpu/gpu_skip.h"

namespace fs = std::filesystem;

namespace {

using gamut::ArrayRef;
using gamut::DType;
using gamut::Inputs;
using gamut::NDArray;
using gamut::Options;
using gamut::Query;
using gamut::api_test::ints;

std::string example(const char* name) { return std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt"; }

struct Scratch {
  fs::path path = cli_test::scratch_name("cli_api");
  Scratch() { fs::create_directories(path); }
  ~Scratch() { fs::remove_all(path); }
  // Writes `a` as NAME.npy and returns its path.
  std::string npy(const std::string& name, const NDArray& a) const {
    const std::string p = (path / (name + ".npy")).string();
    gamut::write_npy(p, a);
    return p;
  }
};

NDArray f32_matrix(int64_t r, int64_t c, unsigned seed) {
  NDArray a = NDArray::zeros(DType::F32, {r, c});
  const std::vector<float> v = ints(size_t(r * c), seed);
  std::copy(v.begin(), v.end(), a.as<float>());
  return a;
}

ArrayRef view(const NDArray& a) { return ArrayRef::host(a.data.data(), a.dtype, a.shape); }

Options cpu_threads(int threads) {
  Options o;
  o.backend = "cpu";
  o.threads = threads;
  return o;
}

// The fields of `run --json` that are statistics of the run, against the API's.
void expect_same_statistics(const nlohmann::json& j, const gamut::RunStats& s) {
  EXPECT_EQ(j["backend"], s.backend);
  EXPECT_EQ(j["M"], s.m);
  EXPECT_EQ(j["N"], s.n);
  EXPECT_EQ(j["K"], s.k);
  EXPECT_EQ(j["batch"], s.batch);
  EXPECT_EQ(j["threads"], s.threads);
  EXPECT_EQ(j["rewrites"], s.rewrites);
  EXPECT_EQ(j["math"], s.math);
  EXPECT_EQ(j["mainloop"], s.mainloop);
  EXPECT_GT(j["time_ms"].get<double>(), 0.0);
}

}  // namespace

TEST(CliApi, JsonStatisticsAreTheApiRunStatistics) {
  Scratch d;
  // sgemm, small enough for its values to be in the JSON; integer data, so exact.
  const int64_t M = 6, K = 5, N = 7;
  const NDArray A = f32_matrix(M, K, 11), B = f32_matrix(K, N, 12);
  cli_test::Exit e = cli_test::run_gamut({"run", example("sgemm"), "A=" + d.npy("A", A), "B=" + d.npy("B", B),
                                          "--backend", "cpu", "--threads", "2", "--json"});
  ASSERT_EQ(e.code, 0) << e.err;
  const nlohmann::json j = nlohmann::json::parse(e.out);
  const Query q = Query::load(example("sgemm"));
  const gamut::Result r = q.run(Inputs().array("A", view(A)).array("B", view(B)), cpu_threads(2));
  expect_same_statistics(j, r.stats);
  EXPECT_EQ(j["query"], q.info().name);
  EXPECT_EQ(j["M"], M);
  const float* c = r["C"].array.as<float>();
  bool nonzero = false;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t jj = 0; jj < N; ++jj) {
      float want = 0;
      for (int64_t k = 0; k < K; ++k) want += A.as<float>()[i * K + k] * B.as<float>()[k * N + jj];
      nonzero |= want != 0;
      EXPECT_EQ(c[i * N + jj], want);
      EXPECT_EQ(j["outputs"][0]["values"][size_t(i)][size_t(jj)].get<float>(), want);
    }
  EXPECT_TRUE(nonzero);

  // A bound rewrite (or-and on 0/1 data: bit packing) is decided in the library, and so reported.
  const int64_t n = 70;
  NDArray adj = NDArray::zeros(DType::U8, {n, n});
  for (int64_t e2 = 0; e2 < adj.size(); ++e2) adj.as<uint8_t>()[e2] = (e2 * 37 + e2 / 7) % 23 == 0;
  const fs::path out = d.path / "out";
  cli_test::Exit b = cli_test::run_gamut({"run", example("reachability"), "Adj=" + d.npy("Adj", adj), "--backend", "cpu",
                                          "--threads", "1", "--json", "-o", out.string()});
  ASSERT_EQ(b.code, 0) << b.err;
  const nlohmann::json jb = nlohmann::json::parse(b.out);
  const gamut::Result rb = Query::load(example("reachability")).run(Inputs().array("Adj", view(adj)), cpu_threads(1));
  expect_same_statistics(jb, rb.stats);
  EXPECT_FALSE(rb.stats.rewrites.empty());
  const NDArray reach = gamut::read_npy((out / "Reach.npy").string(), "Reach");
  const gamut::Array& api = rb["Reach"].array;
  ASSERT_EQ(reach.shape, api.shape);
  int64_t reachable = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t jj = 0; jj < n; ++jj) {
      int32_t want = 0;
      for (int64_t k = 0; k < n; ++k) want |= adj.as<uint8_t>()[i * n + k] & adj.as<uint8_t>()[k * n + jj];
      reachable += want;
      ASSERT_EQ(reach.as<int32_t>()[i * n + jj], want) << i << "," << jj;
      ASSERT_EQ(api.as<int32_t>()[i * n + jj], want) << i << "," << jj;
    }
  EXPECT_GT(reachable, 0);
  EXPECT_LT(reachable, n * n);
}

// The same on the GPU (skipped without one): the tile and kernel variant, the math, the results.
TEST(CliApi, GpuJsonStatisticsAreTheApiRunStatistics) {
  SKIP_WITHOUT_GPU();
  Scratch d;
  const int64_t M = 150, K = 37, N = 70;   // not tile multiples
  const NDArray A = f32_matrix(M, K, 21), B = f32_matrix(K, N, 22);
  const fs::path out = d.path / "out";
  cli_test::Exit e = cli_test::run_gamut({"run", example("sgemm"), "A=" + d.npy("A", A), "B=" + d.npy("B", B),
                                          "--backend", "gpu", "--json", "-o", out.string()});
  ASSERT_EQ(e.code, 0) << e.err;
  const nlohmann::json j = nlohmann::json::parse(e.out);
  Options gpu;
  gpu.backend = "gpu";
  const gamut::Result r = Query::load(example("sgemm")).run(Inputs().array("A", view(A)).array("B", view(B)), gpu);
  EXPECT_EQ(j["backend"], "gpu");
  EXPECT_EQ(r.stats.backend, "gpu");
  EXPECT_EQ(j["tile"], r.stats.tile);
  EXPECT_EQ(j["M"], r.stats.m);
  EXPECT_EQ(j["N"], r.stats.n);
  EXPECT_EQ(j["K"], r.stats.k);
  EXPECT_EQ(j["math"], r.stats.math);
  EXPECT_EQ(j["mainloop"], r.stats.mainloop);
  EXPECT_EQ(j["rewrites"], r.stats.rewrites);
  const NDArray C = gamut::read_npy((out / "C.npy").string(), "C");
  const float* api = r["C"].array.as<float>();
  bool nonzero = false;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t jj = 0; jj < N; ++jj) {
      float want = 0;   // integers in [-3, 3]: every partial sum is exact in f32
      for (int64_t k = 0; k < K; ++k) want += A.as<float>()[i * K + k] * B.as<float>()[k * N + jj];
      nonzero |= want != 0;
      ASSERT_EQ(C.as<float>()[i * N + jj], want) << i << "," << jj;
      ASSERT_EQ(api[i * N + jj], want) << i << "," << jj;
    }
  EXPECT_TRUE(nonzero);
}

TEST(CliApi, ApiErrorsReachTheCliUnchanged) {
  auto expect_same = [](const gamut::Error& api, const cli_test::Exit& cli) {
    EXPECT_EQ(cli.code, int(api.code()));
    std::string text = api.what();
    if (text.back() != '\n') text += '\n';
    EXPECT_EQ(cli.err, text);
  };
  // A query error (with its source line and caret).
  const std::string bad = "where (i, j) { a = 0; reduce (k) { a += A[i, j]; } C[i, j] = a; }";
  try {
    Query::compile(bad, "<expr>");
    ADD_FAILURE() << "no query error";
  } catch (const gamut::Error& e) {
    EXPECT_EQ(e.code(), gamut::ExitCode::Query);
    expect_same(e, cli_test::run_gamut({"check", "-e", bad}));
  }
  // A data error found when the library binds.
  Scratch d;
  const NDArray A = f32_matrix(4, 3, 1), B = f32_matrix(5, 2, 2);
  try {
    Query::load(example("sgemm")).run(Inputs().array("A", view(A)).array("B", view(B)), cpu_threads(1));
    ADD_FAILURE() << "no data error";
  } catch (const gamut::Error& e) {
    EXPECT_EQ(e.code(), gamut::ExitCode::Data);
    EXPECT_EQ(std::string(e.what()), "data error: B: extent 5 along axis 'k' disagrees with A's extent 3");
    expect_same(e, cli_test::run_gamut({"run", example("sgemm"), "A=" + d.npy("A", A), "B=" + d.npy("B", B)}));
  }
  // A device error, where there is no GPU.
  if (gamut::gpu_available()) return;
  Options gpu;
  gpu.backend = "gpu";
  const NDArray B2 = f32_matrix(3, 2, 2);
  try {
    Query::load(example("sgemm")).run(Inputs().array("A", view(A)).array("B", view(B2)), gpu);
    ADD_FAILURE() << "no device error";
  } catch (const gamut::Error& e) {
    EXPECT_EQ(e.code(), gamut::ExitCode::Device);
    expect_same(e, cli_test::run_gamut({"run", example("sgemm"), "A=" + d.npy("A", A), "B=" + d.npy("B2", B2),
                                        "--backend", "gpu"}));
  }
}

TEST(ApiForCli, ProgressIsReportedUpToTheEnd) {
  const NDArray A = f32_matrix(600, 8, 3), B = f32_matrix(8, 16, 4);
  std::mutex mu;
  std::vector<double> seen;
  Options o = cpu_threads(3);
  o.progress = [&](double f) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(f);
  };
  const gamut::Result r = Query::load(example("sgemm")).run(Inputs().array("A", view(A)).array("B", view(B)), o);
  ASSERT_GT(seen.size(), 2u);
  EXPECT_DOUBLE_EQ(*std::max_element(seen.begin(), seen.end()), 1.0);
  for (double f : seen) EXPECT_GT(f, 0.0);
  EXPECT_EQ(r["C"].array.shape, (std::vector<int64_t>{600, 16}));
}

TEST(ApiForCli, ScalarTextIsReadAsTheCommandLineReadsIt) {
  const Query q = Query::compile("where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a * s + t; }");
  const std::vector<double> one = {2.0};
  Inputs in;
  in.array("A", ArrayRef::host(one.data(), DType::F64, {1, 1})).array("B", ArrayRef::host(one.data(), DType::F64, {1, 1}));
  in.scalar_text("s", "2.5").scalar_text("t", "-1");
  EXPECT_EQ(q.run(in, cpu_threads(1))["C"].array.as<double>()[0], 4.0 * 2.5 - 1);
  in.scalar_text("s", "1e300").scalar_text("t", "inf");
  EXPECT_EQ(q.run(in, cpu_threads(1))["C"].array.as<double>()[0], HUGE_VAL);
  in.scalar_text("s", "two");
  try {
    q.run(in, cpu_threads(1));
    ADD_FAILURE() << "no data error";
  } catch (const gamut::Error& e) {
    EXPECT_EQ(e.code(), gamut::ExitCode::Data);
    EXPECT_EQ(std::string(e.what()).rfind("data error: s: ", 0), 0u) << e.what();
  }
}

TEST(ApiForCli, QueryInfoDescribesTheBindings) {
  const Query q2 = Query::load(example("q2_zip_aggregate"));
  const gamut::QueryInfo& info = q2.info();
  ASSERT_EQ(info.input_info.size(), info.inputs.size());
  EXPECT_FALSE(info.batched);
  for (const gamut::BindingInfo& b : info.input_info) {
    const bool zip = b.name == "Pzip" || b.name == "Rzip";
    EXPECT_EQ(b.rank, zip ? 1 : 2) << b.name;
    EXPECT_EQ(b.index, zip) << b.name;
    EXPECT_EQ(b.output_index, zip) << b.name;
    if (b.name == "Pzip") EXPECT_EQ(b.location, example("q2_zip_aggregate") + ":8:5");
  }
  const Query q5 = Query::load(example("q5_select"));
  ASSERT_EQ(q5.info().param_info.size(), 1u);
  EXPECT_EQ(q5.info().param_info[0].name, "thres");
  EXPECT_EQ(q5.info().param_info[0].location, example("q5_select") + ":8:15");
  EXPECT_TRUE(Query::load(example("minplus_batched")).info().batched);
}

TEST(ApiForCli, KernelSourceHasEveryKernel) {
  const NDArray P = f32_matrix(8, 5, 5), R = f32_matrix(5, 6, 6);
  Inputs in;
  in.array("P", view(P)).array("R", view(R));
  const std::string sgemm = Query::load(example("sgemm")).kernel_source(Inputs().array("A", view(P)).array("B", view(R)));
  EXPECT_EQ(sgemm.rfind("// kernel source, tile ", 0), 0u) << sgemm.substr(0, 200);
  EXPECT_EQ(sgemm.find("// kernel source: selection"), std::string::npos);
  const std::string top = Query::load(example("q7_top128")).kernel_source(in);
  EXPECT_EQ(top.rfind("// kernel source, tile ", 0), 0u);
  EXPECT_NE(top.find("\n// kernel source: selection of Top after the kernel\n"), std::string::npos);
}
