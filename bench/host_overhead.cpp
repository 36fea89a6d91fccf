// Host cost of one cached library call, phase by phase (issue 13: a cached query called on small
// problems must cost at most 15 us above its kernel). Each phase is timed alone in a loop of
// calls (steady_clock, median of 7 loops) on the SGEMM query at n x n x n, f32:
//   stage        gamut::api::stage_inputs: the caller's arrays checked and bound
//   bind         bind() of the cached typed plan: extents, shapes, checks
//   rewrite?     bound_rewrite(): whether a data-dependent rewrite applies (reads host data)
//   tile         choose_kernel() for an H100/H200 (132 SMs, 227 KiB)
//   math         executed_math()
//   run cpu      Query::run on host arrays, CPU engine (includes the product)
// and, where a GPU is usable, on device arrays (the library's asynchronous path):
//   run gpu      Query::run, outputs cudaMalloc'd by the library or handed out by a caching
//                allocator, no synchronisation (the issue rate); and with a stream sync per call
//   run_gpu      the engine alone (tile choice, kernel memo, argument words, launch)
//   launch       an empty kernel's launch (the floor of any call)
//
//   host_overhead [--n 64] [--iters 2000]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "api/staging.h"
#include "cuda/runtime.h"
#include "cuda/codegen/tile_choice.h"
#include "cuda/gpu_engine.h"
#include "driver/pipeline.h"
#include "gamut/gamut.h"
#include "plan/math_choice.h"

namespace {

const char* kSgemm = "where (i, j) { a = 0; reduce (k) { a += A[i, k] * B[k, j]; } C[i, j] = a; }";

// Median over 7 loops of `iters` calls, in microseconds per call.
double us_per_call(int iters, const std::function<void()>& f) {
  for (int w = 0; w < iters / 10 + 1; ++w) f();
  std::vector<double> loops;
  for (int r = 0; r < 7; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i) f();
    loops.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters);
  }
  std::sort(loops.begin(), loops.end());
  return loops[loops.size() / 2];
}

void row(const char* what, double us) { std::printf("| %-34s | %8.2f |\n", what, us); }

}  // namespace

