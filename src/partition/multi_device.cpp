#include "partition/multi_device.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <set>

#include "core/error.h"
#include "core/threads.h"
#include "cuda/nccl.h"
#include "cuda/runtime.h"
#include "rewrite/list_provenance.h"

namespace gamut {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// Whole decimal numbers only ("2", not "2.0", "+2", " 2" or "2x"); nullopt otherwise.
std::optional<int> whole_number(const std::string& t) {
  if (t.empty() || t.size() > 6 || !std::all_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::nullopt;
  return std::stoi(t);
}

// The NCCL reduction of a dense output, where NCCL has one: sums, max and min of the stored
// numbers; or / and of bools as max / min of bytes that are 0 and non-zero.
std::optional<std::pair<cuda::nccl::Type, cuda::nccl::Op>> nccl_reduction(const DenseOutput& d) {
  using cuda::nccl::Op;
  using cuda::nccl::Type;
  const DType t = storage_type_of(d.type);
  if (d.is_project()) return std::nullopt;
  if (t == DType::Bool) {
    if (d.op == StoreOp::Or) return std::pair{Type::U8, Op::Max};
    if (d.op == StoreOp::And) return std::pair{Type::U8, Op::Min};
    return std::nullopt;
  }
  const Op op = d.op == StoreOp::Add ? Op::Sum : d.op == StoreOp::Max ? Op::Max : Op::Min;
  if (d.op != StoreOp::Add && d.op != StoreOp::Max && d.op != StoreOp::Min) return std::nullopt;
  switch (t) {
    case DType::I32: return std::pair{Type::I32, op};
    case DType::I64: return std::pair{Type::I64, op};
    case DType::F32: return std::pair{Type::F32, op};
    case DType::F64: return std::pair{Type::F64, op};
    default: return std::nullopt;
  }
}

// A part's failure as one error of the same category, naming the part and its device.
[[noreturn]] void rethrow_for_part(const std::exception_ptr& e, int part, int parts, int device) {
  const std::string where = " (part " + std::to_string(part + 1) + " of " + std::to_string(parts) + ", device " +
                            std::to_string(device) + ")";
  try {
    std::rethrow_exception(e);
  } catch (const Cancelled&) {
    throw;  // (Cancelled as it is: the caller asked for it)
  } catch (const Error& x) {
    const std::string text = x.what();
    const size_t eol = text.find('\n');
    throw Error(x.code(), eol == std::string::npos ? text + where : text.substr(0, eol) + where + text.substr(eol));
  } catch (const std::bad_alloc&) {
    throw;  // reported as out of host memory
  } catch (const std::exception& x) {
    throw Error(ExitCode::Device, std::string("internal error: ") + x.what() + where);
  }
}

// Runs body(p) for every part in a thread of its own; rethrows the first part's failure once
// every thread has finished.
void run_parts(int parts, const std::vector<int>& devices, const std::function<void(int)>& body,
               std::vector<double>& part_seconds) {
  std::vector<std::exception_ptr> failed(static_cast<size_t>(parts));
  part_seconds.assign(size_t(parts), 0);
  auto run = [&](int p) {
    const auto t0 = Clock::now();
    try {
      body(p);
    } catch (...) {
      failed[size_t(p)] = std::current_exception();
    }
    part_seconds[size_t(p)] = seconds_since(t0);
  };
  // Every part on a thread of its own; one whose thread cannot start runs on this one.
  run_on_threads(parts, 0, [&](int64_t p) { run(int(p)); });
  for (int p = 0; p < parts; ++p)
    if (failed[size_t(p)]) rethrow_for_part(failed[size_t(p)], p, parts, devices[size_t(p)]);
}

}  // namespace

DeviceRequest parse_device_request(const std::string& text, const std::string& what) {
  DeviceRequest r;
  if (text == "all") {
    r.count = -1;
    return r;
  }
  const std::string bad = what + " '" + text + "': give a count of GPUs (1 or more), 'all', or ordinals such as 0,1";
  if (text.find(',') == std::string::npos) {
    const std::optional<int> n = whole_number(text);
    if (!n || *n < 1) throw_usage_error(bad);
    r.count = *n;
    return r;
  }
  size_t at = 0;
  while (true) {
    const size_t comma = text.find(',', at);
    const std::optional<int> d =
        whole_number(text.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (!d) throw_usage_error(bad);
    r.ordinals.push_back(*d);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return r;
}

std::vector<int> resolve_devices(const DeviceRequest& req, int visible, bool cpu_engine, const std::string& what,
                                 const std::string& no_gpu_reason) {
  if (!req.asked()) return {};
  if (req.ordinals.empty() && req.count < -1)
    throw_usage_error(what + " " + std::to_string(req.count) + ": give a count of 1 or more, or all");
  for (int d : req.ordinals)
    if (d < 0) throw_usage_error(what + ": device ordinal " + std::to_string(d) + " is negative");
  if (req.ordinals.empty() && req.count == 1) return {};  // one GPU: the normal path
  const std::string asked = req.ordinals.empty() ? (req.count < 0 ? "all" : std::to_string(req.count))
                                                 : std::to_string(req.ordinals.size()) + " devices";
  if (cpu_engine) throw_usage_error(what + " " + asked + ": several devices need the GPU engine (not --backend cpu)");
  if (visible == 0) {
    const std::string why = no_gpu_reason.empty() ? "no usable CUDA device" : no_gpu_reason;
    throw_device_error(what + " " + asked + ": " + why + " (0 GPUs visible)");
  }
  std::vector<int> out = req.ordinals;
  if (out.empty()) {
    const int n = req.count < 0 ? visible : req.count;
    if (n > visible)
      throw_device_error(what + " " + std::to_string(n) + ": only " + plural(visible, "GPU is", "GPUs are") +
                         " visible");
    for (int d = 0; d < n; ++d) out.push_back(d);
  }
  for (int d : out)
    if (d >= visible)
      throw_device_error(what + ": no GPU " + std::to_string(d) + " (" + plural(visible, "GPU is", "GPUs are") +
                         " visible, ordinals 0 to " + std::to_string(visible - 1) + ")");
  return out;
}

Results run_threaded(const Instance& inst, const std::vector<int>& devices, const PartRunner& run_part,
                     MultiRunReport* report) {
  if (devices.empty()) throw_internal_error("run_threaded without devices");
  MultiRunReport local;
  MultiRunReport& rep = report ? *report : local;
  rep.partition = choose_partition(inst, int(devices.size()));
  const int parts = rep.partition.parts();
  rep.devices.assign(devices.begin(), devices.begin() + parts);
  const Plan part_plan = with_list_provenance(*inst.plan);
  std::vector<Instance> instances;
  for (int p = 0; p < parts; ++p)
    instances.push_back(parts > 1 ? part_instance(inst, rep.partition, p, &part_plan) : inst);
  std::vector<Results> results(static_cast<size_t>(parts));
  const auto t0 = Clock::now();
  run_parts(
      parts, rep.devices, [&](int p) { results[size_t(p)] = run_part(instances[size_t(p)], rep.devices[size_t(p)]); },
      rep.part_seconds);
  rep.parts_seconds = seconds_since(t0);
  const auto t1 = Clock::now();
  Results out = parts > 1 ? merge_parts(inst, rep.partition, std::move(results)) : std::move(results[0]);
  rep.merge = "host";
  rep.merge_seconds = seconds_since(t1);
  return out;
}

std::string nccl_merge_obstacle(const Plan& plan, const std::vector<int>& devices, bool forced) {
  if (devices.size() < 2 && !forced) return "one part";
  if (std::set<int>(devices.begin(), devices.end()).size() != devices.size())
    return "a GPU runs several parts (NCCL needs one rank per GPU)";
  bool any = false;
  for (const DenseOutput& d : plan.dense) any = any || nccl_reduction(d).has_value();
  if (!any) return "no dense aggregate output to reduce";
  std::string why;
  if (!cuda::nccl::available(&why)) return why;
  return "";
}

Results run_on_gpus(const Instance& inst, const std::vector<int>& devices, const cuda::GpuRunOptions& options,
                    MergePath merge, MultiRunReport* report) {
  if (devices.empty()) throw_internal_error("run_on_gpus without devices");
  MultiRunReport local;
  MultiRunReport& rep = report ? *report : local;
  const Plan& P = *inst.plan;
  rep.partition = choose_partition(inst, int(devices.size()));
  const int parts = rep.partition.parts();
  rep.devices.assign(devices.begin(), devices.begin() + parts);
  rep.part_stats.assign(size_t(parts), {});
  const bool forced = merge == MergePath::Nccl;
  const std::string obstacle = merge == MergePath::Host ? "asked for" : nccl_merge_obstacle(P, rep.devices, forced);
  if (forced && !obstacle.empty()) throw_device_error("the NCCL merge cannot run: " + obstacle);
  const bool use_nccl = obstacle.empty();
  rep.merge_note = parts > 1 && !use_nccl ? obstacle : "";

  const Plan part_plan = with_list_provenance(P);
  std::vector<Instance> instances;
  for (int p = 0; p < parts; ++p)
    instances.push_back(parts > 1 ? part_instance(inst, rep.partition, p, &part_plan) : inst);
  std::vector<bool> reduced(P.dense.size(), false);
  for (size_t d = 0; d < P.dense.size(); ++d) reduced[d] = use_nccl && nccl_reduction(P.dense[d]).has_value();

  // Several parts (or the NCCL path): every dense output of a part lands in device memory the
  // runner keeps (C order). NCCL's reductions stay there; each part copies its own slice of a
  // projection straight into the one host array (nothing left to merge, no whole array per
  // part on the host); other outputs go to the host whole, to be merged there.
  const bool keep = use_nccl || parts > 1;
  std::vector<bool> merged = reduced;
  std::vector<NDArray> whole(P.dense.size());
  for (size_t d = 0; d < P.dense.size() && parts > 1; ++d)
    if (P.dense[d].is_project()) {
      whole[d] = NDArray::zeros(storage_type_of(P.dense[d].type), inst.dense_shapes[d]);
      merged[d] = true;
    }
  std::vector<std::vector<cuda::DeviceBuffer>> kept(static_cast<size_t>(parts));
  std::vector<Results> results(static_cast<size_t>(parts));
  const auto t0 = Clock::now();
  run_parts(
      parts, rep.devices,
      [&](int p) {
        cuda::set_current_device(rep.devices[size_t(p)]);
        cuda::GpuRunOptions o = options;
        o.asynchronous = false;
        if (p > 0) o.progress = nullptr;
        // The caller's kernel memo holds its plan's kernels by variant; the parts run another
        // plan (with list provenance): a memo hit would launch a kernel of other arguments.
        if (parts > 1) o.kernel_memo = nullptr;
        std::vector<cuda::DeviceBuffer>& mine = kept[size_t(p)];
        mine.resize(P.dense.size());
        if (keep)
          o.dense_output = [&mine](size_t d, size_t bytes) {
            mine[d] = cuda::DeviceBuffer(std::max<size_t>(bytes, 1));
            return mine[d].get();
          };
        Results r = cuda::run_gpu(instances[size_t(p)], o, &rep.part_stats[size_t(p)]);
        // NCCL reads on streams of its own: this part's work (an identity fill too, where no
        // block ran) must be finished first.
        if (keep) cuda::synchronize();
        for (size_t d = 0; d < P.dense.size() && keep; ++d) {
          NDArray& a = r.dense[d];
          if (reduced[d]) continue;  // (a views device memory until the merge)
          if (merged[d]) {           // this part's slice, into the one result
            const SliceBytes s = projection_slice(P, d, a.shape, rep.partition, p);
            mine[d].download_block(whole[d].data.data(), s.offset, s.rows, s.row_bytes, s.pitch);
            a = NDArray{};
            continue;
          }
          NDArray host = NDArray::zeros(a.dtype, a.shape);
          if (host.nbytes() > 0) mine[d].download(host.data.data(), host.nbytes());
          a = std::move(host);
        }
        results[size_t(p)] = std::move(r);
      },
      rep.part_seconds);
  rep.parts_seconds = seconds_since(t0);

  const auto t1 = Clock::now();
  if (use_nccl) {
    std::vector<cuda::nccl::Reduction> reductions;
    for (size_t d = 0; d < P.dense.size(); ++d) {
      if (!reduced[d]) continue;
      const auto [type, op] = *nccl_reduction(P.dense[d]);
      cuda::nccl::Reduction r;
      for (int p = 0; p < parts; ++p) r.send.push_back(kept[size_t(p)][d].get());
      r.recv = kept[0][d].get();  // in place on the first device
      r.count = size_t(results[0].dense[d].size());
      r.type = type;
      r.op = op;
      reductions.push_back(r);
    }
    cuda::nccl::reduce_to_first(rep.devices, reductions);
    const int previous = cuda::current_device();
    cuda::set_current_device(rep.devices[0]);
    for (size_t d = 0; d < P.dense.size(); ++d) {
      if (!reduced[d]) continue;
      NDArray host = NDArray::zeros(results[0].dense[d].dtype, results[0].dense[d].shape);
      if (host.nbytes() > 0) kept[0][d].download(host.data.data(), host.nbytes());
      results[0].dense[d] = std::move(host);
    }
    cuda::set_current_device(previous);
    rep.merge = "nccl";
  }
  for (size_t d = 0; d < P.dense.size(); ++d)
    if (merged[d] && !reduced[d]) results[0].dense[d] = std::move(whole[d]);
  Results out = parts > 1 ? merge_parts(inst, rep.partition, std::move(results), &merged) : std::move(results[0]);
  kept.clear();
  rep.merge_seconds = seconds_since(t1);
  return out;
}

std::string describe_devices(const Partition& part, const std::vector<int>& devices) {
  std::string line = describe_partition(part);
  if (!line.empty() && line.back() == '\n') line.pop_back();
  std::string on;
  for (size_t k = 0; k < devices.size() && k < size_t(std::max(1, part.parts())); ++k)
    on += (k ? "," : "") + std::to_string(devices[k]);
  return line + " on GPUs " + on + "\n";
}

}  // namespace gamut
