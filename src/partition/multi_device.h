// Several GPUs of one host (issue 14, docs/multi-gpu.md): a bound query split by choose_partition
// into one part per device, each part run in its own thread on its device, the parts merged.
//
//   devices asked (--gpus N|all, devices=)  --resolve_devices-->  ordinals (a GPU may repeat)
//   instance --choose_partition--> parts --one std::thread each, cudaSetDevice--> part results
//   part results --NCCL reduce (dense aggregates, distinct GPUs) and merge_parts--> the result
//
// The same ordinal may appear twice ([0, 0]): the parts then share that GPU, which is how one
// GPU tests the threaded runner. Results equal one run's (float sums up to reordering).
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "cuda/gpu_engine.h"
#include "partition/partition.h"

namespace gamut {

// What was asked for: nothing (the normal single-device run), a count (`all`: every visible GPU),
// or ordinals.
struct DeviceRequest {
  int count = 0;              // 0: not asked; -1: all
  std::vector<int> ordinals;  // used when not empty (count is then ignored)
  bool asked() const { return count != 0 || !ordinals.empty(); }
};

// Parses the CLI's `--gpus` text: a count ("2"), "all", or ordinals ("0,1", "0,0"). Throws a
// usage error naming `what` ("--gpus") for anything else (0, negative, not a number).
DeviceRequest parse_device_request(const std::string& text, const std::string& what);

// The ordinals to run on, given `visible` GPUs and whether the run is on the CPU engine. Empty:
// the normal path (nothing asked, or a count of 1). Errors (one line each, naming `what`):
// a count below 1 or a negative ordinal (usage); a list of devices on the CPU engine (usage);
// more devices than visible or an ordinal not visible (device error naming the count);
// `all` with none visible (device error with `no_gpu_reason`).
std::vector<int> resolve_devices(const DeviceRequest& req, int visible, bool cpu_engine, const std::string& what,
                                 const std::string& no_gpu_reason = "");

enum class MergePath { Auto, Host, Nccl };  // Nccl: required (tests); Auto: where it can

struct MultiRunReport {
  Partition partition;
  std::vector<int> devices;                   // the ordinal of each part
  std::string merge = "host";                 // "host" or "nccl"
  std::string merge_note;                     // why the host merged where NCCL could have ("" otherwise)
  std::vector<double> part_seconds;           // each part's wall time in its thread
  double parts_seconds = 0;                   // all parts, start to the last join
  double merge_seconds = 0;                   // NCCL reduction and host merge
  std::vector<cuda::GpuRunStats> part_stats;  // GPU runs
};

// The generic runner: the parts of choose_partition(inst, devices.size()) run at once, part p as
// run_part(part instance, devices[p]) in a thread of its own, then merge_parts. An error in any
// part is rethrown (the first part's, in part order; the others' are dropped) with the part and
// device named, after every thread has finished: no partial result.
using PartRunner = std::function<Results(const Instance& part, int device)>;
Results run_threaded(const Instance& inst, const std::vector<int>& devices, const PartRunner& run_part,
                     MultiRunReport* report = nullptr);

// The GPU runner: each thread selects its device and runs cuda::run_gpu with `options` (its
// progress from the first part only). Where the devices are distinct, NCCL loads and there are
// dense aggregate outputs of NCCL's types, those are reduced on the devices into the first
// one's memory (ncclReduce) and copied to the host once; the rest merges on the host.
Results run_on_gpus(const Instance& inst, const std::vector<int>& devices, const cuda::GpuRunOptions& options,
                    MergePath merge = MergePath::Auto, MultiRunReport* report = nullptr);

// Why the NCCL merge cannot serve this run ("" when it can): fewer than two distinct devices
// (unless forced), a repeated ordinal, no dense aggregate output, NCCL missing.
std::string nccl_merge_obstacle(const Plan& plan, const std::vector<int>& devices, bool forced);

// explain's and --json's line for a run over `devices`: describe_partition's, with the devices.
std::string describe_devices(const Partition& part, const std::vector<int>& devices);

}  // namespace gamut
