// The module caches: in process (key -> module) and on disk (KEY.cu, KEY.cubin, KEY.meta).
//
// Disk entries are written with atomic renames and KEY.meta (written last) carries the size
// and checksum of KEY.cubin, so concurrent writers need no lock and a torn or corrupt entry
// is seen as a miss and rebuilt.
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/error.h"
#include "cuda/runtime/embedded_headers.h"
#include "cuda/runtime.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace fs = std::filesystem;

namespace {

// Bump when the on-disk layout or anything else about how entries are made changes.
constexpr int kCacheSchema = 1;
constexpr size_t kKeyHexDigits = 32;

// FNV-1a (Fowler-Noll-Vo), 64- and 128-bit: tiny and well known; keys need no crypto strength.
struct Fnv64 {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  }
};

struct Fnv128 {
  using u128 = unsigned __int128;
  u128 h = (u128(0x6c62272e07bb0142ull) << 64) | 0x62b821756295c58dull;
  void add(std::string_view s) {
    const u128 prime = (u128(1) << 88) | 0x13b;
    for (unsigned char c : s) h = (h ^ c) * prime;
  }
  // Length-prefixed so that ("ab","c") and ("a","bc") differ.
  void field(std::string_view s) {
    add(std::to_string(s.size()));
    add(":");
    add(s);
  }
};

std::string hex(uint64_t v, int digits = 16) {
  static const char* d = "0123456789abcdef";
  std::string s(digits, '0');
  for (int i = digits - 1; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

std::string checksum(std::string_view data) {
  Fnv64 f;
  f.add(data);
  return hex(f.h);
}

// The embedded headers shape every module that includes them, so they are part of the key.
const std::string& headers_digest() {
  static const std::string digest = [] {
    Fnv128 f;
    for (int i = 0; i < kEmbeddedHeaderCount; ++i) {
      f.field(kEmbeddedHeaders[i].name);
      f.field(kEmbeddedHeaders[i].text);
    }
    return hex(uint64_t(f.h >> 64)) + hex(uint64_t(f.h));
  }();
  return digest;
}

bool is_elf(std::string_view b) { return b.size() >= 4 && b.substr(0, 4) == "\x7f" "ELF"; }

bool read_whole(const fs::path& p, std::string* out) {
  // Regular files only: a FIFO or device under an entry's name would block or never end.
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec))) return false;
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return false;
  *out = std::move(s);
  return true;
}

// Writes to a name unique to this process and call, then renames over `p`: readers see the
// old file or the new one, never a partial write.
bool write_atomic(const fs::path& p, std::string_view data) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out.write(data.data(), static_cast<std::streamsize>(data.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      return false;
    }
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) fs::remove(tmp, ec);
  return !ec;
}

fs::path entry_file(const fs::path& dir, const std::string& key, const char* ext) {
  return dir / (key + ext);
}

// The cache directory, created if needed; nullopt (memory only, no error) when unusable.
std::optional<fs::path> usable_dir() {
  const std::string d = cache_dir();
  if (d.empty()) return std::nullopt;
  std::error_code ec;
  fs::create_directories(d, ec);
  if (!fs::is_directory(d, ec)) return std::nullopt;
  return fs::path(d);
}

// True when KEY.meta and KEY.cubin agree (schema, key, size, checksum) and the cubin is ELF.
bool load_entry(const fs::path& dir, const std::string& key, std::string* cubin) {
  std::string meta_text, bin;
  if (!read_whole(entry_file(dir, key, ".meta"), &meta_text)) return false;
  if (!read_whole(entry_file(dir, key, ".cubin"), &bin)) return false;
  try {
    const auto meta = nlohmann::json::parse(meta_text);
    if (meta.at("schema").get<int>() != kCacheSchema) return false;
    if (meta.at("key").get<std::string>() != key) return false;
    if (meta.at("cubin_bytes").get<uint64_t>() != bin.size()) return false;
    if (meta.at("cubin_fnv1a64").get<std::string>() != checksum(bin)) return false;
  } catch (const std::exception&) {
    return false;  // unparsable or missing fields: a corrupt entry
  }
  if (!is_elf(bin)) return false;
  if (cubin) *cubin = std::move(bin);
  return true;
}

void store_entry(const fs::path& dir, const std::string& key, const CompiledModule& m,
                 const CompileOptions& options) {
  // Cubin first, meta last: a reader that finds a meta also finds its cubin (or a newer
  // identical one from a concurrent writer; a mismatch is only a miss).
  if (!write_atomic(entry_file(dir, key, ".cubin"), m.cubin)) return;
  nlohmann::json meta = {
      {"schema", kCacheSchema},
      {"key", key},
      {"cubin_bytes", m.cubin.size()},
      {"cubin_fnv1a64", checksum(m.cubin)},
      {"arch", options.arch},
      {"nvrtc", nvrtc_version()},
      {"options", detail::nvrtc_options(options)},
      {"compile_ms", m.compile_ms},
  };
  write_atomic(entry_file(dir, key, ".meta"), meta.dump(2) + "\n");
}

