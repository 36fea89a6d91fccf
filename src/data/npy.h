// NumPy .npy files: reading inputs, writing dense outputs and list outputs (spec section 9).
//
// Reading accepts format versions 1.0, 2.0 and 3.0, C or Fortran order (Fortran data is transposed
// to C order), any byte order (big-endian data is swapped to native), and 0-d arrays (shape {}).
// Element types and their descr strings:
//   bool '|b1'  u8 '|u1'  i8 '|i1'  i16 '<i2'  i32 '<i4'  i64 '<i8'  f16 '<f2'  f32 '<f4'  f64 '<f8'
//   bf16: NumPy has no bfloat16. We read the descr 'bfloat16' (what ml_dtypes names it, so
//   `np.load` reads our files back when ml_dtypes is imported) and a 2-byte void '<V2' / '|V2'
//   (what `np.save` writes for an ml_dtypes.bfloat16 array, losing the name). We write 'bfloat16'.
// Bool bytes other than 0 are read as 1. Any problem with a file (missing, unreadable, malformed
// header, unsupported type, data shorter or longer than the header says) is a data error naming
// the binding; hostile headers cannot make the reader overflow, allocate beyond the file's size
// or read out of bounds.
//
// Writing produces version 1.0 (2.0 when the header exceeds 65535 bytes, 3.0 when a field name is
// not ASCII), C order, little-endian descr, data aligned to 64 bytes as NumPy does. A write
// failure is a resource error (ExitCode::Device) naming the file.
#pragma once
#include <string>

#include "core/array.h"

namespace gamut {

NDArray read_npy(const std::string& path, const std::string& binding);

// `shown_as`, when given, is the path that error messages name (OutputCommit writes to a
// temporary file but reports the final name).
void write_npy(const std::string& path, const NDArray& a, const std::string& shown_as = "");

// List outputs: a one-dimensional structured array, one field per column, packed records:
// descr [('i', '<i4'), ('j', '<i4'), ('accum', '<f4')], shape (rows,).
void write_npy_table(const std::string& path, const Table& t, const std::string& shown_as = "");

// Reads a one-dimensional structured array back into columns. Unnamed void fields (the padding
// NumPy writes for aligned dtypes) are skipped; subarray and nested fields are data errors.
Table read_npy_table(const std::string& path, const std::string& binding);

}  // namespace gamut
