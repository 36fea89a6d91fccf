// Computed output indices: the key slots and the run's out-of-range check (computed_index.h).
#include "semantics/computed_index.h"

#include "core/error.h"

namespace gamut {

std::vector<KeySlot> key_slots(const Plan& plan) {
  std::vector<KeySlot> out;
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    int key = 0;
    for (size_t p = 0; p < plan.dense[d].index.size(); ++p)
      if (plan.dense[d].index[p].kind == OutIndex::Key) out.push_back({int(d), int(p), key++});
  }
  return out;
}

int first_key_slot(const Plan& plan, int d) {
  const std::vector<KeySlot> slots = key_slots(plan);
  for (size_t s = 0; s < slots.size(); ++s)
    if (slots[s].output == d) return int(s);
  return -1;
}

void check_key_misses(const Instance& inst, const std::vector<KeyMisses>& misses) {
  const Plan& P = *inst.plan;
  const std::vector<KeySlot> slots = key_slots(P);
  for (size_t s = 0; s < slots.size() && s < misses.size(); ++s) {
    const KeyMisses& m = misses[s];
    if (m.count == 0) continue;
    const DenseOutput& d = P.dense[size_t(slots[s].output)];
    // The shape has the batch dimension first where the output's index does not name it.
    const std::vector<int64_t>& shape = inst.dense_shapes[size_t(slots[s].output)];
    const size_t lead = shape.size() - d.index.size();
    const int64_t extent = shape[lead + size_t(slots[s].position)];
    int computed = 0;
    for (const OutIndex& x : d.index) computed += x.kind == OutIndex::Key;
    const std::string which = computed > 1 ? "computed index " + std::to_string(slots[s].key + 1) + " of " + d.name
                                           : "the computed index of " + d.name;
    const std::string values = m.lo == m.hi ? std::to_string(m.lo)
                                            : "from " + std::to_string(m.lo) + " to " + std::to_string(m.hi);
    throw_data_error(d.name, std::to_string(m.count) + (m.count == 1 ? " pair" : " pairs") + " gave " + which +
                                 " a value outside [0, " + std::to_string(extent) + ") (" + values +
                                 "); clamp it (clamp(b, 0, " + std::to_string(extent - 1) +
                                 ")) or test it (if (b >= 0 && b < " + std::to_string(extent) + ")) in the query");
  }
}

}  // namespace gamut
