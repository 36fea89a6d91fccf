// The kernel variants a bound query may run with besides the heuristics' choice: what `gamut
// tune` searches (docs/tensor-cores.md, "Tuned kernels") and what a tuned table or
// Options::kernel_variant forces. Every variant listed for an instance is one the code
// generator accepts for it (tile validity, registers, shared memory, the mainloop's own checks).
// No device needed.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "bind/instance.h"
#include "cuda/codegen/kernel_spec.h"

namespace gamut::cuda {

// The text str() writes, back; nullopt (with `why`) when malformed.
std::optional<KernelVariant> parse_kernel_variant(const std::string& text, std::string* why = nullptr);

// The variant that describes `k` (the heuristics' choice, or a forced one): its tile and flags.
KernelVariant variant_of(const KernelChoice& k);

// `heuristic` (choose_kernel's choice for the instance and request, no variant) with `v`
// applied; nullopt (with `why`) where v does not apply to this instance on this target: a
// SIMT variant of a tensor-core kernel or the reverse, a tile the mainloop rejects, shared
// memory or registers over the device's, persistent with several blocks per SM.
std::optional<KernelChoice> apply_variant(const Instance& inst, const KernelTarget& target,
                                          const KernelRequest& request, const KernelChoice& heuristic,
                                          const KernelVariant& v, std::string* why = nullptr);

// The variants `gamut tune` searches for this instance: the heuristics' choice first, then each
// other one apply_variant accepts, no two of them generating the same kernel. Empty for a
// kernel that has none to search (mma.sync kernels, key-grouped joins, forced tiles).
std::vector<KernelVariant> kernel_variants(const Instance& inst, const KernelTarget& target,
                                           const KernelRequest& request);

// The family a tuned table files an instance's kernel under: "[batched.]OUTPUTS.MATH", OUTPUTS
// the heaviest of its outputs (product, aggregate, list, distinct, top: top / bottom lists),
// MATH the tensor-core math (bf16, f16, tf32, tf32x3), f32 (SIMT sums of f32 products) or
// simt-TYPE (every other inner operation, semirings and differences, by the first accumulator's
// type: simt-i32, simt-f32).
std::string kernel_family(const Instance& inst, const KernelChoice& heuristic);

}  // namespace gamut::cuda
