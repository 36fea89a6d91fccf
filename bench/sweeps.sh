#!/usr/bin/env bash
# Tile searches for this session's open questions (bench/NOTES.md), one device call:
# kNN and its NT product (both operands k-contiguous), packed i16 max-plus, fp32 min-plus,
# bit-packed or-and, Q5 / Q7 under the 2-blocks-per-SM tile.
set -u
G=${GAMUT:-build-dev/gamut}
S="python3 bench/tile_sweep.py --gamut $G --repeat 5"
N=16384; K=256
$S examples/knn.mmlt Q=${N}x${K}:f32 X=${N}x${K}:f32 \
  --tiles 128x256x16/8x16,128x128x16/8x8,128x128x8/8x8,64x128x8/4x8,256x128x16/16x8
$S bench/product_nt.mmlt Q=${N}x${K}:f32 X=${N}x${K}:f32 --tiles 128x256x16/8x16,128x128x16/8x8,128x128x8/8x8
$S examples/q5_select.mmlt P=${N}x${K}:f32 R=${K}x${N}:f32 --param thres=75.0 --tiles 128x128x8/8x8,128x128x16/8x8
$S examples/q7_top128.mmlt P=${N}x${K}:f32 R=${K}x${N}:f32 --tiles 128x128x8/8x8,128x128x16/8x8
n=8192
$S examples/maxplus.mmlt A=${n}x${n}:i16:-1000:1000 B=${n}x${n}:i16:-1000:1000 \
  --tiles 128x256x16/8x16,256x128x16/16x8,128x256x16/16x8,256x256x16/16x16,128x128x16/8x8,128x256x32/8x16
$S bench/minplus.mmlt A=${n}x${n}:f32 B=${n}x${n}:f32 \
  --tiles 128x256x16/8x16,128x256x32/8x16,256x128x16/16x8,128x128x8/8x8,128x128x16/8x8
$S bench/orand.mmlt A=${n}x${n}:bool:0.0093 B=${n}x${n}:bool:0.0093 \
  --tiles 128x256x16/8x16,128x128x8/8x8,128x128x16/8x8,256x128x16/16x8
