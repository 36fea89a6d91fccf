// How much more host memory this process can use: the smallest of what the system has available
// (/proc/meminfo MemAvailable), what its memory cgroups still allow (v2 memory.max, v1
// memory.limit_in_bytes, every level up to the root, page cache counted as free) and what its
// address-space limit (RLIMIT_AS) leaves. Without a limit on overcommit the kernel kills a
// process that touches more than this (exit 137, no message); runs check their estimate against
// it first (bind/footprint.h).
#pragma once
#include <cstdint>
#include <string>

namespace gamut {

struct HostMemory {
  int64_t available = INT64_MAX;   // bytes
  std::string limited_by;          // "MemAvailable", "cgroup memory.max", "RLIMIT_AS", "" (none known)
};

// Where the facts come from; tests point these at files of their own.
struct HostMemorySources {
  std::string meminfo = "/proc/meminfo";
  std::string self_cgroup = "/proc/self/cgroup";
  std::string self_status = "/proc/self/status";   // VmSize: address space in use (RLIMIT_AS)
  std::string cgroup_root = "/sys/fs/cgroup";
  bool address_space_limit = true;                 // read getrlimit(RLIMIT_AS)
};

HostMemory host_memory(const HostMemorySources& sources = {});

// host_memory() of the default sources, read again when the last reading is older than
// kHostMemoryReuseSeconds: the per-call checks of a run (each stage, each list) would otherwise
// spend 40-80 us a call on /proc and cgroup files, most of a small call's time. What the
// machine has changes little within that window; a single large run reads it fresh anyway.
inline constexpr double kHostMemoryReuseSeconds = 0.1;
HostMemory host_memory_recent();

}  // namespace gamut