// Entry files are KEY.cu, KEY.cubin, KEY.meta; temporaries add ".tmp.PID.N". Nothing else in
// the directory is touched, in case $GAMUT_CACHE_DIR points somewhere shared.
bool parse_name(const std::string& name, std::string* key, bool* tmp) {
  const size_t dot = name.find('.');
  if (dot != kKeyHexDigits) return false;
  for (size_t i = 0; i < dot; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  const std::string rest = name.substr(dot);
  for (const char* ext : {".cu", ".cubin", ".meta"}) {
    if (rest == ext || rest.rfind(std::string(ext) + ".tmp.", 0) == 0) {
      *key = name.substr(0, dot);
      *tmp = rest != ext;
      return true;
    }
  }
  return false;
}

// The modules of this process, and the compiles under way: a second caller of a key being
// compiled waits for that compile instead of running NVRTC again (compile_ahead's helpers and
// the run share the work), and reports it as its own. A module compiled ahead is `unclaimed`
// until a caller takes it: that caller reports the compile (its time and kind) as its own,
// later ones a memory hit.
struct MemoryCache {
  struct Entry {
    CompiledModule module;
    bool unclaimed = false;
  };
  std::mutex mu;
  std::unordered_map<std::string, Entry> modules;
  std::unordered_map<std::string, std::shared_future<CompiledModule>> compiling;
};
MemoryCache& memory() {
  static MemoryCache m;
  return m;
}

}  // namespace

namespace detail {

std::string cache_key(const std::string& source, const CompileOptions& options,
                      const std::string& extra_key) {
  Fnv128 f;
  f.field("gamut-module-schema-" + std::to_string(kCacheSchema));
  f.field(source);
  f.field(extra_key);
  f.field(options.arch);
  f.field(nvrtc_version());
  for (const auto& o : nvrtc_options(options)) f.field(o);
  f.field(headers_digest());
  return hex(uint64_t(f.h >> 64)) + hex(uint64_t(f.h));
}

std::string keep_failed_source(const std::string& key, const std::string& source) {
  if (auto dir = usable_dir()) {
    fs::path p = entry_file(*dir, key, ".cu");
    if (write_atomic(p, source)) return p.string();
  }
  std::error_code ec;
  fs::path tmp = fs::temp_directory_path(ec);
  if (ec) return "";
  fs::path p = tmp / ("gamut-" + key + ".cu");
  return write_atomic(p, source) ? p.string() : "";
}

}  // namespace detail

std::string cache_dir() {
  if (const char* d = std::getenv("GAMUT_CACHE_DIR"); d && *d) return d;
  // The XDG spec says a relative XDG_CACHE_HOME is to be ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && x[0] == '/')
    return (fs::path(x) / "gamut").string();
  if (const char* h = std::getenv("HOME"); h && *h) return (fs::path(h) / ".cache" / "gamut").string();
  return "";
}

namespace {

// A module of the memory cache, claimed (MemoryCache); nullopt when absent. Under mem.mu.
std::optional<CompiledModule> take_from_memory(MemoryCache& mem, const std::string& key) {
  auto it = mem.modules.find(key);
  if (it == mem.modules.end()) return std::nullopt;
  CompiledModule m = it->second.module;
  if (it->second.unclaimed) {
    it->second.unclaimed = false;
  } else {
    m.hit = CacheHit::Memory;
    m.compile_ms = 0;
  }
  return m;
}

// From the disk cache, else NVRTC; stored on disk.
CompiledModule load_or_compile(const std::string& key, const std::string& source, const CompileOptions& options) {
  CompiledModule m;
  m.key = key;
  const auto dir = usable_dir();
  if (dir) {
    const fs::path cu = entry_file(*dir, key, ".cu");
    if (load_entry(*dir, key, &m.cubin)) {
      m.hit = CacheHit::Disk;
      std::error_code ec;
      // The .cu is only for people to read; put it back if someone deleted it.
      if (fs::exists(cu, ec) || write_atomic(cu, source)) m.source_path = cu.string();
    } else if (write_atomic(cu, source)) {
      // Written before compiling so that the NVRTC log names a file that exists.
      m.source_path = cu.string();
    }
  }
  if (m.hit != CacheHit::Disk) {
    detail::NvrtcResult r = detail::nvrtc_run(
        source, options, m.source_path.empty() ? "gamut_kernel.cu" : m.source_path);
    if (!r.ok) {
      const std::string kept =
          m.source_path.empty() ? detail::keep_failed_source(key, source) : m.source_path;
      detail::throw_compile_error(kept, r.log);
    }
    m.cubin = std::move(r.cubin);
    m.compile_ms = r.ms;
    m.hit = CacheHit::Compiled;
    if (dir) store_entry(*dir, key, m, options);
  }
  return m;
}

// compile_cached and compile_ahead: `ahead` leaves the module unclaimed, and returns at once
// where another caller is compiling the same key.
CompiledModule compile_module(const std::string& source, const CompileOptions& options, const std::string& extra_key,
                              bool ahead) {
  const std::string key = detail::cache_key(source, options, extra_key);
  auto& mem = memory();
  std::promise<CompiledModule> done;
  std::shared_future<CompiledModule> other;
  {
    std::lock_guard<std::mutex> lock(mem.mu);
    if (auto it = mem.modules.find(key); it != mem.modules.end() && ahead) return it->second.module;
    if (auto m = take_from_memory(mem, key)) return *m;
    if (auto it = mem.compiling.find(key); it != mem.compiling.end())
      other = it->second;
    else
      mem.compiling.emplace(key, done.get_future().share());
  }
  if (other.valid()) {
    if (ahead) return {};
    // The compile ran during this call: its kind and time are this call's too (several GPUs'
    // parts asking for one kernel each report it compiled). One ahead is claimed here.
    other.wait();
    {
      std::lock_guard<std::mutex> lock(mem.mu);
      if (auto it = mem.modules.find(key); it != mem.modules.end()) it->second.unclaimed = false;
    }
    return other.get();  // (the other caller's compile error, thrown again)
  }
  CompiledModule m;
  try {
    m = load_or_compile(key, source, options);
  } catch (...) {
    std::lock_guard<std::mutex> lock(mem.mu);
    mem.compiling.erase(key);
    done.set_exception(std::current_exception());
    throw;
  }
  std::lock_guard<std::mutex> lock(mem.mu);
  try {
    mem.modules[key] = {m, ahead};
  } catch (...) {  // (no memory for the entry: the waiters get the error, the next caller compiles)
    mem.compiling.erase(key);
    done.set_exception(std::current_exception());
    throw;
  }
  mem.compiling.erase(key);
  done.set_value(m);
  return m;
}

}  // namespace

