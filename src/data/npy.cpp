#include "data/npy.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <string_view>

#include "core/error.h"
#include "core/host_memory.h"
#include "core/sizes.h"

namespace gamut {
namespace {

static_assert(std::endian::native == std::endian::little, "gamut assumes a little-endian host");

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMaxHeader = size_t(1) << 24;   // far beyond any real header; bounds allocation
constexpr size_t kMaxDims = 64;                  // NumPy 2's limit
constexpr int kMaxDepth = 16;                    // header literals nest 3 deep in practice
constexpr size_t kChunk = size_t(1) << 20;
constexpr const char* kSupported = "gamut reads bool u8 i8 i16 i32 i64 f16 bf16 f32 f64";

// A problem with the file's contents; converted to a data error naming binding and path.
struct Malformed {
  std::string why;
};
[[noreturn]] void bad(std::string why) { throw Malformed{std::move(why)}; }

// ---------------------------------------------------------------------------------------------
// The header is a Python literal (a dict). This parses the subset NumPy writes: dicts, tuples,
// lists, strings, integers, True/False/None. Recursion is bounded, integers are range-checked.

struct PyVal {
  enum Kind { Str, Int, Bool, None, Tuple, List, Dict } kind = None;
  std::string s;
  int64_t i = 0;
  bool int_fits = true;          // false when the integer does not fit in int64
  bool b = false;
  std::vector<PyVal> items;      // Tuple/List elements; Dict: key, value, key, value, ...
};

class LiteralParser {
 public:
  explicit LiteralParser(std::string_view t) : t_(t) {}

  PyVal parse_all() {
    PyVal v = value(0);
    ws();
    if (p_ != t_.size()) fail("unexpected text after the header dictionary");
    return v;
  }

 private:
  std::string_view t_;
  size_t p_ = 0;

