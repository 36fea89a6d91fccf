// Writing a run's outputs all-or-nothing (spec section 9: a failure leaves no partial output).
//
// Each staged output is written completely to a hidden temporary file in the destination
// directory (DIR/.NAME.npy.tmp.PID.SEQ); commit() renames them to DIR/NAME.npy (a rename within
// one directory is atomic, so a reader never sees a half-written NAME.npy). If the object is
// destroyed without commit() every temporary is removed, and directories it created are removed
// again when empty. A file NAME.npy from an earlier run is left untouched until commit().
// Errors (directory cannot be created, disk full, rename fails) throw Error(ExitCode::Device)
// with one line naming the path.
#pragma once
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

  // NAME is a plain file name without ".npy" (no '/'); staging a name twice replaces it.
  void stage(const std::string& name, const NDArray& a);
  void stage(const std::string& name, const Table& t);
  // Renames every staged file into place; creates DIR even when nothing was staged.
  void commit();

  const std::string& dir() const { return dir_; }
  std::string final_path(const std::string& name) const;

 private:
  struct Staged {
    std::string name, temp;
    bool done = false;
  };
  void ensure_dir();
  Staged& begin_stage(const std::string& name);
  void finish_stage_failure(const std::string& name);

  std::string dir_;
  std::vector<std::string> created_dirs_;   // innermost last; removed if empty and not committed
  std::vector<Staged> staged_;
  bool committed_ = false;
  unsigned seq_ = 0;
};

}  // namespace gamut
