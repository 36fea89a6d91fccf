// One protocol for every output kind, in fixed steps. A kind lives in its own folder under
// src/cuda/outputs/ (dense/: project and aggregate outputs; list/: lists, plain, top / bottom
// and distinct), split by role: codegen/ (the generator's part, built without CUDA), device/
// (the headers its kernels include, embedded for NVRTC) and host/ (its memory in a GPU run).
//
//   generator (OutputKind, codegen/)          host (OutputBuffers, host/)
//   lay out   args(): its argument words      bind            its words into the argument
//             smem(): its shared memory       before_launch   starting values, in stream order
//   emit      operators(): the hooks of       after_launch    work queued behind the kernel
//             output_operator.h (per pair,    grow_if_overflowed  room for every row, launch again
//             after the loop)                 finish_on_device, collect   the results
//
// Each kind owns its argument words, its shared storage and its callbacks; the kernel generator
// (kernel_args.cpp, layout.cpp, epilogue.cpp) and run_gpu (engine/gpu_engine.cpp) only call
// the steps of every kind, in output_kinds() order. No CUDA headers: both halves are declared
// here for the codegen and engine parts alike.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/kernel_args.h"

namespace gamut::cuda {

struct TileConfig;

namespace cg {
struct SmemPlan;
struct KernelContext;
class Names;
class OutputOperator;

// The generator's side of a kind.
class OutputKind {
 public:
  virtual ~OutputKind() = default;
  // Lay out its argument words, in output order, after the ones laid out before.
  virtual void args(ArgLayout& L, const Plan& plan, const Names& names) const = 0;
  // Lay out its shared memory in the outputs' space from byte `off` (the earlier kinds'
  // regions end there); returns where its own end.
  virtual size_t smem(const Plan& plan, const TileConfig& tile, size_t off, SmemPlan& s) const = 0;
  // Emit: its output operators, appended in the order the epilogue calls them.
  virtual void operators(KernelContext& ctx, std::vector<std::unique_ptr<OutputOperator>>& out) const = 0;
};

// The kinds in output order: dense outputs (outputs/dense/codegen/dense.cpp), lists
// (outputs/list/codegen/lists.cpp).
const OutputKind& dense_kind();
const OutputKind& list_kind();
inline std::vector<const OutputKind*> output_kinds() { return {&dense_kind(), &list_kind()}; }

}  // namespace cg

// The host side of a kind in one GPU run (outputs/dense/host/, outputs/list/host/), taken by
// run_gpu through its steps: bind and before_launch before every launch, after_launch right
// behind it, grow_if_overflowed once it has finished (any true: launch again), then, after the
// last launch, finish_on_device (also inside each timed benchmark repetition) and collect.
class OutputBuffers {
 public:
  virtual ~OutputBuffers() = default;
  // Its words (pointers, capacities, strides) into the kernel's argument.
  virtual void bind(const ArgLayout& layout, std::vector<uint64_t>& words) const = 0;
  // Starting values (identities, empty lists), in stream order before the launch.
  virtual void before_launch() = 0;
  // Work on the kernel's results queued behind it, before anything waits.
  virtual void after_launch() {}
  // After the launch has finished: true when an output had more than its room (it has room
  // for all of it now; the kernel runs again).
  virtual bool grow_if_overflowed() { return false; }
  // What is left to do on the device after the last launch (timed in benchmark repetitions).
  virtual void finish_on_device() {}
  // The results: its part of `res`.
  virtual void collect(Results& res) = 0;
};

}  // namespace gamut::cuda