  [[noreturn]] void fail(const std::string& what) {
    bad("malformed header: " + what + " at offset " + std::to_string(p_));
  }
  void ws() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) ++p_;
  }
  char peek() { ws(); return p_ < t_.size() ? t_[p_] : '\0'; }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }

  PyVal value(int depth) {
    if (depth > kMaxDepth) fail("literal nests too deeply");
    char c = peek();
    if (c == '{') return dict(depth);
    if (c == '(' || c == '[') return sequence(depth);
    if (c == '\'' || c == '"') return string();
    if (c == '-' || c == '+' || (c >= '0' && c <= '9')) return integer();
    struct Word { std::string_view text; PyVal::Kind kind; bool b; };
    for (const Word& w : {Word{"True", PyVal::Bool, true}, Word{"False", PyVal::Bool, false},
                          Word{"None", PyVal::None, false}}) {
      if (t_.substr(p_).starts_with(w.text)) {
        p_ += w.text.size();
        PyVal v; v.kind = w.kind; v.b = w.b;
        return v;
      }
    }
    fail(p_ < t_.size() ? "unexpected character" : "unexpected end of header");
  }

  PyVal dict(int depth) {
    PyVal d; d.kind = PyVal::Dict;
    expect('{');
    while (peek() != '}') {
      d.items.push_back(value(depth + 1));
      expect(':');
      d.items.push_back(value(depth + 1));
      if (peek() == ',') ++p_;
      else if (peek() != '}') fail("expected ',' or '}'");
    }
    ++p_;
    return d;
  }

  // (a, b) and [a, b]; a parenthesised value without a comma is just that value, as in Python.
  PyVal sequence(int depth) {
    char close = t_[p_] == '(' ? ')' : ']';
    PyVal s; s.kind = close == ')' ? PyVal::Tuple : PyVal::List;
    ++p_;
    bool comma = false;
    while (peek() != close) {
      s.items.push_back(value(depth + 1));
      if (peek() == ',') { ++p_; comma = true; }
      else if (peek() != close) fail(std::string("expected ',' or '") + close + "'");
    }
    ++p_;
    if (close == ')' && s.items.size() == 1 && !comma) return std::move(s.items[0]);
    return s;
  }

  // \xHH and \uHHHH escapes (Python writes them for unprintable characters), as UTF-8.
  void hex_escape(std::string& out, size_t n) {
    if (t_.size() - p_ < n) fail("unterminated string");
    uint32_t cp = 0;
    for (size_t k = 0; k < n; ++k) {
      char c = t_[p_++];
      if (!std::isxdigit((unsigned char)c)) fail("bad escape in string");
      cp = cp * 16 + uint32_t(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (cp < 0x80) { out += char(cp); return; }
    if (cp < 0x800) { out += char(0xc0 | cp >> 6); out += char(0x80 | (cp & 0x3f)); return; }
    out += char(0xe0 | cp >> 12); out += char(0x80 | (cp >> 6 & 0x3f)); out += char(0x80 | (cp & 0x3f));
  }

  PyVal string() {
    PyVal v; v.kind = PyVal::Str;
    char q = t_[p_++];
    while (true) {
      if (p_ >= t_.size()) fail("unterminated string");
      char c = t_[p_++];
      if (c == q) break;
      if (c == '\n') fail("unterminated string");
      if (c != '\\') { v.s += c; continue; }
      if (p_ >= t_.size()) fail("unterminated string");
      char e = t_[p_++];
      switch (e) {
        case 'n': v.s += '\n'; break;  case 't': v.s += '\t'; break;
        case 'r': v.s += '\r'; break;  case '0': v.s += '\0'; break;
        case 'x': hex_escape(v.s, 2); break;
        case 'u': hex_escape(v.s, 4); break;
        case '\\': case '\'': case '"': v.s += e; break;
        default: v.s += '\\'; v.s += e; break;   // Python keeps unknown escapes verbatim
      }
    }
    return v;
  }

  PyVal integer() {
    PyVal v; v.kind = PyVal::Int;
    bool neg = false;
    if (t_[p_] == '-' || t_[p_] == '+') { neg = t_[p_] == '-'; ++p_; }
    if (p_ >= t_.size() || t_[p_] < '0' || t_[p_] > '9') fail("expected a number");
    uint64_t mag = 0;
    while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
      uint64_t d = uint64_t(t_[p_++] - '0');
      if (mag > (UINT64_MAX - d) / 10) v.int_fits = false;
      else mag = mag * 10 + d;
    }
    if (p_ < t_.size() && (t_[p_] == 'L' || t_[p_] == 'l')) ++p_;   // Python 2 longs (old files)
    if (p_ < t_.size() && (t_[p_] == '.' || t_[p_] == 'e' || t_[p_] == 'E' || t_[p_] == 'j'))
      fail("expected an integer");
    if (!v.int_fits || mag > uint64_t(INT64_MAX) + (neg ? 1 : 0)) v.int_fits = false;
    else v.i = neg ? int64_t(0 - mag) : int64_t(mag);
    return v;
  }
};

// ---------------------------------------------------------------------------------------------
// Element types.

struct ElemType {
  DType dtype = DType::F32;
  bool swap = false;     // stored big-endian
};

