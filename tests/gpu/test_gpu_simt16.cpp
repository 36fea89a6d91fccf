// 1- and 2-byte inputs on the SIMT mainloop (gm::StagedTileLoader: raw cp.async copies into a
// staging ring, widened once per slice in shared memory) against the CPU engine: max-plus and
// min-plus on bf16, f16, i8 and u8, every orientation of the two operands (the transposing widen
// of X[p, k], the vector widen of X[k, p]), batched; sizes 1, 7, 1025 and whole tiles; inputs on
// the host (gamut's 16-byte row pitch: whole-chunk copies) and in device memory as given (rows of
// odd length, a start off 16 bytes: the element-by-element path); tiles with several chunks per
// thread, fewer chunks than threads and BK = 4. Integer-valued data: every result is exact, so
// outputs must be bit-identical. Outputs go to device memory filled with 0xff first (a pair the
// kernel misses shows), and results are checked to be non-zero. --gtest_filter='GpuSimt16.*'.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu/engine.h"
#include "cuda/gpu_engine.h"
#include "cuda/runtime.h"
#include "driver/pipeline.h"
#include "gpu_skip.h"

using namespace gamut;

namespace {

struct SimtQuery {
  const char* name;
  const char* text;
  bool a_ki, b_jk, batched;  // A[k, i] (else A[i, k]); B[j, k] (else B[k, j]); A[b, ...], B[b, ...]
};

const SimtQuery kQueries[] = {
    {"maxplus_ik_kj", "where (i, j) { a = -inf; reduce (k) { a max= A[i, k] + B[k, j]; } C[i, j] = a; }", false, false,
     false},
    {"minplus_ik_jk", "where (i, j) { a = inf; reduce (k) { a min= A[i, k] + B[j, k]; } C[i, j] = a; }", false, true,
     false},
    {"maxplus_ki_kj", "where (i, j) { a = -inf; reduce (k) { a max= A[k, i] + B[k, j]; } C[i, j] = a; }", true, false,
     false},
    {"minplus_batched",
     "batch (b) where (i, j) { a = inf; reduce (k) { a min= A[b, k, i] + B[b, j, k]; } C[b, i, j] = a; }", true, true,
     true},
};

struct Size {
  int64_t m, n, k, batch;
};

// Where the inputs live: on the host (uploaded with gamut's row pitch), or in device memory as
// given (`offset` elements after a 256-byte aligned start).
enum class Place { Host, Device, DeviceOffset };

NDArray ints(DType t, std::vector<int64_t> shape, std::mt19937& rng) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  std::uniform_int_distribution<int> d(1, 9);  // sums of two are never 0
  for (int64_t e = 0; e < a.size(); ++e) {
    const int v = d(rng);
    switch (t) {
      case DType::BF16: a.as<uint16_t>()[e] = float_to_bf16(float(v)); break;
      case DType::F16: a.as<uint16_t>()[e] = float_to_half(float(v)); break;
      case DType::I8: a.as<int8_t>()[e] = int8_t(d(rng) % 2 != 0 ? v : -v); break;
      default: a.as<uint8_t>()[e] = uint8_t(v); break;
    }
  }
  return a;
}

struct Outcome {
  std::string tile;
  bool nonzero = false;
};

