#!/usr/bin/env bash
# Tile searches for this session's open questions (bench/NOTES.md), one device call.
# Session 3: Q5 / Q7 at the one-block tile 128x256x16/8x16 once their pass 2 is a loop over
# the marked pairs (list_rows_compact), against the list tile 128x128x8/8x8 and the product.
set -u
G=${GAMUT:-build-dev/gamut}
S="python3 bench/tile_sweep.py --gamut $G --repeat 5"
n=16384
T=128x128x8/8x8,128x256x16/8x16,128x256x8/8x16
$S examples/sgemm.mmlt A=${n}x256:f32 B=256x${n}:f32 --tiles 128x128x8/8x8,128x256x16/8x16
$S examples/q5_select.mmlt P=${n}x256:f32 R=256x${n}:f32 --param thres=75.26 --tiles $T
$S examples/q7_top128.mmlt P=${n}x256:f32 R=256x${n}:f32 --tiles $T
$S examples/q5_select.mmlt P=${n}x1024:f32 R=1024x${n}:f32 --param thres=278.16 --tiles $T