// Splits '<i4' into byte order, kind and size; false when it does not have that form.
bool split_typestr(const std::string& d, char& order, char& kind, uint64_t& size) {
  size_t p = 0;
  order = '=';
  if (p < d.size() && std::strchr("<>=|", d[p]) && d[p] != '\0') order = d[p++];
  if (p >= d.size()) return false;
  kind = d[p++];
  if (kind == 'O' && p == d.size()) { size = 0; return true; }   // object arrays: '|O'
  if (p >= d.size() || p + 19 < d.size()) return false;
  size = 0;
  for (; p < d.size(); ++p) {
    if (d[p] < '0' || d[p] > '9') return false;
    size = size * 10 + uint64_t(d[p] - '0');
  }
  return true;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

ElemType parse_elem(const std::string& d) {
  if (d == "bfloat16") return {DType::BF16, false};
  char order, kind;
  uint64_t size;
  size_t k = d.find_first_not_of("<>=|");
  if (k != std::string::npos && (d[k] == 'M' || d[k] == 'm'))   // '<M8[ns]': unit suffix
    bad("unsupported element type " + quoted(d) + " (" + (d[k] == 'M' ? "datetimes" : "timedeltas") +
        "); " + kSupported);
  if (!split_typestr(d, order, kind, size))
    bad("unknown element type " + quoted(d) + "; " + kSupported);
  static const struct { char kind; uint64_t size; DType t; } known[] = {
      {'b', 1, DType::Bool}, {'u', 1, DType::U8},  {'i', 1, DType::I8},  {'i', 2, DType::I16},
      {'i', 4, DType::I32},  {'i', 8, DType::I64}, {'f', 2, DType::F16}, {'f', 4, DType::F32},
      {'f', 8, DType::F64},  {'V', 2, DType::BF16}};   // 'V2': np.save of ml_dtypes.bfloat16
  for (const auto& k : known)   // a 2-byte void has no byte order
    if (k.kind == kind && k.size == size) return {k.t, order == '>' && size > 1 && kind != 'V'};
  std::string what, bits = std::to_string(size * 8);
  switch (kind) {
    case 'c': what = "complex"; break;
    case 'O': what = "Python objects"; break;
    case 'U': what = "unicode strings"; break;
    case 'S': case 'a': what = "byte strings"; break;
    case 'V': what = "raw bytes"; break;
    case 'u': case 'i': case 'f': what = (kind == 'u' ? "uint" : kind == 'i' ? "int" : "float") + bits; break;
    case 'b': what = "bool of " + std::to_string(size) + " bytes"; break;
    default: bad("unknown element type " + quoted(d) + "; " + kSupported);
  }
  bad("unsupported element type " + quoted(d) + " (" + what + "); " + kSupported);
}

std::string descr_of(DType t) {
  switch (t) {
    case DType::Bool: return "|b1"; case DType::U8: return "|u1"; case DType::I8: return "|i1";
    case DType::I16: return "<i2"; case DType::I32: return "<i4"; case DType::I64: return "<i8";
    case DType::F16: return "<f2"; case DType::BF16: return "bfloat16";
    case DType::F32: return "<f4"; case DType::F64: return "<f8";
  }
  return "?";
}

void swap_bytes(std::byte* p, size_t count, size_t isz) {
  for (size_t e = 0; e < count; ++e, p += isz) std::reverse(p, p + isz);
}

void normalize_bools(std::byte* p, size_t count, size_t stride) {
  for (size_t e = 0; e < count; ++e, p += stride)
    if (*p != std::byte{0}) *p = std::byte{1};
}

// Fortran-order data to C order: walk the C-order output with an odometer while keeping the
// Fortran offset of the same index up to date.
std::vector<std::byte> fortran_to_c(const std::vector<std::byte>& src, const std::vector<int64_t>& shape,
                                    size_t isz) {
  size_t n = shape.size(), count = src.size() / isz;
  std::vector<std::byte> dst(src.size());
  std::vector<size_t> fstride(n), idx(n, 0);
  for (size_t k = 0; k < n; ++k) fstride[k] = k == 0 ? 1 : fstride[k - 1] * size_t(shape[k - 1]);
  size_t off = 0;
  for (size_t e = 0; e < count; ++e) {
    std::memcpy(dst.data() + e * isz, src.data() + off * isz, isz);
    for (size_t k = n; k-- > 0;) {
      off += fstride[k];
      if (++idx[k] < size_t(shape[k])) break;
      off -= fstride[k] * size_t(shape[k]);
      idx[k] = 0;
    }
  }
  return dst;
}

// ---------------------------------------------------------------------------------------------
// Reading.

class InFile {
 public:
  explicit InFile(const std::string& path) {
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) bad(std::string("cannot open: ") + std::strerror(errno));
    struct stat st;
    if (fstat(fileno(f_), &st) == 0) {
      if (S_ISDIR(st.st_mode)) { std::fclose(f_); bad("is a directory, not a .npy file"); }
      regular_ = S_ISREG(st.st_mode);
      size_ = regular_ ? uint64_t(st.st_size) : 0;
    }
  }
  ~InFile() { if (f_) std::fclose(f_); }
  InFile(const InFile&) = delete;

  // Reads up to n bytes; fewer only at end of file.
  size_t read(void* dst, size_t n) {
    size_t got = std::fread(dst, 1, n, f_);
    if (got < n && std::ferror(f_)) bad(std::string("read error: ") + std::strerror(errno));
    pos_ += got;
    return got;
  }
  bool regular() const { return regular_; }
  uint64_t remaining() const { return size_ > pos_ ? size_ - pos_ : 0; }

 private:
  std::FILE* f_ = nullptr;
  bool regular_ = false;
  uint64_t size_ = 0, pos_ = 0;
};

