#include "cuda/outputs/list/finish/order.h"

#include <algorithm>

#include "core/error.h"
#include "cuda/outputs/list/finish/sort.h"
#include "cuda/runtime/internal.h"

namespace gamut::cuda {

namespace {

cudaStream_t stream() { return static_cast<cudaStream_t>(current_stream()); }

order::KeyKind key_kind(DType t) {
  switch (t) {
    case DType::Bool:
    case DType::U8: return order::KeyKind::Unsigned;
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return order::KeyKind::Signed;
    case DType::F16: return order::KeyKind::Float16;
    case DType::BF16: return order::KeyKind::BFloat16;
    case DType::F32: return order::KeyKind::Float32;
    case DType::F64: return order::KeyKind::Float64;
  }
  throw_device_error("internal error: a list column of unknown type");
}

void ensure(DeviceBuffer& b, size_t bytes) {
  if (b.size() < bytes) b = DeviceBuffer(bytes);
}

template <class T>
T* as(const DeviceBuffer& b) {
  return static_cast<T*>(b.get());
}

// The columns as sort keys: refs (with the known ranges' narrower keys), bytes and key bits.
struct KeyedColumns {
  std::vector<sortdev::ColumnRef> refs;
  std::vector<int> bytes, key_bits;
};

KeyedColumns keyed_columns(const std::vector<const DeviceBuffer*>& cols, const std::vector<DType>& dtypes, uint64_t n,
                           const std::vector<KeyRange>& ranges) {
  KeyedColumns k;
  k.refs.resize(cols.size());
  k.bytes.resize(cols.size());
  k.key_bits.resize(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    k.bytes[c] = int(dtype_size(dtypes[c]));
    if (cols[c]->size() < size_t(n) * size_t(k.bytes[c]))
      throw_device_error("internal error: a list column shorter than its rows");
    k.refs[c] = {cols[c]->get(), k.bytes[c], key_kind(dtypes[c])};
    k.key_bits[c] = 8 * k.bytes[c];
    if (c < ranges.size() && ranges[c].count > 0 && k.refs[c].kind == order::KeyKind::Signed) {
      k.refs[c].range_bits = std::min(order::range_key_bits(ranges[c].count), k.key_bits[c]);
      k.refs[c].lo = ranges[c].lo;
      k.key_bits[c] = k.refs[c].range_bits;
    }
  }
  return k;
}

// LSD: one stable pass per key word of the first `keys_of` columns, the least significant word
// first, over m rows: rows[0] (the distinct rows) or, with `identity`, rows 0..m-1. Returns the
// index of the buffer in s.rows that holds the ordered rows. With n_device, rows at or past
// *n_device sort last (sortdev::write_keys).
int sort_passes(const KeyedColumns& k, size_t keys_of, bool identity, uint32_t m, const uint64_t* n_device,
                ListOrderScratch& s) {
  std::vector<order::KeyWord> words(k.refs.size());
  const int nwords = order::pack_key_bits(k.key_bits.data(), int(keys_of), words.data());
  uint64_t* const keys[2] = {as<uint64_t>(s.keys[0]), as<uint64_t>(s.keys[1])};
  uint32_t* const perm[2] = {as<uint32_t>(s.rows[0]), as<uint32_t>(s.rows[1])};
  int sel = 0;
  for (int w = nwords - 1; w >= 0; --w) {
    const bool first = w == nwords - 1;
    const uint32_t* from = first && identity ? nullptr : perm[sel];
    uint32_t* init = first && identity ? perm[sel] : nullptr;
    detail::check(sortdev::write_keys(&k.refs[size_t(words[w].first)], words[w].count, from, init, keys[0], m, stream(),
                                      n_device),
                  "list order keys");
    size_t temp_bytes = 0;
    detail::check(sortdev::sort_pairs(nullptr, &temp_bytes, keys, perm, &sel, m, words[w].bits, stream()),
                  "list sort size");
    ensure(s.temp, std::max<size_t>(temp_bytes, 1));
    temp_bytes = s.temp.size();
    detail::check(sortdev::sort_pairs(s.temp.get(), &temp_bytes, keys, perm, &sel, m, words[w].bits, stream()),
                  "list sort");
  }
  return sel;
}

void ensure_sort_buffers(ListOrderScratch& s, uint64_t n) {
  ensure(s.rows[0], size_t(n) * 4);
  ensure(s.rows[1], size_t(n) * 4);
  ensure(s.keys[0], size_t(n) * 8);
  ensure(s.keys[1], size_t(n) * 8);
}

}  // namespace

uint64_t order_list_rows(const std::vector<const DeviceBuffer*>& cols, const std::vector<DType>& dtypes, uint64_t n,
                         bool distinct, ListOrderScratch& s, std::vector<DeviceBuffer>& out, size_t key_columns,
                         const std::vector<KeyRange>& ranges) {
  if (cols.size() != dtypes.size()) throw_device_error("internal error: list columns and types differ in number");
  if (n > kMaxDeviceOrderRows)
    throw_device_error("internal error: a list of " + std::to_string(n) + " rows ordered on the device");
  out.resize(cols.size());
  if (cols.empty()) return distinct ? std::min<uint64_t>(n, 1) : n;  // rows of no columns are all equal
  if (n == 0) return 0;
  const uint32_t rows = uint32_t(n);
  const KeyedColumns k = keyed_columns(cols, dtypes, n, ranges);
  ensure_sort_buffers(s, n);

  // distinct: one row of each set of bit-identical rows, as the first permutation.
  uint32_t m = rows;
  if (distinct) {
    uint64_t slots = 2;
    while (slots < 2 * n && slots < (uint64_t(1) << 31)) slots *= 2;  // > n since n < 2^31
    ensure(s.table, size_t(slots) * 4);
    ensure(s.count, 4);
    ensure(s.refs, k.refs.size() * sizeof k.refs[0]);
    s.refs.upload(k.refs.data(), k.refs.size() * sizeof k.refs[0]);
    detail::check(
        sortdev::distinct_rows(as<const sortdev::ColumnRef>(s.refs), int(k.refs.size()), rows, as<uint32_t>(s.table),
                               uint32_t(slots), as<uint32_t>(s.rows[0]), as<uint32_t>(s.count), stream()),
        "distinct list rows");
    s.count.download(&m, 4);
  }

  const size_t keys_of = distinct ? cols.size() : std::min(std::max<size_t>(key_columns, 1), cols.size());
  const int sel = sort_passes(k, keys_of, !distinct, m, nullptr, s);

  std::vector<sortdev::GatherColumn> gather(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    ensure(out[c], std::max<size_t>(size_t(m) * size_t(k.bytes[c]), 1));
    gather[c] = {out[c].get(), cols[c]->get(), k.bytes[c]};
  }
  gather_list_columns(gather, as<uint32_t>(s.rows[sel]), m);
  return m;
}

void enqueue_list_order(const std::vector<const DeviceBuffer*>& cols, const std::vector<DType>& dtypes, uint64_t n,
                        const uint64_t* n_device, ListOrderScratch& s, DeviceBuffer& order, size_t key_columns,
                        const std::vector<KeyRange>& ranges) {
  if (cols.size() != dtypes.size() || cols.empty() || n == 0 || n > kMaxDeviceOrderRows || !n_device)
    throw_device_error("internal error: a list ordering enqueued before its count with unusable arguments");
  const KeyedColumns k = keyed_columns(cols, dtypes, n, ranges);
  ensure_sort_buffers(s, n);
  const int sel =
      sort_passes(k, std::min(std::max<size_t>(key_columns, 1), cols.size()), true, uint32_t(n), n_device, s);
  std::swap(order, s.rows[sel]);  // (the scratch takes the caller's old buffer; ensure() grows it)
}

void gather_list_columns(const std::vector<sortdev::GatherColumn>& cols, const uint32_t* rows, uint64_t m) {
  if (m > kMaxDeviceOrderRows) throw_device_error("internal error: a gather of " + std::to_string(m) + " rows");
  for (size_t first = 0; first < cols.size(); first += sortdev::kMaxGatherColumns) {
    const size_t count = std::min<size_t>(cols.size() - first, sortdev::kMaxGatherColumns);
    detail::check(sortdev::gather_columns(cols.data() + first, int(count), rows, uint32_t(m), stream()), "list gather");
  }
}

uint64_t first_rows_of_groups(const DeviceBuffer& b, const DeviceBuffer& g, uint64_t n, int64_t limit,
                              ListOrderScratch& s, std::vector<DeviceBuffer>& cols, const std::vector<DType>& dtypes) {
  if (n > kMaxDeviceOrderRows)
    throw_device_error("internal error: a list of " + std::to_string(n) + " rows trimmed on the device");
  if (limit <= 0) return 0;
  if (uint64_t(limit) >= n) return n;  // no group has more rows than N
  const uint32_t rows = uint32_t(n);
  ensure(s.keys[0], size_t(n) * 8);  // the compaction's identity and flags (5 bytes a row)
  ensure(s.rows[0], size_t(n) * 4);
  ensure(s.count, 4);
  size_t temp_bytes = 0;
  detail::check(sortdev::first_of_groups(nullptr, &temp_bytes, nullptr, nullptr, rows, uint32_t(limit), nullptr,
                                         nullptr, nullptr, stream()),
                "list group heads size");
  ensure(s.temp, std::max<size_t>(temp_bytes, 1));
  temp_bytes = s.temp.size();
  detail::check(sortdev::first_of_groups(s.temp.get(), &temp_bytes, as<const int32_t>(b), as<const int32_t>(g), rows,
                                         uint32_t(limit), s.keys[0].get(), as<uint32_t>(s.rows[0]),
                                         as<uint32_t>(s.count), stream()),
                "list group heads");
  uint32_t m = 0;
  s.count.download(&m, 4);
  if (m == rows) return n;
  s.gathered.resize(std::max(s.gathered.size(), cols.size()));
  std::vector<sortdev::GatherColumn> gather(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) {
    const int bytes = int(dtype_size(dtypes[c]));
    ensure(s.gathered[c], std::max<size_t>(size_t(m) * size_t(bytes), 1));
    gather[c] = {s.gathered[c].get(), cols[c].get(), bytes};
  }
  gather_list_columns(gather, as<uint32_t>(s.rows[0]), m);
  for (size_t c = 0; c < cols.size(); ++c) std::swap(cols[c], s.gathered[c]);
  return m;
}

}  // namespace gamut::cuda