int main(int argc, char** argv) {
  int n = 64, iters = 2000;
  for (int a = 1; a + 1 < argc; a += 2) {
    if (!std::strcmp(argv[a], "--n")) n = std::atoi(argv[a + 1]);
    else if (!std::strcmp(argv[a], "--iters")) iters = std::atoi(argv[a + 1]);
  }
  if (n < 1 || iters < 1) {
    std::fprintf(stderr, "usage: host_overhead [--n 64] [--iters 2000]\n");
    return 2;
  }
  // Integer-valued inputs: the check below is exact.
  std::vector<float> A(size_t(n) * n), B(size_t(n) * n);
  for (size_t x = 0; x < A.size(); ++x) {
    A[x] = float(int(x * 7 % 5) - 2);
    B[x] = float(int(x * 3 % 7) - 3);
  }
  double want = 0;
  for (int k = 0; k < n; ++k) want += double(A[size_t(k)]) * B[size_t(k) * n];

  gamut::Query q = gamut::Query::compile(kSgemm, "sgemm");
  gamut::Inputs host_in;
  host_in.array("A", gamut::ArrayRef::host(A.data(), gamut::DType::F32, {n, n}))
      .array("B", gamut::ArrayRef::host(B.data(), gamut::DType::F32, {n, n}));

  std::printf("host cost per cached call, SGEMM %d^3 f32, median of 7 loops of %d calls\n\n", n, iters);
  std::printf("| phase | us per call |\n| --- | --- |\n");
  gamut::Source source{"sgemm", kSgemm};
  {
    gamut::api::StagedInputs s = gamut::api::stage_inputs(host_in, nullptr, false, {});
    const gamut::Plan plan = gamut::plan_with_rewrites(source, gamut::type_env(s.bindings));
    const gamut::Instance inst = gamut::bind(plan, s.bindings);
    row("stage (stage_inputs)", us_per_call(iters, [&] { (void)gamut::api::stage_inputs(host_in, nullptr, false, {}); }));
    row("bind", us_per_call(iters, [&] { (void)gamut::bind(plan, s.bindings); }));
    row("rewrite? (bound_rewrite)", us_per_call(iters, [&] { (void)gamut::bound_rewrite(plan, inst, source, s.bindings); }));
    row("tile (choose_kernel)", us_per_call(iters, [&] {
          (void)gamut::cuda::choose_kernel(inst, 132, 227 * 1024, std::nullopt, false, gamut::F32Math::Ieee);
        }));
    row("math (executed_math)", us_per_call(iters, [&] { (void)gamut::executed_math(plan, gamut::F32Math::Ieee); }));
  }
  gamut::Options cpu;
  cpu.backend = "cpu";
  cpu.threads = 1;
  {
    const gamut::Result r = q.run(host_in, cpu);
    if (r["C"].array.as<float>()[0] != float(want) || want == 0) {
      std::fprintf(stderr, "CPU result C[0,0] = %g, expected %g\n", r["C"].array.as<float>()[0], want);
      return 1;
    }
  }
  row("run cpu (1 thread, with the product)", us_per_call(std::max(1, iters / 10), [&] { (void)q.run(host_in, cpu); }));

  std::string why;
  if (!gamut::gpu_available(&why)) {
    std::printf("\nno GPU (%s): the GPU rows are not measured\n", why.c_str());
    return 0;
  }
  void *dA = nullptr, *dB = nullptr;
  cudaStream_t stream = nullptr;
  if (cudaMalloc(&dA, A.size() * 4) || cudaMalloc(&dB, B.size() * 4) || cudaStreamCreate(&stream) ||
      cudaMemcpy(dA, A.data(), A.size() * 4, cudaMemcpyHostToDevice) || cudaMemcpy(dB, B.data(), B.size() * 4, cudaMemcpyHostToDevice)) {
    std::fprintf(stderr, "CUDA setup failed\n");
    return 1;
  }
  gamut::Inputs dev_in;
  dev_in.array("A", gamut::ArrayRef::cuda(dA, gamut::DType::F32, {n, n}))
      .array("B", gamut::ArrayRef::cuda(dB, gamut::DType::F32, {n, n}));
  gamut::Options gpu;
  gpu.backend = "gpu";
  gpu.stream = stream;
  {
    const gamut::Result r = q.run(dev_in, gpu);
    float c0 = 0;
    cudaMemcpyAsync(&c0, r["C"].array.data, 4, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    if (c0 != float(want)) {
      std::fprintf(stderr, "GPU result C[0,0] = %g, expected %g\n", c0, want);
      return 1;
    }
    std::printf("\n(GPU run: tile %s, mainloop %s, copies %zu)\n\n", r.stats.tile.c_str(), r.stats.mainloop.c_str(),
                r.stats.copies.size());
  }
  row("run gpu, outputs cudaMalloc'd (no sync)", us_per_call(iters, [&] { (void)q.run(dev_in, gpu); }));
  {
    // Outputs from a caching allocator (what PyTorch's gives): one buffer, handed out again.
    void* buffer = nullptr;
    cudaMalloc(&buffer, size_t(n) * n * 4);
    gamut::Options cached = gpu;
    cached.allocator = [buffer](gamut::DType, const std::vector<int64_t>&, gamut::Device) {
      return gamut::Allocation{buffer, nullptr};
    };
    row("run gpu, outputs from a cache (no sync)", us_per_call(iters, [&] { (void)q.run(dev_in, cached); }));
    cudaStreamSynchronize(stream);
    cudaFree(buffer);
  }
  cudaStreamSynchronize(stream);
  row("run gpu + stream sync", us_per_call(iters, [&] {
        (void)q.run(dev_in, gpu);
        cudaStreamSynchronize(stream);
      }));
  {
    // The engine alone (cuda::run_gpu: tile choice, kernel memo, argument words, the launch),
    // writing into one fixed output: the library's path without staging and binding.
    gamut::api::StagedInputs staged = gamut::api::stage_inputs(dev_in, stream, true, {});
    const gamut::Plan plan = gamut::plan_with_rewrites(source, gamut::type_env(staged.bindings));
    gamut::Instance inst = gamut::bind(plan, staged.bindings);
    inst.device_inputs.resize(plan.operands.size());
    for (size_t o = 0; o < plan.operands.size(); ++o) inst.device_inputs[o] = staged.device.at(plan.operands[o].name);
    void* out = nullptr;
    cudaMalloc(&out, size_t(n) * n * 4);
    std::shared_ptr<void> memo = gamut::cuda::new_kernel_memo();
    gamut::cuda::GpuRunOptions go;
    go.asynchronous = true;
    go.kernel_memo = &memo;
    go.dense_output = [&](size_t, size_t) { return out; };
    gamut::cuda::StreamScope scope(stream);
    row("cuda::run_gpu alone (no sync)", us_per_call(iters, [&] { (void)gamut::cuda::run_gpu(inst, go); }));
    // The floor: an empty kernel, compiled once, launched on the stream.
    const gamut::cuda::CompiledModule m =
        gamut::cuda::compile_cached("extern \"C\" __global__ void gamut_main(const unsigned long long* a) {}", {});
    gamut::cuda::Kernel k(m, "gamut_main");
    unsigned long long word = 0;
    void* args[] = {&word};
    row("an empty kernel's launch (no sync)", us_per_call(iters, [&] { k.launch(1, 1, 1, 32, 1, 1, 0, args); }));
    cudaStreamSynchronize(stream);
    cudaFree(out);
  }
  void* scratch = nullptr;
  cudaMallocAsync(&scratch, size_t(n) * n * 4, stream);
  cudaFreeAsync(scratch, stream);
  row("cudaMallocAsync + cudaFreeAsync", us_per_call(iters, [&] {
        cudaMallocAsync(&scratch, size_t(n) * n * 4, stream);
        cudaFreeAsync(scratch, stream);
      }));
  row("cudaMemsetAsync", us_per_call(iters, [&] { cudaMemsetAsync(dA, 0, 4, stream); }));
  cudaStreamSynchronize(stream);
  cudaFree(dA);
  cudaFree(dB);
  cudaStreamDestroy(stream);
  return 0;
}
