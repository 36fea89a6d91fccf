// How `gamut run` shows outputs on the terminal when no -o is given: small dense outputs in full,
// the first rows of a list, and for the rest where -o would write it.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "core/array.h"

namespace gamut::cli {

struct ShowLimits {
  int64_t max_elements = 64;    // dense outputs up to this many values are printed in full
  int64_t list_rows = 10;       // lists: this many first rows
};

// One value as text: integers exactly, floats as the shortest text that reads back to the same
// value (f16/bf16 through f32), bools as true/false.
std::string value_text(DType t, const std::byte* p);

// "  NAME: DTYPE SHAPE" and the values (NumPy-like brackets), or a note that they are not shown.
// Every line ends with '\n'.
std::string show_dense(const std::string& name, const NDArray& a, const ShowLimits& limits = {});
// "  NAME: ROWS rows", then a header of column names and the first rows, aligned.
std::string show_list(const std::string& name, const Table& t, const ShowLimits& limits = {});

// The same for `run --json`: the values as nested arrays (NaN and infinities as null, which
// JSON has no numbers for), and a list's "columns" and its first rows as "head".
nlohmann::json dense_json(const NDArray& a);
void list_head_json(const Table& t, const ShowLimits& limits, nlohmann::json& out);

}  // namespace gamut::cli
