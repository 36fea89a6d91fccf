// The device headers (src/cuda/device/**/*.cuh, src/cuda/outputs/*/device/*.cuh), embedded at build time for NVRTC.
#pragma once

namespace gamut::cuda {

struct EmbeddedHeader {
  const char* name;   // file name, as #include'd by generated code
  const char* text;
};
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const int kEmbeddedHeaderCount;

}  // namespace gamut::cuda
