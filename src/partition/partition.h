// Partition and merge: one bound query split into parts along its row or column axis, each part
// run by any engine (a GPU each, or one after another on one device or the CPU), the parts'
// results merged into exactly what the whole run gives (issue 14, docs/multi-gpu.md).
//
//   whole instance --choose_partition--> parts (row or column ranges, the same plan and inputs)
//   part results   --merge_parts-------> the whole result:
//     dense `=` outputs     each part owns the slice of its range (the axis indexes the output)
//     dense aggregates      reduced with the output's monoid (every part starts from its identity)
//     plain / distinct      concatenated, then ordered (and de-duplicated) once more
//     top / bottom          each part's best N (with the hidden key and (b, i, j) columns of
//                           rewrite/list_provenance.h), then the best N of those; per-group
//                           lists whose groups the split keeps whole: concatenated by batch
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "bind/instance.h"

namespace gamut {

struct Partition {
  AxisRole axis = AxisRole::Row;  // Row or Col
  std::vector<AxisRange> ranges;  // one per part, in order, covering the axis's range
  std::string why;                // a single part: why the query was not split
  int parts() const { return int(ranges.size()); }
};

// The dimension of dense output `d` (as the engines lay it out: a batched output without b takes
// it first) that `axis` indexes directly, or -1.
int output_axis_dim(const Plan& plan, const DenseOutput& d, AxisRole axis);

// At most `parts` parts of about equal size along the row axis, or along the column axis where
// N is at least 4x M or a `=` output is not indexed by the row axis. A single part (with `why`)
// where neither axis can be split: a `=` output that does not index the axis (several pairs
// could write one element: its last writer depends on the order), or an axis too short.
Partition choose_partition(const Instance& inst, int parts);

// Part p of `inst`: the same inputs and output shapes, `axis` restricted to ranges[p], and the
// plan `part_plan` (inst.plan with list provenance: with_list_provenance(*inst.plan)).
Instance part_instance(const Instance& inst, const Partition& part, int p, const Plan* part_plan);

// Where part p's slice of projection output d (C order, `shape`) lies: `rows` runs of
// `row_bytes` bytes, the first at byte `offset`, `pitch` bytes apart (clipped to the output's
// extent along the axis; no rows where the part's range lies beyond it).
struct SliceBytes {
  size_t offset = 0, rows = 0, row_bytes = 0, pitch = 0;
};
SliceBytes projection_slice(const Plan& plan, size_t d, const std::vector<int64_t>& shape, const Partition& part,
                            int p);

// The whole result from the parts' results (run on part_instance(..., part_plan)). Dense
// outputs marked in `merged` are whole in part 0 already (an NCCL reduction, or projections whose
// parts wrote their slices into one array). `per i` lists split along i (`per j` along j) are
// concatenated without a sort: their groups are disjoint and each part's rows are final.
Results merge_parts(const Instance& inst, const Partition& part, std::vector<Results>&& parts,
                    const std::vector<bool>* merged = nullptr);

// List l of the parts' results as one, by the rules above (`disjoint`: the split keeps the list's
// groups whole). Each part's table holds the list's columns and, for top/bottom, the hidden
// provenance columns; those stay in the result where `plan` is itself a plan with list provenance
// (a merge whose result is merged again), and are dropped otherwise. The parts' tables are emptied.
Table merge_list(const Plan& plan, size_t l, int64_t limit, std::vector<Results>& parts, bool disjoint);

// One column of a part's list as it lies in someone else's memory (`bytes` bytes, rows in
// order), for merges that read the parts where they are.
struct ColumnView {
  const std::byte* data = nullptr;
  size_t bytes = 0;
};
// merge_list's result for a top/bottom list of an unbatched plan whose groups are whole in every
// part (`disjoint`), read from views: each part's rows are final, so the result is every column
// of the parts one after another (what concatenate_groups gives for one batch), one copy of
// each column. parts[p][c]: part p's column c, for every column of the list (the provenance
// columns included); rows[p]: part p's rows.
Table concatenate_disjoint(const ListOutput& spec, const std::vector<std::vector<ColumnView>>& parts,
                           const std::vector<int64_t>& rows);

// The whole run as parts one after another through `run_part` (tests, and a single device
// standing in for several): identical to running `inst` at once (float sums up to reordering).
Results run_in_parts(const Instance& inst, int parts, const std::function<Results(const Instance&)>& run_part,
                     Partition* used = nullptr);

// explain's line: "partition: 4 parts along i (rows 0..256, 256..512, ...)" or why not.
std::string describe_partition(const Partition& part);

}  // namespace gamut
