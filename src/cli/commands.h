// The `gamut` subcommands; each returns the process exit status. run, explain, check and demo
// are users of the public C++ API (include/gamut/gamut.h): a gamut::Query runs them, as it runs
// a library caller's query. What stays here is the command line's own: reading and writing
// .npy files, the progress bar, the summary and JSON.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "gamut/gamut.h"

namespace gamut::cli {

struct QueryArgs {
  std::string file;                  // QUERY file, or "" with -e
  std::optional<std::string> text;   // -e TEXT
  std::vector<std::string> bindings;
  std::vector<std::string> dims;
};

// Where and how `run` reports its results.
struct RunOutput {
  std::optional<std::string> dir;  // -o DIR: write every output there; else small ones are printed
  bool json = false;               // the summary as one JSON object
  bool quiet = false;              // no progress bar
};

// The query: the -e text ("<expr>") or the file, compiled (query errors are thrown here).
Query load_query(const QueryArgs& q);

int cmd_run(const QueryArgs& q, Options opt, const RunOutput& out);
// print_source: also print the CUDA kernels the GPU backend would compile for these bindings.
int cmd_explain(const QueryArgs& q, const Options& opt, bool print_source = false);
int cmd_check(const QueryArgs& q);
int cmd_cache(const std::string& action);
int cmd_device();
int cmd_peak(const std::string& json_path, int repeats);
int cmd_demo(const Options& opt, int size, const std::string& examples_dir, bool json);
int cmd_tune(TuneOptions opt, bool quiet);

std::string shape_text(const std::vector<int64_t>& s);
// Work of the bound query per second, in billions of inner steps (SPR): batch * M * N * K / s.
double steps_per_second(const RunStats& s);

}  // namespace gamut::cli
