// The radix keys of the device list finaliser (src/cuda/outputs/list/finish/order_keys.h) against
// finalize_list, on the host: the GPU sorts with exactly these keys and word packing, so a
// host LSD sort over them must give finalize_list's rows bit for bit. No GPU needed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>

#include "cuda/outputs/list/finish/order_keys.h"
#include "list_rows_data.h"

using namespace gamut;
namespace ord = gamut::cuda::order;

namespace {

ord::KeyKind kind_of(DType t) {
  switch (t) {
    case DType::Bool: case DType::U8: return ord::KeyKind::Unsigned;
    case DType::F16: return ord::KeyKind::Float16;
    case DType::BF16: return ord::KeyKind::BFloat16;
    case DType::F32: return ord::KeyKind::Float32;
    case DType::F64: return ord::KeyKind::Float64;
    default: return ord::KeyKind::Signed;
  }
}

uint64_t bits_at(const Column& c, int64_t r) {
  uint64_t b = 0;
  std::memcpy(&b, c.data.data() + size_t(r) * dtype_size(c.dtype), dtype_size(c.dtype));
  return b;
}

// The device algorithm on the host: optional de-duplication, then one stable sort per packed
// key word, last word first; returns the rows in final order.
Table host_lsd(const ListCandidates& rows, bool distinct) {
  const Table& t = rows.table;
  std::vector<int64_t> perm;
  std::set<std::vector<uint64_t>> seen;
  for (int64_t r = 0; r < t.rows; ++r) {
    std::vector<uint64_t> row;
    for (const Column& c : t.columns) row.push_back(bits_at(c, r));
    if (!distinct || seen.insert(row).second) perm.push_back(r);
  }
  std::vector<int> bytes;
  for (const Column& c : t.columns) bytes.push_back(int(dtype_size(c.dtype)));
  std::vector<ord::KeyWord> words(t.columns.size());
  const int nw = ord::pack_key_words(bytes.data(), int(bytes.size()), words.data());
  for (int w = nw - 1; w >= 0; --w) {
    auto key = [&](int64_t r) {
      uint64_t k = 0;
      for (int c = words[w].first; c < words[w].first + words[w].count; ++c) {
        const Column& col = t.columns[size_t(c)];
        k = (k << (4 * bytes[size_t(c)])) << (4 * bytes[size_t(c)]);
        k |= ord::column_key(kind_of(col.dtype), bytes[size_t(c)], bits_at(col, r));
      }
      EXPECT_TRUE(words[w].bits == 64 || k >> words[w].bits == 0) << "a key wider than its word's bits";
      return k;
    };
    std::stable_sort(perm.begin(), perm.end(), [&](int64_t x, int64_t y) { return key(x) < key(y); });
  }
  Table out;
  out.rows = int64_t(perm.size());
  for (const Column& c : t.columns) {
    Column o;
    o.name = c.name;
    o.dtype = c.dtype;
    const size_t w = dtype_size(c.dtype);
    o.data.resize(perm.size() * w);
    for (size_t r = 0; r < perm.size(); ++r) std::memcpy(o.data.data() + r * w, c.data.data() + size_t(perm[r]) * w, w);
    out.columns.push_back(std::move(o));
  }
  return out;
}

void expect_same(const Table& want, const Table& got) {
  ASSERT_EQ(want.rows, got.rows);
  ASSERT_EQ(want.columns.size(), got.columns.size());
  for (size_t c = 0; c < want.columns.size(); ++c) {
    EXPECT_EQ(want.columns[c].dtype, got.columns[c].dtype);
    ASSERT_EQ(want.columns[c].data.size(), got.columns[c].data.size());
    EXPECT_TRUE(want.columns[c].data == got.columns[c].data) << "column " << c << " differs";
  }
}

void check_both_modes(const ListCandidates& rows) {
  for (ListMode mode : {ListMode::Plain, ListMode::Distinct}) {
    SCOPED_TRACE(mode == ListMode::Plain ? "plain" : "distinct");
    ListCandidates copy = rows;
    const Table want = finalize_list(testdata::list_spec(rows.table, mode), 0, std::move(copy));
    ASSERT_GT(want.rows, 0);
    expect_same(want, host_lsd(rows, mode == ListMode::Distinct));
  }
}

const std::vector<DType> kAllTypes = {DType::Bool, DType::U8,  DType::I8,  DType::I16, DType::I32,
                                      DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

}  // namespace

// Every pattern of the 1- and 2-byte types: the key is a bijection and orders like cmp_row.
TEST(ListOrderKeys, ExhaustiveNarrowTypes) {
  for (DType t : {DType::U8, DType::I8, DType::I16, DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const size_t w = dtype_size(t);
    const uint64_t count = uint64_t(1) << (8 * w);
    std::set<uint64_t> keys;
    ListCandidates rows;
    Column c;
    c.name = "x";
    c.dtype = t;
    c.data.resize(size_t(count) * w);
    std::vector<uint64_t> order(count);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(5));
    for (uint64_t p = 0; p < count; ++p) {
      std::memcpy(c.data.data() + p * w, &order[p], w);
      keys.insert(ord::column_key(kind_of(t), int(w), order[p]));
    }
    EXPECT_EQ(keys.size(), count);
    EXPECT_LT(*keys.rbegin(), count);
    rows.table.columns.push_back(std::move(c));
    rows.table.rows = int64_t(count);
    rows.b.assign(count, 0);
    rows.i.assign(count, 0);
    rows.j.assign(count, 0);
    check_both_modes(rows);
  }
}

TEST(ListOrderKeys, SpecialValuesEveryType) {
  for (DType t : kAllTypes) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    check_both_modes(testdata::mixed_rows({t}, 3000, 11, 3));
  }
}

