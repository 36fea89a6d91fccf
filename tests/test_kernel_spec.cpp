// One kernel choice for `run` and `explain --source` (cuda/codegen/kernel_spec.h): the main
// kernel explain shows, and the label in its title, are those of the KernelSpec run_gpu
// compiles (gpu_kernel_spec), on devices with and without wgmma. No GPU needed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/codegen/choice_key.h"
#include "cuda/codegen/kernel_variants.h"
#include "cuda/codegen/seen_box.h"
#include "cuda/codegen/tuned_table.h"
#include "cuda/gpu_engine.h"
#include "driver/kernel_sources.h"
#include "driver/pipeline.h"

using namespace gamut;
using namespace gamut::cuda;

namespace {

std::string example(const std::string& name) {
  const Source s = read_query_file(std::string(GAMUT_SOURCE_DIR) + "/examples/" + name);
  return s.text;
}

struct Case {
  std::string name, text;
  std::vector<std::pair<std::string, NDArray>> arrays;
  bool rewrites = true;
  GpuRunOptions options;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  const NDArray a = NDArray::zeros(DType::F32, {2048, 64}), b = NDArray::zeros(DType::F32, {64, 2048});
  out.push_back({"sgemm", example("sgemm.mmlt"), {{"A", a}, {"B", b}}});
  Case tf32 = out.back();
  tf32.name = "sgemm tf32";
  tf32.options.f32_math = F32Math::Tf32;
  out.push_back(tf32);
  Case forced = out.front();
  forced.name = "sgemm forced tile";
  forced.options.tile = parse_tile("64x64x8/4x4");
  out.push_back(forced);
  const NDArray a_bf16 = NDArray::zeros(DType::BF16, {2048, 64}), b_bf16 = NDArray::zeros(DType::BF16, {64, 2048});
  out.push_back({"sgemm bf16", example("sgemm.mmlt"), {{"A", a_bf16}, {"B", b_bf16}}});
  const NDArray a16 = NDArray::zeros(DType::I16, {2048, 64}), b16 = NDArray::zeros(DType::I16, {64, 2048});
  out.push_back({"maxplus i16", example("maxplus.mmlt"), {{"A", a16}, {"B", b16}}});
  NDArray zip = NDArray::zeros(DType::I32, {2048});
  out.push_back(
      {"q4 grouped join", example("q4_join_area.mmlt"), {{"P", a}, {"R", b}, {"Pzip", zip}, {"Rzip", zip}}, false});
  Case masked = out.back();
  masked.name = "q4 masked join";
  masked.options.masked_joins = true;
  out.push_back(masked);
  return out;
}

std::unique_ptr<Prepared> prepared(const Case& c) {
  Bindings bindings;
  for (const auto& [name, array] : c.arrays) bindings.arrays[name] = array;
  return prepare(Source{c.name + ".mmlt", c.text}, std::move(bindings), c.rewrites);
}

}  // namespace

TEST(KernelSpec, ExplainShowsTheKernelRunCompiles) {
  const KernelTarget hopper;  // an H100 / H200: wgmma, sm_90a
  KernelTarget ampere;
  ampere.sm_count = 108;
  ampere.smem_per_block = 163 << 10;
  ampere.isa = TensorIsa::MmaSync;
  ampere.arch = "sm_80";
  for (const Case& c : cases()) {
    for (const KernelTarget& target : {hopper, ampere}) {
      SCOPED_TRACE(c.name + " on " + target.arch);
      const auto p = prepared(c);
      ASSERT_FALSE(p->program) << "a case with one main kernel";
      const KernelSpec spec = gpu_kernel_spec(p->instance, c.options, target, seen_boxes(p->instance));
      const std::vector<KernelSource> shown = kernel_sources(*p, target, c.options);
      ASSERT_FALSE(shown.empty());
      EXPECT_EQ(shown[0].title, "// kernel source, tile " + spec.label);
      EXPECT_EQ(shown[0].source, generate_source(p->plan, spec.tile, spec.options));
      EXPECT_EQ(spec.variant, spec.label + " " + target.arch);
      EXPECT_EQ(spec.isa, target.isa);
      if (target.isa != TensorIsa::Wgmma) EXPECT_EQ(spec.mainloop.find("wgmma"), std::string::npos);
    }
  }
}

TEST(KernelSpec, LabelNamesTheVariants) {
  const KernelTarget hopper;
  std::vector<std::string> labels;
  for (const Case& c : cases()) {
    const auto p = prepared(c);
    labels.push_back(gpu_kernel_spec(p->instance, c.options, hopper, seen_boxes(p->instance)).label);
  }
  // sgemm, sgemm tf32, forced tile, sgemm bf16, maxplus i16, grouped join, masked join
  ASSERT_EQ(labels.size(), 7u);
  EXPECT_EQ(labels[0].find(' '), std::string::npos) << labels[0];  // SIMT f32: the tile alone
  EXPECT_NE(labels[1].find(" tf32"), std::string::npos) << labels[1];
  EXPECT_NE(labels[1].find("wgmma"), std::string::npos) << labels[1];
  EXPECT_EQ(labels[2], "64x64x8/4x4");
  EXPECT_NE(labels[3].find(" bf16"), std::string::npos) << labels[3];
  EXPECT_NE(labels[4].find(" packed16"), std::string::npos) << labels[4];
  EXPECT_NE(labels[5].find(" grouped-join"), std::string::npos) << labels[5];
  EXPECT_EQ(labels[6].find(" grouped-join"), std::string::npos) << labels[6];
}