// The query on both engines; the GPU's dense output compared byte for byte.
Outcome check(const SimtQuery& q, DType t, const Size& s, Place place, const std::string& tile = "") {
  SCOPED_TRACE(std::string(q.name) + " " + std::string(dtype_name(t)) + " " + std::to_string(s.m) + "x" +
               std::to_string(s.n) + "x" + std::to_string(s.k) +
               (q.batched ? " batch " + std::to_string(s.batch) : "") +
               (place == Place::Host     ? " host"
                : place == Place::Device ? " device"
                                         : " device+1") +
               (tile.empty() ? "" : " tile " + tile));
  std::mt19937 rng(uint32_t(s.m * 131 + s.n * 7 + s.k));
  std::vector<int64_t> ashape = q.a_ki ? std::vector<int64_t>{s.k, s.m} : std::vector<int64_t>{s.m, s.k};
  std::vector<int64_t> bshape = q.b_jk ? std::vector<int64_t>{s.n, s.k} : std::vector<int64_t>{s.k, s.n};
  if (q.batched) {
    ashape.insert(ashape.begin(), s.batch);
    bshape.insert(bshape.begin(), s.batch);
  }
  Bindings b;
  b.arrays["A"] = ints(t, ashape, rng);
  b.arrays["B"] = ints(t, bshape, rng);
  auto p = prepare(Source{std::string(q.name) + ".mmlt", q.text}, std::move(b), false);
  Outcome r;
  EXPECT_FALSE(p->program);
  if (p->program) return r;
  const Results cpu = run_cpu(p->instance);
  // Device copies as given: row-major, no pitch, `off` elements in.
  std::vector<cuda::DeviceBuffer> ins;
  if (place != Place::Host) {
    const size_t off = place == Place::DeviceOffset ? 1 : 0;
    Instance& inst = p->instance;
    inst.device_inputs.resize(inst.inputs.size());
    for (size_t o = 0; o < inst.inputs.size(); ++o) {
      const NDArray& x = *inst.inputs[o];
      const size_t es = dtype_size(x.dtype);
      ins.emplace_back(x.nbytes() + 16);
      ins.back().upload(x.data.data(), x.nbytes(), off * es);
      std::vector<int64_t> strides(x.shape.size(), 1);
      for (size_t d = x.shape.size() - 1; d > 0; --d) strides[d - 1] = strides[d] * x.shape[d];
      inst.device_inputs[o].data = static_cast<const unsigned char*>(ins.back().get()) + off * es;
      inst.device_inputs[o].strides = strides;
    }
  }
  cuda::GpuRunOptions o;
  if (!tile.empty()) o.tile = cuda::parse_tile(tile);
  std::vector<cuda::DeviceBuffer> outs;
  o.dense_output = [&outs](size_t, size_t bytes) {
    outs.emplace_back(bytes);
    outs.back().fill_bytes(0xff);
    return outs.back().get();
  };
  cuda::GpuRunStats st;
  cuda::run_gpu(p->instance, o, &st);
  cuda::synchronize();
  r.tile = st.tile;
  EXPECT_EQ(st.mainloop, "simt") << st.tile;
  EXPECT_EQ(cpu.dense.size(), 1u);
  EXPECT_EQ(outs.size(), 1u);
  if (cpu.dense.size() != 1 || outs.size() != 1) return r;
  NDArray got = cpu.dense[0];  // (shape and type; the bytes are replaced)
  outs[0].download(got.data.data(), got.nbytes());
  for (int64_t e = 0; e < got.size(); ++e)
    if (got.get_f64(e) != cpu.dense[0].get_f64(e)) {
      ADD_FAILURE() << "first difference at element " << e << ": cpu " << cpu.dense[0].get_f64(e) << ", gpu "
                    << got.get_f64(e) << " (tile " << st.tile << ")";
      return r;
    }
  EXPECT_EQ(std::memcmp(got.data.data(), cpu.dense[0].data.data(), got.nbytes()), 0);
  for (int64_t e = 0; e < got.size() && !r.nonzero; ++e) r.nonzero = got.get_f64(e) != 0;
  EXPECT_TRUE(r.nonzero || got.size() == 0) << "every result is zero";
  return r;
}

const Size kSizes[] = {{1, 1, 1, 2},       {7, 7, 7, 3},       {7, 1025, 33, 2},
                       {1025, 7, 1025, 2}, {65, 129, 1025, 2}, {128, 256, 64, 2}};

}  // namespace

// The chosen tile at every size, inputs on the host and in device memory as given.
TEST(GpuSimt16, SixteenBitAtOddSizes) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::BF16, DType::F16})
    for (const SimtQuery& q : kQueries)
      for (const Size& s : kSizes)
        for (Place pl : {Place::Host, Place::Device}) check(q, t, s, pl);
}

// A start off 16 bytes (no whole-chunk copy anywhere), at the largest tile and a small one.
TEST(GpuSimt16, UnalignedDeviceInputs) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::BF16, DType::U8})
    for (const SimtQuery& q : kQueries)
      for (const char* tile : {"", "128x256x16/8x16"}) check(q, t, {130, 260, 1025, 2}, Place::DeviceOffset, tile);
}

// Tiles with two and four chunks per thread (128x256x16), fewer chunks than threads (16x64x16:
// 64 chunks of A for 256 threads), BK = 4 (one chunk along k) and BK = 32.
TEST(GpuSimt16, TileShapes) {
  SKIP_WITHOUT_GPU();
  for (const char* tile : {"128x256x16/8x16", "16x64x16/1x4", "64x32x4/4x2", "32x16x32/2x2", "32x32x8/4x4"})
    for (const SimtQuery& q : kQueries)
      for (const Size& s : {Size{77, 45, 37, 2}, Size{260, 300, 129, 1}}) {
        check(q, DType::BF16, s, Place::Host, tile);
        check(q, DType::I8, s, Place::Device, tile);
      }
}

// 8-bit inputs: on the host the packed 16-bit steps (the row operand widened into both halves
// of a word, the column one into 16-bit values), in device memory the i32 steps.
TEST(GpuSimt16, EightBit) {
  SKIP_WITHOUT_GPU();
  for (DType t : {DType::I8, DType::U8})
    for (const SimtQuery& q : kQueries)
      for (const Size& s : kSizes) {
        const Outcome host = check(q, t, s, Place::Host);
        check(q, t, s, Place::Device);
        if (!q.batched) EXPECT_NE(host.tile.find("packed16"), std::string::npos) << host.tile;
      }
}
