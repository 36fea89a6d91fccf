// Which engine runs, said by the command line: `explain`'s first line (and, without a GPU, the
// GPU's choices only as what they would be, no `gamut peak` advice), the run summary's line of
// options that did not apply to the engine that ran (`--tile`, `--repeat`, `--f32-math` on the
// CPU engine), and the demo's engine word per line.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_process.h"
#include "cuda/gpu_engine.h"
#include "data/npy.h"

namespace fs = std::filesystem;
using cli_test::Exit;
using cli_test::run_gamut;

namespace {

std::string example(const char* name) { return std::string(GAMUT_SOURCE_DIR) + "/examples/" + name + ".mmlt"; }

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

struct Data {
  fs::path dir = cli_test::scratch_name("engine");
  std::string A, B;
  Data() {
    fs::create_directories(dir);
    gamut::NDArray a = gamut::NDArray::zeros(gamut::DType::BF16, {8, 4}),
                   b = gamut::NDArray::zeros(gamut::DType::BF16, {4, 6});
    A = (dir / "a.npy").string();
    B = (dir / "b.npy").string();
    gamut::write_npy(A, a);
    gamut::write_npy(B, b);
  }
  ~Data() { fs::remove_all(dir); }
};

}  // namespace

TEST(CliEngine, ExplainSaysFirstWhichEngineRuns) {
  Data d;
  const Exit cpu = run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu"});
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_EQ(first_line(cpu.out), "engine: cpu (backend cpu asked)") << cpu.out;
  // The unbound plan too.
  const Exit plain = run_gamut({"explain", example("sgemm"), "--backend", "cpu"});
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_EQ(first_line(plain.out), "engine: cpu (backend cpu asked)") << plain.out;

  std::string why;
  const Exit autod = run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B});
  ASSERT_EQ(autod.code, 0) << autod.err;
  if (gamut::cuda::gpu_available(&why)) {
    EXPECT_EQ(first_line(autod.out).rfind("engine: gpu (", 0), 0u) << autod.out;
    EXPECT_NE(autod.out.find("math: bf16 on the wgmma mainloop"), std::string::npos) << autod.out;
    return;
  }
  const std::string lead = "no usable CUDA device: ";  // (the probe's lead; explain leaves it out)
  if (why.rfind(lead, 0) == 0) why = why.substr(lead.size());
  EXPECT_EQ(first_line(autod.out), "engine: cpu (" + why + ")") << autod.out;
  // Without a GPU: no GPU plan presented as what runs, no advice to run `gamut peak`.
  EXPECT_EQ(autod.out.find("gamut peak"), std::string::npos) << autod.out;
  EXPECT_EQ(autod.out.find("\nmath: bf16 on the wgmma mainloop"), std::string::npos) << autod.out;
  EXPECT_NE(autod.out.find("math: the CPU engine's (each operation in the query's types); on a GPU it would be bf16 on "
                           "the wgmma mainloop"),
            std::string::npos)
      << autod.out;
  EXPECT_NE(autod.out.find("gpu: none (" + why + "); on an H100 the kernel would take tile "), std::string::npos)
      << autod.out;
  const Exit gpu = run_gamut({"explain", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "gpu"});
  ASSERT_EQ(gpu.code, 0) << gpu.err;
  EXPECT_EQ(first_line(gpu.out), "engine: none: backend gpu asked, but " + why + " (a run fails with a device error)");
}

TEST(CliEngine, OptionsTheCpuEngineIgnoresAreNamed) {
  Data d;
  const Exit o = run_gamut({"run", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu", "--tile",
                            "64x64x8/4x4", "--repeat", "3", "--f32-math", "tf32"});
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(o.out.find("\n  ignored: --tile, --repeat, --f32-math (they apply to the GPU engine; the CPU engine ran: "
                       "backend cpu asked)\n"),
            std::string::npos)
      << o.out;
  const Exit one = run_gamut({"run", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu", "--repeat", "2"});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(
      one.out.find("\n  ignored: --repeat (it applies to the GPU engine; the CPU engine ran: backend cpu asked)\n"),
      std::string::npos)
      << one.out;
  const Exit none = run_gamut({"run", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out.find("ignored"), std::string::npos) << none.out;
  const Exit j = run_gamut(
      {"run", example("sgemm"), "A=" + d.A, "B=" + d.B, "--backend", "cpu", "--f32-math", "tf32x3", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  const auto js = nlohmann::json::parse(j.out);
  EXPECT_EQ(js["ignored"], nlohmann::json::array({"--f32-math"}));
  EXPECT_EQ(js["engine_reason"], "backend cpu asked");
}

TEST(CliEngine, DemoNamesTheEngineOnEveryLine) {
  const Exit o = run_gamut({"demo", "--backend", "cpu", "--size", "16"});
  ASSERT_EQ(o.code, 0) << o.out << o.err;
  std::istringstream lines(o.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    EXPECT_NE(line.find(" cpu "), std::string::npos) << line;
    ++n;
  }
  EXPECT_GE(n, 12);
}