struct Header {
  PyVal dict;
  const PyVal* descr = nullptr;
  bool fortran = false;
  std::vector<int64_t> shape;
};

std::string latin1_to_utf8(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x80) out += char(c);
    else { out += char(0xc0 | c >> 6); out += char(0x80 | (c & 0x3f)); }
  }
  return out;
}

Header read_header(InFile& in) {
  unsigned char pre[8];
  size_t got = in.read(pre, 8);
  if (got == 0) bad("file is empty");
  if (got < 6 || std::memcmp(pre, kMagic, 6) != 0) bad("not a .npy file (bad magic string)");
  if (got < 8) bad("file ends inside the .npy preamble");
  int major = pre[6], minor = pre[7];
  if (minor != 0 || major < 1 || major > 3)
    bad("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
  unsigned char len_bytes[4] = {0, 0, 0, 0};
  size_t len_size = major == 1 ? 2 : 4;
  if (in.read(len_bytes, len_size) < len_size) bad("file ends inside the .npy preamble");
  uint64_t hlen = uint64_t(len_bytes[0]) | uint64_t(len_bytes[1]) << 8 | uint64_t(len_bytes[2]) << 16 |
                  uint64_t(len_bytes[3]) << 24;
  if (in.regular() && hlen > in.remaining())
    bad("header length " + std::to_string(hlen) + " runs past the end of the file");
  if (hlen > kMaxHeader) bad("header length " + std::to_string(hlen) + " is implausibly large");
  std::string text(hlen, '\0');
  if (in.read(text.data(), hlen) < hlen)
    bad("header length " + std::to_string(hlen) + " runs past the end of the file");
  if (major < 3) text = latin1_to_utf8(text);   // versions 1 and 2 are latin-1, 3 is UTF-8

  Header h;
  h.dict = LiteralParser(text).parse_all();
  if (h.dict.kind != PyVal::Dict) bad("malformed header: not a dictionary");
  const PyVal *descr = nullptr, *fortran = nullptr, *shape = nullptr;
  for (size_t k = 0; k + 1 < h.dict.items.size(); k += 2) {
    const PyVal& key = h.dict.items[k];
    if (key.kind != PyVal::Str) continue;
    if (key.s == "descr") descr = &h.dict.items[k + 1];
    else if (key.s == "fortran_order") fortran = &h.dict.items[k + 1];
    else if (key.s == "shape") shape = &h.dict.items[k + 1];
  }
  if (!descr || !fortran || !shape)
    bad(std::string("malformed header: no '") + (!descr ? "descr" : !fortran ? "fortran_order" : "shape") + "' key");
  if (descr->kind != PyVal::Str && descr->kind != PyVal::List)
    bad("malformed header: 'descr' is neither a type string nor a field list");
  if (fortran->kind != PyVal::Bool) bad("malformed header: 'fortran_order' is not True or False");
  if (shape->kind != PyVal::Tuple) bad("malformed header: 'shape' is not a tuple");
  if (shape->items.size() > kMaxDims)
    bad("too many dimensions (" + std::to_string(shape->items.size()) + ")");
  for (const PyVal& d : shape->items) {
    if (d.kind != PyVal::Int) bad("malformed header: 'shape' holds a value that is not an integer");
    if (!d.int_fits) bad("dimension out of range in shape");
    if (d.i < 0) bad("negative dimension " + std::to_string(d.i) + " in shape");
    h.shape.push_back(d.i);
  }
  h.descr = descr;
  h.fortran = fortran->b;
  return h;
}

// Bytes of data the header promises. As NumPy does, the product of the non-zero dimensions must
// fit too, so that an empty array cannot carry extents whose product wraps later (strides, the
// shapes of outputs sized by its extents).
uint64_t data_bytes(const std::vector<int64_t>& shape, uint64_t itemsize) {
  std::optional<int64_t> n = shape_bytes(shape, size_t(itemsize));
  if (!n) bad("shape " + shape_text(shape) + " is too large");
  return uint64_t(*n);
}

// Reads exactly `need` bytes and checks that nothing follows. For regular files the size is
// checked before allocating; for pipes the buffer grows only as data arrives.
std::vector<std::byte> read_data(InFile& in, uint64_t need) {
  auto mismatch = [&](uint64_t have, bool more) {
    bad("data size mismatch: the header promises " + std::to_string(need) + " bytes, the file has " +
        (more ? "more" : std::to_string(have)));
  };
  if (in.regular() && in.remaining() != need) mismatch(in.remaining(), false);
  // A pipe or device has no size to check the header against: its promise is checked against
  // the memory the read would fill, before anything is read.
  if (!in.regular()) {
    const HostMemory host = host_memory();
    if (int64_t(need) > host.available)
      bad("the header promises " + std::to_string(need) + " bytes, more than the " + std::to_string(host.available) +
          " bytes of memory available (" + host.limited_by + ")");
  }
  std::vector<std::byte> data;
  if (in.regular()) data.resize(need);
  uint64_t have = 0;
  while (have < need) {
    size_t step = size_t(std::min<uint64_t>(need - have, in.regular() ? need : kChunk));
    if (!in.regular()) data.resize(have + step);
    size_t got = in.read(data.data() + have, step);
    have += got;
    if (got < step) mismatch(have, false);
  }
  std::byte extra;
  if (in.read(&extra, 1) == 1) mismatch(have, true);
  return data;
}

template <class F> auto guarded(const std::string& path, const std::string& binding, F&& body) {
  try {
    return body();
  } catch (const Malformed& m) {
    throw_data_error(binding, path + ": " + m.why);
  } catch (const std::bad_alloc&) {
    throw_device_error(binding + ": out of memory reading " + path);
  }
}

// ---------------------------------------------------------------------------------------------
// Writing.

class OutFile {
 public:
  OutFile(const std::string& path, const std::string& shown) : shown_(shown.empty() ? path : shown) {
    f_ = std::fopen(path.c_str(), "wb");
    if (!f_) fail();
  }
  ~OutFile() { if (f_) std::fclose(f_); }
  OutFile(const OutFile&) = delete;

  void write(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail();
  }
  // Buffered data reaches the disk here, so a full disk shows up at the flush or the close.
  void close() {
    std::FILE* f = f_;
    f_ = nullptr;
    if (std::fflush(f) != 0) { int e = errno; std::fclose(f); errno = e; fail(); }
    if (std::fclose(f) != 0) fail();
  }

 private:
  [[noreturn]] void fail() { throw_device_error("cannot write " + shown_ + ": " + std::strerror(errno)); }
  std::FILE* f_ = nullptr;
  std::string shown_;
};

// Python repr of a string, close enough for NumPy's literal_eval.
std::string py_repr(const std::string& s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c == '\\' || c == '\'') { out += '\\'; out += char(c); }
    else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else out += char(c);
  }
  return out + "'";
}

