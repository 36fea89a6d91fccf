// The epilogue: after the mainloop, every pair of the accumulator map goes through the output
// statements into the output operators (outputs/output_operator.h), composed here.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "cuda/codegen/context.h"

namespace gamut::cuda::cg {

class Epilogue {
 public:
  virtual ~Epilogue() = default;
  // The device headers the output operators use.
  virtual std::vector<std::string> headers() const = 0;
  virtual void render(Code& c) = 0;
};

// The operators of ctx's plan (project, aggregate, list), over ctx.map and ctx.coords.
std::unique_ptr<Epilogue> make_epilogue(KernelContext& ctx);

}  // namespace gamut::cuda::cg
