// Tile coordinates: the strategy for which tile a block runs (context.h, TileCoordinates).
#pragma once
#include <memory>

#include "cuda/codegen/context.h"
#include "cuda/codegen/join_groups.h"

namespace gamut::cuda::cg {

// Plain tiles, or with `grouped_join` the tile table of a key-grouped join (throws
// unsupported when the plan has no such form). cluster 2 (plain tiles): the blocks of a cluster
// run row tiles 2p and 2p + 1 of one column tile (KernelInfo::cluster). `bands`: tiles in band
// order, row tiles fastest (KernelInfo::bands). `resident_top`: column tiles fastest for a list
// per i, row tiles fastest per j (KernelInfo::resident_top: a block's tiles share their groups).
std::unique_ptr<TileCoordinates> make_tile_coordinates(const Plan& plan, const ArgLayout& args, bool grouped_join,
                                                       int cluster = 1, bool bands = false, bool resident_top = false);

}  // namespace gamut::cuda::cg
