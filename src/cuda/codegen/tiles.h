// Tile coordinates: the strategy for which tile a block runs (context.h, TileCoordinates).
#pragma once
#include <memory>

#include "cuda/codegen/context.h"
#include "cuda/codegen/join_groups.h"

namespace gamut::cuda::cg {

// Plain tiles, or with `grouped_join` the tile table of a key-grouped join (throws
// unsupported when the plan has no such form).
std::unique_ptr<TileCoordinates> make_tile_coordinates(const Plan& plan, const ArgLayout& args, bool grouped_join);

}  // namespace gamut::cuda::cg
