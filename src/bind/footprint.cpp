#include "bind/footprint.h"

#include <algorithm>

#include "core/error.h"
#include "core/sizes.h"

namespace gamut {

namespace {

int64_t saturated_add(int64_t a, int64_t b) { return size_add(a, b).value_or(INT64_MAX); }

// Bytes of a dense output as bind sized it (bind checked that they fit).
int64_t output_bytes(const Instance& inst, size_t d) {
  return shape_bytes(inst.dense_shapes[d], dtype_size(storage_type_of(inst.plan->dense[d].type))).value_or(INT64_MAX);
}

// Bytes of an array of `shape` whose rows are padded to a multiple of 4 elements when it has
// `matrix_rank` dimensions or more, as run_gpu lays out inputs and outputs on the device.
int64_t padded_bytes(const std::vector<int64_t>& shape, size_t elem, size_t matrix_rank) {
  if (shape.size() < matrix_rank || shape.empty()) return shape_bytes(shape, elem).value_or(INT64_MAX);
  const int64_t last = shape.back(), pitch = size_mul_saturated(last / 4 + (last % 4 != 0), 4);
  std::vector<int64_t> padded(shape.begin(), shape.end() - 1);
  padded.push_back(pitch);
  return shape_bytes(padded, elem).value_or(INT64_MAX);
}

void top_bottom_lists(const Instance& inst, MemoryEstimate& e, int copies) {
  for (size_t l = 0; l < inst.plan->lists.size(); ++l) {
    const int64_t rows = list_row_bound(inst, l);
    if (rows < 0) continue;
    e.add("list " + inst.plan->lists[l].name + " (up to " + std::to_string(rows) + " rows)",
          size_mul_saturated(size_mul_saturated(rows, list_row_bytes(*inst.plan, l)), copies), true);
  }
}

}  // namespace

void MemoryEstimate::add(std::string what, int64_t bytes, bool list) {
  if (bytes > 0) items.push_back({std::move(what), bytes, list});
}

int64_t MemoryEstimate::total() const {
  int64_t t = 0;
  for (const MemoryItem& m : items) t = saturated_add(t, m.bytes);
  return t;
}

int64_t MemoryEstimate::total_fixed() const {
  int64_t t = 0;
  for (const MemoryItem& m : items) t = m.list ? t : saturated_add(t, m.bytes);
  return t;
}

bool dense_output_shared(const Plan& plan, size_t d) {
  bool row = false, col = false;
  for (const OutIndex& x : plan.dense[d].index)
    if (x.kind == OutIndex::Axis) {
      row |= x.axis == AxisRole::Row;
      col |= x.axis == AxisRole::Col;
    }
  return !(row && col);
}

int64_t list_row_bound(const Instance& inst, size_t l) {
  const ListOutput& spec = inst.plan->lists[l];
  if (spec.mode != ListMode::Top && spec.mode != ListMode::Bottom) return -1;
  const int64_t pairs = size_mul_saturated(size_mul_saturated(inst.row.size(), inst.col.size()), inst.batch);
  const int64_t groups = spec.per == PerGroup::Row   ? size_mul_saturated(inst.row.size(), inst.batch)
                         : spec.per == PerGroup::Col ? size_mul_saturated(inst.col.size(), inst.batch)
                                                     : 1;
  return std::min(pairs, size_mul_saturated(std::max<int64_t>(inst.list_limits[l], 0), groups));
}

int64_t list_row_bytes(const Plan& plan, size_t l) {
  const ListOutput& spec = plan.lists[l];
  int64_t bytes = 3 * int64_t(sizeof(int32_t));  // b, i, j
  for (const ListColumn& c : spec.columns) bytes += int64_t(dtype_size(storage_type_of(c.type)));
  if (spec.key != kNoExpr) bytes += int64_t(dtype_size(storage_type_of(plan.expr(spec.key).type)));
  return bytes;
}

MemoryEstimate cpu_host_memory(const Instance& inst, int partial_threads) {
  const Plan& P = *inst.plan;
  MemoryEstimate e;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    e.add("output " + P.dense[d].name, output_bytes(inst, d));
    if (partial_threads > 1 && dense_output_shared(P, d))
      e.add("per-thread copies of output " + P.dense[d].name + " (" + std::to_string(partial_threads) + " threads)",
            size_mul_saturated(output_bytes(inst, d), partial_threads));
  }
  // Candidates, then the result: twice the rows.
  top_bottom_lists(inst, e, 2);
  return e;
}