// Preamble + header dict, padded with spaces and a newline so the data starts at a multiple of 64.
std::string make_header(const std::string& descr_repr, const std::vector<int64_t>& shape) {
  std::string dict = "{'descr': " + descr_repr + ", 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  bool ascii = std::all_of(dict.begin(), dict.end(), [](char c) { return (unsigned char)c < 0x80; });
  int major = ascii ? 1 : 3;
  auto build = [&](size_t prefix) {
    size_t pad = (64 - (prefix + dict.size() + 1) % 64) % 64;
    return dict + std::string(pad, ' ') + "\n";
  };
  std::string body = build(major == 1 ? 10 : 12);
  if (major == 1 && body.size() > 65535) { major = 2; body = build(12); }
  if (body.size() > 0xffffffffu) throw std::length_error("npy header too large");
  std::string out(kMagic, 6);
  out += char(major);
  out += char(0);
  uint32_t n = uint32_t(body.size());
  for (int k = 0; k < (major == 1 ? 2 : 4); ++k) out += char(n >> (8 * k) & 0xff);
  return out + body;
}

}  // namespace

NDArray read_npy(const std::string& path, const std::string& binding) {
  return guarded(path, binding, [&] {
    InFile in(path);
    Header h = read_header(in);
    if (h.descr->kind == PyVal::List)
      bad("is a structured array (a list output), not a plain array");
    ElemType et = parse_elem(h.descr->s);
    size_t isz = dtype_size(et.dtype);
    NDArray a;
    a.dtype = et.dtype;
    a.shape = h.shape;
    a.data = read_data(in, data_bytes(h.shape, isz));
    size_t count = a.data.size() / isz;
    if (et.swap) swap_bytes(a.data.data(), count, isz);
    if (et.dtype == DType::Bool) normalize_bools(a.data.data(), count, 1);
    if (h.fortran && h.shape.size() > 1 && count > 0) a.data = fortran_to_c(a.data, h.shape, isz);
    return a;
  });
}

