// The epilogue: after the mainloop, every pair of the accumulator map goes through the output
// statements into the output operators (outputs/output_operator.h), composed here.
#pragma once
#include <memory>

#include "cuda/codegen/context.h"

namespace gamut::cuda::cg {

class Epilogue {
 public:
  virtual ~Epilogue() = default;
  virtual void render(Code& c) = 0;
};

// The operators of ctx's plan (project, aggregate, list), over ctx.map and ctx.coords.
std::unique_ptr<Epilogue> make_epilogue(KernelContext& ctx);

}  // namespace gamut::cuda::cg
