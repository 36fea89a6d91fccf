// Storage shared between the temporary slots of a module whose values are never live at once: a
// query of thousands of lets (each a slot of kLanes values, per thread) otherwise holds them all.
#include <algorithm>
#include <functional>

#include "cpu/program.h"

namespace gamut::cpu {

namespace {

struct Refs {
  std::vector<int> first, last;  // per slot: positions of its first and last reference, -1: none
  std::vector<bool> def_first;   // per slot: its first reference is a write
  std::vector<int> defs;         // per position: the slot it writes, -1: none

  explicit Refs(size_t slots) : first(slots, -1), last(slots, -1), def_first(slots, false) {}

  void read(int s, int pos) {
    if (s < 0) return;
    if (first[size_t(s)] < 0) first[size_t(s)] = pos;
    last[size_t(s)] = pos;
  }
  void write(int s, int pos) {
    if (s < 0) return;
    if (first[size_t(s)] < 0) {
      first[size_t(s)] = pos;
      def_first[size_t(s)] = true;
    }
    last[size_t(s)] = std::max(last[size_t(s)], pos);
    defs.resize(size_t(pos) + 1, -1);
    defs[size_t(pos)] = s;
  }

  // Steps in the order they run (an If's body after its condition), one position each; a step's
  // reads and its write share its position.
  void walk(const std::vector<Step>& steps, int& pos) {
    for (const Step& s : steps) {
      const int at = pos++;
      switch (s.kind) {
        case StepKind::Op:
          read(s.op.a, at), read(s.op.b, at), read(s.op.c, at);
          write(s.op.dst, at);
          break;
        case StepKind::Update: read(s.value, at); break;
        case StepKind::MulAdd: read(s.value, at), read(s.value2, at); break;
        case StepKind::If:
          read(s.cond, at);
          write(s.mask, at);
          walk(s.body, pos);
          break;
        case StepKind::Store:
          read(s.value, at);
          for (const OutDim& d : s.dims) read(d.key, at);
          break;
        case StepKind::Emit:
          for (int c : s.cols) read(c, at);
          read(s.key, at);
          break;
      }
    }
  }
};

}  // namespace

// A temporary slot shares storage when it is written before it is read (per block and per k
// everything is recomputed in step order: no temporary carries a value from one run of the steps
// to the next) and the engine reads it only through the steps (not the `when` mask's value). A
// region freed by a slot's last use serves writes at later positions only, so that no step reads
// and writes the same storage (the kernels take their operands __restrict).
void share_temp_storage(Module& M) {
  const size_t n = M.slots.size();
  Refs r(n);
  int pos = 0;
  r.walk(M.mask, pos);
  r.walk(M.inner, pos);
  r.walk(M.outer, pos);
  auto shared = [&](size_t s) { return M.slots[s].kind == SlotKind::Temp && r.def_first[s] && int(s) != M.mask_value; };
  M.region.assign(n, -1);
  int regions = 0;
  for (size_t s = 0; s < n; ++s)
    if (!shared(s)) M.region[s] = regions++;
  std::vector<std::vector<int>> ending(static_cast<size_t>(pos));  // per position: slots whose last use it is
  for (size_t s = 0; s < n; ++s)
    if (shared(s)) ending[size_t(r.last[s])].push_back(int(s));
  std::vector<int> free_regions;
  r.defs.resize(size_t(pos), -1);
  for (int p = 0; p < pos; ++p) {
    const int d = r.defs[size_t(p)];
    if (d >= 0 && shared(size_t(d)) && r.first[size_t(d)] == p) {
      if (free_regions.empty()) {
        M.region[size_t(d)] = regions++;
      } else {
        M.region[size_t(d)] = free_regions.back();
        free_regions.pop_back();
      }
    }
    for (int s : ending[size_t(p)]) free_regions.push_back(M.region[size_t(s)]);
  }
  M.regions = regions;
}

}  // namespace gamut::cpu