MemoryEstimate gpu_host_memory(const Instance& inst) {
  const Plan& P = *inst.plan;
  MemoryEstimate e;
  for (size_t d = 0; d < P.dense.size(); ++d) {
    e.add("output " + P.dense[d].name, output_bytes(inst, d));
    // run_gpu fills min/max outputs from a host copy of their initial values.
    if (P.dense[d].op == StoreOp::Max || P.dense[d].op == StoreOp::Min)
      e.add("initial values of output " + P.dense[d].name,
            padded_bytes(inst.dense_shapes[d], dtype_size(storage_type_of(P.dense[d].type)), 2));
  }
  top_bottom_lists(inst, e, 2);
  return e;
}

MemoryEstimate gpu_device_memory(const Instance& inst, int64_t list_rows) {
  const Plan& P = *inst.plan;
  MemoryEstimate e;
  const size_t lead = P.batched ? 1 : 0;
  for (size_t o = 0; o < P.operands.size(); ++o)
    if (const NDArray* x = inst.inputs[o]; x && !inst.on_device(o))  // (device inputs are read in place)
      e.add("input " + P.operands[o].name, padded_bytes(x->shape, dtype_size(x->dtype), lead + 2));
  for (size_t d = 0; d < P.dense.size(); ++d)
    e.add("output " + P.dense[d].name,
          padded_bytes(inst.dense_shapes[d], dtype_size(storage_type_of(P.dense[d].type)), 2));
  for (size_t l = 0; l < P.lists.size(); ++l)
    e.add("list " + P.lists[l].name + " (" + std::to_string(list_rows) + " rows)",
          size_mul_saturated(list_rows, list_row_bytes(P, l)), true);
  return e;
}

void require_fits(const MemoryEstimate& need, int64_t available, const std::string& memory,
                  const std::string& limited_by) {
  const int64_t total = need.total();
  if (total <= available) return;
  std::vector<MemoryItem> items = need.items;
  std::stable_sort(items.begin(), items.end(),
                   [](const MemoryItem& a, const MemoryItem& b) { return a.bytes > b.bytes; });
  auto amount = [](int64_t b) {
    return b == INT64_MAX ? std::string("more than 2^63-1 bytes")
                          : bytes_text(b) + " (" + std::to_string(b) + " bytes)";
  };
  std::string what;
  const size_t shown = std::min<size_t>(items.size(), 3);
  for (size_t k = 0; k < shown; ++k)
    what += (k ? ", " : "") + items[k].what + " needs " +
            (items.size() == 1 ? amount(items[k].bytes) : bytes_text(items[k].bytes));
  if (items.size() > shown) what += " and " + std::to_string(items.size() - shown) + " more";
  if (items.size() > 1) what += ": " + amount(total) + " in all";
  throw_resource_error("not enough " + memory + ": " + what + "; " + amount(std::max<int64_t>(available, 0)) +
                       " available" + (limited_by.empty() ? "" : " (" + limited_by + ")"));
}

void ListMemoryGuard::report(int64_t previous, int64_t bytes, const std::string& largest_list) {
  const int64_t held = held_.fetch_add(bytes - previous) + (bytes - previous);
  if (size_mul_saturated(held, 2) <= budget_) return;
  throw_resource_error("not enough host memory: list " + largest_list + " has grown to " + bytes_text(held) + " (" +
                       std::to_string(held) + " bytes) with all lists, and ordering it needs as much again; " +
                       bytes_text(std::max<int64_t>(budget_, 0)) + " available" +
                       (limited_by_.empty() ? "" : " (" + limited_by_ + ")"));
}

}  // namespace gamut
