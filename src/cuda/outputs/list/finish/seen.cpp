#include "cuda/outputs/list/finish/seen.h"

#include "core/error.h"
#include "cuda/outputs/list/finish/seen_kernels.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace {

cudaStream_t stream() { return static_cast<cudaStream_t>(current_stream()); }

std::optional<seendev::IntKind> int_kind(DType t) {
  switch (t) {
    case DType::Bool: return seendev::IntKind::Bool;
    case DType::U8: return seendev::IntKind::U8;
    case DType::I8: return seendev::IntKind::I8;
    case DType::I16: return seendev::IntKind::I16;
    case DType::I32: return seendev::IntKind::I32;
    case DType::I64: return seendev::IntKind::I64;
    default: return std::nullopt;
  }
}

}  // namespace

DeviceVectorRange device_vector_range() {
  return [](const std::vector<DeviceVector>& vectors) {
    DeviceBuffer out(2 * sizeof(int64_t) * vectors.size());
    for (size_t v = 0; v < vectors.size(); ++v) {
      const DeviceVector& d = vectors[v];
      const auto kind = int_kind(d.type);
      if (!kind) throw_device_error("internal error: the value range of a vector that is not of integers");
      detail::check(seendev::value_range(d.data, *kind, d.rows, d.row_stride, d.first, d.count,
                                         static_cast<int64_t*>(out.get()) + 2 * v, stream()),
                    "the value range of a vector");
    }
    std::vector<int64_t> lohi(2 * vectors.size(), 0);
    out.download(lohi.data(), lohi.size() * sizeof(int64_t));
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (size_t v = 0; v < vectors.size(); ++v) ranges.emplace_back(lohi[2 * v], lohi[2 * v + 1]);
    return ranges;
  };
}

uint64_t seen_rows(const DeviceBuffer& seen, const SeenBox& box, const std::vector<DType>& types,
                   std::vector<DeviceBuffer>& out, DeviceBuffer& count) {
  if (types.size() != box.lo.size() || types.size() > size_t(gm::kSeenColumns))
    throw_device_error("internal error: a seen table's columns and box differ");
  if (seen.size() < size_t(box.words()) * 4) throw_device_error("internal error: a seen table smaller than its box");
  seendev::SeenColumns cols;
  cols.count = int(types.size());
  out.resize(types.size());
  for (size_t c = 0; c < types.size(); ++c) {
    const size_t bytes = dtype_size(types[c]);
    if (out[c].size() < size_t(box.cells) * bytes) out[c] = DeviceBuffer(size_t(box.cells) * bytes);
    cols.col[c] = {out[c].get(), box.lo[c], box.span[c], box.stride[c], int(bytes)};
  }
  if (count.size() < sizeof(uint64_t)) count = DeviceBuffer(sizeof(uint64_t));
  detail::check(seendev::seen_rows(static_cast<const uint32_t*>(seen.get()), int(box.words()), cols,
                                   static_cast<uint64_t*>(count.get()), stream()),
                "the rows of a seen table");
  uint64_t rows = 0;
  count.download(&rows, sizeof rows);
  return rows;
}

}  // namespace gamut::cuda
