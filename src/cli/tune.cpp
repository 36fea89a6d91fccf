// `gamut tune`: the library's search (gamut::tune) with a progress bar, one line per query and
// size, and where the table went. The plots are tools/plot_tune.py's (matplotlib).
#include <cmath>
#include <iostream>

#include "cli/commands.h"
#include "cli/progress.h"
#include "core/error.h"

namespace gamut::cli {

int cmd_tune(TuneOptions opt, bool quiet) {
  std::string why;
  // Said before anything else: without a GPU there is nothing to time.
  if (!gpu_available(&why)) throw_device_error("gamut tune needs a GPU: " + why);
  std::unique_ptr<ProgressBar> bar = terminal_progress(quiet);
  if (bar) opt.progress = [&bar](double fraction, const std::string&) { bar->update(fraction); };
  const TuneReport rep = tune(opt);
  if (bar) bar->finish();
  for (const std::string& l : rep.lines) std::cout << l << "\n";
  if (rep.stopped)
    std::cout << "the time budget (--seconds) ran out: the queries after the last line were not searched\n";
  std::cout << "searched in " << std::lround(rep.seconds) << " s; tuned table: " << rep.table_path << "\n";
  if (!rep.out_path.empty()) std::cout << "copy: " << rep.out_path << "\n";
  std::cout << "plots: python3 tools/plot_tune.py " << (rep.out_path.empty() ? rep.table_path : rep.out_path)
            << " (needs matplotlib)\n";
  return 0;
}

}  // namespace gamut::cli
