// Writing a run's outputs all-or-nothing (spec section 9: a failure leaves no partial output).
//
// OutputCommit writes each staged output completely into a hidden staging directory made for
// this run inside the destination (DIR/.gamut-stage.PID.N/NAME.npy: the same file system, so
// the final rename is atomic and a reader never sees a half-written NAME.npy). commit() moves
// every staged file to DIR/NAME.npy, or none of them: a NAME.npy from an earlier run is kept
// (as a hard link in the staging directory) until every rename has succeeded, and put back if
// one fails. Without commit() (an error, or an interrupting signal: install_interrupt_cleanup)
// the staging directory and every directory this run created are removed again.
//
// An output whose final path is one of the run's own input files (protect(); compared by
// device and inode, not by name) is a usage error (exit 2), found before anything is renamed.
// Other errors (directory cannot be created, disk full, file-size limit, rename fails) throw
// Error(ExitCode::Device) with one line naming the final path.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/array.h"

namespace gamut {

class OutputCommit {
 public:
  explicit OutputCommit(std::string dir);   // nothing is created until the first stage()/commit()
  ~OutputCommit();
  OutputCommit(const OutputCommit&) = delete;
  OutputCommit& operator=(const OutputCommit&) = delete;

  // Files the run reads (query, bindings): no output may replace one of them.
  void protect(const std::vector<std::string>& inputs);
  // The usage error, now, when output NAME would replace a protected file (commit() checks
  // again; this lets a caller refuse before the run).
  void check_protected(const std::string& name) const;
  // NAME is a plain file name without ".npy" (no '/'); staging a name twice replaces it.
  void stage(const std::string& name, const NDArray& a);
  void stage(const std::string& name, const Table& t);
  // Renames every staged file into place, or none; creates DIR even when nothing was staged.
  void commit();

  const std::string& dir() const { return dir_; }
  std::string final_path(const std::string& name) const;

  struct Cleanup;   // what an abort removes; shared with the signal watcher (output_files.cpp)

 private:
  void ensure_staging_dir();
  std::string staged_path(const std::string& name) const;

  std::string dir_;
  std::unique_ptr<Cleanup> cleanup_;
  std::vector<std::string> staged_;          // names, in staging order
  std::vector<std::string> protected_;       // input paths
  bool committed_ = false;
};

// The input (one of `inputs`) that writing `output` would replace, or "" when none: the output's
// directory entry (not followed if it is a symlink: rename replaces the link) has the device and
// inode of an input's directory entry or of the file it reaches.
std::string replaced_input(const std::string& output, const std::vector<std::string>& inputs);

// For the command-line process: SIGINT, SIGTERM and SIGHUP remove every uncommitted
// OutputCommit's staging directory and created directories, then end the process by that signal
// (a commit under way finishes or rolls back first); signals the process inherited as ignored
// stay ignored. SIGXFSZ is ignored, so that a write past the file-size limit fails (EFBIG) as a
// resource error and is cleaned up like any other. Call it first in main(), before any thread
// starts: the signals are blocked in every thread and taken by one watcher thread, so the
// cleanup runs in normal context (not in a signal handler).
void install_interrupt_cleanup();

}  // namespace gamut
