#!/usr/bin/env bash
# Tile searches for this session's open questions (bench/NOTES.md), one device call.
# Sweep 3: packed i16 max-plus with the column operand copied by cp.async (8-byte chunks).
set -u
G=${GAMUT:-build-dev/gamut}
S="python3 bench/tile_sweep.py --gamut $G --repeat 5"
n=8192
$S examples/maxplus.mmlt A=${n}x${n}:i16:-1000:1000 B=${n}x${n}:i16:-1000:1000 \
  --tiles 128x256x16/8x16,128x128x16/8x8,128x128x8/8x8,256x128x8/16x8,128x256x8/8x16,256x256x16/16x16
