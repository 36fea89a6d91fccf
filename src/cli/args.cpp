#include "cli/args.h"

#include <CLI/CLI.hpp>
#include <cstring>
#include <iostream>

#include "core/error.h"
#include "cuda/codegen/kernel_variants.h"
#include "cuda/gpu_engine.h"
#include "lang/diagnostics.h"
#include "partition/multi_device.h"

namespace gamut::cli {

const std::vector<std::string>& subcommand_names() {
  static const std::vector<std::string> names{"run", "explain", "check", "cache", "peak", "device", "demo", "tune"};
  return names;
}

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + v[k];
  return s;
}

// CLI11 would call an unknown word an unexpected argument, or say that a subcommand is
// required: name it, and the word it is closest to.
void check_subcommand(int argc, const char* const* argv) {
  for (int a = 1; a < argc; ++a) {
    if (argv[a][0] == '-') continue;   // --help, --version; CLI11 reports other flags
    const std::string word = argv[a];
    for (const std::string& n : subcommand_names())
      if (word == n) return;
    std::string near = closest_name(word, subcommand_names());
    throw_usage_error("unknown subcommand '" + word + "'" + (near.empty() ? "" : " (did you mean '" + near + "'?)") +
                      "; the subcommands are " + joined(subcommand_names()));
  }
  if (argc > 1) return;
  throw_usage_error("give a subcommand: " + joined(subcommand_names()) + " (see gamut --help)");
}

// Checks that CLI11's types cannot express.
void check_values(const Invocation& inv, bool threads_given, bool out_given, bool text_given) {
  if (threads_given && (inv.options.threads < 1 || inv.options.threads > kMaxThreads))
    throw_usage_error("--threads " + std::to_string(inv.options.threads) + ": give a count from 1 to " +
                      std::to_string(kMaxThreads) + " (without --threads, every hardware thread is used)");
  if (inv.options.repeats < 0 || inv.options.repeats > 100000)
    throw_usage_error("--repeat " + std::to_string(inv.options.repeats) + ": give a count from 1 to 100000");
  if (inv.peak_repeats < 1 || inv.peak_repeats > 100000)
    throw_usage_error("--repeats " + std::to_string(inv.peak_repeats) + ": give a count from 1 to 100000");
  if (inv.demo_size < 1 || inv.demo_size > 1 << 16)
    throw_usage_error("--size " + std::to_string(inv.demo_size) + ": give a size from 1 to 65536");
  if (out_given && inv.output.dir && inv.output.dir->empty())
    throw_usage_error("-o '': give the directory to write the outputs to (-o . for this one)");
  if (text_given && inv.query.text && inv.query.text->empty()) throw_usage_error("-e '': the query text is empty");
  // Checked whichever engine runs: a tile the GPU would refuse is refused on the CPU too.
  if (!inv.options.tile.empty()) (void)cuda::parse_tile(inv.options.tile);
  std::string why;
  if (!inv.options.kernel_variant.empty() && !cuda::parse_kernel_variant(inv.options.kernel_variant, &why))
    throw_usage_error(why);
}

// "16384x256,16384x1024" -> (M = N, K) pairs.
std::vector<std::pair<int64_t, int64_t>> parse_tune_sizes(const std::string& text) {
  std::vector<std::pair<int64_t, int64_t>> out;
  size_t p = 0;
  while (p <= text.size()) {
    size_t e = text.find(',', p);
    if (e == std::string::npos) e = text.size();
    const std::string part = text.substr(p, e - p);
    const size_t x = part.find('x');
    auto number = [&](const std::string& s) -> int64_t {
      if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos)
        throw_usage_error("--sizes " + text + ": expected MxK pairs such as 16384x256,16384x1024");
      return std::stoll(s);
    };
    if (x == std::string::npos) number("");
    out.emplace_back(number(part.substr(0, x)), number(part.substr(x + 1)));
    p = e + 1;
  }
  return out;
}

}  // namespace

bool wants_json(int argc, const char* const* argv) {
  bool json = false, run_or_demo = false;
  for (int a = 1; a < argc; ++a) {
    if (std::strcmp(argv[a], "--") == 0) break;
    json |= std::strcmp(argv[a], "--json") == 0;
    run_or_demo |= std::strcmp(argv[a], "run") == 0 || std::strcmp(argv[a], "demo") == 0;
  }
  return json && run_or_demo;
}

