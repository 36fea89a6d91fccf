// One library call's query bound to its inputs (query.cpp): the memo's typed plan as it is (no
// copy), or, where a bound rewrite applies, a Prepared of its own with the rewrite's stage
// program. Run, explain and the kernel listings bind a call the same way.
#pragma once
#include <memory>

#include "api/query_memo.h"
#include "api/staging.h"

namespace gamut::api {

// Inputs the GPU engine reads in device memory are never read on the host, so the bound rewrites
// that read the data stay off for them. Under list provenance (Options::list_provenance) they stay
// off too (a block's lists keep their hidden columns); the one-sided rewrite applies, its last
// stage carrying the hidden columns (carry_list_provenance).
class BoundCall {
 public:
  // Takes the staged bindings (and reads the staged device inputs).
  BoundCall(QueryMemo& memo, const Source& source, StagedInputs& staged, const Options& options);
  BoundCall(const BoundCall&) = delete;
  BoundCall& operator=(const BoundCall&) = delete;

  const Plan& plan() const { return prep_ ? prep_->plan : typed_->plan; }
  Instance& instance() { return prep_ ? prep_->instance : bound_; }
  // The rewritten program's Prepared; null where none applies.
  const Prepared* prepared() const { return prep_.get(); }
  // The typed plan's kernel memo (for a run without a rewrite); the call keeps it alive.
  std::shared_ptr<void>* kernel_memo() const { return &typed_->kernel_memo; }
  // True for the first call that runs with this typed plan (RunOptions::compile_ahead).
  bool first_run() const { return !typed_->ran->exchange(true); }
  // A Prepared in every case (explain, kernel sources): where no rewrite applies, a copy of the
  // typed plan bound once more. Consumes the call.
  std::unique_ptr<Prepared> take_prepared(const Source& source);

 private:
  std::shared_ptr<TypedPlan> typed_;
  Bindings bindings_;  // (moved into prep_ where there is one)
  Instance bound_;     // typed_->plan bound to bindings_
  std::unique_ptr<Prepared> prep_;
};

}  // namespace gamut::api
