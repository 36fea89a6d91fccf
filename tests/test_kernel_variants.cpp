// The kernel variants `gamut tune` searches (cuda/codegen/kernel_variants.h) and the tuned table
// the kernel choice reads (cuda/codegen/tuned_table.h). No GPU needed: the search space of one
// small query per family, the table's text both ways, foreign and corrupt tables, and
// choose_kernel_spec with and without a table. (KernelVariantsNvrtc compiles every variant.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "cuda/codegen/kernel_variants.h"
#include "cuda/codegen/tuned_table.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#include "nvrtc_check.h"

using namespace gamut;
using namespace gamut::cuda;

namespace {

std::string example(const std::string& name) {
  return read_query_file(std::string(GAMUT_SOURCE_DIR) + "/examples/" + name).text;
}

struct Case {
  std::string name, text;
  std::vector<std::pair<std::string, NDArray>> arrays;
  F32Math f32 = F32Math::Ieee;
  std::string family;  // kernel_family
  bool wgmma = false;  // its variants are TMA-fed wgmma ones
};

// One small query per family (and the tensor-core maths of the products and lists).
std::vector<Case> cases() {
  const NDArray a = NDArray::zeros(DType::F32, {1024, 64}), b = NDArray::zeros(DType::F32, {64, 1024});
  const NDArray a16 = NDArray::zeros(DType::BF16, {1024, 64}), b16 = NDArray::zeros(DType::BF16, {64, 1024});
  const NDArray ai = NDArray::zeros(DType::I32, {1024, 64}), bi = NDArray::zeros(DType::I32, {64, 1024});
  const NDArray zip = NDArray::zeros(DType::I32, {1024});
  const NDArray da = NDArray::zeros(DType::F32, {4, 512, 64}), db = NDArray::zeros(DType::F32, {4, 64, 512});
  const NDArray ba = NDArray::zeros(DType::BF16, {4, 512, 64}), bb = NDArray::zeros(DType::BF16, {4, 64, 512});
  const std::string bmm =
      "batch (b) where (i, j) { a = 0; reduce (k) { a += A[b, i, k] * B[b, k, j]; } C[b, i, j] = a; }";
  return {
      {"sgemm", example("sgemm.mmlt"), {{"A", a}, {"B", b}}, F32Math::Ieee, "product.f32", false},
      {"sgemm tf32", example("sgemm.mmlt"), {{"A", a}, {"B", b}}, F32Math::Tf32, "product.tf32", true},
      {"product bf16", example("sgemm.mmlt"), {{"A", a16}, {"B", b16}}, F32Math::Ieee, "product.bf16", true},
      {"q3 bf16",
       example("q3_count_pairs.mmlt"),
       {{"P", a16}, {"R", b16}, {"Pzip", zip}, {"Rzip", zip}},
       F32Math::Ieee,
       "aggregate.bf16",
       true},
      {"q5 bf16", example("q5_select.mmlt"), {{"P", a16}, {"R", b16}}, F32Math::Ieee, "list.bf16", true},
      {"q7 bf16", example("q7_top128.mmlt"), {{"P", a16}, {"R", b16}}, F32Math::Ieee, "top.bf16", true},
      {"knn",
       example("knn.mmlt"),
       {{"Q", a}, {"X", NDArray::zeros(DType::F32, {1024, 64})}},
       F32Math::Ieee,
       "top.simt-f32",
       false},
      {"maxplus", example("maxplus.mmlt"), {{"A", ai}, {"B", bi}}, F32Math::Ieee, "product.simt-i32", false},
      {"minplus batched",
       example("minplus_batched.mmlt"),
       {{"D", da}, {"E", db}},
       F32Math::Ieee,
       "batched.product.simt-f32",
       false},
      {"product batched bf16", bmm, {{"A", ba}, {"B", bb}}, F32Math::Ieee, "batched.product.bf16", true},
  };
}

std::unique_ptr<Prepared> prepared(const Case& c) {
  Bindings bindings;
  for (const auto& [name, array] : c.arrays) bindings.arrays[name] = array;
  if (c.text.find("thres") != std::string::npos) bindings.scalars["thres"] = "16";
  // (No bound rewrites: the kernel of the query as written, which tune searches.)
  return prepare(Source{c.name + ".mmlt", c.text}, std::move(bindings), false);
}

KernelRequest request_of(const Case& c) {
  KernelRequest r;
  r.f32_math = c.f32;
  return r;
}

}  // namespace

