// The naming policy of generated kernels (src/cuda/codegen/names.h): every identifier a kernel
// declares or uses unqualified is the generator's own (Names::reserved) or one the policy made
// from the query; query names that collide with either are mangled, and the kernel still
// compiles. Also: every gm:: symbol the generator names in its text exists in the device headers.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "codegen_plans.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/names.h"
#include "cuda/codegen/tile_choice.h"
#include "list_plans.h"
#include "nvrtc_check.h"

using namespace gamut;
using namespace gamut::cuda;
namespace tp = gamut::testplans;
namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The source without comments, string literals and preprocessor lines.
std::string code_of(const std::string& src) {
  std::string s = std::regex_replace(src, std::regex("//[^\n]*"), "");
  s = std::regex_replace(s, std::regex(R"("(\\.|[^"\\])*")"), "\"\"");
  return std::regex_replace(s, std::regex("#[^\n]*"), "");
}

// Identifiers used unqualified (not after ::, . or ->).
std::set<std::string> unqualified_identifiers(const std::string& src) {
  const std::string code = code_of(src);
  std::set<std::string> out;
  const std::regex ident(R"((::|\.|->)?\s*\b([A-Za-z_][A-Za-z0-9_]*)\b)");
  for (auto it = std::sregex_iterator(code.begin(), code.end(), ident); it != std::sregex_iterator(); ++it)
    if (!(*it)[1].matched) out.insert((*it)[2].str());
  return out;
}

void expect_names_from_policy(const Plan& p, const std::string& src) {
  const cg::Names names(p);
  for (const std::string& id : unqualified_identifiers(src))
    EXPECT_TRUE(cg::Names::reserved(id) || names.all().count(id) > 0)
        << id << " is neither the generator's own (names.cpp) nor one of the query's";
}

}  // namespace

TEST(CodegenNames, EveryIdentifierIsOwnOrTheQuerys) {
  for (const auto& [name, make] : tp::all_plans()) {
    SCOPED_TRACE(name);
    const Plan p = make();
    expect_names_from_policy(p, generate_source(p, choose_tile(p, testnvrtc::kH100Sms, testnvrtc::kH100Smem)));
  }
  for (const auto& [name, p] : tp::list_plans()) {
    SCOPED_TRACE(name);
    expect_names_from_policy(p, generate_source(p, parse_tile("64x64x8/4x4")));
  }
}

TEST(CodegenNames, QueryNamesInTheKernel) {
  const std::string src = generate_source(tp::sgemm(), parse_tile("128x128x8/8x8"));
  EXPECT_NE(src.find("unsigned long long A_ptr;"), std::string::npos);
  EXPECT_NE(src.find("accum = accum + (A * B);"), std::string::npos);  // the inner op
  EXPECT_NE(src.find("float* C = reinterpret_cast<float*>(a.C_ptr);"), std::string::npos);
  // A query name the kernel uses itself is mangled: Q1's let m (m indexes the map's rows).
  const std::string q1 = generate_source(tp::q1(), parse_tile("64x64x8/4x4"));
  EXPECT_NE(q1.find("m_q = (S * W);"), std::string::npos) << q1;
}

TEST(CodegenNames, CollidingNamesAreMangled) {
  // Operands named like the kernel's own (smem, gm), an accumulator named acc, a let named i,
  // an output named a: all mangled, unique, and the kernel compiles.
  tp::PlanBuilder b("collide");
  const int A = b.input("smem", DType::F32), B = b.input("gm", DType::F32);
  const int acc = b.accumulator("acc", CType::F32, 0, Monoid::Sum);
  // (The loads in order: access 0 reads smem, access 1 gm; as arguments of one call their order
  // would be the compiler's.)
  const int load_a = b.load(A, Pattern::RowRed);
  const int load_b = b.load(B, Pattern::RedCol);
  b.p.inner.push_back(tp::PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, load_a, load_b)));
  const int l = b.new_local("i", CType::F32, false);
  b.p.outer.push_back(tp::PlanBuilder::let(l, b.bin(BinOp::Add, b.acc(acc), b.acc(acc))));
  const int C = b.output("a", StoreOp::Assign, CType::F32, {b.ax(AxisRole::Row), b.ax(AxisRole::Col)});
  b.p.outer.push_back(tp::PlanBuilder::store(C, b.local(l)));
  const Plan p = b.done();
  const cg::Names n(p);
  EXPECT_EQ(n.access(0), "smem_q");
  EXPECT_EQ(n.access(1), "gm_q");
  EXPECT_EQ(n.acc(0), "acc_q");
  EXPECT_EQ(n.local(0), "i_q");
  EXPECT_EQ(n.dense(0), "a_q");
  const std::string src = generate_source(p, parse_tile("64x64x8/4x4"));
  expect_names_from_policy(p, src);
