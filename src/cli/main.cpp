// gamut: declarative matrix-multiplication-like tasks on the GPU or the CPU.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/commands.h"
#include "core/error.h"
#include "lang/diagnostics.h"

using namespace gamut;

namespace {

Backend parse_backend(const std::string& s) {
  if (s == "cpu") return Backend::Cpu;
  if (s == "gpu") return Backend::Gpu;
  return Backend::Auto;
}

// Every failure is one clear line on stderr (query errors add the source line and a caret).
int report(const Error& e) {
  std::cerr << e.what() << "\n";
  return int(e.code());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gamut: matrix-multiplication-like tasks as declarative queries, run as fused GPU kernels or on the CPU"};
  app.set_version_flag("--version", std::string("gamut ") + GAMUT_VERSION);
  app.require_subcommand(1);

  std::vector<std::string> positionals, dims;
  std::string expr_text, backend = "auto", out_dir, tile, f32_math = "ieee";
  bool json = false;
  int threads = 0, size = 256;

  auto add_query = [&](CLI::App* sub, bool with_bindings) {
    sub->add_option("-e", expr_text, "query text instead of a file");
    sub->add_option("args", positionals, with_bindings ? "QUERY file, then NAME=VALUE bindings (NAME=file.npy or NAME=number)"
                                                       : "QUERY file");
  };
  auto add_backend = [&](CLI::App* sub) {
    sub->add_option("--backend", backend, "auto (GPU when present), cpu or gpu")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    sub->add_option("--threads", threads, "CPU engine threads (default: all)");
    sub->add_option("--tile", tile, "GPU tile BMxBNxBK[/TMxTN] (benchmarking)");
    sub->add_option("--f32-math", f32_math, "sums of products of f32 inputs: ieee (default), tf32x3 or tf32")
        ->check(CLI::IsMember({"ieee", "tf32x3", "tf32"}));
  };

  CLI::App* run = app.add_subcommand("run", "run a query on bound data");
  add_query(run, true);
  add_backend(run);
  run->add_option("-o", out_dir, "write every output as DIR/NAME.npy");
  run->add_option("--dim", dims, "extents of an aggregate output, NAME=D1[,D2]");
  run->add_flag("--json", json, "print the summary as JSON");
  int repeats = 0;
  run->add_option("--repeat", repeats, "GPU: time this many launches after a warm-up and report the median");
  bool no_rewrite = false;
  run->add_flag("--no-rewrite", no_rewrite, "run the query as written (no aggregate push-down)");

  CLI::App* explain = app.add_subcommand("explain", "print the plan (typed when inputs are bound)");
  add_query(explain, true);
  add_backend(explain);
  explain->add_option("--dim", dims, "extents of an aggregate output, NAME=D1[,D2]");
  explain->add_flag("--no-rewrite", no_rewrite, "show the plan as written (no aggregate push-down)");
  bool print_source = false;
  explain->add_flag("--source", print_source, "also print the generated CUDA kernel (needs the inputs bound)");

  CLI::App* check = app.add_subcommand("check", "check a query without data");
  add_query(check, false);

  CLI::App* cache = app.add_subcommand("cache", "list or clear the compiled-kernel cache");
  std::string cache_action;
  cache->add_option("action", cache_action, "list | clear")->required()->check(CLI::IsMember({"list", "clear"}));

  CLI::App* peak = app.add_subcommand("peak", "measure the device's throughput ceilings (semiring steps, copy bandwidth)");
  std::string peak_json;
  int peak_repeats = 5;
  peak->add_option("--json", peak_json, "also write the report as JSON to this file");
  peak->add_option("--repeats", peak_repeats, "timed repetitions per microbenchmark (median)");

  CLI::App* device = app.add_subcommand("device", "describe the GPU gamut would use (exit 4 when there is none)");

  CLI::App* demo = app.add_subcommand("demo", "run every example query on generated data, one summary line each");
  add_backend(demo);
  demo->add_option("--size", size, "M = N = K of the generated data (default 256)");
  demo->add_flag("--json", json, "one JSON object per line");
  std::string examples_dir;
  demo->add_option("--examples", examples_dir, "folder of .mmlt files (default: the examples/ folder of this build)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::cerr << "usage error: " << msg << " (see gamut --help)\n";
    return int(ExitCode::Usage);
  }

  RunOptions opt;
  opt.backend = parse_backend(backend);
  opt.threads = threads;
  opt.tile = tile;
  opt.f32_math = *f32_math_from_name(f32_math);   // checked by CLI11 above
  opt.repeats = repeats;
  try {
    cli::QueryArgs q;
    q.text = expr_text;
    q.dims = dims;
    q.rewrites = !no_rewrite;
    bool has_e = !expr_text.empty() || run->count("-e") + explain->count("-e") + check->count("-e") > 0;
    if (has_e) {
      q.bindings = positionals;
    } else if (!positionals.empty()) {
      q.file = positionals[0];
      q.bindings.assign(positionals.begin() + 1, positionals.end());
    }
    if (*run) return cli::cmd_run(std::move(q), opt, out_dir, json);
    if (*explain) return cli::cmd_explain(std::move(q), opt, print_source);
    if (*check) {
      if (!q.bindings.empty()) throw_usage_error("'check' takes only the query (no bindings)");
      return cli::cmd_check(std::move(q));
    }
    if (*cache) return cli::cmd_cache(cache_action);
    if (*device) return cli::cmd_device();
    if (*peak) return cli::cmd_peak(peak_json, peak_repeats);
    if (*demo) return cli::cmd_demo(opt, size, examples_dir, json);
    return int(ExitCode::Usage);
  } catch (const Error& e) {
    return report(e);
  } catch (const std::bad_alloc&) {
    std::cerr << "resource error: out of host memory\n";
    return int(ExitCode::Device);
  } catch (const std::exception& e) {
    // A bug, not the user's input: still one line and no partial output.
    std::cerr << "internal error: " << e.what() << "\n";
    return int(ExitCode::Device);
  }
}
