#include "data/output_files.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>

#include "core/error.h"
#include "data/npy.h"

namespace fs = std::filesystem;

namespace gamut {

OutputCommit::OutputCommit(std::string dir) : dir_(dir.empty() ? "." : std::move(dir)) {}

OutputCommit::~OutputCommit() {
  std::error_code ec;
  for (const Staged& s : staged_)
    if (!s.done) fs::remove(s.temp, ec);
  // Only directories we made, innermost first; remove() refuses non-empty ones, so nothing
  // that someone else put there is lost.
  if (!committed_)
    for (auto it = created_dirs_.rbegin(); it != created_dirs_.rend(); ++it) fs::remove(*it, ec);
}

std::string OutputCommit::final_path(const std::string& name) const {
  return (fs::path(dir_) / (name + ".npy")).string();
}

void OutputCommit::ensure_dir() {
  std::error_code ec;
  fs::path d(dir_);
  if (fs::is_directory(d, ec)) return;
  if (fs::exists(fs::symlink_status(d, ec)))
    throw_device_error("cannot create output directory " + dir_ + ": a file of that name exists");
  // Remember which levels are missing so that a failed run can take them away again.
  std::vector<std::string> missing;
  for (fs::path p = d; !p.empty(); p = p.parent_path()) {
    if (fs::exists(fs::symlink_status(p, ec))) break;
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  fs::create_directories(d, ec);
  if (ec || !fs::is_directory(d))
    throw_device_error("cannot create output directory " + dir_ + ": " +
                       (ec ? ec.message() : std::string("not a directory")));
  created_dirs_.insert(created_dirs_.end(), missing.rbegin(), missing.rend());
}

OutputCommit::Staged& OutputCommit::begin_stage(const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      name.find('\0') != std::string::npos)
    throw std::invalid_argument("OutputCommit: bad output name '" + name + "'");
  ensure_dir();
  // Staging a name again replaces the earlier version.
  std::error_code ec;
  for (auto it = staged_.begin(); it != staged_.end();) {
    if (it->name == name && !it->done) {
      fs::remove(it->temp, ec);
      it = staged_.erase(it);
    } else {
      ++it;
    }
  }
  std::string temp = (fs::path(dir_) / ("." + name + ".npy.tmp." + std::to_string(::getpid()) + "." +
                                        std::to_string(seq_++))).string();
  staged_.push_back(Staged{name, temp, false});
  return staged_.back();
}

// A write that failed part way: drop its temporary before the error propagates.
void OutputCommit::finish_stage_failure(const std::string& name) {
  std::error_code ec;
  if (!staged_.empty() && staged_.back().name == name) {
    fs::remove(staged_.back().temp, ec);
    staged_.pop_back();
  }
}

void OutputCommit::stage(const std::string& name, const NDArray& a) {
  std::string temp = begin_stage(name).temp;
  try {
    write_npy(temp, a, final_path(name));
  } catch (...) {
    finish_stage_failure(name);
    throw;
  }
}

void OutputCommit::stage(const std::string& name, const Table& t) {
  std::string temp = begin_stage(name).temp;
  try {
    write_npy_table(temp, t, final_path(name));
  } catch (...) {
    finish_stage_failure(name);
    throw;
  }
}

void OutputCommit::commit() {
  ensure_dir();
  for (Staged& s : staged_) {
    if (s.done) continue;
    std::error_code ec;
    fs::rename(s.temp, final_path(s.name), ec);
    if (ec) throw_device_error("cannot write " + final_path(s.name) + ": " + ec.message());
    s.done = true;
  }
  committed_ = true;
}

}  // namespace gamut