TEST(KernelVariants, TextRoundTripsAndMalformedTextIsRefused) {
  for (const std::string t : {"simt 128x128x8/8x8", "wgmma 64x128 s3 b2", "wgmma 128x256 s4 b1 one-tile",
                              "wgmma 128x128 s4 b1 persistent no-epilogue-wg", "wgmma 64x128 s4 b1 epilogue-wg",
                              "wgmma 64x256 s4 b1 pingpong"}) {
    const std::optional<KernelVariant> v = parse_kernel_variant(t);
    ASSERT_TRUE(v) << t;
    EXPECT_EQ(v->str(), t);
  }
  for (const std::string t : {"", "simt", "simt 100x128x8", "wgmma 128x128", "wgmma 128x128 3 b2", "wgmma 128 s3 b1",
                              "wgmma 128x128 s3 b1 fast", "cuda 128x128 s3 b1", "simt 128x128x8/8x8 more"}) {
    std::string why;
    EXPECT_FALSE(parse_kernel_variant(t, &why)) << t;
    EXPECT_NE(why.find("kernel variant"), std::string::npos) << why;
  }
}

// Every listed variant is accepted (apply_variant), generates a distinct kernel, and the first
// is the heuristics' own; families are as named.
TEST(KernelVariants, SearchSpaceOfEachFamilyIsValid) {
  const KernelTarget target;  // an H100
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const auto p = prepared(c);
    const Instance& inst = p->instance;
    const KernelRequest req = request_of(c);
    const KernelSpec h = choose_kernel_spec(inst, target, req);
    EXPECT_EQ(h.family, c.family);
    EXPECT_EQ(h.choice, "heuristic");
    const std::vector<KernelVariant> vs = kernel_variants(inst, target, req);
    ASSERT_GE(vs.size(), 3u);
    std::cout << "[ variants ] " << c.name << " (" << h.family << "): " << vs.size() << ", first " << vs[0].str()
              << "\n";
    EXPECT_EQ(vs[0].str(), variant_of(h).str());
    std::set<std::string> sources, labels;
    for (const KernelVariant& v : vs) {
      SCOPED_TRACE(v.str());
      EXPECT_EQ(v.simt, !c.wgmma);
      KernelRequest forced = req;
      forced.variant = v;
      const KernelSpec k = choose_kernel_spec(inst, target, forced);
      EXPECT_EQ(k.choice, "forced");
      EXPECT_TRUE(labels.insert(k.label).second) << k.label;
      EXPECT_TRUE(sources.insert(generate_source(*inst.plan, k.tile, k.options)).second);
      if (c.wgmma) EXPECT_EQ(k.mainloop, "wgmma+tma");
    }
    // The heuristics' variant forced is the heuristics' kernel.
    KernelRequest first = req;
    first.variant = vs[0];
    EXPECT_EQ(choose_kernel_spec(inst, target, first).label, h.label);
  }
}

// Variants that cannot run are refused with a reason, never generated.
TEST(KernelVariants, InvalidVariantsAreRefused) {
  const KernelTarget target;
  const std::vector<Case> cs = cases();
  const auto simt = prepared(cs[0]), bf16 = prepared(cs[2]);
  auto refused = [&](const Case& c, const Instance& inst, const std::string& text, const std::string& reason) {
    KernelRequest r = request_of(c);
    r.variant = parse_kernel_variant(text);
    ASSERT_TRUE(r.variant) << text;
    try {
      choose_kernel_spec(inst, target, r);
      ADD_FAILURE() << text << " was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::Usage);
      EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
    }
  };
  refused(cs[0], simt->instance, "wgmma 128x128 s4 b1", "does not run on the TMA-fed wgmma mainloop");
  refused(cs[2], bf16->instance, "simt 128x128x8/8x8", "runs on tensor cores");
  refused(cs[2], bf16->instance, "wgmma 128x256 s4 b2", "shared memory");
  refused(cs[2], bf16->instance, "wgmma 128x128 s3 b2 persistent", "one block per SM");
  refused(cs[2], bf16->instance, "wgmma 128x128 s3 b2", "too few registers");  // (ptxas C7602)
  refused(cs[2], bf16->instance, "wgmma 96x128 s4 b1", "BM");
  refused(cs[2], bf16->instance, "wgmma 128x128 s9 b1", "stages");
  refused(cs[2], bf16->instance, "wgmma 128x128 s4 b1 epilogue-wg", "resident thresholds");
  // Ping-pong groups: plain selects only, on 64-row tiles.
  refused(cs[2], bf16->instance, "wgmma 64x256 s4 b1 pingpong", "ping-pong takes plain selects");
  const auto q5 = prepared(cs[4]);
  ASSERT_EQ(cs[4].name, "q5 bf16");
  refused(cs[4], q5->instance, "wgmma 128x128 s4 b1 pingpong", "64-row tiles");
}

