// Tuned tables (tuned_table.h): JSON text both ways, the lookup by family and nearest size, and
// the process's tables by device.
#include "cuda/codegen/tuned_table.h"

#include <atomic>
#include <cctype>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

namespace gamut::cuda {

namespace {

constexpr const char* kFormat = "gamut-tuned-1";

double log2_of(double x) { return std::log2(std::max(1.0, x)); }

// Distance between two sizes in factors of two: of the pairs' side and of k.
double size_steps(const TunedEntry& e, int64_t m, int64_t n, int64_t k, int64_t batch) {
  const double side = 0.5 * std::abs(log2_of(double(e.m) * double(e.n) * double(e.batch)) -
                                     log2_of(double(m) * double(n) * double(std::max<int64_t>(batch, 1))));
  return side + std::abs(log2_of(double(e.k)) - log2_of(double(k)));
}

}  // namespace

const TunedEntry* TunedTable::lookup(const std::string& family, int64_t m, int64_t n, int64_t k, int64_t batch) const {
  const TunedEntry* best = nullptr;
  double best_steps = kMaxSteps;
  for (const TunedEntry& e : entries) {
    if (e.family != family) continue;
    const double s = size_steps(e, m, n, k, batch);
    if (s <= best_steps) best = &e, best_steps = s;
  }
  return best;
}

void TunedTable::put(const TunedEntry& e) {
  for (TunedEntry& x : entries)
    if (x.family == e.family && x.m == e.m && x.n == e.n && x.k == e.k && x.batch == e.batch) {
      x = e;
      return;
    }
  entries.push_back(e);
}

std::string tuned_table_text(const TunedTable& t, const std::string& searched_json) {
  nlohmann::json j;
  j["format"] = kFormat;
  j["device"] = {{"name", t.device.name},
                 {"sm_count", t.device.sm_count},
                 {"driver", t.device.driver},
                 {"gamut", t.device.gamut},
                 {"codegen", t.device.codegen}};
  nlohmann::json es = nlohmann::json::array();
  for (const TunedEntry& e : t.entries)
    es.push_back({{"family", e.family},
                  {"query", e.query},
                  {"m", e.m},
                  {"n", e.n},
                  {"k", e.k},
                  {"batch", e.batch},
                  {"variant", e.variant},
                  {"ms", e.ms},
                  {"heuristic", e.heuristic},
                  {"heuristic_ms", e.heuristic_ms}});
  j["entries"] = es;
  if (!searched_json.empty()) j["searched"] = nlohmann::json::parse(searched_json, nullptr, false);
  return j.dump(1) + "\n";
}

std::optional<TunedTable> parse_tuned_table(const std::string& text, std::string* why) {
  auto no = [&](const std::string& w) -> std::optional<TunedTable> {
    if (why) *why = w;
    return std::nullopt;
  };
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return no("not JSON");
  try {
    if (j.value("format", std::string()) != kFormat) return no("not a " + std::string(kFormat) + " table");
    TunedTable t;
    const nlohmann::json& d = j.at("device");
    t.device = TunedDevice{d.at("name").get<std::string>(), d.at("sm_count").get<int>(), d.at("driver").get<int>(),
                           d.at("gamut").get<std::string>(), d.value("codegen", std::string())};
    for (const nlohmann::json& e : j.at("entries")) {
      TunedEntry x;
      x.family = e.at("family").get<std::string>();
      x.query = e.value("query", std::string());
      x.m = e.at("m").get<int64_t>();
      x.n = e.at("n").get<int64_t>();
      x.k = e.at("k").get<int64_t>();
      x.batch = e.value("batch", int64_t(1));
      x.variant = e.at("variant").get<std::string>();
      x.ms = e.value("ms", 0.0);
      x.heuristic = e.value("heuristic", std::string());
      x.heuristic_ms = e.value("heuristic_ms", 0.0);
      if (x.m < 0 || x.n < 0 || x.k < 0 || x.batch < 1) return no("an entry with a negative size");
      t.entries.push_back(std::move(x));
    }
    return t;
  } catch (const nlohmann::json::exception& e) {
    return no(std::string("a field is missing or of the wrong type (") + e.what() + ")");
  }
}

std::string tuned_table_path(const std::string& cache_dir, const TunedDevice& d) {
  std::string name;
  for (char c : d.name) name += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' ? c : '_';
  return cache_dir + "/tuned/" + name + "-" + std::to_string(d.sm_count) + "sm-driver" + std::to_string(d.driver) +
         "-gamut" + d.gamut + ".json";
}

namespace {

std::mutex tables_mu;
std::map<std::string, std::shared_ptr<const TunedTable>>& tables() {
  static std::map<std::string, std::shared_ptr<const TunedTable>> t;
  return t;
}

}  // namespace

std::shared_ptr<const TunedTable> tuned_table_for(const std::string& cache_dir, const TunedDevice& device) {
  const std::string path = tuned_table_path(cache_dir, device);
  std::lock_guard<std::mutex> lock(tables_mu);
  auto it = tables().find(path);
  if (it != tables().end()) return it->second;
  std::shared_ptr<const TunedTable> out;
  std::ifstream in(path, std::ios::binary);
  if (in) {
    std::ostringstream text;
    text << in.rdbuf();
    std::string why;
    std::optional<TunedTable> t = parse_tuned_table(text.str(), &why);
    if (t && !(t->device == device)) {
      TunedDevice same_code = t->device;
      same_code.codegen = device.codegen;
      why = same_code == device ? "it was tuned with another code generator (" +
                                      (t->device.codegen.empty() ? std::string("unrecorded") : t->device.codegen) +
                                      ", now " + device.codegen + "): run `gamut tune` again"
                                : "it was tuned on another device or gamut version (" + t->device.name + ")";
    }
    if (t && why.empty())
      out = std::make_shared<const TunedTable>(std::move(*t));
    else
      std::cerr << "gamut: warning: ignoring the tuned kernel table " << path << ": " << why << "\n";
  }
  tables()[path] = out;
  return out;
}

namespace {
std::atomic<unsigned> tables_generation{0};
}

void forget_tuned_tables() {
  std::lock_guard<std::mutex> lock(tables_mu);
  tables().clear();
  ++tables_generation;
}

unsigned tuned_tables_generation() { return tables_generation.load(); }

}  // namespace gamut::cuda
