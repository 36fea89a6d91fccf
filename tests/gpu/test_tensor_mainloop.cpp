// The tensor-core mainloop (src/cuda/device/mainloop/gamut_tc_*.cuh) alone, through a test kernel that
// writes its accumulators through the map (tensor_mainloop_driver.h):
// - every math x operand orientation x tile compiles with NVRTC for sm_90a without spilling
//   (no GPU needed: runs in the CI suite);
// - on the GPU, against a reference in double / exact integers: bit-exact on 8-bit integers and
//   on small-integer f16 / bf16 / f32 data, within the documented bound on random data
//   (docs/tensor-cores.md), at odd sizes, k not a multiple of the instruction's k, ranges that
//   do not start at 0, unaligned rows and batches; outputs poisoned first, nothing written
//   outside the output, results non-zero.
#include <gtest/gtest.h>

#include "gpu_skip.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>

#include "../nvrtc_check.h"
#include "cuda/codegen/mainloop_tensor.h"
#include "tensor_mainloop_driver.h"

#if GAMUT_HAVE_CUDA
#include "cuda/runtime.h"
#endif

using namespace gamut;
using namespace gamut::testtc;
using cuda::TcMainloopSpec;
using cuda::TcTile;

namespace {

struct MathCase {
  InnerMath math;
  DType a, b;
  const char* name;
  double tol;   // random data: |gpu - ref| <= tol * sum |a b| (docs/tensor-cores.md)
};
// f16 / bf16 products are exact in f32 and i8 sums exact in i32: only the f32 sums round.
// tf32: each operand rounded to 11 significant bits (2^-11 relative each, ties away).
// tf32x3: the dropped small*small term and the rounding of the small parts, ~2^-21.
const MathCase kMaths[] = {
    {InnerMath::BF16, DType::BF16, DType::BF16, "bf16", 1e-5},
    {InnerMath::F16, DType::F16, DType::F16, "f16", 1e-5},
    {InnerMath::Int8, DType::I8, DType::I8, "i8", 0},
    {InnerMath::Int8, DType::U8, DType::U8, "u8", 0},
    {InnerMath::Int8, DType::I8, DType::U8, "i8xu8", 0},
    {InnerMath::Tf32, DType::F32, DType::F32, "tf32", 1.1e-3},
    {InnerMath::Tf32x3, DType::F32, DType::F32, "tf32x3", 1e-5},
};

TcMainloopSpec spec(const MathCase& m, bool a_kc, bool b_kc, const TcTile& t) {
  TcMainloopSpec s;
  s.math = m.math;
  s.a_type = m.a;
  s.b_type = m.b;
  s.a_kcontig = a_kc;
  s.b_kcontig = b_kc;
  s.tile = t;
  return s;
}

std::string label(const TcMainloopSpec& s) {
  return std::string(s.a_kcontig ? "X[i,k]" : "X[k,i]") + " " + (s.b_kcontig ? "Y[j,k]" : "Y[k,j]") + " " + s.tile.str();
}

// Every orientation with the 128x128 tile; the other tiles with two orientations.
std::vector<TcMainloopSpec> variants(const MathCase& m) {
  std::vector<TcMainloopSpec> v;
  const std::vector<TcTile> tiles = cuda::tc_tiles(m.math);
  for (int o = 0; o < 4; ++o) v.push_back(spec(m, (o & 1) != 0, (o & 2) != 0, tiles[1]));
  for (size_t t : {size_t(0), size_t(2)}) {
    v.push_back(spec(m, true, false, tiles[t]));
    v.push_back(spec(m, false, true, tiles[t]));
  }
  // The wgmma mainloop (f16 / bf16): every orientation with the big tile, two with the square one.
  // The same with TMA feeding it. (tf32 / tf32x3: TMA-fed, both operands k-major only.)
  for (bool tma : {false, true}) {
    const std::vector<TcTile> wg = cuda::tc_wgmma_tiles(m.math, tma);
    for (size_t t = 0; t < wg.size(); ++t)
      for (int o = 0; o < 4; ++o)
        if (t == 0 || o == 1 || o == 2 || cuda::wgmma_needs_tma(m.math)) {
          const TcMainloopSpec s = spec(m, (o & 1) != 0, (o & 2) != 0, wg[t]);
          if (!cuda::wgmma_needs_tma(m.math) || (s.a_kcontig && s.b_kcontig)) v.push_back(s);
        }
  }
  return v;
}

}  // namespace

