// Golden generated kernels: the CUDA source of every reference query (tests/golden/queries.txt,
// with its stage kernels when a bound rewrite runs it as a program) and of every code variant
// (tiles, packed 16-bit steps, key-grouped joins, every list kind, direct-table aggregates, the
// stage kernels) is checked in under tests/golden/, so that every change to the generator shows
// as a diff. Regenerate them with
//   GAMUT_UPDATE_GOLDEN=1 build/tests/gamut_tests --gtest_filter='Golden.*'
// (tests/golden/README.md); under CI (CI or GITHUB_ACTIONS set) the update mode is refused: the
// test fails instead of rewriting what it checks. Tile choice sees the device the engine is tuned
// for (an H100: 132 SMs, 227 KiB of shared memory per block), as `explain --source` does without
// a device. Every golden file (stage kernels too) is also compiled by NVRTC for sm_90a (no GPU
// needed), on every core.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "codegen_plans.h"
#include "core/error.h"
#include "cuda/codegen/codegen.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/codegen/tile_choice.h"
#include "cuda/gpu_engine.h"
#include "driver/kernel_sources.h"
#include "driver/pipeline.h"
#include "list_plans.h"
#include "nvrtc_check.h"

using namespace gamut;
using namespace gamut::cuda;
namespace tp = gamut::testplans;
namespace fs = std::filesystem;

namespace {

using testnvrtc::kH100Smem;
using testnvrtc::kH100Sms;

const fs::path kGoldenDir = fs::path(GAMUT_SOURCE_DIR) / "tests" / "golden";

// One golden file: its path under tests/golden and how to make its text.
struct GoldenCase {
  std::string path;
  std::function<std::string()> make;
};

std::string tile_file_name(const TileConfig& t) {
  std::string s = t.str();
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

// ---- reference queries -------------------------------------------------------------------

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<int64_t> parse_shape(const std::string& s) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, 'x')) out.push_back(std::stoll(part));
  return out;
}

// TYPE:SHAPE[:FILL]: zero, mod:G (element e holds e % G) or bits (0/1, about one in five set).
NDArray make_array(const std::string& spec) {
  std::vector<std::string> parts;
  std::stringstream ss(spec);
  std::string part;
  while (std::getline(ss, part, ':')) parts.push_back(part);
  if (parts.size() < 2) throw std::runtime_error("bad array spec " + spec);
  const std::optional<DType> t = dtype_from_name(parts[0]);
  if (!t) throw std::runtime_error("bad dtype in " + spec);
  NDArray a = NDArray::zeros(*t, parse_shape(parts[1]));
  const std::string fill = parts.size() > 2 ? parts[2] : "zero";
  for (int64_t e = 0; e < a.size() && fill != "zero"; ++e) {
    int64_t v = 0;
    if (fill == "mod")
      v = e % std::stoll(parts.at(3));
    else if (fill == "bits")
      v = (e * 7) % 5 == 0 ? 1 : 0;
    else
      throw std::runtime_error("bad fill in " + spec);
    switch (*t) {
      case DType::Bool:
      case DType::U8: a.as<uint8_t>()[e] = uint8_t(v); break;
      case DType::I8: a.as<int8_t>()[e] = int8_t(v); break;
      case DType::I16: a.as<int16_t>()[e] = int16_t(v); break;
      case DType::I32: a.as<int32_t>()[e] = int32_t(v); break;
      case DType::I64: a.as<int64_t>()[e] = v; break;
      case DType::F32: a.as<float>()[e] = float(v); break;
      case DType::F64: a.as<double>()[e] = double(v); break;
      default: throw std::runtime_error("no fill for " + spec);
    }
  }
  return a;
}

// One line of queries.txt: NAME FILE [--no-rewrites] [--masked-joins] [--f32-math=M] [--dim=OUT=D1[,D2]] BINDING...
struct QuerySpec {
  std::string name, file;
  bool rewrites = true, masked_joins = false;
  F32Math f32_math = F32Math::Ieee;
  std::vector<std::pair<std::string, std::string>> bindings;
  std::map<std::string, std::vector<int64_t>> dims;  // --dim=NAME=D1[,D2]
};

