// What a library Query keeps between calls (query.cpp): per signature of input element types its
// typed plan (typing and the plan rewrites run once) and the GPU engine's kernel memo for it,
// the same plan with list provenance, the one-sided rewrite per shape, and the kernel memos of
// rewritten programs' stages. Every map is bounded: a caller cycling through types or shapes
// rebuilds. Safe to use from several threads at once.
#pragma once
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "driver/pipeline.h"

namespace gamut::api {

struct TypedPlan {
  Plan plan;
  std::shared_ptr<void> kernel_memo;
  // The plan with list provenance (Options::list_provenance) and its own kernel memo: made on
  // first use (QueryMemo::provenance_plan).
  std::shared_ptr<TypedPlan> provenance;
  // The one-sided rewrite (or none) per one_sided_key (QueryMemo::one_sided).
  std::map<std::string, std::shared_ptr<const std::optional<BoundRewrite>>> one_sided;
  // Whether a call ran with this plan: only the first compiles its kernels ahead
  // (RunOptions::compile_ahead; later calls find them in the memos).
  std::shared_ptr<std::atomic<bool>> ran = std::make_shared<std::atomic<bool>>(false);
};

class QueryMemo {
 public:
  // The typed plan for the bindings' input types.
  std::shared_ptr<TypedPlan> typed_plan(const Source& source, const Bindings& b);
  // typed_plan's, with list provenance where the plan has top/bottom lists (else `t` itself).
  std::shared_ptr<TypedPlan> provenance_plan(const std::shared_ptr<TypedPlan>& t);
  // The one-sided rewrite of `t`'s plan bound as `inst` under `math`: made once per shape (making
  // it plans its stages, about as long as the rest of a small call).
  std::optional<BoundRewrite> one_sided(TypedPlan& t, const Source& source, const Instance& inst, const Bindings& b,
                                        F32Math math);
  // A rewritten program's stage memo by its key (RunOptions::stage_memo).
  std::shared_ptr<StageMemo> stage_memo(const std::string& key);

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<TypedPlan>> typed_;  // by "A:8;B:8;"
  std::map<std::string, std::shared_ptr<StageMemo>> stage_memos_;
};

}  // namespace gamut::api
