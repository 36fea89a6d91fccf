// gamut: declarative matrix-multiplication-like tasks on the GPU or the CPU.
#include "cli/app.h"
#include "data/output_files.h"

int main(int argc, char** argv) {
  // First, before any thread starts: an interrupted run removes its unfinished outputs.
  gamut::install_interrupt_cleanup();
  return gamut::cli::run_command_line(argc, argv);
}
