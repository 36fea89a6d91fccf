// The arguments of the stage kernels, shared by the host (which fills them) and the device.
// Every gamut kernel takes one argument, a struct of 64-bit words with named fields: the
// generated main kernel's struct Args is rendered from its layout (src/cuda/codegen/
// kernel_args.h), the stage kernels' are these. Plain C++ (the host includes it as
// "cuda/device/stages/gamut_stage_args.cuh").
#pragma once

namespace gm {

// Segment sum (gamut_segment_sum.cuh): out[g, k] (or out[k, g]) += src[i, k] (or src[k, i]) over
// the rows i with index[i] == g.
struct SegmentSumArgs {
  unsigned long long src;    // source values, storage type
  unsigned long long index;  // int32 group of each row i
  unsigned long long out;    // sums, the wrapping sum type (zeroed by the host)
  long long src_is, src_ks;  // elements between rows i / columns k of src
  long long out_gs, out_ks;  // elements between groups g / columns k of out
  long long i_begin, i_end;  // rows
  long long k_begin, k_end;  // columns
  long long groups;          // g in [0, groups)
  long long copies;          // tiled: per-warp copies of the block's sums in shared memory
  long long chunk_rows;      // tiled: rows per block (grid y)
  long long k_contig;        // 1: src is [i, k] (k contiguous); 0: [k, i]
};

// Bit pack (gamut_bit_pack.cuh): out[r, w] bit b = src[r, k] != 0 (or src[k, r]) for
// k = k_begin + 32 w + b.
struct BitPackArgs {
  unsigned long long src;    // source values, storage type
  unsigned long long out;    // u32 words, rows x words
  long long ld;              // elements between rows of src
  long long words;           // words per row of out
  long long r_begin, r_end;  // rows
  long long k_begin, k_end;  // the packed range
  long long k_contig;        // 1: src is [r, k] (k contiguous); 0: [k, r]
};

// Top/bottom selection (gamut_select.cuh), every kernel of one selection.
struct SelectArgs {
  unsigned long long n;        // candidates
  unsigned long long key;      // key column (storage type)
  unsigned long long b, i, j;  // int32 columns
  unsigned long long thr;      // unsigned[G]: T_g's digits found so far (low digits 0); 0xffffffff: keep all
  unsigned long long below;    // unsigned[G]: candidates below T_g's digits so far; kSelAll: done
  unsigned long long groups;   // G
  unsigned long long limit;    // N
  unsigned long long begin;    // first row (per i) / column (per j) of the range
  unsigned long long extent;   // rows (per i) / columns (per j) of the range
  unsigned long long hist;     // unsigned[G << bits]: the round's histogram (zero between rounds)
  unsigned long long shift;    // the round's digit starts at this bit
  unsigned long long idx;      // unsigned[n]: kept candidate indices
  unsigned long long kept;     // u64 counter of kept candidates
  unsigned long long bits;     // digit width: 1, 2, 4 or 8
};

// A per-row pass over m kept rows (gm_sel_sort_rank: dst[r] = the rank of the key src[r]; idx
// is not read there).
struct GatherArgs {
  unsigned long long dst, src, idx, m;
};

// K-major copy (gamut_k_major_copy.cuh): dst[b, p, k] = src at b * batch_stride + p * p_stride
// + k * k_stride, 4-, 2- or 1-byte elements, for the tensor-core mainloops: f32 operands k-major
// (tf32 wgmma reads them only so), device operands off 16 bytes re-pitched (src/cuda/stages/k_major_copy.h).
struct KMajorCopyArgs {
  unsigned long long src, dst;
  long long p_stride, k_stride, batch_stride;  // elements of src
  long long p_extent, k_extent, batch;
  long long dst_pitch;  // elements between rows p of dst
};

}  // namespace gm
