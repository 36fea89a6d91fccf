// A mainloop: the kernel's k loop and the accumulators it leaves, behind the interface the
// kernel generator (kernel.cpp) composes. What the output operators get from it is only its
// accumulator map (accumulator_map.h). The SIMT mainloop (mainloop_simt.cpp) runs the plan's
// inner op on a TM x TN register tile per thread; a tensor-core mainloop implements the same
// interface and hands its own fragment layout as the map.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cuda/codegen/context.h"

namespace gamut::cuda::cg {

class Mainloop {
 public:
  virtual ~Mainloop() = default;
  // The device headers its code uses (the generated source includes only what its parts use).
  virtual std::vector<std::string> headers() const = 0;
  // The block shape the output operators take (`Shape`: BM, BN, THREADS, TM x TN the map's
  // grid, VN), first at namespace scope, with what it is made of.
  virtual void declare_shape(Code& c) = 0;
  // Types at namespace scope, before the kernel (the SIMT mainloop: the Inner functor, Stage).
  virtual void declare(Code& c) = 0;
  // After the kernel's arguments are read: its state, shared memory, the inner op's parameters.
  virtual void prologue(Code& c) = 0;
  // Loaders, the accumulators' initial values, the k loop; afterwards the map is valid.
  virtual void run(Code& c) = 0;
  // After the output operators: a persistent kernel's tile loop ends here.
  virtual void finish(Code&) {}
  // Where the accumulators lie and how to read them (the same before and after run()).
  virtual AccumulatorMap map() const = 0;
  // Blocks per SM the kernel is bounded for (__launch_bounds__), and the kernel's comment on
  // its resources ("estimated registers: 96").
  virtual int min_blocks() const = 0;
  // Attributes after __launch_bounds__ (" __cluster_dims__(2, 1, 1)"), or "".
  virtual std::string attributes() const { return ""; }
  virtual std::string resources() const = 0;
};

// The SIMT mainloop; `packed16` steps on 16-bit lane pairs (CodegenOptions::packed16, throws
// unsupported when the plan or tile has no such form).
std::unique_ptr<Mainloop> make_simt_mainloop(KernelContext& ctx, bool packed16);
// The tensor-core mainloop of `math` (mainloop_tensor_cores.cpp) for a plan whose choose_math is
// that math; the kernel tile is tc_kernel_tile(math). `epilogue_warpgroups`: a resident top /
// bottom kernel's (TcTile::epilogue); `pingpong`: CodegenOptions::pingpong (TcTile::groups).
std::unique_ptr<Mainloop> make_tensor_mainloop(KernelContext& ctx, InnerMath math, bool tma = false,
                                               bool resident_b = false, bool epilogue_warpgroups = false,
                                               bool pingpong = false);

// How one k step of the SIMT mainloop updates the accumulators: every (m, n) through the Inner
// functor, or packed 16-bit tropical steps (packed16.cpp). A strategy of the SIMT mainloop.
class SimtStep {
 public:
  virtual ~SimtStep() = default;
  // Element type of access a's shared buffers (compute type, or as stored for packed columns).
  virtual std::string smem_type(int a) const = 0;
  // How access a (a tile operand) goes global -> shared (internal.h, tile_copy).
  virtual TileCopy copy(int a) const = 0;
  // Extra template arguments of access a's tile loader ("" or ", true": values in both halves).
  virtual std::string loader_flags(int a) const = 0;
  // Stage members after the accumulators, and the body of Stage::step(buf, k, kk).
  virtual void members(Code& c) const = 0;
  virtual void step(Code& c) const = 0;
  // The accumulators' initial values (in the kernel, through `st.`).
  virtual void init(Code& c) const = 0;
  // Accumulator n at fragment (m, n) after the loop.
  virtual std::string value(int n) const = 0;
  // Whether step calls Inner::plain_sums (an integer tropical step, guarded by its operands).
  virtual bool guards_tropical_sums() const { return false; }
};

std::unique_ptr<SimtStep> make_packed16_step(const KernelContext& ctx);

}  // namespace gamut::cuda::cg
