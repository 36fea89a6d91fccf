// DeviceLists' results (launch_lists.h): the lists' final rows gathered into the caller's device
// memory or downloaded, top / bottom rows with 64-bit keys finalised on the host.
#include "bind/footprint.h"
#include "core/error.h"
#include "core/host_memory.h"
#include "core/sizes.h"
#include "cuda/outputs/list/host/launch_lists.h"
#include "cuda/runtime/internal.h"
#include "semantics/list_order.h"

namespace gamut::cuda {

namespace {
constexpr int64_t kUncheckedHostBytes = int64_t(8) << 20;  // list rows downloaded without a host-memory check
}  // namespace

void DeviceLists::gather_final_rows(size_t l, const std::vector<void*>* to) {
  const ListOutput& spec = inst_->plan->lists[l];
  const List& L = lists_[l];
  Finished& F = finished_[l];
  const size_t m = size_t(F.rows);
  std::vector<sortdev::GatherColumn> gather;
  for (size_t c = 0; c < L.cols.size(); ++c) {
    const size_t elem = dtype_size(storage_type_of(spec.columns[c].type));
    void* dst = nullptr;
    if (to) {
      dst = (*to)[c];
    } else {
      if (F.cols[c].size() < std::max<size_t>(m, 1) * elem) F.cols[c] = DeviceBuffer(std::max<size_t>(m, 1) * elem);
      dst = F.cols[c].get();
    }
    gather.push_back({dst, L.cols[c].get(), int(elem)});
  }
  gather_list_columns(gather, static_cast<const uint32_t*>(F.order.get()), m);
  if (!to) F.gather_pending = false;  // (into the caller's memory: again at the next results())
}

std::vector<Table> DeviceLists::results(const ListOutputFn* device_out) {
  if (lists_.empty()) return {};  // (dense outputs only: no host memory to check)
  if (!finalized_) finalize_on_device();
  const Plan& P = *inst_->plan;
  auto final_on_device = [&](const Finished& F) { return !F.from_list && !F.host_order; };
  // The rows that come down to the host (and are ordered there once more for top/bottom).
  MemoryEstimate need;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const Finished& F = finished_[l];
    if (device_out && final_on_device(F)) continue;
    need.add("list " + P.lists[l].name + " (" + std::to_string(F.rows) + " rows)",
             size_mul_saturated(size_mul_saturated(int64_t(F.rows), list_row_bytes(P, l)), F.host_order ? 2 : 1));
  }
  // Checked where it can matter: reading /proc/meminfo and the cgroup limits costs about 0.1 ms,
  // most of what a small list's download costs (a list query called in a loop pays it per call).
  if (need.total() > kUncheckedHostBytes) {
    const HostMemory host = host_memory_recent();
    require_fits(need, host.available, "host memory", host.limited_by);
  }
  std::vector<Table> out;
  for (size_t l = 0; l < lists_.size(); ++l) {
    const ListOutput& spec = P.lists[l];
    const List& L = lists_[l];
    const Finished& F = finished_[l];
    const size_t n = size_t(F.rows);
    ListCandidates rows = cpu::empty_candidates(spec, list_key_type(P, spec));
    rows.table.rows = int64_t(n);
    if (device_out && final_on_device(F)) {  // into the caller's memory, in stream order
      const std::vector<void*> to = (*device_out)(l, int64_t(n));
      if (to.size() != rows.table.columns.size())
        throw_device_error("internal error: list " + spec.name + " got memory for " + std::to_string(to.size()) +
                           " columns");
      for (size_t c = 0; c < to.size(); ++c) {
        const size_t bytes = n * dtype_size(rows.table.columns[c].dtype);
        if (bytes && !to[c]) throw_device_error("no device memory for list " + spec.name);
      }
      if (F.gather_pending) {
        if (n > 0) gather_final_rows(l, &to);
        out.push_back(std::move(rows.table));
        continue;
      }
      for (size_t c = 0; c < to.size(); ++c) {
        const size_t bytes = n * dtype_size(rows.table.columns[c].dtype);
        if (F.cols[c].size() < bytes)
          throw_device_error("internal error: list " + spec.name + " has fewer rows than counted");
        copy_device_to_device(to[c], F.cols[c].get(), bytes);
      }
      out.push_back(std::move(rows.table));
      continue;
    }
    if (F.gather_pending) gather_final_rows(l, nullptr);
    auto src = [&](const DeviceBuffer& all, const DeviceBuffer& kept) -> const DeviceBuffer& {
      return F.from_list ? all : kept;
    };
    for (size_t c = 0; c < rows.table.columns.size(); ++c) {
      Column& col = rows.table.columns[c];
      col.data.resize(n * dtype_size(col.dtype));
      (F.from_list ? L.cols[c] : F.cols[c]).download(col.data.data(), col.data.size());  // (F.cols may be empty)
    }
    if (!F.host_order) {
      out.push_back(std::move(rows.table));
      continue;
    }
    rows.b.resize(n);
    rows.i.resize(n);
    rows.j.resize(n);
    src(L.b, F.b).download(rows.b.data(), n * sizeof(int32_t));
    src(L.i, F.i).download(rows.i.data(), n * sizeof(int32_t));
    src(L.j, F.j).download(rows.j.data(), n * sizeof(int32_t));
    if (spec.key != kNoExpr) {
      rows.key.data.resize(n * dtype_size(rows.key.dtype));
      src(L.key, F.key).download(rows.key.data.data(), rows.key.data.size());
    }
    out.push_back(finalize_list(spec, inst_->list_limits[l], std::move(rows)));
  }
  return out;
}

}  // namespace gamut::cuda