Table read_npy_table(const std::string& path, const std::string& binding) {
  return guarded(path, binding, [&] {
    InFile in(path);
    Header h = read_header(in);
    if (h.descr->kind != PyVal::List)
      bad("is a plain array of " + quoted(h.descr->s) + ", not a structured array (a list output)");
    if (h.shape.size() != 1)
      bad("expected a one-dimensional structured array, got shape " + shape_text(h.shape));
    struct Field { size_t offset; ElemType et; };   // parallel to t.columns
    std::vector<Field> fields;
    Table t;
    std::set<std::string> names;
    uint64_t rec = 0;
    for (size_t f = 0; f < h.descr->items.size(); ++f) {
      const PyVal& it = h.descr->items[f];
      if ((it.kind != PyVal::Tuple && it.kind != PyVal::List) || it.items.size() < 2 || it.items.size() > 3)
        bad("malformed header: field " + std::to_string(f) + " is not a (name, type) pair");
      const PyVal &name = it.items[0], &type = it.items[1];
      if (name.kind != PyVal::Str) bad("field " + std::to_string(f) + " has a title; titled fields are not supported");
      if (type.kind != PyVal::Str) bad("field " + quoted(name.s) + " is nested; nested fields are not supported");
      if (it.items.size() == 3 && !(it.items[2].kind == PyVal::Tuple && it.items[2].items.empty()))
        bad("field " + quoted(name.s) + " is a subarray; subarray fields are not supported");
      char order, kind;
      uint64_t size;
      if (name.s.empty() && split_typestr(type.s, order, kind, size) && kind == 'V') {
        if (size > uint64_t(INT32_MAX)) bad("record size is implausibly large");
        rec += size;   // alignment padding
        continue;
      }
      std::string fname = name.s;
      if (fname.empty()) fname.append("f").append(std::to_string(f));   // NumPy's naming
      if (!names.insert(fname).second) bad("duplicate field name " + quoted(fname));
      ElemType et = parse_elem(type.s);
      fields.push_back({size_t(rec), et});
      t.columns.push_back(Column{fname, et.dtype, {}});
      rec += dtype_size(et.dtype);
      if (rec > uint64_t(INT32_MAX)) bad("record size is implausibly large");
    }
    std::vector<std::byte> data = read_data(in, data_bytes(h.shape, rec));
    t.rows = h.shape[0];
    size_t rows = rec ? data.size() / rec : 0;
    for (size_t k = 0; k < fields.size(); ++k) {
      const Field& f = fields[k];
      Column& c = t.columns[k];
      size_t isz = dtype_size(c.dtype);
      c.data.resize(rows * isz);
      for (size_t r = 0; r < rows; ++r) std::memcpy(c.data.data() + r * isz, data.data() + r * rec + f.offset, isz);
      if (f.et.swap) swap_bytes(c.data.data(), rows, isz);
      if (c.dtype == DType::Bool) normalize_bools(c.data.data(), rows, 1);
    }
    return t;
  });
}

