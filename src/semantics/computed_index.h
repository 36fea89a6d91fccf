// Computed output indices (`Hist[b] += 1`, docs/language.md section 9): what both engines
// share so that they agree exactly. Each computed position of each output is a key slot; an
// engine records, per slot, the values that fell outside the position's extent (those pairs
// store nothing), and after the run a slot with any such value makes the run a data error
// that names the output, the count and the values' range: never a partial result.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "bind/instance.h"

namespace gamut {

// The out-of-range values one key slot saw. The GPU keeps the same three words per slot
// (count, lowest, highest: gm::KeyMisses).
struct KeyMisses {
  int64_t count = 0;
  int64_t lo = std::numeric_limits<int64_t>::max();
  int64_t hi = std::numeric_limits<int64_t>::min();
  void add(int64_t key) {
    ++count;
    lo = key < lo ? key : lo;
    hi = key > hi ? key : hi;
  }
  void merge(const KeyMisses& o) {
    count += o.count;
    lo = o.lo < lo ? o.lo : lo;
    hi = o.hi > hi ? o.hi : hi;
  }
};

// One computed position of a dense output: the output, its position in DenseOutput::index,
// and which of its computed positions it is (the Store's columns[key]).
struct KeySlot {
  int output;
  int position;
  int key;
};

// Every computed position of the plan, by output then position: the key slots' order.
std::vector<KeySlot> key_slots(const Plan& plan);
// The first key slot of output d (its slots follow in order), -1 when it has none.
int first_key_slot(const Plan& plan, int d);

// Throws a data error for the first slot that saw an out-of-range value (misses: per key slot).
void check_key_misses(const Instance& inst, const std::vector<KeyMisses>& misses);

}  // namespace gamut
