// A query's launch records (launch_records.h).
#include "api/launch_records.h"

#include <cstring>

#include "api/device_memory.h"
#include "api/staging.h"
#include "core/error.h"
#include "core/host_phases.h"
#include "cuda/codegen/choice_key.h"
#include "cuda/runtime.h"

namespace gamut::api {

namespace {

void put(std::string& k, int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_text(std::string& k, const std::string& s) {
  put(k, int64_t(s.size()));
  k += s;
}

void put_dims(std::string& k, const std::vector<int64_t>& v) {
  put(k, int64_t(v.size()));
  for (int64_t x : v) put(k, x);
}

}  // namespace

bool LaunchRecords::may_record(const Options& o) {
  return o.repeats == 0 && !o.progress && o.devices.count <= 1 && o.devices.ordinals.empty() && o.backend != "cpu";
}

std::string LaunchRecords::key(const Inputs& inputs, const Options& o, int device) {
  std::string k;
  k.reserve(512);
  put(k, device);
  for (const auto& [name, a] : inputs.arrays) {
    put_text(k, name);
    put(k, int64_t(a.dtype));
    put_dims(k, a.shape);
    put_dims(k, a.strides);
    put(k, int64_t(a.device.kind));
    put(k, a.device.id);
    put(k, a.data == nullptr);
    put(k, int64_t(reinterpret_cast<uintptr_t>(a.data) & 255));
  }
  put(k, -1);
  for (const auto& [name, n] : inputs.scalars) {
    put_text(k, name);
    put(k, n.integer);
    put(k, n.i);
    int64_t bits = 0;
    std::memcpy(&bits, &n.f, sizeof bits);
    put(k, bits);
    put_text(k, n.text);
  }
  put(k, -1);
  for (const auto& [name, dims] : inputs.extents) {
    put_text(k, name);
    put_dims(k, dims);
  }
  put(k, -1);
  put_text(k, o.backend);
  put_text(k, o.f32_math);
  put_text(k, o.tile);
  put_text(k, o.kernel_variant);
  put(k, o.rewrites);
  put(k, o.as_written);
  put(k, o.tuned);
  put(k, o.list_provenance);
  put(k, o.finish);
  put(k, bool(o.allocator));
  put(k, o.devices.count);
  cuda::append_choice_context(k);
  return k;
}

std::string LaunchRecords::signature(const Inputs& inputs, const Options& options) const {
  if (count_.load(std::memory_order_relaxed) == 0 || !may_record(options)) return "";
  return key(inputs, options, cuda::current_device());
}

std::shared_ptr<const RecordedCall> LaunchRecords::find(const std::string& signature) {
  if (signature.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it)
    if (it->first == signature) return it->second;
  return nullptr;
}

void LaunchRecords::keep(std::string signature, std::shared_ptr<const RecordedCall> call) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = kept_.begin(); it != kept_.end(); ++it)
    if (it->first == signature) {
      kept_.erase(it);
      break;
    }
  if (kept_.size() >= kKept) kept_.erase(kept_.begin());
  kept_.emplace_back(std::move(signature), std::move(call));
  count_.store(kept_.size(), std::memory_order_relaxed);
}

Result replay(const RecordedCall& call, const Inputs& inputs, const Options& options) {
  throw_if_cancelled(options.cancel);
  std::vector<const void*> bound;
  bound.reserve(inputs.arrays.size());
  for (const auto& [name, a] : inputs.arrays) bound.push_back(a.data);
  std::vector<const void*> operands(call.operand_binding.size(), nullptr);
  for (size_t o = 0; o < operands.size(); ++o)
    if (call.operand_binding[o] >= 0) operands[o] = bound.at(size_t(call.operand_binding[o]));
  Result r;
  r.outputs.resize(call.outputs.size());
  std::vector<void*> memory(call.outputs.size());
  for (size_t d = 0; d < call.outputs.size(); ++d) {
    const RecordedCall::Out& x = call.outputs[d];
    Output& out = r.outputs[d];
    out.name = x.name;
    Array& a = out.array;
    a.dtype = x.dtype;
    a.shape = x.shape;
    a.strides = c_strides(x.shape);
    a.device = call.output_device;
    const Allocation m = output_memory(options, a.device, a.dtype, a.shape, a.nbytes(), x.name);
    a.data = m.data;
    a.owner = m.owner;
    memory[d] = m.data;
  }
  host_phase("replay: outputs allocated");
  cuda::replay_launch(call.launch, operands, memory, options.stream);
  host_phase("replay: launch");
  if (options.synchronize) synchronize_stream(options.stream);
  r.stats = call.stats;
  return r;
}

}  // namespace gamut::api