TEST(KernelSpec, TargetOfADevice) {
  const KernelTarget h = kernel_target(132, 227 << 10, 9, 0);
  EXPECT_EQ(h.isa, TensorIsa::Wgmma);
  EXPECT_EQ(h.arch, "sm_90a");
  const KernelTarget a = kernel_target(108, 163 << 10, 8, 0);
  EXPECT_EQ(a.isa, TensorIsa::MmaSync);
  EXPECT_EQ(a.arch, "sm_80");
  EXPECT_EQ(kernel_target(40, 48 << 10, 7, 5).isa, TensorIsa::None);
}

// GpuRunOptions::arch names the NVRTC target of a run (benchmarks): the variant follows it.
TEST(KernelSpec, ArchOverrideIsPartOfTheVariant) {
  const Case c = cases().front();
  const auto p = prepared(c);
  GpuRunOptions o;
  o.arch = "sm_90";
  const KernelSpec spec = gpu_kernel_spec(p->instance, o, KernelTarget{}, {});
  EXPECT_EQ(spec.arch, "sm_90");
  EXPECT_EQ(spec.variant, spec.label + " sm_90");
}

// The kernel memo's key (cuda/codegen/choice_key.h): equal for the same call again, different
// wherever something the choice reads differs (one field at a time).
TEST(KernelSpec, ChoiceKeyChangesWithWhatTheChoiceReads) {
  const std::vector<Case> all = cases();
  const auto p = prepared(all.front());
  const Instance& inst = p->instance;
  const GpuRunOptions o;
  const std::string key = choice_key(inst, o, 0);
  EXPECT_EQ(choice_key(inst, o, 0), key);
  EXPECT_NE(choice_key(inst, o, 1), key) << "another device";
  std::vector<std::string> keys;
  auto changed = [&](auto&& edit) {
    Instance i = inst;
    GpuRunOptions q;
    edit(i, q);
    keys.push_back(choice_key(i, q, 0));
  };
  changed([](Instance& i, GpuRunOptions&) { i.col.end -= 1; });
  changed([](Instance& i, GpuRunOptions&) { i.red.begin += 1; });
  changed([](Instance& i, GpuRunOptions&) { i.batch = 2; });
  NDArray other = NDArray::zeros(DType::BF16, {2048, 64});
  changed([&](Instance& i, GpuRunOptions&) { i.inputs[0] = &other; });
  NDArray shorter = NDArray::zeros(DType::F32, {2048, 32});
  changed([&](Instance& i, GpuRunOptions&) { i.inputs[0] = &shorter; });
  const float device_data[8] = {};
  changed([&](Instance& i, GpuRunOptions&) {
    i.device_inputs.assign(i.inputs.size(), {});
    i.device_inputs[0] = {device_data, {64, 1}};
  });
  changed([&](Instance& i, GpuRunOptions&) {
    i.device_inputs.assign(i.inputs.size(), {});
    i.device_inputs[0] = {device_data, {65, 1}};
  });
  changed([&](Instance& i, GpuRunOptions&) {
    i.device_inputs.assign(i.inputs.size(), {});
    i.device_inputs[0] = {device_data + 1, {64, 1}};  // 4 bytes off: another alignment
  });
  changed([](Instance& i, GpuRunOptions&) { i.params.push_back(Scalar::of_float(CType::F32, 0.5)); });
  changed([](Instance& i, GpuRunOptions&) { i.list_limits.push_back(10); });
  changed([](Instance&, GpuRunOptions& q) { q.f32_math = F32Math::Tf32; });
  changed([](Instance&, GpuRunOptions& q) { q.masked_joins = true; });
  changed([](Instance&, GpuRunOptions& q) { q.use_tuned = false; });
  changed([](Instance&, GpuRunOptions& q) { q.arch = "sm_90"; });
  changed([](Instance&, GpuRunOptions& q) { q.tile = parse_tile("64x64x8/4x4"); });
  changed([](Instance&, GpuRunOptions& q) { q.variant = parse_kernel_variant("wgmma 64x128 s3 b2"); });
  for (size_t a = 0; a < keys.size(); ++a) {
    EXPECT_NE(keys[a], key) << "edit " << a;
    for (size_t b = a + 1; b < keys.size(); ++b) EXPECT_NE(keys[a], keys[b]) << "edits " << a << ", " << b;
  }
  ASSERT_EQ(setenv("GAMUT_EXPERIMENT_PERSISTENT", "1", 1), 0);
  EXPECT_NE(choice_key(inst, o, 0), key) << "an experiment switch";
  unsetenv("GAMUT_EXPERIMENT_PERSISTENT");
  forget_tuned_tables();
  EXPECT_NE(choice_key(inst, o, 0), key) << "the tuned tables read again";
}
