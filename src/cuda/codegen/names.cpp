// The naming policy of generated kernels (names.h).
#include "cuda/codegen/names.h"

#include <algorithm>
#include <cctype>

#include "cuda/codegen/codegen.h"
#include "cuda/codegen/internal.h"

namespace gamut::cuda::cg {

namespace {

// C++ and CUDA keywords, and names the generated code uses unqualified from CUDA or the math
// library: a query name among them is mangled.
const char* const kKeywords[] = {
    "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char",
    "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit",
    "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double",
    "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if",
    "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or",
    "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed",
    "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw",
    "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
    "wchar_t", "while", "xor", "xor_eq", "NULL", "main", "std",
    // CUDA
    "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3", "uint", "half", "nv_bfloat16",
    // math functions the renderer calls unqualified
    "sqrt", "sqrtf", "exp", "expf", "log", "logf", "pow", "powf", "floor", "floorf", "ceil", "ceilf", "tanh", "tanhf",
    "abs", "fabs", "fabsf", "min", "max", "fmin", "fmax", "fminf", "fmaxf", "isnan", "isinf"};

// The generator's own identifiers (everything a generated kernel names itself, besides the
// numbered forms and the names of this table): locals, struct and member names, arguments.
const char* const kOwnNames[] = {"Args",
                                 "BM",
                                 "BN",
                                 "GUARD",
                                 "Inner",
                                 "Mainloop",
                                 "Resident",
                                 "Shape",
                                 "Stage",
                                 "TD",
                                 "THREADS",
                                 "TM",
                                 "TN",
                                 "TcMap",
                                 "TcShapeT",
                                 "VN",
                                 "Smem",
                                 "distinct",
                                 "resident_accs",
                                 "resident_top",
                                 "a",
                                 "acc",
                                 "accs",
                                 "any",
                                 "at",
                                 "b",
                                 "batch",
                                 "bit_pack_tiled",
                                 "bits",
                                 "buf",
                                 "c",
                                 "cb_e",
                                 "ce_e",
                                 "col",
                                 "col_begin",
                                 "col_end",
                                 "compute",
                                 "e",
                                 "em",
                                 "en",
                                 "epack",
                                 "f",
                                 "found",
                                 "g",
                                 "gamut_main",
                                 "gextent",
                                 "gfirst",
                                 "gm",
                                 "gthr",
                                 "hit",
                                 "i",
                                 "index",
                                 "j",
                                 "jcol",
                                 "join_cols",
                                 "join_rows",
                                 "join_tiles",
                                 "jrow",
                                 "jt",
                                 "k",
                                 "kCols",
                                 "kRows",
                                 "kStaged",
                                 "k_any",
                                 "k_end",
                                 "k_major_copy",
                                 "key",
                                 "key_at",
                                 "kk",
                                 "krem",
                                 "lane",
                                 "load",
                                 "m",
                                 "n",
                                 "om",
                                 "out_smem",
                                 "ov",
                                 "p",
                                 "packed_acc",
                                 "pair",
                                 "pass",
                                 "pk",
                                 "rank",
                                 "rank_of",
                                 "rb_e",
                                 "re_e",
                                 "red_begin",
                                 "red_end",
                                 "row",
                                 "row_begin",
                                 "row_end",
                                 "rs",
                                 "rsv",
                                 "rw",
                                 "s",
                                 "segment_sum_direct",
                                 "segment_sum_tiled",
                                 "slice",
                                 "sm",
                                 "smem",
                                 "sn",
                                 "ss",
                                 "st",
                                 "stage",
                                 "state",
                                 "step",
                                 "store",
                                 "t",
                                 "tc_a",
                                 "tc_a_base",
                                 "tc_a_ld",
                                 "tc_a_vec",
                                 "tc_accs",
                                 "tc_b",
                                 "tc_b_base",
                                 "tc_b_ld",
                                 "tc_b_vec",
                                 "tc_i0",
                                 "tc_j0",
                                 "tc_map",
                                 "td",
                                 "tid",
                                 "tile",
                                 "tile_e",
                                 "tile_hi",
                                 "tile_inside",
                                 "tile_lo",
                                 "tile_m",
                                 "tile_n",
                                 "tiles_all",
                                 "tiles_m",
                                 "tiles_n",
                                 "tm_e",
                                 "tma_a",
                                 "tma_b",
                                 "tmap",
                                 "tn_e",
                                 "todo",
                                 "unroll",
                                 "v",
                                 "w",
                                 "widen",
                                 "within",
                                 "x",
                                 "y",
                                 "pragma",
                                 "gm_sel_digit",
                                 "gm_sel_hist",
                                 "gm_sel_keep",
                                 "gm_sel_small",
                                 "gm_sel_sort_rank"};

bool numbered(const std::string& s) {
  size_t p = 0;
  while (p < s.size() && std::isalpha(static_cast<unsigned char>(s[p]))) ++p;
  if (p == 0 || p == s.size()) return false;
  bool digit = false;  // each group after the letters: digits, then "_" digits ...
  for (; p < s.size(); ++p) {
    const char ch = s[p];
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      digit = true;
    } else if (ch == '_' && digit) {
      digit = false;
    } else {
      return false;
    }
  }
  return digit;
}

std::string ctype_suffix(CType t) { return std::string(ctype_name(t)); }

}  // namespace

