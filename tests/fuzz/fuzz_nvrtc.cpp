// Compiles with NVRTC every kernel gamut generates for one bound query, as `gamut run --backend
// gpu` would on an H100/H200 (132 SMs, 227 KiB of shared memory, sm_90a), without a GPU: the
// differential fuzzer (tests/fuzz/differential.py --nvrtc) runs it on each generated case.
// With a bound rewrite (aggregate push-down, bit packing) the stage queries are prepared one by one,
// their kernels compiled, and each stage run on the CPU engine to bind the next; the kernel of the
// query as written (`--no-rewrite`) is compiled too.
//
// usage: fuzz_nvrtc [--arch ARCH] [--tile T] [--no-rewrite] [--dim NAME=D1[,D2]]... QUERY [NAME=VALUE]...
// Prints one line per kernel; exit 0 when all compiled, 1 when one did not (the NVRTC log
// follows), 77 when this build has no NVRTC (a skip for ctest).
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "semantics/bit_pack.h"
#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;

namespace {

constexpr int kSms = 132;
constexpr size_t kSmem = 227 * 1024;

int failures = 0;
int compiled = 0;

// The kernel (or, for a key-grouped join, both variants run_gpu may launch) of one bound query.
void compile_kernels(const Prepared& p, const std::string& arch, const std::optional<cuda::TileConfig>& tile,
                     const std::string& what) {
#if GAMUT_HAVE_CUDA
  std::vector<cuda::KernelChoice> choices = {cuda::choose_kernel(p.instance, kSms, kSmem, tile)};
  if (choices[0].options.grouped_join) choices.push_back(cuda::choose_kernel(p.instance, kSms, kSmem, tile, true));
  for (const cuda::KernelChoice& k : choices) {
    const std::string label = what + " tile " + k.tile.str() + (k.options.packed16 ? " packed16" : "") +
                              (k.options.grouped_join ? " grouped-join" : "");
    std::string source;
    try {
      source = cuda::generate_source(p.plan, k.tile, k.options);
      cuda::CompileOptions o;
      o.arch = arch;
      std::string log;
      cuda::nvrtc_compile(source, o, &log);
      ++compiled;
      std::cout << "ok " << label << "\n";
    } catch (const Error& e) {
      ++failures;
      std::cout << "FAIL " << label << ": " << e.what() << "\n";
      if (!source.empty()) std::cout << source << "\n";
    }
  }
#else
  (void)p, (void)arch, (void)tile, (void)what;
#endif
}

}  // namespace

int main(int argc, char** argv) {
#if !GAMUT_HAVE_CUDA
  std::cout << "fuzz_nvrtc: this build has no CUDA backend (NVRTC); skipped\n";
  return 77;
#endif
  std::string arch = "sm_90a", tile_text;
  bool rewrites = true;
  std::vector<std::string> dims, rest;
  for (int a = 1; a < argc; ++a) {
    std::string s = argv[a];
    if (s == "--arch" && a + 1 < argc) arch = argv[++a];
    else if (s == "--tile" && a + 1 < argc) tile_text = argv[++a];
    else if (s == "--no-rewrite") rewrites = false;
    else if (s == "--dim" && a + 1 < argc) dims.push_back(argv[++a]);
    else rest.push_back(s);
  }
  if (rest.empty()) {
    std::cerr << "usage: fuzz_nvrtc [--arch ARCH] [--tile T] [--no-rewrite] [--dim NAME=D1[,D2]]... QUERY [NAME=VALUE]...\n";
    return 2;
  }
  try {
    std::optional<cuda::TileConfig> tile;
    if (!tile_text.empty()) tile = cuda::parse_tile(tile_text);
    Source src = read_query_file(rest[0]);
    Bindings b = parse_bindings(std::vector<std::string>(rest.begin() + 1, rest.end()), dims);
    auto prep = prepare(src, b, rewrites);
    if (!prep->program) {
      compile_kernels(*prep, arch, tile, "main");
    } else {
      // The stages as execute() runs them, on the CPU, compiling each stage query's kernel.
      std::map<std::string, NDArray> produced;
      for (const StageQuery& st : prep->program->stages) {
        if (st.bitpack) {
          produced[st.bitpack->output] = bit_pack_cpu(prep->bindings.arrays.at(st.bitpack->source), *st.bitpack);
          continue;
        }
        Bindings sb;
        for (const std::string& n : st.inputs) {
          if (auto it = prep->bindings.arrays.find(n); it != prep->bindings.arrays.end()) sb.arrays[n] = it->second;
          else sb.scalars[n] = prep->bindings.scalars.at(n);
        }
        for (const std::string& n : st.from_stages) sb.arrays[n] = produced.at(n);
        for (const auto& [n, d] : st.dims) sb.dims[n] = d;
        auto stage = prepare(Source{src.name + " [" + st.name + "]", st.text}, std::move(sb));
        compile_kernels(*stage, arch, tile, "stage '" + st.name + "'");
        Results r = run_cpu(stage->instance, 1);
        for (size_t d = 0; d < stage->plan.dense.size(); ++d) produced[stage->plan.dense[d].name] = r.dense[d];
      }
      // And the kernel of the query as written (what `--no-rewrite` runs).
      auto direct = prepare(src, b, false);
      compile_kernels(*direct, arch, tile, "as written");
    }
  } catch (const Error& e) {
    std::cout << "FAIL prepare: " << e.what() << "\n";
    return 1;
  }
  std::cout << compiled << " kernels compiled, " << failures << " failed\n";
  return failures ? 1 : 0;
}
