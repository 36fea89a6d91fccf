// The command line, parsed and checked: what `gamut` was asked to do. Every mistake is a usage
// error (exit 2) with one line; nothing here reads a query or data file.
#pragma once
#include <optional>
#include <string>

#include "cli/commands.h"

namespace gamut::cli {

enum class Command { Run, Explain, Check, Cache, Peak, Device, Demo, Tune };

// The subcommands, in --help order.
const std::vector<std::string>& subcommand_names();

constexpr int kMaxThreads = 1024;

struct Invocation {
  Command command = Command::Run;
  QueryArgs query;            // run, explain, check
  Options options;            // run, explain, demo (backend, threads, tile, repeats, f32_math, rewrites)
  RunOutput output;           // run
  bool print_source = false;  // explain --source
  std::string cache_action;   // cache list|clear
  std::string peak_json;      // peak --json FILE
  int peak_repeats = 5;
  int demo_size = 256;
  std::string examples_dir;   // demo --examples
  bool json = false;          // run, demo: --json
  TuneOptions tune;           // tune (its progress is the command's)
};

// Either an invocation, or `exit_now` after --help / --version printed their text.
struct ParsedArgs {
  std::optional<Invocation> invocation;
  int exit_now = 0;
};

// Throws Error(ExitCode::Usage) for every malformed command line.
ParsedArgs parse_command_line(int argc, const char* const* argv);

// --json anywhere on the command line of `run` or `demo`: errors are reported as JSON too, even
// those found while parsing it.
bool wants_json(int argc, const char* const* argv);

}  // namespace gamut::cli