const std::vector<std::string> Names::kAccessSuffixes = {"ptr", "ld", "batch_stride", "vec4", "bs", "tiles", "raw"};
const std::vector<std::string> Names::kDenseSuffixes = {"ptr", "vec4", "elems", "run", "set", "table"};
const std::vector<std::string> Names::kLocalSuffixes = {"of"};
const std::vector<std::string> Names::kListSuffixes = {"counter", "capacity",  "rows_b",    "rows_i", "rows_j",
                                                       "key",     "threshold", "reservoir", "seen",   "seen_words",
                                                       "append",  "marks",     "emitted",   "ranks",  "cells"};

bool Names::reserved(const std::string& name) {
  static const std::set<std::string> names = [] {
    std::set<std::string> s(std::begin(kKeywords), std::end(kKeywords));
    s.insert(std::begin(kOwnNames), std::end(kOwnNames));
    return s;
  }();
  // Identifiers with a double underscore or a leading underscore and capital are the
  // implementation's (CUDA's __syncthreads, __ldg, ...).
  return names.count(name) > 0 || name.find("__") != std::string::npos ||
         (name.size() > 1 && name[0] == '_' && std::isupper(static_cast<unsigned char>(name[1]))) ||
         reserved_numbered(name);
}

bool Names::reserved_numbered(const std::string& name) { return numbered(name); }

std::string Names::claim(const std::string& wanted, const std::vector<std::string>& suffixes) {
  // A name the implementation reserves by its form (a double underscore, _ and a capital: the
  // hidden list columns "__key", "__i" of rewrite/list_provenance.h) stays reserved whatever is
  // appended: make it legal first (runs of underscores as one, a leading _X as q_X).
  std::string want;
  for (char ch : wanted)
    if (ch != '_' || want.empty() || want.back() != '_') want += ch;
  if (want.empty() || (want.size() > 1 && want[0] == '_' && std::isupper(static_cast<unsigned char>(want[1]))))
    want = "q" + want;
  auto free = [&](const std::string& b) {
    if (reserved(b) || taken_.count(b)) return false;
    for (const std::string& s : suffixes)
      if (taken_.count(b + "_" + s) || reserved(b + "_" + s)) return false;
    return true;
  };
  std::string base = want;
  for (int n = 1; !free(base); ++n) base = want + "_q" + (n > 1 ? std::to_string(n) : "");
  taken_.insert(base);
  for (const std::string& s : suffixes) taken_.insert(base + "_" + s);
  return base;
}

