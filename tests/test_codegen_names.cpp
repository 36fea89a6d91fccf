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
#include "cuda/codegen/kernel_spec.h"
#include "driver/pipeline.h"
#include "partition/partition.h"
#include "rewrite/list_provenance.h"
#include "cuda/codegen/tile_choice.h"
#include "list_plans.h"
#include "nvrtc_check.h"
#include "partition_cases.h"

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

// The plans the partitioned runs execute (rewrite/list_provenance.h): their top / bottom lists
// carry hidden columns named "__key", "__b", "__i", "__j", which the policy must turn into legal
// identifiers (claiming them once looped forever, appending "_q"). Each part's kernel compiles.
TEST(CodegenNames, HiddenProvenanceColumnsOfPartPlans) {
  int ranked = 0;
  for (const partition_cases::Case& c : partition_cases::kCases) {
    SCOPED_TRACE(c.name);
    auto prep = prepare(Source{"q.mmlt", c.text}, partition_cases::bindings(c), false);
    const Plan part_plan = with_list_provenance(*prep->instance.plan);
    const Instance part = part_instance(prep->instance, choose_partition(prep->instance, 2), 0, &part_plan);
    const KernelChoice k = choose_kernel(part, testnvrtc::kH100Sms, testnvrtc::kH100Smem);
    std::string src;
    ASSERT_NO_THROW(src = generate_source(part_plan, k.tile, k.options));
    expect_names_from_policy(part_plan, src);
    for (const ListOutput& l : part_plan.lists) ranked += l.mode == ListMode::Top || l.mode == ListMode::Bottom;
#if GAMUT_HAVE_CUDA
    testnvrtc::compile(src, "sm_90a");
#endif
  }
  EXPECT_GT(ranked, 0);  // the cases include ranked lists
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

namespace {

// A bottom list per row keyed by a let of the accumulator and a row vector: the let's value is
// needed in the pair loops, the key lambdas and pass 2. With `twice`, a second let of the same
// local under an if.
Plan let_keyed_list(bool twice) {
  tp::PlanBuilder b("let_keyed");
  const int A = b.input("A", DType::F32), B = b.input("B", DType::F32), qn = b.input("qn", DType::F32);
  const int acc = b.accumulator("dot", CType::F32, 0, Monoid::Sum);
  const ExprId la = b.load(A, Pattern::RowRed), lb = b.load(B, Pattern::ColRed);
  b.p.inner.push_back(tp::PlanBuilder::update(acc, UpdateOp::Add, b.bin(BinOp::Mul, la, lb)));
  const int d = b.new_local("dist", CType::F32, false);
  const ExprId value =
      b.bin(BinOp::Sub, b.load(qn, Pattern::RowVec), b.bin(BinOp::Mul, b.lit(CType::F32, 3), b.acc(acc)));
  b.p.outer.push_back(tp::PlanBuilder::let(d, value));
  if (twice)
    b.p.outer.push_back(tp::PlanBuilder::if_(b.bin(BinOp::Lt, b.acc(acc), b.lit(CType::F32, 0)),
                                             {tp::PlanBuilder::let(d, b.un(UnOp::Neg, b.acc(acc)))}));
  const int L =
      b.list("Near", {{"j", CType::I32}, {"dist", CType::F32}}, ListMode::Bottom, 8, b.local(d), PerGroup::Row);
  b.p.outer.push_back(tp::PlanBuilder::emit(L, {b.axis(AxisRole::Col), b.local(d)}));
  return b.done();
}

size_t occurrences(const std::string& src, const std::string& what) {
  size_t n = 0;
  for (size_t p = src.find(what); p != std::string::npos; p = src.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

// Each let of the output statements is rendered once, as dist_of, and called wherever the
// statements are rendered; a local assigned by two lets keeps its expressions in place.
TEST(CodegenNames, EachLetIsRenderedOnce) {
  const std::string expr = "(3.0f * dot)";
  for (const char* tile : {"64x64x8/4x4", "128x128x8/8x8"}) {
    SCOPED_TRACE(tile);
    const Plan p = let_keyed_list(false);
    const std::string src = generate_source(p, parse_tile(tile));
    EXPECT_EQ(occurrences(src, expr), 1u) << src;
    EXPECT_EQ(occurrences(src, "const auto dist_of = [&](const int i, const float dot) -> float {"), 1u) << src;
    EXPECT_GE(occurrences(src, "dist = dist_of(i, dot);"), 3u) << src;
    expect_names_from_policy(p, src);
#if GAMUT_HAVE_CUDA
    testnvrtc::compile(src, "sm_90a");
#endif
  }
  const std::string twice = generate_source(let_keyed_list(true), parse_tile("64x64x8/4x4"));
  EXPECT_EQ(occurrences(twice, "dist_of"), 0u);
  EXPECT_GE(occurrences(twice, expr), 3u);
}

// Shared memory is addressed through the named offsets of struct Smem, never by a literal.
TEST(CodegenNames, SharedMemoryThroughStructSmem) {
  const std::regex literal(R"(smem \+ [0-9])");
  size_t named = 0;
  auto check = [&](const std::string& src) {
    EXPECT_FALSE(std::regex_search(src, literal)) << src;
    named += occurrences(src, "smem + Smem::");
  };
  for (const auto& [name, make] : tp::all_plans()) {
    SCOPED_TRACE(name);
    const Plan p = make();
    check(generate_source(p, choose_tile(p, testnvrtc::kH100Sms, testnvrtc::kH100Smem)));
  }
  for (const auto& [name, p] : tp::list_plans()) {
    SCOPED_TRACE(name);
    check(generate_source(p, parse_tile("64x64x8/4x4")));
  }
  EXPECT_GT(named, 20u);
}
