// gamut bit pack
#define SRC_T unsigned char

extern "C" __global__ void __launch_bounds__(256) bit_pack_tiled(
    const SRC_T* __restrict__ src, unsigned* __restrict__ out, long long ld, long long words,
    long long r_begin, long long r_end, long long k_begin, long long k_end, int k_contig) {
  __shared__ unsigned char tile[32][33];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const long long w = blockIdx.x;
  const long long k0 = k_begin + w * 32;
  for (long long r0 = r_begin + (long long)blockIdx.y * 32; r0 < r_end; r0 += (long long)gridDim.y * 32) {
    __syncthreads();  // the previous tile is consumed
    for (int q = 0; q < 4; ++q) {
      const int e = t + 256 * q;
      const int rr = k_contig ? (e >> 5) : (e & 31);
      const int kk = k_contig ? (e & 31) : (e >> 5);
      const long long r = r0 + rr, k = k0 + kk;
      unsigned char bit = 0;
      if (r < r_end && k < k_end) bit = src[k_contig ? r * ld + k : k * ld + r] != 0;
      tile[rr][kk] = bit;
    }
    __syncthreads();
    for (int rr = warp; rr < 32; rr += 8) {
      const unsigned word = __ballot_sync(0xffffffffu, tile[rr][lane] != 0);
      if (lane == 0 && r0 + rr < r_end) out[(r0 + rr) * words + w] = word;
    }
  }
}