// NVRTC accepts every variant's kernel for sm_90a, for one query per family of `gamut tune`
// (and the tf32 product, whose k-slices differ): some 60 compiles, about a minute of CPU. It
// found that two blocks of 128-row TMA-fed tiles do not compile (ptxas C7602).
TEST(KernelVariantsNvrtc, EveryVariantCompilesForSm90a) {
#if GAMUT_HAVE_CUDA
  const KernelTarget target;
  for (const Case& c : cases()) {
    if (c.name != "sgemm" && c.name != "sgemm tf32" && c.name != "product bf16" && c.name != "q7 bf16" &&
        c.name != "q5 bf16" && c.name != "maxplus" && c.name != "minplus batched")
      continue;
    SCOPED_TRACE(c.name);
    const auto p = prepared(c);
    for (const KernelVariant& v : kernel_variants(p->instance, target, request_of(c))) {
      SCOPED_TRACE(v.str());
      KernelRequest r = request_of(c);
      r.variant = v;
      const KernelSpec k = choose_kernel_spec(p->instance, target, r);
      const std::string log = testnvrtc::compile(generate_source(*p->instance.plan, k.tile, k.options), "sm_90a");
      EXPECT_EQ(log.find("error"), std::string::npos) << log;
    }
  }
#else
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#endif
}

namespace {

TunedTable sample_table() {
  TunedTable t;
  t.device = TunedDevice{"NVIDIA H100 80GB HBM3", 132, 12090, "0.1.0", kCodegenSchema};
  t.entries.push_back(
      {"product.bf16", "product-bf16", 1024, 1024, 64, 1, "wgmma 64x128 s3 b2", 0.5, "wgmma 128x256 s4 b1", 0.6});
  t.entries.push_back({"product.f32", "sgemm", 1024, 1024, 64, 1, "simt 64x64x8/4x4", 1.5, "simt 128x64x8/8x4", 1.7});
  return t;
}

std::string temp_dir(const std::string& tag) {
  const std::string d =
      (std::filesystem::temp_directory_path() / ("gamut-tuned-" + tag + "-" + std::to_string(::getpid()))).string();
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d + "/tuned");
  return d;
}

}  // namespace

