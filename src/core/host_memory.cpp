#include "core/host_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <tuple>
#include <vector>

namespace gamut {
namespace {

namespace fs = std::filesystem;

void lower(HostMemory& m, int64_t bytes, const std::string& why) {
  bytes = std::max<int64_t>(bytes, 0);
  if (bytes < m.available) {
    m.available = bytes;
    m.limited_by = why;
  }
}

// The first number of the file's only line; -1 when absent or not a number ("max").
int64_t read_number(const fs::path& p) {
  std::ifstream f(p);
  std::string word;
  if (!(f >> word) || word.empty() || word.find_first_not_of("0123456789") != std::string::npos) return -1;
  errno = 0;
  unsigned long long v = std::strtoull(word.c_str(), nullptr, 10);
  return errno || v > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(v);
}

// "KEY: VALUE [kB]" (meminfo, status) or "KEY VALUE" (memory.stat): the value in bytes, -1 if absent.
int64_t read_key(const fs::path& p, const std::string& key, bool kib) {
  std::ifstream f(p);
  std::string line;
  while (std::getline(f, line)) {
    if (line.compare(0, key.size(), key) != 0 || line.size() == key.size()) continue;
    char sep = line[key.size()];
    if (sep != ':' && sep != ' ') continue;
    long long v = std::atoll(line.c_str() + key.size() + 1);
    return kib ? int64_t(v) * 1024 : int64_t(v);
  }
  return -1;
}

// One memory cgroup hierarchy: every level from the process's cgroup up to the root.
void cgroup_limits(HostMemory& m, fs::path root, const std::string& path, bool v2) {
  auto normal = [](fs::path p) {
    p = p.lexically_normal();
    return p.has_filename() ? p : p.parent_path();   // no trailing separator
  };
  root = normal(root);
  fs::path dir = normal(root / fs::path(path).relative_path());
  std::error_code ec;
  // A container sees its own cgroup as the root; the path names it in the host's hierarchy.
  if (!fs::is_directory(dir, ec) || dir.lexically_relative(root).string().starts_with("..")) dir = root;
  const char* limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
  const char* usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
  for (fs::path d = dir;; d = d.parent_path()) {
    int64_t limit = read_number(d / limit_file);
    // v1 writes "no limit" as a huge page-aligned number.
    if (limit >= 0 && limit < (int64_t(1) << 62)) {
      int64_t used = std::max<int64_t>(read_number(d / usage_file), 0);
      // Page cache is reclaimed before the cgroup's OOM killer runs.
      int64_t cache = read_key(d / "memory.stat", v2 ? "inactive_file" : "total_inactive_file", false);
      if (cache < 0 && !v2) cache = read_key(d / "memory.stat", "inactive_file", false);
      lower(m, limit - std::max<int64_t>(used - std::max<int64_t>(cache, 0), 0),
            v2 ? "cgroup memory.max" : "cgroup memory.limit_in_bytes");
    }
    if (d == root || d == d.parent_path()) break;
  }
}

}  // namespace

HostMemory host_memory(const HostMemorySources& src) {
  HostMemory m;
  if (int64_t avail = read_key(src.meminfo, "MemAvailable", true); avail >= 0) lower(m, avail, "MemAvailable");

  std::ifstream cg(src.self_cgroup);
  std::string line;
  const fs::path root = src.cgroup_root;
  std::error_code ec;
  while (std::getline(cg, line)) {   // "ID:CONTROLLERS:PATH"
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",", path = line.substr(b + 1);
    if (line.compare(0, a, "0") == 0 && controllers == ",,") {
      const fs::path v2 = fs::exists(root / "cgroup.controllers", ec) ? root : root / "unified";
      if (fs::is_directory(v2, ec)) cgroup_limits(m, v2, path, true);
    } else if (controllers.find(",memory,") != std::string::npos) {
      cgroup_limits(m, root / "memory", path, false);
    }
  }

  if (src.address_space_limit) {
    for (auto [resource, used_key, name] : {std::tuple{RLIMIT_AS, "VmSize", "RLIMIT_AS"}, std::tuple{RLIMIT_DATA, "VmData", "RLIMIT_DATA"}}) {
      rlimit rl{};
      if (getrlimit(resource, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > uint64_t(INT64_MAX)) continue;
      lower(m, int64_t(rl.rlim_cur) - std::max<int64_t>(read_key(src.self_status, used_key, true), 0), name);
    }
  }
  return m;
}

HostMemory host_memory_recent() {
  static std::mutex mu;
  static std::chrono::steady_clock::time_point at;
  static HostMemory last;
  static bool have = false;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu);
  if (!have || std::chrono::duration<double>(now - at).count() > kHostMemoryReuseSeconds) {
    last = host_memory();
    at = now;
    have = true;
  }
  return last;
}

}  // namespace gamut
