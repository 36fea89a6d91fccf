// cuda/nccl.h for a build without CUDA: NCCL is never used (there is no device to run on).
#include "core/error.h"
#include "cuda/nccl.h"

namespace gamut::cuda::nccl {

namespace {
const char* const kWhy = "NCCL not used: built without CUDA";
}

std::vector<std::string> library_candidates() { return {}; }
bool available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}
bool try_library(const std::string& path, std::string* why) {
  if (why) *why = "NCCL library " + path + " not usable: built without CUDA";
  return false;
}
std::string version() { throw_device_error(kWhy); }
void reduce_to_first(const std::vector<int>&, const std::vector<Reduction>&) { throw_device_error(kWhy); }

}  // namespace gamut::cuda::nccl
