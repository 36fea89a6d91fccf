// Uses the installed gamut package: a query compiled once and run twice on host arrays,
// checked against a loop; a query error caught with its category. Exit 0 when all holds.
#include <gamut/gamut.h>

#include <algorithm>
#include <cstdio>
#include <vector>

int main() {
  const int64_t M = 5, N = 4, K = 3;
  std::vector<float> A(M * K), B(K * N);
  for (int64_t e = 0; e < M * K; ++e) A[e] = float(e % 5 - 2);
  for (int64_t e = 0; e < K * N; ++e) B[e] = float(e % 3 + 1);
  gamut::Query q = gamut::Query::compile(
      "where (i, j) { d = inf; reduce (k) { d min= A[i, k] + B[k, j]; } C[i, j] = d; }", "minplus");
  gamut::Options options;
  options.backend = "cpu";
  for (int round = 0; round < 2; ++round) {
    gamut::Inputs in;
    in.array("A", gamut::ArrayRef::host(A.data(), gamut::DType::F32, {M, K}))
        .array("B", gamut::ArrayRef::host(B.data(), gamut::DType::F32, {K, N}));
    gamut::Result r = q.run(in, options);
    const float* C = r["C"].array.as<float>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float want = 1e30f;
        for (int64_t k = 0; k < K; ++k) want = std::min(want, A[i * K + k] + B[k * N + j]);
        if (C[i * N + j] != want) {
          std::printf("mismatch at (%lld, %lld): %g, want %g\n", (long long)i, (long long)j, C[i * N + j], want);
          return 1;
        }
      }
    A[0] += 1;   // the second run sees new data
  }
  try {
    gamut::Query::compile("where (i, j) { reduce (k) { } }", "bad");
    std::printf("no query error\n");
    return 1;
  } catch (const gamut::Error& e) {
    if (e.code() != gamut::ExitCode::Query) {
      std::printf("wrong category %s: %s\n", e.category(), e.what());
      return 1;
    }
  }
  std::printf("consumer ok: gamut %s, backend cpu\n", gamut::version());
  return 0;
}