ParsedArgs parse_command_line(int argc, const char* const* argv) {
  CLI::App app{"gamut: matrix-multiplication-like tasks as declarative queries, run as fused GPU kernels or on the CPU"};
  app.set_version_flag("--version", std::string("gamut ") + GAMUT_VERSION);
  app.require_subcommand(1);

  Invocation inv;
  std::vector<std::string> positionals;
  std::string expr_text, backend = "auto", out_dir, f32_math = "ieee", gpus, tune_sizes;
  bool heuristic = false;

  auto add_query = [&](CLI::App* sub, bool with_bindings) {
    sub->add_option("-e", expr_text, "query text instead of a file");
    sub->add_option("args", positionals, with_bindings ? "QUERY file, then NAME=VALUE bindings (NAME=file.npy or NAME=number)"
                                                       : "QUERY file");
  };
  auto add_gpus = [&](CLI::App* sub) {
    sub->add_option("--gpus", gpus,
                    "split the run over several GPUs of this host: a count, all, or ordinals such as 0,1 (default: one GPU)");
  };
  auto add_backend = [&](CLI::App* sub) {
    sub->add_option("--backend", backend, "auto (GPU when present), cpu or gpu")
        ->check(CLI::IsMember({"auto", "cpu", "gpu"}));
    sub->add_option("--threads", inv.options.threads,
                    "CPU engine threads, 1 to " + std::to_string(kMaxThreads) + " (default: every hardware thread)");
    sub->add_option("--tile", inv.options.tile, "GPU tile BMxBNxBK[/TMxTN] (benchmarking)");
    sub->add_option("--kernel-variant", inv.options.kernel_variant,
                    "GPU kernel variant as `gamut tune` names them, e.g. 'wgmma 64x128 s3 b2' (benchmarking)");
    sub->add_flag("--heuristic", heuristic, "GPU: the heuristics' kernel even where `gamut tune` stored a winner");
    sub->add_option("--f32-math", f32_math, "sums of products of f32 inputs: ieee (default), tf32x3 or tf32")
        ->check(CLI::IsMember({"ieee", "tf32x3", "tf32"}));
  };

  CLI::App* run = app.add_subcommand("run", "run a query on bound data");
  add_query(run, true);
  add_backend(run);
  add_gpus(run);
  run->add_option("-o", out_dir, "write every output as DIR/NAME.npy (without -o: small outputs are printed)");
  run->add_option("--dim", inv.query.dims, "extents of an aggregate output, NAME=D1[,D2]");
  run->add_flag("--json", inv.json, "print the summary (and errors) as JSON");
  run->add_flag("--quiet", inv.output.quiet, "no progress bar on a terminal");
  run->add_option("--repeat", inv.options.repeats, "GPU: time this many launches after a warm-up and report the median");
  bool no_rewrite = false, as_written = false;
  run->add_flag("--no-rewrite", no_rewrite, "run the query as written (no bound rewrite)");
  run->add_flag("--as-written", as_written,
                "keep the query's arithmetic: no hoisted one-sided sums, no expanded squared differences");

  CLI::App* explain = app.add_subcommand("explain", "print the plan (typed when inputs are bound)");
  add_query(explain, true);
  add_backend(explain);
  add_gpus(explain);
  explain->add_option("--dim", inv.query.dims, "extents of an aggregate output, NAME=D1[,D2]");
  explain->add_flag("--no-rewrite", no_rewrite, "show the plan as written (no bound rewrite)");
  explain->add_flag("--as-written", as_written,
                    "keep the query's arithmetic: no hoisted one-sided sums, no expanded squared differences");
  explain->add_flag("--source", inv.print_source, "also print the generated CUDA kernel (needs the inputs bound)");

  CLI::App* check = app.add_subcommand("check", "check a query without data");
  add_query(check, false);

  CLI::App* cache = app.add_subcommand("cache", "list or clear the compiled-kernel cache");
  cache->add_option("action", inv.cache_action, "list | clear")->required()->check(CLI::IsMember({"list", "clear"}));

  CLI::App* peak = app.add_subcommand("peak", "measure the device's throughput ceilings (semiring steps, copy bandwidth)");
  peak->add_option("--json", inv.peak_json, "also write the report as JSON to this file");
  peak->add_option("--repeats", inv.peak_repeats, "timed repetitions per microbenchmark (median)");

  CLI::App* device = app.add_subcommand("device", "describe the GPU gamut would use (exit 4 when there is none)");

  CLI::App* demo = app.add_subcommand("demo", "run every example query on generated data, one summary line each");
  add_backend(demo);
  demo->add_option("--size", inv.demo_size, "M = N = K of the generated data (default 256)");
  demo->add_flag("--json", inv.json, "one JSON object per line");
  demo->add_option("--examples", inv.examples_dir, "folder of .mmlt files (default: the examples/ folder of this build)");

  CLI::App* tune = app.add_subcommand("tune", "search the GPU kernel variants per family and store the winners for this GPU");
  tune->add_option("--family", inv.tune.families, "products, lists, semirings or batched (repeatable; default: all)")
      ->check(CLI::IsMember(tune_families()));
  tune->add_option("--seconds", inv.tune.seconds, "the whole search's time budget (default 540: under 10 minutes)");
  tune->add_option("--sizes", tune_sizes, "M=N x K of the reference queries, comma-separated (default 16384x256,16384x1024)");
  tune->add_option("--out", inv.tune.out_dir, "also write the table with every variant's time to this folder");
  tune->add_option("--repeat", inv.tune.repeats, "timed launches per variant (median; default 5)");
  tune->add_flag("--quiet", inv.output.quiet, "no progress bar on a terminal");

  ParsedArgs parsed;
  try {
    check_subcommand(argc, argv);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    parsed.exit_now = app.exit(e);
    return parsed;
  } catch (const CLI::CallForAllHelp& e) {
    parsed.exit_now = app.exit(e);
    return parsed;
  } catch (const CLI::CallForVersion& e) {
    parsed.exit_now = app.exit(e);
    return parsed;
  } catch (const CLI::ParseError& e) {
    throw_usage_error(std::string(e.what()) + " (see gamut --help)");
  }

  inv.command = *run ? Command::Run : *explain ? Command::Explain : *check ? Command::Check : *cache ? Command::Cache
              : *peak ? Command::Peak : *device ? Command::Device : *demo ? Command::Demo : Command::Tune;
  inv.options.backend = backend;     // both checked by CLI11 above
  inv.options.f32_math = f32_math;
  inv.options.rewrites = !no_rewrite;
  inv.options.as_written = as_written;
  inv.options.tuned = !heuristic;
  if (!tune_sizes.empty()) inv.tune.sizes = parse_tune_sizes(tune_sizes);
  if (!(inv.tune.seconds > 0) || inv.tune.seconds > 86400)
    throw_usage_error("--seconds " + std::to_string(inv.tune.seconds) + ": give a budget from 1 to 86400 seconds");
  if (inv.tune.repeats < 1 || inv.tune.repeats > 1000)
    throw_usage_error("--repeat " + std::to_string(inv.tune.repeats) + ": give a count from 1 to 1000");
  const bool text_given = run->count("-e") + explain->count("-e") + check->count("-e") > 0;
  if (text_given) {
    inv.query.text = expr_text;
    inv.query.bindings = positionals;
  } else if (!positionals.empty()) {
    inv.query.file = positionals[0];
    inv.query.bindings.assign(positionals.begin() + 1, positionals.end());
  }
  if (run->count("--gpus") + explain->count("--gpus") > 0) {
    const DeviceRequest req = parse_device_request(gpus, "--gpus");
    inv.options.devices = Devices{req.count, req.ordinals};
  }
  const bool out_given = run->count("-o") > 0;
  if (out_given) inv.output.dir = out_dir;
  inv.output.json = inv.json;
  const bool threads_given = run->count("--threads") + explain->count("--threads") + demo->count("--threads") > 0;
  check_values(inv, threads_given, out_given, text_given);
  if (inv.command == Command::Check && !inv.query.bindings.empty())
    throw_usage_error("'check' takes only the query (no bindings)");
  parsed.invocation = std::move(inv);
  return parsed;
}

}  // namespace gamut::cli
