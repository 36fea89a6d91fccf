// gamut._gamut.Blocks (blocks.cpp): blocks of a query for Python task schedulers.
#pragma once
#include <nanobind/nanobind.h>

namespace gamut::py {

void register_blocks(nanobind::module_& m);

}  // namespace gamut::py