TEST(TensorMainloop, HostMirrorsTheDeviceChecks) {
  for (const MathCase& m : kMaths)
    for (const TcMainloopSpec& s : variants(m)) {
      std::string why;
      EXPECT_TRUE(cuda::tc_spec_valid(s, &why)) << m.name << " " << label(s) << ": " << why;
      EXPECT_LE(cuda::tc_smem_bytes(s), testnvrtc::kH100Smem) << m.name << " " << label(s);
    }
  TcMainloopSpec bad = spec(kMaths[0], true, true, TcTile{128, 128, 24, 2, 4, 4});
  std::string why;
  EXPECT_FALSE(cuda::tc_spec_valid(bad, &why));
  EXPECT_NE(why.find("instruction's k"), std::string::npos) << why;
  bad.tile = TcTile{256, 256, 32, 2, 2, 4};
  EXPECT_FALSE(cuda::tc_spec_valid(bad, &why)) << "256 accumulators per thread";
  bad.tile = TcTile{128, 128, 32, 2, 4, 1};
  EXPECT_FALSE(cuda::tc_spec_valid(bad, &why));
  bad.tile = TcTile{96, 128, 32, 2, 4, 4};
  EXPECT_FALSE(cuda::tc_spec_valid(bad, &why)) << "96 rows are not whole slabs of 2 warps";
  bad.math = InnerMath::Simt;
  bad.tile = TcTile{};
  EXPECT_FALSE(cuda::tc_spec_valid(bad, &why));
}

TEST(TensorMainloop, EveryVariantCompilesForSm90a) {
#if !GAMUT_HAVE_CUDA
  GTEST_SKIP() << "built without CUDA: no NVRTC";
#else
  double worst_ms = 0;
  std::string worst;
  for (const MathCase& m : kMaths)
    for (const TcMainloopSpec& s : variants(m)) {
      SCOPED_TRACE(std::string(m.name) + " " + label(s));
      const auto t0 = std::chrono::steady_clock::now();
      const std::string log = testnvrtc::compile(kernel_source(s), "sm_90a");
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (ms > worst_ms) worst_ms = ms, worst = std::string(m.name) + " " + label(s);
      EXPECT_NE(log.find("Used "), std::string::npos) << log;
      EXPECT_NE(log.find(" 0 bytes spill stores"), std::string::npos) << log;
      // ptxas serializing the asynchronous wgmmas (accumulators touched inside a stage) would
      // throw the mainloop's point away.
      EXPECT_EQ(log.find("C7515"), std::string::npos) << log;
    }
  std::printf("[ tensor  ] slowest NVRTC compile: %.0f ms (%s)\n", worst_ms, worst.c_str());
#endif
}

#if GAMUT_HAVE_CUDA

