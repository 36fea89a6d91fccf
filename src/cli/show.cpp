#include "cli/show.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "cli/commands.h"

namespace gamut::cli {

namespace {

template <class T> T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class F> std::string shortest(F v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

std::string where_it_goes(const std::string& name) { return "-o DIR writes it to DIR/" + name + ".npy"; }

}  // namespace

std::string value_text(DType t, const std::byte* p) {
  switch (t) {
    case DType::Bool: return load<uint8_t>(p) ? "true" : "false";
    case DType::U8: return std::to_string(load<uint8_t>(p));
    case DType::I8: return std::to_string(load<int8_t>(p));
    case DType::I16: return std::to_string(load<int16_t>(p));
    case DType::I32: return std::to_string(load<int32_t>(p));
    case DType::I64: return std::to_string(load<int64_t>(p));
    case DType::F16: return shortest(half_to_float(load<uint16_t>(p)));
    case DType::BF16: return shortest(bf16_to_float(load<uint16_t>(p)));
    case DType::F32: return shortest(load<float>(p));
    case DType::F64: return shortest(load<double>(p));
  }
  return "?";
}

std::string show_dense(const std::string& name, const NDArray& a, const ShowLimits& limits) {
  std::string head = "  " + name + ": " + std::string(dtype_name(a.dtype)) + " " + shape_text(a.shape);
  const int64_t n = a.size();
  if (n == 0) return head + " (empty)\n";
  if (n > limits.max_elements)
    return head + ": " + std::to_string(n) + " values, not shown (" + where_it_goes(name) + ")\n";
  const size_t esize = dtype_size(a.dtype);
  std::vector<std::string> values(static_cast<size_t>(n));
  size_t width = 0;
  for (int64_t e = 0; e < n; ++e) {
    values[size_t(e)] = value_text(a.dtype, a.data.data() + size_t(e) * esize);
    width = std::max(width, values[size_t(e)].size());
  }
  if (a.shape.empty()) return head + " = " + values[0] + "\n";

  // NumPy-like: one line per innermost row, brackets opening and closing with the outer axes.
  const int rank = int(a.shape.size());
  const int64_t row_len = a.shape.back(), rows = n / row_len;
  std::string out = head + " =\n";
  for (int64_t q = 0; q < rows; ++q) {
    int opens = 0, closes = 0;   // outer axes whose index is at its first / last value here
    int64_t stride = 1;          // innermost rows per step along axis ax
    for (int ax = rank - 2; ax >= 0; --ax) {
      const int64_t idx = (q / stride) % a.shape[size_t(ax)];
      if (idx == 0 && opens == rank - 2 - ax) ++opens;
      if (idx == a.shape[size_t(ax)] - 1 && closes == rank - 2 - ax) ++closes;
      stride *= a.shape[size_t(ax)];
    }
    std::string line = "    " + std::string(size_t(rank - 1 - opens), ' ') + std::string(size_t(opens + 1), '[');
    for (int64_t c = 0; c < row_len; ++c) line += (c ? ", " : "") + pad_left(values[size_t(q * row_len + c)], width);
    line += std::string(size_t(closes + 1), ']');
    const bool last = q + 1 == rows;
    out += line + (last ? "" : ",") + "\n";
    if (!last && closes > 0) out += "\n";
  }
  return out;
}

std::string show_list(const std::string& name, const Table& t, const ShowLimits& limits) {
  std::string out = "  " + name + ": " + std::to_string(t.rows) + (t.rows == 1 ? " row" : " rows");
  if (t.rows == 0 || t.columns.empty()) return out + "\n";
  const int64_t shown = std::min(t.rows, limits.list_rows);
  std::vector<std::vector<std::string>> cells(t.columns.size());
  std::vector<size_t> width(t.columns.size());
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const Column& col = t.columns[c];
    width[c] = col.name.size();
    for (int64_t r = 0; r < shown; ++r) {
      cells[c].push_back(value_text(col.dtype, col.data.data() + size_t(r) * dtype_size(col.dtype)));
      width[c] = std::max(width[c], cells[c].back().size());
    }
  }
  out += shown < t.rows ? ", the first " + std::to_string(shown) + ":\n" : ":\n";
  std::string header = "   ";
  for (size_t c = 0; c < t.columns.size(); ++c) header += "  " + pad_left(t.columns[c].name, width[c]);
  out += header + "\n";
  for (int64_t r = 0; r < shown; ++r) {
    std::string line = "   ";
    for (size_t c = 0; c < t.columns.size(); ++c) line += "  " + pad_left(cells[c][size_t(r)], width[c]);
    out += line + "\n";
  }
  if (shown < t.rows)
    out += "    ... " + std::to_string(t.rows - shown) + " more rows (-o DIR writes all " + std::to_string(t.rows) +
           " to DIR/" + name + ".npy)\n";
  return out;
}

namespace {
nlohmann::json value_json(DType t, const std::byte* p) {
  switch (t) {
    case DType::Bool: return load<uint8_t>(p) != 0;
    case DType::U8: return load<uint8_t>(p);
    case DType::I8: return load<int8_t>(p);
    case DType::I16: return load<int16_t>(p);
    case DType::I32: return load<int32_t>(p);
    case DType::I64: return load<int64_t>(p);
    case DType::F16: return half_to_float(load<uint16_t>(p));
    case DType::BF16: return bf16_to_float(load<uint16_t>(p));
    case DType::F32: return load<float>(p);
    case DType::F64: return load<double>(p);
  }
  return nullptr;
}

nlohmann::json nested(const NDArray& a, size_t axis, int64_t& next) {
  const size_t esize = dtype_size(a.dtype);
  if (axis == a.shape.size()) return value_json(a.dtype, a.data.data() + size_t(next++) * esize);
  nlohmann::json v = nlohmann::json::array();
  for (int64_t k = 0; k < a.shape[axis]; ++k) v.push_back(nested(a, axis + 1, next));
  return v;
}
}  // namespace

nlohmann::json dense_json(const NDArray& a) {
  int64_t next = 0;
  return nested(a, 0, next);
}

void list_head_json(const Table& t, const ShowLimits& limits, nlohmann::json& out) {
  out["columns"] = nlohmann::json::array();
  for (const Column& c : t.columns) out["columns"].push_back(c.name);
  out["head"] = nlohmann::json::array();
  for (int64_t r = 0; r < std::min(t.rows, limits.list_rows); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (const Column& c : t.columns) row.push_back(value_json(c.dtype, c.data.data() + size_t(r) * dtype_size(c.dtype)));
    out["head"].push_back(row);
  }
}

}  // namespace gamut::cli
