// Finishing steps (docs/language.md section 9, "Finishing steps"): the dense outputs a query's
// `finish` block computes element by element from its other outputs once they are final. One
// place for every engine and path (the library's run on either engine, several GPUs, blocks
// merged elsewhere): on the host, with the CPU engine's own operations, so a finished value is
// what the same expression gives anywhere in a query.
#pragma once
#include <vector>

#include "core/array.h"
#include "plan/plan.h"

namespace gamut {

// Plan::finish's arrays (C order, each of storage_type_of(step.type)), from the run's dense
// outputs (per Plan::dense, on the host) and its bound parameters (per Plan::params, as
// Instance::params holds them). Each index of a step runs over the extent of the output
// dimensions it reads; reads that disagree are a data error naming the step and its place.
std::vector<NDArray> run_finish(const Plan& plan, const std::vector<Scalar>& params,
                                const std::vector<const NDArray*>& dense);

}  // namespace gamut
