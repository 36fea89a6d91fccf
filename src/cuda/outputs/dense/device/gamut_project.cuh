// Project outputs (C[i, j] = v): runs of consecutive j stored with one vector access. They take
// one accumulator-derived value per (i, j) and know nothing of the mainloop.
#pragma once
#include "gamut_vec.cuh"

namespace gm {

// Project: V consecutive outputs starting at p; ok[e] says which exist. One vector store when
// all exist and `vec` (the run is aligned), else predicated scalar stores.
template <class T, int V>
GM_DEV void store_run(T* p, const T (&v)[V], const bool (&ok)[V], bool vec) {
  bool all = vec;
#pragma unroll
  for (int e = 0; e < V; ++e) all = all && ok[e];
  if (all) {
    vec_st<T, V>(p, v);
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e)
      if (ok[e]) p[e] = v[e];
  }
}

}  // namespace gm