std::string Names::derive(const std::string& base, const std::vector<std::string>& kind, const std::string& suffix) {
  if (std::find(kind.begin(), kind.end(), suffix) == kind.end())
    unsupported("internal error: no generated name " + base + "_" + suffix);
  return base + "_" + suffix;
}

std::string Names::access(int a, const std::string& suffix) const {
  return derive(access_[size_t(a)], kAccessSuffixes, suffix);
}
std::string Names::dense(int d, const std::string& suffix) const {
  return derive(dense_[size_t(d)], dense_suffixes_[size_t(d)], suffix);
}
std::string Names::local(int n, const std::string& suffix) const {
  return derive(local_[size_t(n)], kLocalSuffixes, suffix);
}
std::string Names::list(int l, const std::string& suffix) const {
  return derive(list_[size_t(l)], list_suffixes_[size_t(l)], suffix);
}

Names::Names(const Plan& plan) {
  // Operands: one name per access; an operand read through several patterns names each by its
  // axes (A_ik, A_jk).
  const std::string axis[3] = {plan.axes.size() > 0 ? plan.axis(AxisRole::Row).name : "r",
                               plan.axes.size() > 1 ? plan.axis(AxisRole::Col).name : "c",
                               plan.axes.size() > 2 ? plan.axis(AxisRole::Red).name : "k"};
  for (const Access& acc : plan.accesses) {
    const Operand& op = plan.operands[size_t(acc.operand)];
    std::string want = op.name;
    if (op.accesses.size() > 1) {
      want += "_";
      for (const char* p = pattern_name(acc.pattern); *p; ++p)
        if (*p == 'r' || *p == 'c' || *p == 'k') want += axis[*p == 'r' ? 0 : *p == 'c' ? 1 : 2];
    }
    access_.push_back(claim(want, kAccessSuffixes));
  }
  // Parameters, at each type the kernel reads them.
  std::set<std::pair<int, CType>> ps = params_in(plan, true);
  for (const auto& p : params_in(plan, false)) ps.insert(p);
  for (const auto& pt : ps) {
    const int p = pt.first;
    const bool several = std::count_if(ps.begin(), ps.end(), [p](const auto& q) { return q.first == p; }) > 1;
    param_[pt] = claim(plan.params[size_t(p)].name + (several ? "_" + ctype_suffix(pt.second) : ""), {});
  }
  for (const Accumulator& a : plan.accs) acc_.push_back(claim(a.name, {}));
  for (const Local& l : plan.locals) local_.push_back(claim(l.name, kLocalSuffixes));
  for (size_t d = 0; d < plan.dense.size(); ++d) {
    std::vector<std::string> s = kDenseSuffixes;
    const std::vector<OutIndex> idx = output_index(plan, int(d));
    for (size_t p = 0; p < idx.size(); ++p) {
      s.push_back("stride" + std::to_string(p));
      if (idx[p].kind == OutIndex::Key) s.push_back("extent" + std::to_string(p));
    }
    if (std::any_of(idx.begin(), idx.end(), [](const OutIndex& x) { return x.kind == OutIndex::Key; }))
      s.push_back("misses");
    dense_.push_back(claim(plan.dense[d].name, s));
    dense_suffixes_.push_back(s);
  }
  for (const ListOutput& lo : plan.lists) {
    std::vector<std::string> s = kListSuffixes;
    for (size_t k = 0; k < lo.columns.size(); ++k) {
      s.push_back("seen_lo" + std::to_string(k));
      s.push_back("seen_stride" + std::to_string(k));
    }
    const std::string base = claim(lo.name, s);
    list_.push_back(base);
    list_suffixes_.push_back(s);
    std::vector<std::string> cols;
    for (const ListColumn& col : lo.columns) cols.push_back(claim(base + "_" + col.name, {}));
    column_.push_back(cols);
  }
}

}  // namespace gamut::cuda::cg
