// The whole `gamut` command: parse the command line, run the subcommand, report a failure.
#pragma once
#include "cli/args.h"

namespace gamut::cli {

// Runs one parsed invocation; returns the exit status (errors are thrown).
int dispatch(const Invocation& inv);

// Parses, dispatches and reports; returns the process exit status (spec section 9).
int run_command_line(int argc, const char* const* argv);

}  // namespace gamut::cli