void write_npy(const std::string& path, const NDArray& a, const std::string& shown_as) {
  size_t isz = dtype_size(a.dtype);
  for (int64_t d : a.shape)
    if (d < 0) throw std::logic_error("write_npy: negative dimension");
  if (a.data.size() != size_t(a.size()) * isz) throw std::logic_error("write_npy: data size does not match shape");
  OutFile out(path, shown_as);
  std::string header = make_header(py_repr(descr_of(a.dtype)), a.shape);
  out.write(header.data(), header.size());
  if (a.dtype != DType::Bool) {
    out.write(a.data.data(), a.data.size());
  } else {   // NumPy bools are 0 or 1; never write anything else
    std::vector<std::byte> buf;
    for (size_t at = 0; at < a.data.size(); at += kChunk) {
      size_t n = std::min(kChunk, a.data.size() - at);
      buf.assign(a.data.begin() + at, a.data.begin() + at + n);
      normalize_bools(buf.data(), n, 1);
      out.write(buf.data(), n);
    }
  }
  out.close();
}

void write_npy_table(const std::string& path, const Table& t, const std::string& shown_as) {
  if (t.rows < 0) throw std::logic_error("write_npy_table: negative row count");
  std::string descr = "[";
  size_t rec = 0;
  std::set<std::string> names;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    const Column& col = t.columns[c];
    if (col.name.empty() || !names.insert(col.name).second)
      throw std::logic_error("write_npy_table: empty or duplicate column name");
    if (col.data.size() != size_t(t.rows) * dtype_size(col.dtype))
      throw std::logic_error("write_npy_table: column " + col.name + " has the wrong length");
    descr += (c ? ", (" : "(") + py_repr(col.name) + ", " + py_repr(descr_of(col.dtype)) + ")";
    rec += dtype_size(col.dtype);
  }
  descr += "]";
  OutFile out(path, shown_as);
  std::string header = make_header(descr, {t.rows});
  out.write(header.data(), header.size());
  // Interleave columns into packed records a chunk of rows at a time.
  size_t rows = size_t(t.rows), per = rec ? std::max<size_t>(1, kChunk / rec) : rows;
  std::vector<std::byte> buf;
  for (size_t r0 = 0; r0 < rows && rec; r0 += per) {
    size_t n = std::min(per, rows - r0);
    buf.resize(n * rec);
    size_t off = 0;
    for (const Column& col : t.columns) {
      size_t isz = dtype_size(col.dtype);
      for (size_t r = 0; r < n; ++r) std::memcpy(buf.data() + r * rec + off, col.data.data() + (r0 + r) * isz, isz);
      if (col.dtype == DType::Bool) normalize_bools(buf.data() + off, n, rec);
      off += isz;
    }
    out.write(buf.data(), buf.size());
  }
  out.close();
}

}  // namespace gamut