namespace {

// Compiled test kernels, one per variant, kept for the whole test program.
cuda::Kernel& kernel_for(const TcMainloopSpec& s) {
  static std::map<std::string, std::unique_ptr<cuda::Kernel>> kernels;
  const std::string src = kernel_source(s);
  auto it = kernels.find(src);
  if (it != kernels.end()) return *it->second;
  cuda::CompileOptions o;
  o.arch = cuda::arch_for(cuda::device().cc_major, cuda::device().cc_minor);
  cuda::CompiledModule mod;
  mod.key = "tensor-mainloop-test";
  const auto t0 = std::chrono::steady_clock::now();
  mod.cubin = cuda::nvrtc_compile(src, o);
  std::printf("[ tc-compile ] %s %s: %.0f ms\n", cuda::tc_headers(s)[0].c_str(), label(s).c_str(),
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  auto k = std::make_unique<cuda::Kernel>(mod, kKernelName);
  k->set_max_dynamic_smem(cuda::tc_smem_bytes(s));
  return *kernels.emplace(src, std::move(k)).first->second;
}

// Runs variant s on problem p: the output words, then a guard, as the kernel left them.
std::vector<uint32_t> run(const TcMainloopSpec& s, const Problem& p, uint32_t poison) {
  const DType ta = s.a_type, tb = s.b_type;
  // A[b][i][k] as X[i,k] or X[k,i]; B[b][k][j] as Y[j,k] or Y[k,j]. Odd problems get unpadded
  // rows (the unaligned path); others padded to 16 bytes (cp.async of whole chunks).
  const bool aligned = p.rows % 2 == 0 || p.cols % 2 == 0;
  const Layout la = lay_out(ta, p.batch, p.rows, p.red, s.a_kcontig, aligned, s.a_kcontig ? p.red_begin : p.row_begin,
                            [&](int b, int i, int k) { return p.at(p.a, b, i, k, p.red, p.rows); });
  const Layout lb = lay_out(tb, p.batch, p.cols, p.red, s.b_kcontig, aligned, s.b_kcontig ? p.red_begin : p.col_begin,
                            [&](int b, int j, int k) { return p.at(p.b, b, k, j, p.cols, p.red); });
  cuda::DeviceBuffer da(std::max<size_t>(la.bytes.size(), 1)), db(std::max<size_t>(lb.bytes.size(), 1));
  da.upload(la.bytes.data(), la.bytes.size());
  db.upload(lb.bytes.data(), lb.bytes.size());
  const size_t n_out = size_t(p.batch) * size_t(p.rows) * size_t(p.cols), guard = 64;
  cuda::DeviceBuffer dc((n_out + guard) * 4);
  dc.fill_bytes(int(poison & 0xffu));

  std::vector<unsigned long long> w(kSlots, 0);
  w[kRowBegin] = unsigned(p.row_begin); w[kRowEnd] = unsigned(p.rows);
  w[kColBegin] = unsigned(p.col_begin); w[kColEnd] = unsigned(p.cols);
  w[kRedBegin] = unsigned(p.red_begin); w[kRedEnd] = unsigned(p.red);
  const uint64_t ea = dtype_size(ta), eb = dtype_size(tb);
  w[kAPtr] = reinterpret_cast<uintptr_t>(da.get()); w[kALd] = uint64_t(la.ld);
  w[kABatchBytes] = uint64_t(la.bstride) * ea; w[kAVec] = la.vec;
  w[kBPtr] = reinterpret_cast<uintptr_t>(db.get()); w[kBLd] = uint64_t(lb.ld);
  w[kBBatchBytes] = uint64_t(lb.bstride) * eb; w[kBVec] = lb.vec;
  w[kCPtr] = reinterpret_cast<uintptr_t>(dc.get()); w[kCLd] = uint64_t(p.cols);
  w[kCBatch] = uint64_t(p.rows) * uint64_t(p.cols);
  if (s.tile.tma && !tma_fits(s, w, p.batch)) return {};   // TMA cannot read these rows: not run
  std::vector<unsigned long long> words = launch_words(s, w, p.batch);
  if (std::getenv("GAMUT_TC_TRACE"))   // which launch a device fault comes from
    std::printf("[ tc-trace ] %s %dx%dx%d batch %d from (%d, %d, %d)\n", label(s).c_str(), p.rows, p.cols, p.red,
                p.batch, p.row_begin, p.col_begin, p.red_begin), std::fflush(stdout);
  void* args[] = {words.data()};
  const unsigned gx = unsigned((p.rows - p.row_begin + s.tile.bm - 1) / s.tile.bm);
  const unsigned gy = unsigned((p.cols - p.col_begin + s.tile.bn - 1) / s.tile.bn);
  kernel_for(s).launch(gx, gy, unsigned(p.batch), unsigned(s.tile.threads()), 1, 1, cuda::tc_smem_bytes(s), args);
  cuda::synchronize();
  std::vector<uint32_t> raw(n_out + guard);
  dc.download(raw.data(), raw.size() * 4);
  return raw;
}

// Checks one run against the reference; returns the largest |gpu - ref| / sum |a b| seen.
double check(const MathCase& m, const TcMainloopSpec& s, const Problem& p, const Reference& ref, bool exact,
             const std::string& what) {
  SCOPED_TRACE(std::string(m.name) + " " + label(s) + " " + what);
  const bool int_acc = m.math == InnerMath::Int8;
  const uint32_t poison = int_acc ? 0x5a5a5a5au : 0xffffffffu;   // NaN for f32
  const std::vector<uint32_t> raw = run(s, p, poison);
  if (raw.empty()) return 0;   // a TMA variant on rows TMA cannot read (the engine takes cp.async there)
  const Outcome o = compare(p, ref, raw, poison, int_acc, exact, m.tol);
  EXPECT_TRUE(o.guard_intact) << "written past the output";
  EXPECT_EQ(o.wrong, 0) << "first: " << o.first;
  EXPECT_EQ(o.unwritten, 0) << "outputs left at the poison value";
  EXPECT_EQ(o.stray, 0) << "outputs written outside the ranges";
  if (o.ref_nonzero > 0) {
    EXPECT_GT(o.nonzero, 0) << "all results zero";
  }
  return o.worst;
}

struct Shape {
  int rows, cols, red, batch = 1, row_begin = 0, col_begin = 0, red_begin = 0;
};
// Odd sizes (1, 7, 1025, 4097), k below, at and off the instruction's k, ranges not starting at
// 0, batches.
const Shape kShapes[] = {
    {1, 1, 1},      {7, 7, 7},         {64, 64, 13},          {7, 1025, 256},  {1025, 7, 1000}, {130, 260, 1},
    {1025, 1025, 256}, {4097, 300, 13}, {96, 4097, 1000},    {150, 140, 77, 1, 3, 5, 9},      {65, 130, 40, 3},
    {256, 256, 64, 2},
};

class TensorMainloopGpu : public ::testing::TestWithParam<int> {};

}  // namespace

TEST_P(TensorMainloopGpu, MatchesTheReference) {
  SKIP_WITHOUT_GPU();
  const MathCase& m = kMaths[GetParam()];
  double worst = 0;
  for (bool small : {true, false}) {
    if (m.math == InnerMath::Int8 && small) continue;   // 8-bit data is exact at full range
    uint32_t seed = 1;
    for (const Shape& sh : kShapes) {
      const Problem p = make_problem(m.a, m.b, sh.rows, sh.cols, sh.red, sh.batch, small, seed++, sh.row_begin,
                                     sh.col_begin, sh.red_begin);
      const Reference ref = reference(p);
      const std::string what = std::to_string(sh.rows) + "x" + std::to_string(sh.cols) + "x" + std::to_string(sh.red) +
                               " batch " + std::to_string(sh.batch) + (small ? " small integers" : " random");
      for (const TcMainloopSpec& s : variants(m)) worst = std::max(worst, check(m, s, p, ref, small, what));
    }
  }
  if (m.math != InnerMath::Int8)
    std::printf("[ tensor  ] %s: largest |gpu - ref| / sum |a b| on random data: %.3g (bound %.3g)\n", m.name, worst,
                m.tol);
}

INSTANTIATE_TEST_SUITE_P(Maths, TensorMainloopGpu, ::testing::Range(0, int(sizeof(kMaths) / sizeof(kMaths[0]))),
                         [](const ::testing::TestParamInfo<int>& i) { return std::string(kMaths[i.param].name); });

// i32 sums wrap exactly like the CPU engine's: 40000 products of 255 * 255 pass 2^31.
TEST(TensorMainloopGpuWrap, U8SumsWrapLikeTheCpu) {
  SKIP_WITHOUT_GPU();
  const MathCase& m = kMaths[3];
  Problem p = make_problem(DType::U8, DType::U8, 7, 9, 40000, 1, false, 77);
  std::fill(p.a.begin(), p.a.end(), 255.0);
  for (size_t e = 0; e < p.b.size(); ++e) p.b[e] = e % 3 == 0 ? 250.0 : 255.0;
  const Reference ref = reference(p);
  ASSERT_GT(ref.sum[0], 2147483647.0) << "the test must pass 2^31";
  for (const TcMainloopSpec& s : variants(m)) check(m, s, p, ref, true, "7x9x40000 wrapping");
}

#endif  // GAMUT_HAVE_CUDA

#if GAMUT_HAVE_CUDA
// Throughput of the mainloop alone (the test kernel: products written through the map), for
// bench/tensor_core.py, which runs it with GAMUT_TC_BENCH=1 and times torch in the same run.
// One line per configuration: "[ tc-bench ] MATH ORIENT TILE n=N ms=MS tflops=T". Also checks
// 64 sampled outputs against a double reference.
TEST(TensorMainloopBench, Products) {
  SKIP_WITHOUT_GPU();
  if (!std::getenv("GAMUT_TC_BENCH")) GTEST_SKIP() << "set GAMUT_TC_BENCH=1 (bench/tensor_core.py does)";
  const int reps = 10;
  for (const MathCase& m : kMaths) {
    if (std::string(m.name) == "u8" || std::string(m.name) == "i8xu8") continue;
    // GAMUT_TC_BENCH_MATHS="bf16,f16": those maths alone.
    if (const char* only = std::getenv("GAMUT_TC_BENCH_MATHS");
        only && ("," + std::string(only) + ",").find("," + std::string(m.name) + ",") == std::string::npos)
      continue;
    for (int n : {4096, 8192, 16384, 4097}) {
      if (const char* only = std::getenv("GAMUT_TC_BENCH_ONLY")) {   // skip building data for the others
        const std::string o = only, tail = " " + std::to_string(n);
        if (o.rfind(std::string(m.name) + " ", 0) != 0 || o.size() < tail.size() ||
            o.compare(o.size() - tail.size(), tail.size(), tail) != 0)
          continue;
      }
      // Operands A (n, n) and B (n, n) in their storage types, small random values; both
      // orientations of B share the bytes (B and its transpose have the same statistics).
      const size_t ea = dtype_size(m.a), elems = size_t(n) * size_t(n);
      const int64_t ld = (int64_t(n) * int64_t(ea) + 15) / 16 * 16 / int64_t(ea);
      std::vector<std::byte> host(size_t(ld) * size_t(n) * ea);
      uint32_t x = 12345;
      for (size_t e = 0; e < host.size() / ea; ++e) {
        x = x * 1664525u + 1013904223u;
        put(m.a, m.math == InnerMath::Int8 ? double(int((x >> 24) & 0x7f) - 64) : double(int(x >> 20) - 2048) / 2048.0,
            host.data() + e * ea);
      }
      cuda::DeviceBuffer da(host.size()), db(host.size()), dc(elems * 4);
      da.upload(host.data(), host.size());
      db.upload(host.data(), host.size());
      const auto value = [&](int64_t r, int64_t c) {   // element (r, c) of the padded operand
        const std::byte* p = host.data() + size_t(r * ld + c) * ea;
        switch (m.a) {
          case DType::BF16: { uint16_t h; std::memcpy(&h, p, 2); return double(bf16_to_float(h)); }
          case DType::F16: { uint16_t h; std::memcpy(&h, p, 2); return double(half_to_float(h)); }
          case DType::I8: return double(int8_t(*p));
          default: { float f; std::memcpy(&f, p, 4); return double(f); }
        }
      };
      std::vector<TcTile> tiles = cuda::tc_tiles(m.math);
      tiles.resize(2);   // 128x256, 128x128 (mma.sync), then the wgmma tiles (16-bit)
      for (bool tma : {false, true})
        for (const TcTile& t : cuda::tc_wgmma_tiles(m.math, tma)) tiles.push_back(t);
      for (bool b_kc : {false, true})
        for (size_t t = 0; t < tiles.size(); ++t) {
          const TcMainloopSpec s = spec(m, true, b_kc, tiles[t]);
          if (!cuda::tc_spec_valid(s)) continue;  // (tf32 wgmma: NT only)
          // GAMUT_TC_BENCH_ONLY="bf16 NN 128x256x64/wgmma/s4 8192": that configuration alone (ncu).
          const std::string what = std::string(m.name) + (b_kc ? " NT " : " NN ") + s.tile.str() + " " + std::to_string(n);
          if (const char* only = std::getenv("GAMUT_TC_BENCH_ONLY"); only && what != only) continue;
          std::vector<unsigned long long> w(kSlots, 0);
          w[kRowEnd] = unsigned(n); w[kColEnd] = unsigned(n); w[kRedEnd] = unsigned(n);
          w[kAPtr] = reinterpret_cast<uintptr_t>(da.get()); w[kALd] = uint64_t(ld); w[kAVec] = 1;
          w[kBPtr] = reinterpret_cast<uintptr_t>(db.get()); w[kBLd] = uint64_t(ld); w[kBVec] = 1;
          w[kCPtr] = reinterpret_cast<uintptr_t>(dc.get()); w[kCLd] = uint64_t(n);
          std::vector<unsigned long long> words = launch_words(s, w, 1);
          void* args[] = {words.data()};
          cuda::Kernel& k = kernel_for(s);
          const unsigned gx = unsigned((n + s.tile.bm - 1) / s.tile.bm), gy = unsigned((n + s.tile.bn - 1) / s.tile.bn);
          auto once = [&] {
            cuda::EventTimer ev;
            ev.start();
            k.launch(gx, gy, 1, unsigned(s.tile.threads()), 1, 1, cuda::tc_smem_bytes(s), args);
            return ev.stop_ms();
          };
          double first = 0;
          std::vector<double> runs;
          cuda::run_timed(once, reps, first, runs);
          std::sort(runs.begin(), runs.end());
          const double ms = runs[runs.size() / 2];
          std::printf("[ tc-bench ] %s %s %s n=%d ms=%.4f tflops=%.1f\n", m.name, b_kc ? "NT" : "NN",
                      s.tile.str().c_str(), n, ms, 2.0 * double(n) * n * n / (ms * 1e9));
          // Sampled outputs: B is the same bytes read as Y[k, j] (NN) or Y[j, k] (NT).
          std::vector<uint32_t> out(elems);
          dc.download(out.data(), out.size() * 4);
          int bad = 0;
          for (int q = 0; q < 64; ++q) {
            const int64_t i = (q * 7919) % n, j = (q * 104729 + 13) % n;
            double ref = 0, mag = 0;
            for (int64_t kk = 0; kk < n; ++kk) {
              const double pr = value(i, kk) * (b_kc ? value(j, kk) : value(kk, j));
              ref += pr;
              mag += std::fabs(pr);
            }
            float f;
            std::memcpy(&f, &out[size_t(i * n + j)], 4);
            const double got = m.math == InnerMath::Int8 ? double(int32_t(out[size_t(i * n + j)])) : double(f);
            bad += m.math == InnerMath::Int8 ? got != ref : std::fabs(got - ref) > m.tol * mag + 1e-30;
          }
          EXPECT_EQ(bad, 0) << m.name << " " << label(s) << " n=" << n;
        }
    }
  }
}
#endif  // GAMUT_HAVE_CUDA
