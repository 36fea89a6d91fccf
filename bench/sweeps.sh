#!/usr/bin/env bash
# Tile searches for this session's open questions (bench/NOTES.md), one device call.
# Session 3: how much of Q5's and Q7's time is the list tile's mainloop (the product at the
# list tile 128x128x8/8x8 against its own tile), and whether the one-block tile is better now
# that the list kernels no longer spill.
set -u
G=${GAMUT:-build-dev/gamut}
S="python3 bench/tile_sweep.py --gamut $G --repeat 5"
n=16384
T=128x128x8/8x8,128x256x16/8x16,128x128x16/8x8
$S examples/sgemm.mmlt A=${n}x256:f32 B=256x${n}:f32 --tiles $T
$S examples/q5_select.mmlt P=${n}x256:f32 R=256x${n}:f32 --param thres=75.26 --tiles $T
$S examples/q7_top128.mmlt P=${n}x256:f32 R=256x${n}:f32 --tiles $T
