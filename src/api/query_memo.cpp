#include "api/query_memo.h"

#include <algorithm>

#include "cuda/gpu_engine.h"
#include "rewrite/list_provenance.h"

namespace gamut::api {

std::shared_ptr<TypedPlan> QueryMemo::typed_plan(const Source& source, const Bindings& b) {
  std::string sig;
  for (const auto& [name, a] : b.arrays) sig += name + ":" + std::to_string(int(a.dtype)) + ";";
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = typed_.find(sig); it != typed_.end()) return it->second;
  auto t = std::make_shared<TypedPlan>(
      TypedPlan{plan_with_rewrites(source, type_env(b)), cuda::new_kernel_memo(), nullptr, {}});
  if (typed_.size() >= 64) typed_.clear();
  typed_.emplace(sig, t);
  return t;
}

std::shared_ptr<TypedPlan> QueryMemo::provenance_plan(const std::shared_ptr<TypedPlan>& t) {
  const bool ranked =
      std::any_of(t->plan.lists.begin(), t->plan.lists.end(), [](const ListOutput& l) { return l.ranked(); });
  if (!ranked) return t;
  std::lock_guard<std::mutex> lock(mu_);
  if (!t->provenance)
    t->provenance =
        std::make_shared<TypedPlan>(TypedPlan{with_list_provenance(t->plan), cuda::new_kernel_memo(), nullptr, {}});
  return t->provenance;
}

std::optional<BoundRewrite> QueryMemo::one_sided(TypedPlan& t, const Source& source, const Instance& inst,
                                                 const Bindings& b, F32Math math) {
  const std::string key = one_sided_key(inst, math);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = t.one_sided.find(key); it != t.one_sided.end()) return *it->second;
  }
  auto made = std::make_shared<const std::optional<BoundRewrite>>(
      bound_rewrite(t.plan, inst, source, b, RewriteChoice{false, true, math}));
  std::lock_guard<std::mutex> lock(mu_);
  if (t.one_sided.size() >= 16) t.one_sided.clear();
  t.one_sided.emplace(key, made);
  return *made;
}

std::shared_ptr<StageMemo> QueryMemo::stage_memo(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = stage_memos_.find(key); it != stage_memos_.end()) return it->second;
  if (stage_memos_.size() >= 64) stage_memos_.clear();
  auto m = std::make_shared<StageMemo>();
  m->kernel_memo = cuda::new_kernel_memo();
  stage_memos_.emplace(key, m);
  return m;
}

}  // namespace gamut::api