// Several columns: words hold whole columns (i32 i32 | i64 | f64 | f32 i16 bool ...).
TEST(ListOrderKeys, MixedColumnsAndWords) {
  const std::vector<std::vector<DType>> tables = {
      {DType::I32, DType::I32},
      {DType::F32, DType::F64, DType::I32},
      {DType::I32, DType::I64, DType::I32},
      {DType::Bool, DType::F32, DType::I16, DType::U8, DType::I8, DType::F16},
      {DType::F64, DType::F64},
      {DType::BF16, DType::I64, DType::Bool, DType::F32, DType::F32, DType::F32},
  };
  uint32_t seed = 1;
  for (const auto& types : tables) {
    for (int range : {1, 3, 1000}) {
      SCOPED_TRACE("table " + std::to_string(seed) + " range " + std::to_string(range));
      check_both_modes(testdata::mixed_rows(types, 4000, seed++, range));
    }
  }
}

TEST(ListOrderKeys, PackWords) {
  const int bytes[] = {4, 4, 8, 1, 2, 4, 4, 1, 1, 1, 1, 8};
  ord::KeyWord w[12];
  const int n = ord::pack_key_words(bytes, 12, w);
  ASSERT_EQ(n, 5);
  EXPECT_EQ(w[0].first, 0); EXPECT_EQ(w[0].count, 2); EXPECT_EQ(w[0].bits, 64);
  EXPECT_EQ(w[1].first, 2); EXPECT_EQ(w[1].count, 1); EXPECT_EQ(w[1].bits, 64);
  EXPECT_EQ(w[2].first, 3); EXPECT_EQ(w[2].count, 3); EXPECT_EQ(w[2].bits, 56);
  EXPECT_EQ(w[3].first, 6); EXPECT_EQ(w[3].count, 5); EXPECT_EQ(w[3].bits, 64);
  EXPECT_EQ(w[4].first, 11); EXPECT_EQ(w[4].count, 1); EXPECT_EQ(w[4].bits, 64);
}

// Range keys (value - lo in the bits the range needs): a top / bottom list's (b, i, rank, j)
// over one 16384 x 16384 instance fit one word (1 + 14 + 32 + 14 bits) where whole-width keys
// took two.
TEST(ListOrderKeys, RangeKeysShareAWord) {
  EXPECT_EQ(ord::range_key_bits(1), 1);
  EXPECT_EQ(ord::range_key_bits(2), 1);
  EXPECT_EQ(ord::range_key_bits(3), 2);
  EXPECT_EQ(ord::range_key_bits(16384), 14);
  EXPECT_EQ(ord::range_key_bits(16385), 15);
  EXPECT_EQ(ord::range_key_bits(uint64_t(1) << 63), 63);
  EXPECT_EQ(ord::range_key_bits(~uint64_t(0)), 64);
  const int bits[] = {ord::range_key_bits(1), ord::range_key_bits(16384), 32, ord::range_key_bits(16384)};
  ord::KeyWord w[4];
  ASSERT_EQ(ord::pack_key_bits(bits, 4, w), 1);
  EXPECT_EQ(w[0].count, 4);
  EXPECT_EQ(w[0].bits, 61);
  const int whole[] = {4, 4, 4, 4};
  EXPECT_EQ(ord::pack_key_words(whole, 4, w), 2);
}
