#include "cli/app.h"

#include <iostream>

#include "cli/report.h"

namespace gamut::cli {

int dispatch(const Invocation& inv) {
  switch (inv.command) {
    case Command::Run: return cmd_run(inv.query, inv.options, inv.output);
    case Command::Explain: return cmd_explain(inv.query, inv.options, inv.print_source);
    case Command::Check: return cmd_check(inv.query);
    case Command::Cache: return cmd_cache(inv.cache_action);
    case Command::Peak: return cmd_peak(inv.peak_json, inv.peak_repeats);
    case Command::Device: return cmd_device();
    case Command::Demo: return cmd_demo(inv.options, inv.demo_size, inv.examples_dir, inv.json);
    case Command::Tune: return cmd_tune(inv.tune, inv.output.quiet);
  }
  return int(ExitCode::Usage);
}

int run_command_line(int argc, const char* const* argv) {
  const bool json = wants_json(argc, argv);
  try {
    ParsedArgs parsed = parse_command_line(argc, argv);
    if (!parsed.invocation) return parsed.exit_now;
    return dispatch(*parsed.invocation);
  } catch (...) {
    return report_failure(failure_of(std::current_exception()), json, std::cout, std::cerr);
  }
}

}  // namespace gamut::cli
