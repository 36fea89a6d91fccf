// The kernels a bound query runs on the GPU (kernel_sources.h): the same choices execute() and
// run_gpu make, rendered instead of run.
#include "driver/kernel_sources.h"

#include <map>
#include <optional>

#include "cuda/codegen/mainloop_tensor.h"
#include "cuda/codegen/seen_box.h"
#include "cuda/codegen/stage_sources.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"

namespace gamut {

namespace {

// Whether the kernel reads an f32 operand through a k-major copy (encode_operand_maps).
bool k_major_copy(const Instance& inst, const cuda::KernelSpec& k) {
  if (!k.options.tma || !cuda::wgmma_needs_tma(k.math.math)) return false;
  const Plan& P = *inst.plan;
  const auto k_contiguous = [&P](int a, Pattern along_k) { return a < 0 || P.accesses[size_t(a)].pattern == along_k; };
  return !k_contiguous(k.math.row_access, Pattern::RowRed) || !k_contiguous(k.math.col_access, Pattern::ColRed);
}

struct Sources {
  const cuda::KernelTarget& target;
  const cuda::GpuRunOptions& options;

  std::vector<KernelSource> of(const Prepared& p) const { return p.program ? program(p) : of(p.instance); }

  std::vector<KernelSource> of(const Instance& inst) const {
    std::vector<KernelSource> out;
    // (Seen tables from host data, as the engine decides; explain binds no device arrays.)
    const cuda::KernelSpec k = cuda::gpu_kernel_spec(
        inst, options, target,
        options.seen_tables ? cuda::seen_boxes(inst) : std::vector<std::optional<cuda::SeenBox>>{});
    out.push_back({"main", "// kernel source, tile " + k.label, cuda::generate_source(*inst.plan, k.tile, k.options),
                   cuda::kCodegenSchema});
    // tf32 / tf32x3 wgmma reads f32 operands k-major: one that is not is copied before the
    // kernel (cuda/engine/operand_copies.h).
    if (k_major_copy(inst, k))
      out.push_back({"copy-k-major", "// kernel source: k-major copy of an f32 operand, launched before the kernel",
                     cuda::k_major_copy_source(4), cuda::k_major_copy_schema(4)});
    // top/bottom lists: the candidates the kernel appends are selected on the device after it.
    for (const ListOutput& l : inst.plan->lists)
      if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.key != kNoExpr)
        out.push_back(
            {"select-" + l.name, "// kernel source: selection of " + l.name + " after the kernel",
             cuda::select_source(storage_type_of(inst.plan->expr(l.key).type), l.mode == ListMode::Top, l.per),
             cuda::kSelectSchema});
    return out;
  }

  // The stages in order; what one produces is bound, as zeros of its type and extents, to the
  // stages that read it.
  std::vector<KernelSource> program(const Prepared& p) const {
    std::vector<KernelSource> out;
    // On device inputs (execute_program): no bound rewrites of stages, and the stages read the
    // caller's inputs in place: bound as device inputs, never read on the host here either.
    const bool on_device = !p.instance.device_inputs.empty();
    std::map<std::string, Instance::DeviceInput> device;
    for (size_t o = 0; o < p.plan.operands.size(); ++o)
      if (p.instance.on_device(o)) device[p.plan.operands[o].name] = p.instance.device_inputs[o];
    std::map<std::string, NDArray> produced;
    for (size_t s = 0; s < p.program->stages.size(); ++s) {
      const StageQuery& st = p.program->stages[s];
      const std::string tag = "stage" + std::to_string(s + 1);
      const std::string title = "// stage " + std::to_string(s + 1) + " (" + st.name + ")";
      if (st.bitpack) {
        const BitPack& bp = *st.bitpack;
        out.push_back({tag, title + ": bit pack kernel", cuda::bit_pack_source(p.bindings.arrays.at(bp.source).dtype),
                       cuda::kBitPackSchema});
        produced[bp.output] = NDArray::zeros(DType::I32, {bp.rows.end, bp.words()});
        continue;
      }
      if (st.segment) {  // the GPU runs the segment sum kernel, not the stage query
        const SegmentSum& sg = *st.segment;
        out.push_back({tag, title + ": segment sum kernel",
                       cuda::segment_sum_source(p.bindings.arrays.at(sg.source).dtype), cuda::kSegmentSumSchema});
        const int64_t k = sg.k_range.end;
        produced[sg.output] =
            NDArray::zeros(storage_type_of(sg.type),
                           sg.group_rows ? std::vector<int64_t>{sg.groups, k} : std::vector<int64_t>{k, sg.groups});
        continue;
      }
      Bindings b;
      for (const std::string& n : st.inputs) {
        if (auto it = p.bindings.arrays.find(n); it != p.bindings.arrays.end())
          b.arrays[n] = it->second;
        else
          b.scalars[n] = p.bindings.scalars.at(n);
      }
      for (const std::string& n : st.from_stages) b.arrays[n] = produced.at(n);
      for (const auto& [n, d] : st.dims) b.dims[n] = d;
      Source src{p.source.name + " [" + st.name + "]", st.text};
      auto stage = st.list_provenance ? prepare(src, b, stage_plan(st, src, type_env(b)), false)
                                      : prepare(std::move(src), std::move(b), !on_device);
      if (on_device) {
        Instance& si = stage->instance;
        si.device_inputs.resize(stage->plan.operands.size());
        for (size_t o = 0; o < stage->plan.operands.size(); ++o)
          if (auto it = device.find(stage->plan.operands[o].name); it != device.end()) si.device_inputs[o] = it->second;
      }
      for (KernelSource& k : of(*stage))
        out.push_back({tag + "-" + k.name, title + "\n" + k.title, std::move(k.source), std::move(k.schema)});
      for (size_t d = 0; d < stage->plan.dense.size(); ++d)
        produced[stage->plan.dense[d].name] =
            NDArray::zeros(storage_type_of(stage->plan.dense[d].type), stage->instance.dense_shapes[d]);
    }
    return out;
  }
};

}  // namespace

std::vector<KernelSource> kernel_sources(const Prepared& p, const cuda::KernelTarget& target,
                                         const cuda::GpuRunOptions& options) {
  return Sources{target, options}.of(p);
}

std::vector<KernelSource> kernel_sources(const Instance& inst, const cuda::KernelTarget& target,
                                         const cuda::GpuRunOptions& options) {
  return Sources{target, options}.of(inst);
}

std::vector<KernelSource> kernel_sources(const Prepared& p, int sm_count, size_t smem_per_block,
                                         const std::string& tile, bool masked_joins, F32Math f32_math) {
  cuda::KernelTarget target;
  target.sm_count = sm_count;
  target.smem_per_block = smem_per_block;
  cuda::GpuRunOptions options;
  if (!tile.empty()) options.tile = cuda::parse_tile(tile);
  options.masked_joins = masked_joins;
  options.f32_math = f32_math;
  return kernel_sources(p, target, options);
}

cuda::KernelTarget explained_target() {
  if (!cuda::gpu_available(nullptr)) return {};
  return cuda::current_kernel_target();
}

}  // namespace gamut
