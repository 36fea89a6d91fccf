// The dense outputs' starting values (spec section 6): the identity of each output's store
// operator, and which projections need none because the kernel writes every element.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "bind/instance.h"
#include "plan/plan.h"

namespace gamut::cuda {

// One element of the identity of `op` in output type t, as stored.
std::vector<std::byte> identity_element(StoreOp op, CType t);
// `elements` identities of `op` into device memory at buf, in stream order.
void fill_identity(void* buf, StoreOp op, CType t, int64_t elements);
// A projection that the kernel stores at every element of its shape needs no identity fill
// first (one launch less per call).
bool written_everywhere(const Instance& inst, size_t d);

}  // namespace gamut::cuda
