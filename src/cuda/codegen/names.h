// The naming policy of generated kernels: every identifier the kernel derives from the query
// (operands, parameters, accumulators, `let` values, dense outputs, lists and their columns)
// comes from this table, so that the kernel speaks the query's names (`P_ptr`, `Top_counter`,
// `dot`, `dist`) instead of positions. The names depend on the plan alone (the source text is a
// cache key), and are valid, unique C identifiers:
//
//   base names     an operand read through one pattern: its name (`P`); read through several
//                  (a self-join): name_<the pattern's axes> (`A_ik`, `A_jk`); a parameter used
//                  at one type: its name (`thres`), at several: name_<type> (`thres_f32`);
//                  accumulators, lets, dense outputs and lists: their names.
//   derived names  base + "_" + a suffix of its kind (kAccessSuffixes, ...), e.g. `P_ld`,
//                  `Top_counter`; a list's column values base + "_" + the column's name.
//   mangling       a name that is a C++ / CUDA keyword, a name the generated code uses for
//                  itself (reserved()), or that is already taken by an earlier name (bases in
//                  the order operands, parameters, accumulators, lets, dense outputs, lists,
//                  each with all its derived names) gets "_q" appended, then "_q2", "_q3", ...
//                  until it and all its derived names are free.
//
// The generator's own identifiers are a fixed vocabulary (names.cpp, kOwnNames) plus the
// numbered forms of `reserved_numbered` (a letter prefix and digits: `sk0`, `L1`, `os0_1`);
// tests/test_codegen_names.cpp checks that every identifier of the generated kernels is one of
// those or one of this table's. No CUDA headers.
#pragma once
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/types.h"

namespace gamut {
struct Plan;
}

namespace gamut::cuda::cg {

class Names {
 public:
  explicit Names(const Plan& plan);

  // Base names.
  const std::string& access(int a) const { return access_[size_t(a)]; }
  const std::string& param(int p, CType t) const { return param_.at({p, t}); }
  const std::string& acc(int n) const { return acc_[size_t(n)]; }
  const std::string& local(int n) const { return local_[size_t(n)]; }
  const std::string& dense(int d) const { return dense_[size_t(d)]; }
  const std::string& list(int l) const { return list_[size_t(l)]; }
  // Derived names: base + "_" + suffix, for the suffixes of its kind (throws on another).
  std::string access(int a, const std::string& suffix) const;
  std::string dense(int d, const std::string& suffix) const;
  std::string list(int l, const std::string& suffix) const;
  std::string local(int n, const std::string& suffix) const;
  // List l's column k: the value of the row being appended, and its buffer's argument field.
  const std::string& column(int l, int k) const { return column_[size_t(l)][size_t(k)]; }

  // Every identifier the table hands out (bases, derived names, columns).
  const std::set<std::string>& all() const { return taken_; }

  // A C++ / CUDA keyword or an identifier of the generator's own vocabulary.
  static bool reserved(const std::string& name);
  // The generator's numbered identifiers: letters then digits, with _digits groups (`os0_1`).
  static bool reserved_numbered(const std::string& name);

  static const std::vector<std::string> kAccessSuffixes, kDenseSuffixes, kListSuffixes, kLocalSuffixes;

 private:
  // `want`, mangled until it and its derived names (base + "_" + each of `suffixes`) are free;
  // registers them all.
  std::string claim(const std::string& want, const std::vector<std::string>& suffixes);
  static std::string derive(const std::string& base, const std::vector<std::string>& kind, const std::string& suffix);

  std::set<std::string> taken_;
  std::vector<std::string> access_, acc_, local_, dense_, list_;
  std::map<std::pair<int, CType>, std::string> param_;
  std::vector<std::vector<std::string>> column_;
  std::vector<std::vector<std::string>> dense_suffixes_, list_suffixes_;
};

}  // namespace gamut::cuda::cg
