// The winners of `gamut tune` for one device: a JSON file in the kernel cache directory, keyed by
// the device's name, SM count, the driver's version and gamut's version, that choose_kernel_spec
// consults (docs/tensor-cores.md, "Tuned kernels"). No device needed: the engine names the
// device, this file reads, writes and looks up.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gamut::cuda {

struct TunedDevice {
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int sm_count = 0;
  int driver = 0;     // cudaDriverGetVersion: 12090 is 12.9
  std::string gamut;  // gamut::version()
  // kCodegenSchema of the generator whose kernels were timed: a table outlives neither (session 37:
  // a table tuned before the DPX tropical step kept max-plus on the tile the slow step preferred).
  std::string codegen;
  bool operator==(const TunedDevice& o) const {
    return name == o.name && sm_count == o.sm_count && driver == o.driver && gamut == o.gamut && codegen == o.codegen;
  }
};

// One winner: for kernels of `family` (kernel_family) at the size it was tuned at, `variant`
// (a KernelVariant's text; the heuristics' own where they won). The rest says how it was found.
struct TunedEntry {
  std::string family, query;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  std::string variant;
  double ms = 0;
  std::string heuristic;  // the heuristics' variant, and its time in the same run
  double heuristic_ms = 0;
};

class TunedTable {
 public:
  TunedDevice device;
  std::vector<TunedEntry> entries;
  // The entry of `family` tuned at the size nearest to m x n x batch pairs and k (in factors of
  // two: of the pairs' side, sqrt(m n batch), and of k), where that is at most kMaxSteps away
  // in all; null otherwise.
  const TunedEntry* lookup(const std::string& family, int64_t m, int64_t n, int64_t k, int64_t batch) const;
  static constexpr double kMaxSteps = 4;
  // Replaces the entries of the same family and size by `e`.
  void put(const TunedEntry& e);
};

// The table as JSON text ("format": "gamut-tuned-1"), with `searched` (JSON text of every timed
// variant, for plots; "" none) kept under "searched".
std::string tuned_table_text(const TunedTable& t, const std::string& searched_json = "");
// The table in `text`; nullopt (with `why`) where it is not one (corrupt, another format).
std::optional<TunedTable> parse_tuned_table(const std::string& text, std::string* why = nullptr);
// Where the table of `device` lives: CACHE_DIR/tuned/NAME-SMSsm-driverD-gamutV.json (the
// name's characters other than letters, digits, '.', '-' as '_').
std::string tuned_table_path(const std::string& cache_dir, const TunedDevice& device);

// The table of `device` in `cache_dir`, read once per process and device: null where there is
// none. A table that cannot be read, is corrupt or names another device is ignored with one
// warning line on stderr (once per file), never an error.
std::shared_ptr<const TunedTable> tuned_table_for(const std::string& cache_dir, const TunedDevice& device);
// Forgets the tables read (after `gamut tune` wrote one; tests).
void forget_tuned_tables();
// Bumped by forget_tuned_tables: kernel choices remembered under an older value are stale.
unsigned tuned_tables_generation();

}  // namespace gamut::cuda