#if GAMUT_HAVE_CUDA
  testnvrtc::compile(src, "sm_90a");
#endif
}

// The kernel declares only the argument fields it reads (kernel_args.h read_layout): the words
// it does not read have no slot (-1), and the launcher skips them.
TEST(CodegenNames, EveryArgumentFieldIsRead) {
  auto check = [](const Plan& p, const TileConfig& t) {
    const std::string src = generate_source(p, t);
    const ArgLayout& L = kernel_info(p, t).args;
    for (size_t s = 7; s < L.slots.size(); ++s) {
      const std::string& n = L.slots[s].name;
      if (n.empty() || n.rfind("pad", 0) == 0) continue;
      EXPECT_NE(src.find("a." + n), std::string::npos) << n << " is declared but not read";
    }
    EXPECT_NE(src.find("struct Args"), std::string::npos);
  };
  for (const auto& [name, make] : tp::all_plans()) {
    SCOPED_TRACE(name);
    const Plan p = make();
    check(p, choose_tile(p, testnvrtc::kH100Sms, testnvrtc::kH100Smem));
  }
  for (const auto& [name, p] : tp::list_plans()) {
    SCOPED_TRACE(name);
    check(p, parse_tile("64x64x8/4x4"));
  }
  // Q2's row and column keys are read as Pzip[i], Rzip[j]: their pointers only.
  const ArgLayout L = kernel_info(tp::zip_aggregate(), parse_tile("128x128x8/8x8")).args;
  int unread = 0;
  for (const ArgLayout::AccessSlots& a : L.access) unread += (a.ld < 0) + (a.bstride < 0) + (a.vec < 0);
  EXPECT_GE(unread, 6);
}

// Every gm:: symbol named in the generator's string literals (src/cuda/codegen and the output
// kinds' outputs/*/codegen) is declared in the device headers (src/cuda/device and
// outputs/*/device): a typo fails here, not only when NVRTC compiles.
TEST(CodegenNames, DeviceSymbolsTheGeneratorNamesExist) {
  const fs::path root = fs::path(GAMUT_SOURCE_DIR) / "src" / "cuda";
  std::string device;
  for (const char* dir : {"device", "outputs"})
    for (const auto& e : fs::recursive_directory_iterator(root / dir))
      if (e.path().extension() == ".cuh") device += read_text(e.path());
  std::set<std::string> declared;
  const std::regex decl(R"(\b([A-Za-z_][A-Za-z0-9_]*)\b)");
  const std::string dcode = code_of(device);
  for (auto it = std::sregex_iterator(dcode.begin(), dcode.end(), decl); it != std::sregex_iterator(); ++it)
    declared.insert((*it)[1].str());
  const std::regex literal(R"("(\\.|[^"\\])*")"), sym(R"(gm::(tc::)?([A-Za-z_][A-Za-z0-9_]*))");
  size_t checked = 0;
  std::vector<fs::path> generator;
  for (const auto& e : fs::recursive_directory_iterator(root / "codegen")) generator.push_back(e.path());
  for (const auto& e : fs::recursive_directory_iterator(root / "outputs"))
    if (e.path().parent_path().filename() == "codegen") generator.push_back(e.path());
  for (const fs::path& path : generator) {
    if (path.extension() != ".cpp" && path.extension() != ".h") continue;
    const std::string src = read_text(path);
    for (auto l = std::sregex_iterator(src.begin(), src.end(), literal); l != std::sregex_iterator(); ++l) {
      const std::string text = l->str();
      for (auto s = std::sregex_iterator(text.begin(), text.end(), sym); s != std::sregex_iterator(); ++s) {
        ++checked;
        EXPECT_TRUE(declared.count((*s)[2].str())) << path.filename().string() << ": gm::" << (*s)[1].str()
                                                   << (*s)[2].str() << " is not in the device headers";
      }
    }
  }
  EXPECT_GT(checked, 100u);
}
