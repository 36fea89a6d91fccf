// A query's launch records (cuda/launch_record.h): a repeated library call whose signature equals
// a recorded call's launches the recorded kernel on its own pointers, in new output memory, and
// skips staging, binding, planning and the kernel choice (issue 39: a small call's host time).
//
// The signature is everything a run of one query reads before its launch: every binding's name,
// element type, shape, strides, device, whether its pointer is null and its address modulo 256
// (alignment decides vector loads), every scalar and extent, the options that shape a run, the
// current GPU, and what of the process a kernel choice reads (the tuned tables' generation, the
// GAMUT_ environment). A call is recorded where its run was one launch of one kernel on inputs
// in device memory with dense outputs (cuda::GpuRunOptions::record says which); lists, rewritten
// programs, finishing steps, several GPUs, index vectors, benchmark repeats and progress
// callbacks take the whole path every time.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cuda/launch_record.h"
#include "gamut/gamut.h"

namespace gamut::api {

struct RecordedCall {
  cuda::LaunchRecord launch;
  std::vector<int> operand_binding;  // per Plan::operands: its position in Inputs::arrays (-1: none)
  Device output_device;
  struct Out {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
  };
  std::vector<Out> outputs;  // the dense outputs, in query order
  RunStats stats;            // the recorded run's (cache "record", no times or host phases)
};

class LaunchRecords {
 public:
  // The call's signature; "" where no record may serve it (none kept yet, or options that
  // always take the whole path).
  std::string signature(const Inputs& inputs, const Options& options) const;
  std::shared_ptr<const RecordedCall> find(const std::string& signature);
  void keep(std::string signature, std::shared_ptr<const RecordedCall> call);
  // Whether a call with these options may be recorded (or replayed).
  static bool may_record(const Options& options);
  // The signature of a call on GPU `device` (the calling thread's current one), computed before
  // it runs: the first record of a query is keyed by it too.
  static std::string key(const Inputs& inputs, const Options& options, int device);

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, std::shared_ptr<const RecordedCall>>> kept_;  // newest last
  std::atomic<size_t> count_{0};
  static constexpr size_t kKept = 8;
};

// The recorded call again on `inputs` (whose signature is the record's): the outputs in new
// memory (the options' allocator's, else gamut's), the launch on options.stream, nothing waits
// (unless options.synchronize).
Result replay(const RecordedCall& call, const Inputs& inputs, const Options& options);

}  // namespace gamut::api
