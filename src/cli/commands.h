// The `gamut` subcommands; each returns the process exit status.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "driver/pipeline.h"

namespace gamut::cli {

struct QueryArgs {
  std::string file;                  // QUERY file, or "" with -e
  std::optional<std::string> text;   // -e TEXT
  std::vector<std::string> bindings;
  std::vector<std::string> dims;
  bool rewrites = true;            // --no-rewrite turns bound rewrites (push-down) off
};

// Where and how `run` reports its results.
struct RunOutput {
  std::optional<std::string> dir;  // -o DIR: write every output there; else small ones are printed
  bool json = false;               // the summary as one JSON object
  bool quiet = false;              // no progress bar
};

// The query source: the -e text ("<expr>") or the file.
Source load_query(const QueryArgs& q);

int cmd_run(QueryArgs q, RunOptions opt, const RunOutput& out);
// print_source: also print the CUDA kernel the GPU backend would compile for these bindings.
int cmd_explain(QueryArgs q, const RunOptions& opt, bool print_source = false);
int cmd_check(QueryArgs q);
int cmd_cache(const std::string& action);
int cmd_device();
int cmd_peak(const std::string& json_path, int repeats);
int cmd_demo(const RunOptions& opt, int size, const std::string& examples_dir, bool json);

std::string shape_text(const std::vector<int64_t>& s);

// roofline.cpp: `gamut peak` saves its report in the cache directory; `explain` reads it.
std::string peak_report_path();
void save_peak_report(const std::string& json);
std::string roofline(const Prepared& p);

}  // namespace gamut::cli