TEST(TunedTable, TextRoundTrips) {
  const TunedTable t = sample_table();
  const std::string text = tuned_table_text(t, R"([{"family": "products", "results": []}])");
  std::string why;
  const std::optional<TunedTable> back = parse_tuned_table(text, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_TRUE(back->device == t.device);
  ASSERT_EQ(back->entries.size(), 2u);
  EXPECT_EQ(back->entries[0].variant, "wgmma 64x128 s3 b2");
  EXPECT_EQ(back->entries[1].family, "product.f32");
  EXPECT_EQ(back->entries[1].k, 64);
  EXPECT_DOUBLE_EQ(back->entries[0].heuristic_ms, 0.6);
  EXPECT_EQ(tuned_table_text(*back, R"([{"family": "products", "results": []}])"), text);
}

TEST(TunedTable, LookupTakesTheNearestSizeOfTheFamilyWithinItsReach) {
  TunedTable t = sample_table();
  t.put({"product.bf16", "product-bf16", 16384, 16384, 1024, 1, "wgmma 128x128 s6 b1", 1, "", 1});
  EXPECT_EQ(t.lookup("product.bf16", 1024, 1024, 64, 1)->variant, "wgmma 64x128 s3 b2");
  EXPECT_EQ(t.lookup("product.bf16", 2048, 2048, 128, 1)->variant, "wgmma 64x128 s3 b2");
  EXPECT_EQ(t.lookup("product.bf16", 8192, 8192, 1024, 1)->variant, "wgmma 128x128 s6 b1");
  EXPECT_EQ(t.lookup("product.bf16", 16384, 4096, 1024, 4)->variant, "wgmma 128x128 s6 b1");  // (the same pairs)
  EXPECT_EQ(t.lookup("product.bf16", 16, 16, 8, 1), nullptr);                                 // too far from both
  EXPECT_EQ(t.lookup("top.bf16", 1024, 1024, 64, 1), nullptr);
  t.put({"product.bf16", "again", 1024, 1024, 64, 1, "wgmma 64x128 s4 b1", 1, "", 1});  // replaces its size's
  EXPECT_EQ(t.entries.size(), 3u);
  EXPECT_EQ(t.lookup("product.bf16", 1024, 1024, 64, 1)->variant, "wgmma 64x128 s4 b1");
}

TEST(TunedTable, CorruptAndForeignTablesAreIgnoredWithOneWarning) {
  const std::string dir = temp_dir("load");
  const TunedTable t = sample_table();
  const std::string path = tuned_table_path(dir, t.device);
  forget_tuned_tables();
  EXPECT_EQ(tuned_table_for(dir, t.device), nullptr);  // none: no warning
  for (const std::string& text :
       {std::string("{not json"), std::string(R"({"format": "gamut-tuned-1"})"), std::string(R"({"format": "other"})"),
        std::string("\x01\x02\xff"),
        std::string(R"({"format": "gamut-tuned-1", "device": {"name": 3}, "entries": []})")}) {
    SCOPED_TRACE(text);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    forget_tuned_tables();
    testing::internal::CaptureStderr();
    EXPECT_EQ(tuned_table_for(dir, t.device), nullptr);
    EXPECT_EQ(tuned_table_for(dir, t.device), nullptr);  // read once: one warning
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.rfind("gamut: warning: ignoring the tuned kernel table " + path, 0), 0u) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  // Another device's (or gamut version's) table under this device's name.
  TunedTable other = t;
  other.device.driver = 12080;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << tuned_table_text(other);
  forget_tuned_tables();
  testing::internal::CaptureStderr();
  EXPECT_EQ(tuned_table_for(dir, t.device), nullptr);
  EXPECT_NE(testing::internal::GetCapturedStderr().find("another device or gamut version"), std::string::npos);
  // A table of another code generator, and one that does not say (tuned before the field existed).
  for (const std::string& codegen : {std::string("gamut-cuda-codegen-2"), std::string()}) {
    other = t;
    other.device.codegen = codegen;
    std::string text = tuned_table_text(other);
    if (codegen.empty()) {
      const size_t at = text.find("\"codegen\"");
      ASSERT_NE(at, std::string::npos);
      text.erase(at, text.find('\n', at) - at + 1);  // the old format: no such line at all
      ASSERT_EQ(text.find("codegen"), std::string::npos) << text;
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    forget_tuned_tables();
    testing::internal::CaptureStderr();
    EXPECT_EQ(tuned_table_for(dir, t.device), nullptr);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("another code generator (" + (codegen.empty() ? std::string("unrecorded") : codegen) + ", now " +
                       std::string(kCodegenSchema) + ")"),
              std::string::npos)
        << err;
  }
  // This device's table.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << tuned_table_text(t);
  forget_tuned_tables();
  const auto loaded = tuned_table_for(dir, t.device);
  ASSERT_NE(loaded, nullptr);
  EXPECT_EQ(loaded->entries.size(), 2u);
  forget_tuned_tables();
  std::filesystem::remove_all(dir);
}

// choose_kernel_spec takes the table's winner for the instance's family at its nearest size,
// and the heuristics without a table, without an entry, with use_tuned off or a forced tile.
TEST(TunedTable, KernelChoiceTakesTheTunedVariantWhereTheTableHasOne) {
  const std::vector<Case> cs = cases();
  const auto bf16 = prepared(cs[2]), f32 = prepared(cs[0]), q7 = prepared(cs[5]);
  KernelTarget target;
  const KernelSpec heuristic = choose_kernel_spec(bf16->instance, target, request_of(cs[2]));
  target.tuned = std::make_shared<const TunedTable>(sample_table());
  const KernelSpec tuned = choose_kernel_spec(bf16->instance, target, request_of(cs[2]));
  EXPECT_EQ(tuned.choice, "tuned");
  EXPECT_EQ(variant_of(tuned).str(), "wgmma 64x128 s3 b2");
  EXPECT_NE(tuned.label, heuristic.label);
  EXPECT_NE(tuned.label.find("64x128x64/2x32/s3/b2"), std::string::npos) << tuned.label;
  EXPECT_NE(generate_source(*bf16->instance.plan, tuned.tile, tuned.options).find("__launch_bounds__(256, 2)"),
            std::string::npos);

  const KernelSpec sgemm = choose_kernel_spec(f32->instance, target, request_of(cs[0]));
  EXPECT_EQ(sgemm.choice, "tuned");
  EXPECT_EQ(sgemm.tile.str(), "64x64x8/4x4");

  EXPECT_EQ(choose_kernel_spec(q7->instance, target, request_of(cs[5])).choice, "heuristic");  // no entry
  KernelRequest off = request_of(cs[2]);
  off.use_tuned = false;
  EXPECT_EQ(choose_kernel_spec(bf16->instance, target, off).label, heuristic.label);
  KernelRequest tile = request_of(cs[0]);
  tile.tile = parse_tile("128x128x8/8x8");
  EXPECT_EQ(choose_kernel_spec(f32->instance, target, tile).choice, "heuristic");
  // A winner that does not apply here (a SIMT tile for a tensor-core kernel) leaves the heuristics'.
  TunedTable odd = sample_table();
  odd.entries[0].variant = "simt 64x64x8/4x4";
  target.tuned = std::make_shared<const TunedTable>(odd);
  EXPECT_EQ(choose_kernel_spec(bf16->instance, target, request_of(cs[2])).label, heuristic.label);
}