std::vector<QuerySpec> query_specs() {
  std::vector<QuerySpec> out;
  std::istringstream in(read_text(kGoldenDir / "queries.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    QuerySpec q;
    words >> q.name >> q.file;
    std::string w;
    while (words >> w) {
      if (w == "--no-rewrites")
        q.rewrites = false;
      else if (w == "--masked-joins")
        q.masked_joins = true;
      else if (w.rfind("--f32-math=", 0) == 0)
        q.f32_math = f32_math_from_name(w.substr(11)).value();
      else if (w.rfind("--dim=", 0) == 0) {
        const std::string d = w.substr(6), name = d.substr(0, d.find('='));
        q.dims[name] = parse_dim_extents(name, d.substr(d.find('=') + 1));
      } else
        q.bindings.push_back({w.substr(0, w.find('=')), w.substr(w.find('=') + 1)});
    }
    out.push_back(q);
  }
  return out;
}

bool is_number(const std::string& s) {
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return !s.empty() && *end == '\0';
}

// The kernels a bound query runs on the GPU, as `explain --source` shows them. Under an f32_math
// other than ieee (which kernel_sources does not take): the main kernel that run_gpu compiles.
std::vector<KernelSource> kernels_of(const Prepared& p, bool masked_joins, F32Math f32_math = F32Math::Ieee) {
  if (f32_math == F32Math::Ieee) return kernel_sources(p, kH100Sms, kH100Smem, "", masked_joins);
  const KernelChoice k = choose_kernel(p.instance, kH100Sms, kH100Smem, std::nullopt, masked_joins, f32_math);
  return {{"main", "", generate_source(*p.instance.plan, k.tile, k.options)}};
}

std::unique_ptr<Prepared> prepare_spec(const QuerySpec& q) {
  Bindings b;
  for (const auto& [name, value] : q.bindings) {
    if (is_number(value))
      b.scalars[name] = value;
    else
      b.arrays[name] = make_array(value);
  }
  b.dims = q.dims;
  // A relative name: generated sources carry it, and golden files hold no machine paths.
  return prepare(Source{q.file, read_text(fs::path(GAMUT_SOURCE_DIR) / q.file)}, std::move(b), q.rewrites);
}

void add_query_cases(std::vector<GoldenCase>& cases) {
  for (const QuerySpec& q : query_specs()) {
    // Each case prepares the query again: cheap, and the files stay independent.
    const auto kernels = kernels_of(*prepare_spec(q), q.masked_joins, q.f32_math);
    for (size_t k = 0; k < kernels.size(); ++k) {
      const std::string file = "queries/" + q.name + (kernels.size() == 1 ? "" : "." + kernels[k].name) + ".cu";
      cases.push_back({file, [q, k] { return kernels_of(*prepare_spec(q), q.masked_joins, q.f32_math)[k].source; }});
    }
  }
}

// ---- code variants -------------------------------------------------------------------------

void add_plan(std::vector<GoldenCase>& cases, const std::string& dir, const std::string& name,
              const std::function<Plan()>& make, const TileConfig& tile, const CodegenOptions& o = {}) {
  cases.push_back({dir + "/" + name + "." + tile_file_name(tile) + ".cu",
                   [make, tile, o] { return generate_source(make(), tile, o); }});
}

TileConfig chosen(const Plan& p) { return choose_tile(p, kH100Sms, kH100Smem); }

void add_variant_cases(std::vector<GoldenCase>& cases) {
  // Every hand-built plan at its chosen tile; some at every tile shape the compile checks use.
  for (const auto& [name, make] : tp::all_plans()) add_plan(cases, "plans", name, make, chosen(make()));
  for (const char* name : {"sgemm", "aggregates", "masked_emit", "minplus_batched", "f16_bf16_transposed"})
    for (const auto& [n, make] : tp::all_plans())
      if (n == name)
        for (const char* tile : {"32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x128x16/8x8", "128x256x8/8x16",
                                 "32x16x32/2x2", "128x256x16/8x16"})
          add_plan(cases, "tiles", name, make, parse_tile(tile));
  // Every list kind (plain, top / bottom global, per i, per j, distinct) at the chosen tile and
  // a small one (pass 2 unrolled or as a loop over the marked pairs).
  for (const auto& [name, plan] : tp::list_plans()) {
    const Plan p = plan;
    add_plan(
        cases, "lists", name, [p] { return p; }, chosen(p));
    add_plan(
        cases, "lists", name, [p] { return p; }, parse_tile("64x64x8/4x4"));
    if (name == "three_lists_batched" || name == "top_per2" || name == "bottom_per1")
      for (const char* tile : {"32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x256x8/8x16", "32x16x32/2x2"})
        add_plan(
            cases, "lists", name, [p] { return p; }, parse_tile(tile));
  }
  // Key-grouped joins: plain, global top and distinct lists, and an aggregate.
  CodegenOptions grouped;
  grouped.grouped_join = true;
  for (ListMode mode : {ListMode::Plain, ListMode::Top}) {
    tp::ListQuery q = tp::list_query_of(mode, PerGroup::None);
    q.join_keys = q.under_if = true;
    add_plan(
        cases, "grouped_join", mode == ListMode::Plain ? "plain" : "top", [q] { return tp::list_query(q); },
        parse_tile("64x64x8/4x4"), grouped);
  }
  tp::DistinctQuery dj;
  dj.join_keys = dj.under_if = true;
  add_plan(
      cases, "grouped_join", "distinct", [dj] { return tp::distinct_query(dj); }, parse_tile("64x64x8/4x4"), grouped);
  add_plan(
      cases, "grouped_join", "join_area", [] { return tp::join_area(); }, chosen(tp::join_area()), grouped);
  // Packed 16-bit tropical steps, max-plus and a transposed min-plus.
  CodegenOptions packed;
  packed.packed16 = true;
  const std::vector<std::pair<std::string, std::string>> tropical = {
      {"maxplus_i16", "where (i, j) { accum = -inf; reduce (k) { accum max= A[i, k] + B[k, j]; } C[i, j] = accum; }"},
      {"minplus_t_i16", "where (i, j) { d = 7; reduce (k) { d min= B[j, k] + A[k, i]; } C[i, j] = d; }"}};
  for (const auto& [name, text] : tropical) {
    const std::string t = text;
    auto make = [t] {
      Bindings b;
      b.arrays["A"] = NDArray::zeros(DType::I16, {8, 8});
      b.arrays["B"] = NDArray::zeros(DType::I16, {8, 8});
      return prepare(Source{"packed.mmlt", t}, std::move(b))->plan;
    };
    for (const char* tile : {"128x256x16/8x16", "128x128x8/8x8", "64x64x8/4x4", "32x32x8/4x2", "128x128x16/16x8"})
      add_plan(cases, "packed16", name, make, parse_tile(tile), packed);
  }
  // Distinct lists on the tiles of their compile checks.
  for (const auto& [name, q] : tp::distinct_queries()) {
    const tp::DistinctQuery dq = q;
    for (const char* tile :
         {"128x128x8/8x8", "32x32x8/4x4", "64x32x4/4x2", "16x64x16/1x4", "128x256x8/8x16", "32x16x32/2x2"})
      add_plan(
          cases, "distinct", name, [dq] { return tp::distinct_query(dq); }, parse_tile(tile));
  }
  // The stage kernels: segment sum and bit pack per element type, top/bottom selection per key
  // type, direction and grouping.
  for (DType t : {DType::Bool, DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F16, DType::BF16,
                  DType::F32, DType::F64}) {
    const std::string n(dtype_name(t));
    cases.push_back({"stages/segment_sum." + n + ".cu", [t] { return segment_sum_source(t); }});
    if (!is_float(t)) cases.push_back({"stages/bit_pack." + n + ".cu", [t] { return bit_pack_source(t); }});
  }
  cases.push_back({"stages/k_major_copy.cu", [] { return k_major_copy_source(4); }});
  cases.push_back({"stages/k_major_copy_16bit.cu", [] { return k_major_copy_source(2); }});
  for (DType k : {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool})
    for (PerGroup g : {PerGroup::None, PerGroup::Row, PerGroup::Col})
      for (bool top : {true, false}) {
        const std::string n = std::string(dtype_name(k)) + (top ? ".top" : ".bottom") +
                              (g == PerGroup::Row   ? ".per_i"
                               : g == PerGroup::Col ? ".per_j"
                                                    : "");
        cases.push_back({"stages/select." + n + ".cu", [k, top, g] { return select_source(k, top, g); }});
      }
}

// ---- comparison -----------------------------------------------------------------------------

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// A unified diff (3 lines of context) of want -> got, at most `max_lines` lines.
std::string unified_diff(const std::string& want, const std::string& got, size_t max_lines = 80) {
  const std::vector<std::string> a = lines_of(want), b = lines_of(got);
  // Longest common subsequence table, from the ends.
  std::vector<std::vector<int>> lcs(a.size() + 1, std::vector<int>(b.size() + 1, 0));
  for (size_t i = a.size(); i-- > 0;)
    for (size_t j = b.size(); j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Op {
    char kind;
    std::string text;
  };
  std::vector<Op> ops;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    if (i < a.size() && j < b.size() && a[i] == b[j])
      ops.push_back({' ', a[i++]}), ++j;
    else if (i < a.size() && (j == b.size() || lcs[i + 1][j] >= lcs[i][j + 1]))
      ops.push_back({'-', a[i++]});
    else
      ops.push_back({'+', b[j++]});
  }
  std::string out;
  size_t shown = 0, last = 0;
  bool any = false;
  for (size_t k = 0; k < ops.size() && shown < max_lines; ++k) {
    if (ops[k].kind == ' ') continue;
    const size_t from = k >= 3 ? k - 3 : 0;
    if (any && from > last) out += "...\n";
    for (size_t c = std::max(from, any ? last : 0); c < k; ++c, ++shown) out += " " + ops[c].text + "\n";
    size_t e = k;
    while (e < ops.size() && ops[e].kind != ' ' && shown < max_lines)
      out += std::string(1, ops[e].kind) + ops[e].text + "\n", ++e, ++shown;
    size_t ctx = e;
    for (; ctx < ops.size() && ctx < e + 3 && ops[ctx].kind == ' '; ++ctx, ++shown) out += " " + ops[ctx].text + "\n";
    last = ctx;
    k = ctx - 1;
    any = true;
  }
  if (shown >= max_lines) out += "... (diff truncated)\n";
  return out;
}

std::vector<GoldenCase> all_cases() {
  std::vector<GoldenCase> cases;
  add_query_cases(cases);
  add_variant_cases(cases);
  return cases;
}

bool env_set(const char* name) {
  const char* u = std::getenv(name);
  return u && *u && std::string(u) != "0";
}

bool updating() { return env_set("GAMUT_UPDATE_GOLDEN"); }

// Why the update mode may not run here ("" where it may): under CI the files are what is checked,
// so rewriting them would make the check pass by construction.
std::string update_refused() {
  if (!updating()) return "";
  for (const char* ci : {"CI", "GITHUB_ACTIONS"})
    if (env_set(ci))
      return std::string("GAMUT_UPDATE_GOLDEN is set under CI (") + ci +
             " is set): refused; regenerate the golden files on a development machine and commit them";
  return "";
}

// Every .cu file under tests/golden, relative to it, sorted.
std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(kGoldenDir))
    if (e.is_regular_file() && e.path().extension() == ".cu")
      out.push_back(fs::relative(e.path(), kGoldenDir).generic_string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

// Every golden file matches what the generator makes now, and no file is left that nothing
// makes. With GAMUT_UPDATE_GOLDEN=1 the files are rewritten instead (and stale ones removed).
TEST(Golden, GeneratedKernelsMatch) {
  const std::string refused = update_refused();
  ASSERT_TRUE(refused.empty()) << refused;
  const std::vector<GoldenCase> cases = all_cases();
  std::set<std::string> made;
  int mismatches = 0;
  for (const GoldenCase& c : cases) {
    SCOPED_TRACE(c.path);
    ASSERT_TRUE(made.insert(c.path).second) << "two cases write " << c.path;
    const std::string got = c.make();
    // Deterministic: the text is a cache key, and golden files must not depend on the run.
    ASSERT_EQ(got, c.make());
    const fs::path file = kGoldenDir / c.path;
    if (updating()) {
      fs::create_directories(file.parent_path());
      if (!fs::exists(file) || read_text(file) != got) std::ofstream(file, std::ios::binary) << got;
      continue;
    }
    if (!fs::exists(file)) {
      ADD_FAILURE() << "missing golden file tests/golden/" << c.path;
      ++mismatches;
      continue;
    }
    const std::string want = read_text(file);
    if (want != got) {
      ADD_FAILURE() << "tests/golden/" << c.path << " differs from the generated source (- golden, + now):\n"
                    << unified_diff(want, got);
      ++mismatches;
    }
  }
  // Stale files: nothing generates them any more.
  for (const auto& e : fs::recursive_directory_iterator(kGoldenDir)) {
    if (!e.is_regular_file() || e.path().extension() != ".cu") continue;
    const std::string rel = fs::relative(e.path(), kGoldenDir).generic_string();
    if (made.count(rel)) continue;
    if (updating())
      fs::remove(e.path());
    else
      ADD_FAILURE() << "stale golden file tests/golden/" << rel << ": no case generates it";
  }
  if (mismatches > 0)
    ADD_FAILURE() << mismatches << " golden kernel(s) differ; if the change is intended, regenerate them with\n"
                  << "  GAMUT_UPDATE_GOLDEN=1 build/tests/gamut_tests --gtest_filter='Golden.*'\n"
                  << "and commit the diff of tests/golden/ with the generator change.";
  EXPECT_GT(cases.size(), 100u);
}

// GAMUT_UPDATE_GOLDEN=1 is refused where CI or GITHUB_ACTIONS is set (and allowed elsewhere).
TEST(Golden, UpdateModeRefusedUnderCI) {
  struct Saved {
    std::string name;
    bool had;
    std::string value;
  };
  std::vector<Saved> saved;
  for (const char* n : {"GAMUT_UPDATE_GOLDEN", "CI", "GITHUB_ACTIONS"}) {
    const char* v = std::getenv(n);
    saved.push_back({n, v != nullptr, v ? v : ""});
    ::unsetenv(n);
  }
  EXPECT_EQ(update_refused(), "");
  ::setenv("GAMUT_UPDATE_GOLDEN", "1", 1);
  EXPECT_EQ(update_refused(), "");  // a development machine: allowed
  ::setenv("CI", "true", 1);
  EXPECT_NE(update_refused().find("refused"), std::string::npos);
  ::unsetenv("CI");
  ::setenv("GITHUB_ACTIONS", "true", 1);
  EXPECT_NE(update_refused().find("GITHUB_ACTIONS"), std::string::npos);
  ::setenv("GAMUT_UPDATE_GOLDEN", "0", 1);
  EXPECT_EQ(update_refused(), "");  // not updating
  for (const Saved& s : saved) {
    if (s.had)
      ::setenv(s.name.c_str(), s.value.c_str(), 1);
    else
      ::unsetenv(s.name.c_str());
  }
}

// Every golden kernel, the stage kernels included, compiles with NVRTC for sm_90a: the files are
// what GeneratedKernelsMatch holds the generator to, so this compiles everything it generates for
// the reference queries and the code variants. No GPU needed. Largest files first, on every core
// (GAMUT_GOLDEN_NVRTC_THREADS sets how many threads).
TEST(Golden, EveryKernelCompilesForSm90a) {
#if GAMUT_HAVE_CUDA
  const std::vector<std::string> files = golden_files();
  ASSERT_GT(files.size(), 200u);
  // Identical files (a variant at the tile its plan chooses anyway) are compiled once.
  std::map<std::string, std::vector<std::string>> by_source;
  for (const std::string& f : files) by_source[read_text(kGoldenDir / f)].push_back(f);
  struct Job {
    const std::string* source;
    const std::vector<std::string>* files;
    std::string error;
    bool ok = false;
    double ms = 0;
  };
  std::vector<Job> jobs;
  for (const auto& [src, fs_] : by_source) jobs.push_back({&src, &fs_});
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const Job& a, const Job& b) { return a.source->size() > b.source->size(); });
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (const char* t = std::getenv("GAMUT_GOLDEN_NVRTC_THREADS"); t && std::atoi(t) > 0)
    threads = unsigned(std::atoi(t));
  threads = std::min<unsigned>(threads, unsigned(jobs.size()));
  std::atomic<size_t> next{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto work = [&] {
    for (size_t n; (n = next++) < jobs.size();) {
      Job& j = jobs[n];
      const auto s = std::chrono::steady_clock::now();
      try {
        cuda::CompileOptions o;
        o.arch = "sm_90a";
        std::string log;
        j.ok = !cuda::nvrtc_compile(*j.source, o, &log).empty();
        if (!j.ok) j.error = "NVRTC returned no binary";
      } catch (const std::exception& e) {
        j.error = e.what();
      }
      j.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  size_t compiled = 0;
  for (const Job& j : jobs) {
    if (j.ok) compiled += j.files->size();
    for (const std::string& f : *j.files)
      if (!j.ok) ADD_FAILURE() << "tests/golden/" << f << " does not compile for sm_90a:\n" << j.error.substr(0, 2000);
  }
  std::vector<const Job*> slow;
  for (const Job& j : jobs) slow.push_back(&j);
  std::sort(slow.begin(), slow.end(), [](const Job* a, const Job* b) { return a->ms > b->ms; });
  std::printf(
      "[ golden-nvrtc ] %zu of %zu golden kernels (%zu distinct sources) compiled for sm_90a in %.1f s on %u threads;"
      " slowest:",
      compiled, files.size(), jobs.size(), secs, threads);
  for (size_t k = 0; k < std::min<size_t>(3, slow.size()); ++k)
    std::printf(" %s %.1f s", slow[k]->files->front().c_str(), slow[k]->ms / 1e3);
  std::printf("\n");
  EXPECT_EQ(compiled, files.size());
#else
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#endif
}

// The diff the test prints is a readable unified diff.
TEST(Golden, DiffIsReadable) {
  const std::string d = unified_diff("a\nb\nc\nd\ne\nf\ng\nh\n", "a\nb\nc\nD\ne\nf\ng\nh\n");
  EXPECT_EQ(d, " a\n b\n c\n-d\n+D\n e\n f\n g\n");
  EXPECT_EQ(unified_diff("x\n", "x\n"), "");
  EXPECT_EQ(unified_diff("", "y\n"), "+y\n");
}

// `explain --source` shows what runs: a rewritten program's stage kernels in order (not the
// kernel of the query as written, which does not run), the selection after a top/bottom list,
// and the main kernel with the tile run_gpu picks for the bound sizes.
TEST(ExplainSource, ShowsTheKernelsThatRun) {
  QuerySpec q2;
  for (const QuerySpec& q : query_specs())
    if (q.name == "q2_zip_aggregate") q2 = q;
  ASSERT_FALSE(q2.name.empty());
  auto p = prepare_spec(q2);
  ASSERT_TRUE(p->program.has_value());
  std::vector<KernelSource> ks = kernels_of(*p, false);
  ASSERT_EQ(ks.size(), 3u);
  EXPECT_EQ(ks[0].name, "stage1");
  EXPECT_NE(ks[0].title.find("segment sum kernel"), std::string::npos) << ks[0].title;
  EXPECT_NE(ks[0].source.find("segment_sum_tiled"), std::string::npos);
  EXPECT_EQ(ks[2].name, "stage3-main");
  EXPECT_NE(ks[2].source.find("[push-down: small product]"), std::string::npos);
  // The stage product is G x H (16 x 16): the smallest tile, not the one the 2048 x 2048 query would get.
  EXPECT_NE(ks[2].title.find("tile 32x32x8/4x4"), std::string::npos) << ks[2].title;

  // Top/bottom: the kernel, then the selection of its list.
  Bindings b;
  b.arrays["Q"] = NDArray::zeros(DType::F32, {4096, 16});
  b.arrays["X"] = NDArray::zeros(DType::F32, {4096, 16});
  const std::string knn = read_text(fs::path(GAMUT_SOURCE_DIR) / "examples/knn.mmlt");
  auto big = prepare(Source{"knn.mmlt", knn}, Bindings(b));
  ks = kernels_of(*big, false);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[1].name, "select-Nearest");
  // The tile is run's for the bound sizes: a large problem and a small one get different tiles.
  const TileConfig large = choose_kernel(big->instance, kH100Sms, kH100Smem).tile;
  EXPECT_NE(ks[0].title.find("tile " + large.str()), std::string::npos) << ks[0].title;
  b.arrays["Q"] = NDArray::zeros(DType::F32, {64, 16});
  b.arrays["X"] = NDArray::zeros(DType::F32, {64, 16});
  auto small = prepare(Source{"knn.mmlt", knn}, std::move(b));
  const TileConfig tiny = choose_kernel(small->instance, kH100Sms, kH100Smem).tile;
  EXPECT_NE(tiny.str(), large.str());
  EXPECT_NE(kernels_of(*small, false)[0].title.find("tile " + tiny.str()), std::string::npos);
  // --tile forces the tile.
  EXPECT_NE(kernel_sources(*small, kH100Sms, kH100Smem, "64x64x8/4x4")[0].title.find("tile 64x64x8/4x4"),
            std::string::npos);
}
