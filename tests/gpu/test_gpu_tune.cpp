// `gamut tune` on the device (gamut::tune): a small search of one family writes this GPU's table
// (and its copy), the kernel choice then takes the tuned variants, and their results equal the
// CPU engine's on integer data; a budget too small for the search stops cleanly. The cache
// directory is a temporary one ($GAMUT_CACHE_DIR), so the user's table is not touched.
#include <gamut/gamut.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/types.h"
#include "gpu_skip.h"

namespace {

// $GAMUT_CACHE_DIR set to a fresh folder for the scope, then restored.
struct TempCache {
  std::string dir, old;
  bool had = false;
  TempCache() {
    dir = (std::filesystem::temp_directory_path() / ("gamut-tune-test-" + std::to_string(::getpid()))).string();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    if (const char* o = std::getenv("GAMUT_CACHE_DIR")) had = true, old = o;
    ::setenv("GAMUT_CACHE_DIR", dir.c_str(), 1);
  }
  ~TempCache() {
    if (had)
      ::setenv("GAMUT_CACHE_DIR", old.c_str(), 1);
    else
      ::unsetenv("GAMUT_CACHE_DIR");
    std::filesystem::remove_all(dir);
  }
};

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str());
}

constexpr const char* kProduct = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";

// A and B of small integers (exact sums in f32), as f32 or bf16.
struct Operands {
  std::vector<float> af, bf;
  std::vector<uint16_t> ah, bh;
  Operands(int64_t m, int64_t k) : af(size_t(m * k)), bf(size_t(k * m)), ah(af.size()), bh(bf.size()) {
    for (size_t e = 0; e < af.size(); ++e) {
      af[e] = float(int64_t(e * 7 + 3) % 9 - 4);
      bf[e] = float(int64_t(e * 5 + 1) % 7 - 3);
      ah[e] = gamut::float_to_bf16(af[e]);
      bh[e] = gamut::float_to_bf16(bf[e]);
    }
  }
};

}  // namespace

TEST(GpuTune, SmallSearchWritesTheTableAndTunedKernelsAreRight) {
  SKIP_WITHOUT_GPU();
  TempCache cache;
  const int64_t m = 1024, k = 64;
  gamut::TuneOptions o;
  o.families = {"products"};
  o.seconds = 240;
  o.sizes = {{m, k}};
  o.repeats = 2;
  o.out_dir = cache.dir + "/out";
  const gamut::TuneReport r = gamut::tune(o);
  for (const std::string& l : r.lines) std::cout << "[ tune ] " << l << "\n";
  ASSERT_TRUE(std::filesystem::exists(r.table_path)) << r.table_path;
  ASSERT_TRUE(std::filesystem::exists(r.out_path)) << r.out_path;
  EXPECT_EQ(r.table_path.rfind(cache.dir + "/tuned/", 0), 0u) << r.table_path;
  const nlohmann::json j = read_json(r.table_path);
  EXPECT_EQ(j["format"], "gamut-tuned-1");
  EXPECT_EQ(j["device"]["name"], gamut::cuda::device().name);
  ASSERT_FALSE(r.stopped) << "240 s did not cover three small products";
  ASSERT_EQ(j["entries"].size(), 3u) << j.dump(1);  // f32 SIMT, tf32 and bf16 products
  ASSERT_EQ(j["searched"].size(), 3u);
  for (const auto& s : j["searched"]) {
    EXPECT_GE(s["results"].size(), 3u) << s.dump();
    for (const auto& v : s["results"])
      EXPECT_EQ(v["status"].get<std::string>().rfind("wrong", 0), std::string::npos) << v;
  }

  // The tuned kernels, against the CPU engine (exact: integer data).
  const Operands d(m, k);
  const gamut::Query q = gamut::Query::compile(kProduct);
  for (const bool bf16 : {false, true}) {
    SCOPED_TRACE(bf16 ? "bf16" : "f32");
    gamut::Inputs in;
    if (bf16)
      in.array("A", gamut::ArrayRef::host(d.ah.data(), gamut::DType::BF16, {m, k}))
          .array("B", gamut::ArrayRef::host(d.bh.data(), gamut::DType::BF16, {k, m}));
    else
      in.array("A", gamut::ArrayRef::host(d.af.data(), gamut::DType::F32, {m, k}))
          .array("B", gamut::ArrayRef::host(d.bf.data(), gamut::DType::F32, {k, m}));
    gamut::Options gpu, cpu, heuristic;
    gpu.backend = heuristic.backend = "gpu";
    cpu.backend = "cpu";
    heuristic.tuned = false;
    const gamut::Result g = q.run(in, gpu), c = q.run(in, cpu), h = q.run(in, heuristic);
    EXPECT_EQ(g.stats.kernel_choice, "tuned");
    EXPECT_EQ(h.stats.kernel_choice, "heuristic");
    std::cout << "[ tune ] " << (bf16 ? "bf16" : "f32") << ": tuned " << g.stats.tile << ", heuristic " << h.stats.tile
              << "\n";
    const gamut::Array &a = g["C"].array, &b = c["C"].array;
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0);
    EXPECT_NE(q.explain(in, gpu).find("kernel choice: tuned"), std::string::npos);
  }
}

TEST(GpuTune, BudgetTooSmallStopsCleanly) {
  SKIP_WITHOUT_GPU();
  TempCache cache;
  gamut::TuneOptions o;
  o.families = {"lists"};
  o.seconds = 2;
  o.sizes = {{512, 64}};
  const gamut::TuneReport r = gamut::tune(o);
  EXPECT_TRUE(r.stopped);
  EXPECT_TRUE(std::filesystem::exists(r.table_path));
  EXPECT_NO_THROW((void)read_json(r.table_path));
}
