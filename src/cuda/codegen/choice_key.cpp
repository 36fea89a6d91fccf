#include "cuda/codegen/choice_key.h"

#include <unistd.h>  // environ

#include <cstring>

#include "cuda/codegen/tuned_table.h"

namespace gamut::cuda {

namespace {

void put(std::string& k, int64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_text(std::string& k, const char* s) {
  const size_t n = s ? std::strlen(s) : 0;
  put(k, s ? int64_t(n) : -1);
  if (n) k.append(s, n);
}

}  // namespace

std::string choice_key(const Instance& inst, const GpuRunOptions& options, int device) {
  std::string k;
  k.reserve(512);
  put(k, int64_t(reinterpret_cast<uintptr_t>(inst.plan)));
  put(k, device);
  for (const AxisRange* r : {&inst.row, &inst.col, &inst.red}) {
    put(k, r->begin);
    put(k, r->end);
  }
  put(k, inst.batch);
  for (size_t i = 0; i < inst.inputs.size(); ++i) {
    if (!inst.inputs[i]) {
      put(k, -1);
      continue;
    }
    const NDArray& a = *inst.inputs[i];
    put(k, int64_t(a.dtype));
    put(k, int64_t(a.shape.size()));
    for (int64_t d : a.shape) put(k, d);
    const bool dev = inst.on_device(i);
    put(k, dev);
    const void* p = dev ? inst.device_inputs[i].data : static_cast<const void*>(a.data.data());
    put(k, int64_t(reinterpret_cast<uintptr_t>(p) & 255));
    if (dev)
      for (int64_t s : inst.device_inputs[i].strides) put(k, s);
  }
  for (const Scalar& s : inst.params) {
    put(k, int64_t(s.type));
    put(k, s.i);
    int64_t bits = 0;
    std::memcpy(&bits, &s.f, sizeof bits);
    put(k, bits);
  }
  for (int64_t n : inst.list_limits) put(k, n);
  for (const std::vector<int64_t>& shape : inst.dense_shapes) {
    put(k, int64_t(shape.size()));
    for (int64_t d : shape) put(k, d);
  }
  put(k, options.masked_joins);
  put(k, int64_t(options.f32_math));
  put(k, options.use_tuned);
  put(k, options.seen_tables);
  put_text(k, options.arch.c_str());
  put_text(k, options.tile ? options.tile->str().c_str() : nullptr);
  put_text(k, options.variant ? options.variant->str().c_str() : nullptr);
  append_choice_context(k);
  return k;
}

void append_choice_context(std::string& k) {
  put(k, int64_t(tuned_tables_generation()));
  // The environment a choice reads (the cache folder, whose tuned table counts; experiment
  // switches): every GAMUT_ variable, HOME and XDG_CACHE_HOME, in one pass over the environment
  // (eight getenv calls cost about as much as the choice they would save).
  for (char** e = environ; e && *e; ++e) {
    const char* v = *e;
    const bool read = (v[0] == 'G' && std::strncmp(v, "GAMUT_", 6) == 0) ||
                      (v[0] == 'H' && std::strncmp(v, "HOME=", 5) == 0) ||
                      (v[0] == 'X' && std::strncmp(v, "XDG_CACHE_HOME=", 15) == 0);
    if (read) put_text(k, v);  // (the first letter first: most of the environment is passed over at once)
  }
}

}  // namespace gamut::cuda