CompiledModule compile_cached(const std::string& source, const CompileOptions& options,
                              const std::string& extra_key) {
  return compile_module(source, options, extra_key, false);
}

void compile_ahead(const std::string& source, const CompileOptions& options, const std::string& extra_key) {
  compile_module(source, options, extra_key, true);
}

void claim_compiled_ahead(const std::string& source, const CompileOptions& options, const std::string& extra_key) {
  const std::string key = detail::cache_key(source, options, extra_key);
  auto& mem = memory();
  std::lock_guard<std::mutex> lock(mem.mu);
  if (auto it = mem.modules.find(key); it != mem.modules.end()) it->second.unclaimed = false;
}

std::vector<CacheEntry> cache_list() {
  std::vector<CacheEntry> out;
  const std::string d = cache_dir();
  std::error_code ec;
  if (d.empty() || !fs::is_directory(d, ec)) return out;
  std::set<std::string> keys;  // sorted, so the listing is stable
  for (const auto& e : fs::directory_iterator(d, ec)) {
    std::string key;
    bool tmp = false;
    // Only files gamut writes: a directory or FIFO named like an entry is not one.
    if (e.is_regular_file(ec) && parse_name(e.path().filename().string(), &key, &tmp) && !tmp) keys.insert(key);
  }
  const fs::path dir(d);
  for (const auto& key : keys) {
    CacheEntry entry{key, 0, "", false};
    const fs::path cubin = entry_file(dir, key, ".cubin"), cu = entry_file(dir, key, ".cu");
    if (fs::is_regular_file(cubin, ec)) entry.cubin_bytes = fs::file_size(cubin, ec);
    if (ec) entry.cubin_bytes = 0;
    if (fs::is_regular_file(cu, ec)) entry.source_path = cu.string();
    entry.valid = load_entry(dir, key, nullptr);
    out.push_back(std::move(entry));
  }
  return out;
}

size_t cache_clear() {
  // Modules loaded in this process would otherwise outlive a clear.
  clear_memory_cache();
  const std::string d = cache_dir();
  std::error_code ec;
  if (d.empty() || !fs::is_directory(d, ec)) return 0;
  std::set<std::string> removed;
  std::vector<fs::path> doomed;
  std::map<fs::path, std::string> keys;
  for (const auto& e : fs::directory_iterator(d, ec)) {
    std::string key;
    bool tmp = false;
    if (e.is_regular_file(ec) && parse_name(e.path().filename().string(), &key, &tmp)) {
      doomed.push_back(e.path());
      if (!tmp) keys[e.path()] = key;
    }
  }
  // Counted as removed only when they are gone; the first failure (a read-only cache) is an
  // error after the rest were tried.
  std::string failure;
  for (const auto& p : doomed) {
    if (fs::remove(p, ec) || !ec) {
      if (auto k = keys.find(p); k != keys.end()) removed.insert(k->second);
    } else if (failure.empty()) {
      failure = "cannot remove " + p.string() + ": " + ec.message();
    }
  }
  if (!failure.empty())
    throw_device_error(failure + " (" + std::to_string(removed.size()) + " entries removed)");
  return removed.size();
}

void clear_memory_cache() {
  auto& mem = memory();
  std::lock_guard<std::mutex> lock(mem.mu);
  mem.modules.clear();
}

}  // namespace gamut::cuda
