// Source positions for diagnostics.
#pragma once
#include <string>

namespace gamut {

struct Span {
  int line = 0;    // 1-based; 0: no position
  int col = 0;     // 1-based
  int length = 1;  // in characters on `line`, for the caret underline
};

}  // namespace gamut
