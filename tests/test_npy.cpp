// The .npy layer: round trips, NumPy interoperability both ways, hostile files, OutputCommit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "core/error.h"
#include "data/npy.h"
#include "data/output_files.h"

#ifndef GAMUT_PYTHON
#define GAMUT_PYTHON ""
#endif
#ifndef GAMUT_SOURCE_DIR
#define GAMUT_SOURCE_DIR "."
#endif

namespace fs = std::filesystem;
using namespace gamut;

namespace {

constexpr DType kAll[] = {DType::Bool, DType::U8,  DType::I8,   DType::I16, DType::I32,
                          DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

double fvalue(int64_t e) { return (double(e) * 0.37 - 5.25) / 3.0; }

// The same values as value() in npy_numpy_check.py, at flat C-order index e.
NDArray make_array(DType t, std::vector<int64_t> shape) {
  NDArray a = NDArray::zeros(t, std::move(shape));
  for (int64_t e = 0; e < a.size(); ++e) {
    uint64_t u = uint64_t(e);
    std::byte* p = a.data.data() + size_t(e) * dtype_size(t);
    auto put = [&](auto v) { std::memcpy(p, &v, sizeof v); };
    switch (t) {
      case DType::Bool: put(uint8_t((e * 7 + 3) % 5 < 3)); break;
      case DType::U8: put(uint8_t((e * 37 + 11) % 256)); break;
      case DType::I8: put(int8_t((e * 37 + 11) % 256 - 128)); break;
      case DType::I16: put(int16_t((e * 1237 + 5) % 65536 - 32768)); break;
      case DType::I32: put(int32_t(int64_t((u * 2654435761u + 12345u) % 4294967296u) - 2147483648LL)); break;
      case DType::I64: put(int64_t(u * 0x9E3779B97F4A7C15ull + 0x12345ull - 0x8000000000000000ull)); break;
      case DType::F16: put(float_to_half(float(((e * 7) % 97 - 48) * 0.25 + 0.125))); break;
      case DType::BF16: put(float_to_bf16(float(((e * 5) % 61 - 30) * 0.5 + 0.25))); break;
      case DType::F32: put(float(fvalue(e))); break;
      case DType::F64: put(fvalue(e)); break;
    }
  }
  return a;
}

std::string le_descr(DType t) {
  switch (t) {
    case DType::Bool: return "|b1"; case DType::U8: return "|u1"; case DType::I8: return "|i1";
    case DType::I16: return "<i2"; case DType::I32: return "<i4"; case DType::I64: return "<i8";
    case DType::F16: return "<f2"; case DType::BF16: return "bfloat16"; case DType::F32: return "<f4";
    case DType::F64: return "<f8";
  }
  return "?";
}

std::string shape_str(const std::vector<int64_t>& s) {
  std::string r = "(";
  for (size_t k = 0; k < s.size(); ++k) r += (k ? ", " : "") + std::to_string(s[k]);
  return r + (s.size() == 1 ? ",)" : ")");
}

std::string dict(const std::string& descr, bool fortran, const std::string& shape) {
  return "{'descr': " + descr + ", 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': " + shape + ", }\n";
}

// A .npy file as raw bytes: preamble of format `major`, the header text as given, the data.
std::string npy_raw(const std::string& header, const std::string& data, int major = 1) {
  std::string s("\x93NUMPY", 6);
  s += char(major);
  s += char(0);
  for (int k = 0; k < (major == 1 ? 2 : 4); ++k) s += char(header.size() >> (8 * k) & 0xff);
  return s + header + data;
}

std::string bytes_of(const NDArray& a) { return std::string(reinterpret_cast<const char*>(a.data.data()), a.data.size()); }

std::string big_endian(const std::string& data, size_t isz) {
  std::string r = data;
  for (size_t at = 0; at + isz <= r.size(); at += isz) std::reverse(r.begin() + at, r.begin() + at + isz);
  return r;
}

// The data of a C-order array laid out in Fortran order (first index fastest).
std::string fortran_bytes(const NDArray& a) {
  size_t isz = dtype_size(a.dtype), n = a.shape.size();
  std::string out;
  std::vector<int64_t> idx(n, 0);
  for (int64_t f = 0; f < a.size(); ++f) {
    int64_t c = 0;
    for (size_t k = 0; k < n; ++k) c = c * a.shape[k] + idx[k];
    out.append(reinterpret_cast<const char*>(a.data.data()) + c * isz, isz);
    for (size_t k = 0; k < n && ++idx[k] == a.shape[k]; ++k) idx[k] = 0;
  }
  return out;
}

void put_file(const std::string& path, const std::string& bytes) {
  // Unlink first unless it is a pipe: ext4 flushes a truncated-and-rewritten file on close.
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) fs::remove(path, ec);
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

std::string get_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void expect_same(const NDArray& got, const NDArray& want, const std::string& what) {
  EXPECT_EQ(got.dtype, want.dtype) << what;
  EXPECT_EQ(got.shape, want.shape) << what;
  EXPECT_TRUE(got.data == want.data) << what;
}

// Runs f, which must throw a one-line data error naming binding and path; returns the message.
std::string data_error(const std::function<void()>& f, const std::string& binding, const std::string& path) {
  try {
    f();
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_EQ(e.code(), ExitCode::Data) << m;
    EXPECT_EQ(m.rfind("data error: " + binding + ": " + path + ": ", 0), 0u) << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    return m;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a gamut::Error: " << e.what();
    return "";
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

std::string numpy_missing() {
  std::string py = GAMUT_PYTHON;
  if (py.empty()) return "GAMUT_PYTHON is empty: no python3 found at configure time";
  if (std::system(("'" + py + "' -c 'import numpy' >/dev/null 2>&1").c_str()) != 0)
    return "GAMUT_PYTHON (" + py + ") cannot import numpy";
  return "";
}

int run_check_script(const std::string& mode, const std::string& dir) {
  std::string cmd = std::string("'") + GAMUT_PYTHON + "' '" + GAMUT_SOURCE_DIR + "/tests/npy_numpy_check.py' " +
                    mode + " '" + dir + "'";
  return std::system(cmd.c_str());
}

class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    static int counter = 0;
    dir_ = fs::path(::testing::TempDir()) / ("gamut_npy_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::set<std::string> listing(const fs::path& d) const {
    std::set<std::string> names;
    for (auto& e : fs::directory_iterator(d)) names.insert(e.path().filename().string());
    return names;
  }
  fs::path dir_;
};

Table make_table(const std::vector<std::pair<std::string, DType>>& cols, int64_t rows) {
  Table t;
  t.rows = rows;
  for (auto& [name, dt] : cols) t.columns.push_back(Column{name, dt, make_array(dt, {rows}).data});
  return t;
}

Table sample_table(int64_t rows) {
  return make_table({{"i", DType::I32}, {"j", DType::I32}, {"accum", DType::F32}, {"flag", DType::Bool},
                     {"big", DType::I64}, {"h", DType::F16}, {"d", DType::F64}, {"small", DType::I8},
                     {"byte", DType::U8}, {"s", DType::I16}}, rows);
}

// Runs f, which must throw a resource error (exit status 4); returns the message.
std::string device_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::Device) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

void expect_same_table(const Table& got, const Table& want) {
  EXPECT_EQ(got.rows, want.rows);
  ASSERT_EQ(got.columns.size(), want.columns.size());
  for (size_t c = 0; c < want.columns.size(); ++c) {
    EXPECT_EQ(got.columns[c].name, want.columns[c].name);
    EXPECT_EQ(got.columns[c].dtype, want.columns[c].dtype) << want.columns[c].name;
    EXPECT_TRUE(got.columns[c].data == want.columns[c].data) << want.columns[c].name;
  }
}

}  // namespace

TEST_F(Npy, RoundTripEveryDtypeAndShape) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {7}, {3, 5}, {2, 3, 4}, {0, 5}, {5, 0}, {1, 1, 1, 3}};
  for (DType t : kAll)
    for (const auto& shape : shapes) {
      NDArray a = make_array(t, shape);
      std::string p = path("a.npy"), what = std::string(dtype_name(t)) + " " + shape_str(shape);
      write_npy(p, a);
      expect_same(read_npy(p, "A"), a, what);
    }
}

TEST_F(Npy, RoundTripLargeShapes) {
  for (auto [t, shape] : {std::pair{DType::F32, std::vector<int64_t>{513, 1031}},
                          std::pair{DType::I64, std::vector<int64_t>{64, 64, 33}},
                          std::pair{DType::Bool, std::vector<int64_t>{3001, 7}}}) {
    NDArray a = make_array(t, shape);
    write_npy(path("big.npy"), a);
    expect_same(read_npy(path("big.npy"), "A"), a, shape_str(shape));
  }
}

TEST_F(Npy, WrittenHeaderIsNumpyStyle) {
  for (DType t : kAll)
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 5}, std::vector<int64_t>{}, std::vector<int64_t>{9}}) {
      write_npy(path("h.npy"), make_array(t, shape));
      std::string f = get_file(path("h.npy"));
      ASSERT_GE(f.size(), 10u);
      EXPECT_EQ(f.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
      size_t hlen = size_t(uint8_t(f[8])) | size_t(uint8_t(f[9])) << 8;
      EXPECT_EQ((10 + hlen) % 64, 0u);
      std::string h = f.substr(10, hlen);
      std::string want = "{'descr': '" + le_descr(t) + "', 'fortran_order': False, 'shape': " + shape_str(shape) + ", }";
      EXPECT_EQ(h.substr(0, want.size()), want);
      EXPECT_EQ(h.back(), '\n');
      EXPECT_EQ(h.find_first_not_of(' ', want.size()), hlen - 1);
      EXPECT_EQ(f.size(), 10 + hlen + make_array(t, shape).nbytes());
    }
}

TEST_F(Npy, BoolBytesAreZeroOrOne) {
  NDArray a = NDArray::zeros(DType::Bool, {4});
  a.data = {std::byte{7}, std::byte{0}, std::byte{1}, std::byte{255}};
  write_npy(path("b.npy"), a);
  std::string f = get_file(path("b.npy"));
  EXPECT_EQ(f.substr(f.size() - 4), std::string("\x01\x00\x01\x01", 4));
  put_file(path("b2.npy"), npy_raw(dict("'|b1'", false, "(3,)"), std::string("\x05\x00\x80", 3)));
  NDArray r = read_npy(path("b2.npy"), "B");
  EXPECT_TRUE((r.data == std::vector<std::byte>{std::byte{1}, std::byte{0}, std::byte{1}}));
}

TEST_F(Npy, FortranOrderIsTransposedToC) {
  const std::vector<std::vector<int64_t>> shapes = {{2, 3, 4}, {5, 7}, {1, 6}, {3, 1, 2, 2}, {4}, {}, {0, 3}};
  for (DType t : kAll)
    for (const auto& shape : shapes) {
      NDArray want = make_array(t, shape);
      put_file(path("f.npy"), npy_raw(dict("'" + le_descr(t) + "'", true, shape_str(shape)), fortran_bytes(want)));
      expect_same(read_npy(path("f.npy"), "F"), want, std::string(dtype_name(t)) + " " + shape_str(shape));
    }
}

TEST_F(Npy, BigEndianIsSwapped) {
  for (DType t : kAll) {
    if (t == DType::BF16) continue;
    std::string d = le_descr(t);
    if (d[0] == '<') d[0] = '>';
    size_t isz = dtype_size(t);
    NDArray want = make_array(t, {3, 4});
    put_file(path("be.npy"), npy_raw(dict("'" + d + "'", false, "(3, 4)"), big_endian(bytes_of(want), isz)));
    expect_same(read_npy(path("be.npy"), "B"), want, d);
    put_file(path("bef.npy"), npy_raw(dict("'" + d + "'", true, "(3, 4)"), big_endian(fortran_bytes(want), isz)));
    expect_same(read_npy(path("bef.npy"), "B"), want, d + " fortran");
  }
  // '=' and '|' and no mark mean native; single bytes ignore the mark.
  for (auto [d, t] : {std::pair{"'=i4'", DType::I32}, {"'|i4'", DType::I32}, {"'i4'", DType::I32},
                      {"'<u1'", DType::U8}, {"'>u1'", DType::U8}, {"'u1'", DType::U8}}) {
    NDArray want = make_array(t, {6});
    put_file(path("o.npy"), npy_raw(dict(d, false, "(6,)"), bytes_of(want)));
    expect_same(read_npy(path("o.npy"), "O"), want, d);
  }
}

TEST_F(Npy, Bf16Descrs) {
  NDArray want = make_array(DType::BF16, {3, 5});
  for (const char* d : {"'bfloat16'", "'<V2'", "'|V2'"}) {
    put_file(path("bf.npy"), npy_raw(dict(d, false, "(3, 5)"), bytes_of(want)));
    expect_same(read_npy(path("bf.npy"), "W"), want, d);
  }
  write_npy(path("bf.npy"), want);
  EXPECT_NE(get_file(path("bf.npy")).find("'descr': 'bfloat16'"), std::string::npos);
  EXPECT_FLOAT_EQ(read_npy(path("bf.npy"), "W").get_f64(1), ((1 * 5) % 61 - 30) * 0.5 + 0.25);
}

TEST_F(Npy, HeaderVersionsAndSpellings) {
  NDArray want = make_array(DType::I16, {2, 3});
  for (int major : {2, 3}) {
    put_file(path("v.npy"), npy_raw(dict("'<i2'", false, "(2, 3)"), bytes_of(want), major));
    expect_same(read_npy(path("v.npy"), "V"), want, "version " + std::to_string(major));
  }
  for (const std::string h : {
           "{\"descr\": \"<i2\", \"fortran_order\": False, \"shape\": (2, 3)}",
           "{'shape': (2L, 3L), 'fortran_order': False, 'descr': '<i2'}",       // Python 2 era
           "{ 'descr' : '<i2' ,\n 'fortran_order' : False , 'shape' : ( 2 , 3 , ) , }   \n",
           "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3), 'extra': [1, None, (True,)]}"}) {
    put_file(path("h.npy"), npy_raw(h, bytes_of(want)));
    expect_same(read_npy(path("h.npy"), "H"), want, h);
  }
}

TEST_F(Npy, ReadsFromPipe) {
  std::string fifo = path("pipe.npy");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  NDArray want = make_array(DType::F32, {40, 25});   // under the pipe buffer: the writer never blocks
  std::string good = npy_raw(dict("'<f4'", false, "(40, 25)"), bytes_of(want));
  auto feed = [&](const std::string& bytes) { return std::thread([&fifo, bytes] { put_file(fifo, bytes); }); };
  std::thread w = feed(good);
  expect_same(read_npy(fifo, "P"), want, "pipe");
  w.join();
  w = feed(good.substr(0, good.size() - 9));
  EXPECT_NE(data_error([&] { read_npy(fifo, "P"); }, "P", fifo).find("the file has 3991"), std::string::npos);
  w.join();
  w = feed(good + "xy");
  EXPECT_NE(data_error([&] { read_npy(fifo, "P"); }, "P", fifo).find("the file has more"), std::string::npos);
  w.join();
}

TEST_F(Npy, MalformedFilesAreDataErrors) {
  std::string f4x3(12, '\x41');
  auto simple = [&](const std::string& descr, const std::string& shape, const std::string& data) {
    return npy_raw(dict(descr, false, shape), data);
  };
  std::string many_ones = "(";
  for (int k = 0; k < 65; ++k) many_ones += "1, ";
  many_ones += ")";
  std::string v2_long("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
  struct Case { const char* name; std::string bytes; const char* expect; };
  const Case cases[] = {
      {"empty", "", "file is empty"},
      {"bad magic", "\x93NUMPX\x01\x00\x04\x00{}  ", "bad magic"},
      {"short magic", "\x93NUM", "bad magic"},
      {"text file", "i,j\n1,2\n", "bad magic"},
      {"preamble cut", std::string("\x93NUMPY\x01", 7), "preamble"},
      {"length cut", std::string("\x93NUMPY\x02\x00\x10\x00", 10), "preamble"},
      {"version 4", npy_raw("{}", "", 4), "unsupported .npy format version 4.0"},
      {"version 1.1", std::string("\x93NUMPY\x01\x01\x02\x00{}", 12), "version 1.1"},
      {"header past eof", std::string("\x93NUMPY\x01\x00\xe8\x03{'descr'", 17), "runs past the end"},
      {"v2 header past eof", v2_long, "runs past the end"},
      {"not a dict", npy_raw("[1, 2]\n", ""), "not a dictionary"},
      {"garbage", npy_raw("{'descr': <f4}", ""), "malformed header"},
      {"unterminated", npy_raw("{'descr': '<f4", ""), "unterminated string"},
      {"deep nesting", npy_raw(std::string(100000, '('), ""), "nests too deeply"},
      {"deep dict", npy_raw(std::string(5000, '{'), ""), "nests too deeply"},
      {"trailing text", npy_raw(dict("'<f4'", false, "(3,)") + " xyz", f4x3), "unexpected text"},
      {"no shape", npy_raw("{'descr': '<f4', 'fortran_order': False}", f4x3), "no 'shape' key"},
      {"no descr", npy_raw("{'fortran_order': False, 'shape': (3,)}", f4x3), "no 'descr' key"},
      {"fortran int", npy_raw("{'descr': '<f4', 'fortran_order': 1, 'shape': (3,)}", f4x3), "not True or False"},
      {"descr int", simple("5", "(3,)", f4x3), "neither a type string"},
      {"shape list", simple("'<f4'", "[3]", f4x3), "'shape' is not a tuple"},
      {"shape int", simple("'<f4'", "(3)", f4x3), "'shape' is not a tuple"},
      {"shape float", simple("'<f4'", "(3.5,)", f4x3), "expected an integer"},
      {"shape str", simple("'<f4'", "('3',)", f4x3), "not an integer"},
      {"negative dim", simple("'<f4'", "(-3, 4)", f4x3), "negative dimension -3"},
      {"dim beyond int64", simple("'<f4'", "(99999999999999999999,)", f4x3), "dimension out of range"},
      {"product overflow", simple("'<f4'", "(4294967296, 4294967296, 16)", f4x3), "is too large"},
      {"int64 overflow", simple("'<f8'", "(9223372036854775807, 2)", f4x3), "is too large"},
      {"huge shape tiny file", simple("'<f8'", "(1099511627776,)", f4x3), "promises 8796093022208 bytes"},
      {"too many dims", simple("'<f4'", many_ones, f4x3), "too many dimensions"},
      {"truncated data", simple("'<f4'", "(10,)", std::string(20, 'x')), "the file has 20"},
      {"trailing data", simple("'<f4'", "(2,)", f4x3), "the file has 12"},
      {"complex", simple("'<c8'", "(3,)", f4x3), "unsupported element type '<c8' (complex)"},
      {"object", simple("'|O'", "(3,)", f4x3), "(Python objects)"},
      {"unicode", simple("'<U3'", "(1,)", f4x3), "(unicode strings)"},
      {"bytes", simple("'|S4'", "(3,)", f4x3), "(byte strings)"},
      {"uint32", simple("'<u4'", "(3,)", f4x3), "(uint32)"},
      {"float128", simple("'<f16'", "(3,)", f4x3), "(float128)"},
      {"datetime", simple("'<M8[ns]'", "(3,)", f4x3), "(datetimes)"},
      {"void 4", simple("'|V4'", "(3,)", f4x3), "(raw bytes)"},
      {"nonsense type", simple("'hello'", "(3,)", f4x3), "unknown element type 'hello'"},
      {"structured", simple("[('a', '<f4')]", "(3,)", f4x3), "is a structured array"},
  };
  for (const Case& c : cases) {
    put_file(path("bad.npy"), c.bytes);
    std::string m = data_error([&] { read_npy(path("bad.npy"), "X"); }, "X", path("bad.npy"));
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.name << ": " << m;
  }
  std::string missing = path("no_such.npy");
  EXPECT_NE(data_error([&] { read_npy(missing, "M"); }, "M", missing).find("cannot open: No such file"), std::string::npos);
  std::string d = dir_.string();
  EXPECT_NE(data_error([&] { read_npy(d, "D"); }, "D", d).find("is a directory"), std::string::npos);
}

// Every strict prefix of a valid file is an error; header bytes mutated anyhow give a result or
// a data error, never a crash or another exception (run under ASan to see out-of-bounds reads).
TEST_F(Npy, TruncationsAndMutationsNeverCrash) {
  write_npy(path("a.npy"), make_array(DType::F32, {3, 5}));
  write_npy_table(path("t.npy"), sample_table(3));
  put_file(path("f.npy"), npy_raw(dict("'>i2'", true, "(2, 3)"), big_endian(fortran_bytes(make_array(DType::I16, {2, 3})), 2)));
  const char values[] = {'\0', '\xff', '(', ')', '\'', '-', '9', ' ', 'L', '[', 'T', ',', '\\', '{'};
  for (const char* name : {"a.npy", "t.npy", "f.npy"}) {
    std::string good = get_file(path(name)), p = path("m.npy");
    bool table = std::string(name) == "t.npy";
    auto read = [&] { table ? (void)read_npy_table(p, "Z") : (void)read_npy(p, "Z"); };
    for (size_t len = 0; len < good.size(); ++len) {
      put_file(p, good.substr(0, len));
      data_error(read, "Z", p);
    }
    size_t header_end = good.find('\n') + 1;
    for (size_t at = 0; at < header_end; ++at)
      for (char v : values) {
        std::string bad = good;
        bad[at] = v;
        put_file(p, bad);
        try {
          read();
        } catch (const Error& e) {
          EXPECT_EQ(e.code(), ExitCode::Data) << name << " byte " << at << ": " << e.what();
        } catch (const std::exception& e) {
          ADD_FAILURE() << name << " byte " << at << ": " << e.what();
        }
      }
  }
}

TEST_F(Npy, TableRoundTrip) {
  for (int64_t rows : {37, 1, 0}) {
    Table t = sample_table(rows);
    t.columns.push_back(Column{"w", DType::BF16, make_array(DType::BF16, {rows}).data});
    write_npy_table(path("t.npy"), t);
    expect_same_table(read_npy_table(path("t.npy"), "T"), t);
  }
}

TEST_F(Npy, TableHeaderIsPackedStructuredDescr) {
  write_npy_table(path("t.npy"), make_table({{"i", DType::I32}, {"j", DType::I32}, {"accum", DType::F32}}, 4));
  std::string f = get_file(path("t.npy"));
  std::string want = "{'descr': [('i', '<i4'), ('j', '<i4'), ('accum', '<f4')], 'fortran_order': False, 'shape': (4,), }";
  EXPECT_EQ(f.substr(10, want.size()), want);
  size_t data = f.find('\n') + 1;
  EXPECT_EQ(data % 64, 0u);
  ASSERT_EQ(f.size(), data + 4 * 12);
  // Row 2 holds i[2], j[2], accum[2] side by side.
  EXPECT_EQ(f.substr(data + 2 * 12, 4), bytes_of(make_array(DType::I32, {4})).substr(8, 4));
  EXPECT_EQ(f.substr(data + 2 * 12 + 8, 4), bytes_of(make_array(DType::F32, {4})).substr(8, 4));
}

TEST_F(Npy, TableHeaderVersions2And3) {
  Table wide;   // a header over 64 KiB needs format 2.0
  for (int c = 0; c < 3000; ++c)
    wide.columns.push_back(Column{"column_with_a_long_name_" + std::to_string(c), DType::I8, {}});
  write_npy_table(path("w.npy"), wide);
  std::string f = get_file(path("w.npy"));
  EXPECT_EQ(f[6], '\x02');
  uint32_t hlen = 0;
  std::memcpy(&hlen, f.data() + 8, 4);
  EXPECT_EQ((12 + hlen) % 64, 0u);
  expect_same_table(read_npy_table(path("w.npy"), "W"), wide);

  Table uni = make_table({{"\xce\x94x", DType::F64}}, 3);   // a non-ASCII name needs format 3.0 (UTF-8)
  write_npy_table(path("u.npy"), uni);
  EXPECT_EQ(get_file(path("u.npy"))[6], '\x03');
  expect_same_table(read_npy_table(path("u.npy"), "U"), uni);
}

TEST_F(Npy, TablePaddingTitlesAndByteOrder) {
  // a: u8, 3 bytes padding, b: big-endian i32, c: little-endian f64 -> 16-byte records
  NDArray a = make_array(DType::U8, {5}), b = make_array(DType::I32, {5}), c = make_array(DType::F64, {5});
  std::string data;
  for (int r = 0; r < 5; ++r) {
    data += bytes_of(a).substr(r, 1) + "pad";
    data += big_endian(bytes_of(b).substr(r * 4, 4), 4);
    data += bytes_of(c).substr(r * 8, 8);
  }
  put_file(path("p.npy"), npy_raw(dict("[('a', '|u1'), ('', '|V3'), ('b', '>i4'), ('c', '<f8', ())]", false, "(5,)"), data));
  expect_same_table(read_npy_table(path("p.npy"), "P"), make_table({{"a", DType::U8}, {"b", DType::I32}, {"c", DType::F64}}, 5));
  // Version 1 headers are latin-1: the name comes back as UTF-8.
  put_file(path("l.npy"), npy_raw(dict("[('gr\xf6\xdf" "e', '<f8')]", false, "(5,)"), bytes_of(c)));
  EXPECT_EQ(read_npy_table(path("l.npy"), "L").columns.at(0).name, "gr\xc3\xb6\xc3\x9f" "e");
}

TEST_F(Npy, TableMalformed) {
  std::string rec8(24, 'q');
  struct Case { const char* name; std::string descr, shape, data; const char* expect; };
  const Case cases[] = {
      {"plain", "'<f8'", "(3,)", rec8, "not a structured array"},
      {"2-d", "[('a', '<i4'), ('b', '<f4')]", "(1, 3)", rec8, "one-dimensional"},
      {"0-d", "[('a', '<i4'), ('b', '<f4')]", "()", rec8, "one-dimensional"},
      {"subarray", "[('a', '<i4', (2,))]", "(3,)", rec8, "subarray"},
      {"nested", "[('a', [('b', '<i4'), ('c', '<i4')])]", "(3,)", rec8, "nested"},
      {"duplicate", "[('a', '<i4'), ('a', '<f4')]", "(3,)", rec8, "duplicate field name 'a'"},
      {"titled", "[(('title', 'a'), '<i8')]", "(3,)", rec8, "titled"},
      {"not a pair", "[('a',)]", "(3,)", rec8, "not a (name, type) pair"},
      {"complex field", "[('a', '<c8')]", "(3,)", rec8, "unsupported element type '<c8'"},
      {"huge padding", "[('', '|V9999999999'), ('a', '<i4')]", "(3,)", rec8, "implausibly large"},
      {"truncated", "[('a', '<i4'), ('b', '<f4')]", "(4,)", rec8, "the file has 24"},
  };
  for (const Case& c : cases) {
    put_file(path("bad.npy"), npy_raw(dict(c.descr, false, c.shape), c.data));
    std::string m = data_error([&] { read_npy_table(path("bad.npy"), "L"); }, "L", path("bad.npy"));
    EXPECT_NE(m.find(c.expect), std::string::npos) << c.name << ": " << m;
  }
}

TEST_F(Npy, NumpyWrittenFilesReadExactly) {
  if (std::string why = numpy_missing(); !why.empty()) GTEST_SKIP() << why;
  ASSERT_EQ(run_check_script("write", dir_.string()), 0);
  for (DType t : kAll) {
    if (t == DType::BF16) continue;
    std::string n(dtype_name(t));
    expect_same(read_npy(path(n + ".npy"), "A"), make_array(t, {3, 5}), n);
    expect_same(read_npy(path(n + "_f.npy"), "A"), make_array(t, {4, 3, 5}), n + " fortran");
    expect_same(read_npy(path(n + "_be.npy"), "A"), make_array(t, {2, 3, 4}), n + " big-endian");
    expect_same(read_npy(path(n + "_fbe.npy"), "A"), make_array(t, {3, 4}), n + " fortran big-endian");
    expect_same(read_npy(path(n + "_0d.npy"), "A"), make_array(t, {}), n + " 0-d");
    expect_same(read_npy(path(n + "_empty.npy"), "A"), make_array(t, {0, 5}), n + " empty");
  }
  expect_same(read_npy(path("v2.npy"), "A"), make_array(DType::F32, {6, 7}), "v2");
  expect_same(read_npy(path("v3.npy"), "A"), make_array(DType::I64, {5}), "v3");
  expect_same(read_npy(path("large_f32.npy"), "A"), make_array(DType::F32, {300, 257}), "large");
  expect_same(read_npy(path("large_f_f64.npy"), "A"), make_array(DType::F64, {129, 65, 3}), "large fortran");
  expect_same(read_npy(path("bf16_v2.npy"), "A"), make_array(DType::BF16, {3, 5}), "bf16 V2");
  expect_same(read_npy(path("bf16_named.npy"), "A"), make_array(DType::BF16, {3, 5}), "bf16 named");

  expect_same_table(read_npy_table(path("table.npy"), "T"),   // packed, with a big-endian field
                    make_table({{"i", DType::I32}, {"j", DType::I16}, {"accum", DType::F32}, {"flag", DType::Bool},
                                {"big", DType::I64}, {"h", DType::F16}}, 23));
  expect_same_table(read_npy_table(path("table_aligned.npy"), "T"),   // padding fields skipped
                    make_table({{"a", DType::U8}, {"b", DType::I64}, {"c", DType::F32}}, 23));
  expect_same_table(read_npy_table(path("table_latin1.npy"), "T"), make_table({{"gr\xc3\xb6\xc3\x9f" "e", DType::F64}}, 23));
  expect_same_table(read_npy_table(path("table_utf8.npy"), "T"), make_table({{"\xce\x94x", DType::I16}}, 23));
}

TEST_F(Npy, NumpyReadsOurFiles) {
  if (std::string why = numpy_missing(); !why.empty()) GTEST_SKIP() << why;
  for (DType t : kAll) {
    if (t == DType::BF16) continue;
    std::string n(dtype_name(t));
    write_npy(path(n + ".npy"), make_array(t, {3, 5}));
    write_npy(path(n + "_0d.npy"), make_array(t, {}));
    write_npy(path(n + "_empty.npy"), make_array(t, {0, 5}));
  }
  write_npy(path("large.npy"), make_array(DType::F64, {200, 301}));
  write_npy(path("bf16.npy"), make_array(DType::BF16, {3, 5}));
  write_npy_table(path("table.npy"), sample_table(37));
  write_npy_table(path("table_empty.npy"), sample_table(0));
  Table acc = make_table({{"i", DType::I32}, {"j", DType::I32}, {"accum", DType::F32}}, 4);
  for (int32_t e = 0; e < 4; ++e) {   // j: -1717, -717, 283, 1283
    int32_t v = 1000 * e - 1717;
    std::memcpy(acc.columns[1].data.data() + 4 * e, &v, 4);
  }
  write_npy_table(path("table_accum.npy"), acc);
  EXPECT_EQ(run_check_script("check", dir_.string()), 0) << "see MISMATCH lines above";
}

TEST_F(Npy, WriteFailureIsDeviceError) {
  std::string p = path("no_dir/a.npy");
  EXPECT_EQ(device_error([&] { write_npy(p, make_array(DType::F32, {3, 5})); }),
            "device error: cannot write " + p + ": No such file or directory");
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full to simulate a full disk";
  EXPECT_EQ(device_error([&] { write_npy("/dev/full", make_array(DType::F64, {100, 100}), "out/C.npy"); }),
            "device error: cannot write out/C.npy: No space left on device");
}

class OutputCommitTest : public Npy {};

TEST_F(OutputCommitTest, UncommittedLeavesNothing) {
  fs::path out = dir_ / "new" / "out";
  {
    OutputCommit oc(out.string());
    oc.stage("C", make_array(DType::F32, {3, 5}));
    oc.stage("L", sample_table(7));
    EXPECT_EQ(listing(out).size(), 1u);   // the hidden staging directory
    for (const std::string& n : listing(out)) EXPECT_EQ(n[0], '.') << n;
  }
  EXPECT_FALSE(fs::exists(dir_ / "new")) << "directories it created are removed again";
  EXPECT_TRUE(listing(dir_).empty());
}

TEST_F(OutputCommitTest, UncommittedKeepsEarlierOutputs) {
  write_npy(path("C.npy"), make_array(DType::I32, {2}));
  std::string before = get_file(path("C.npy"));
  {
    OutputCommit oc(dir_.string());
    oc.stage("C", make_array(DType::F64, {4, 4}));
    oc.stage("D", make_array(DType::I64, {3}));
  }
  EXPECT_EQ(listing(dir_), (std::set<std::string>{"C.npy"}));
  EXPECT_EQ(get_file(path("C.npy")), before);
}

TEST_F(OutputCommitTest, CommitLeavesExactlyTheFinalFiles) {
  write_npy(path("C.npy"), make_array(DType::I32, {2}));   // replaced by the commit
  fs::path out = dir_ / "made";
  for (const fs::path& d : {dir_, out}) {
    OutputCommit oc(d.string());
    oc.stage("C", make_array(DType::F32, {3, 5}));
    oc.stage("X", make_array(DType::Bool, {6}));
    oc.stage("X", make_array(DType::I64, {2, 2}));   // staged again: the later one wins
    oc.stage("L", sample_table(7));
    oc.commit();
    EXPECT_EQ(listing(d), (std::set<std::string>{"C.npy", "L.npy", "X.npy"})) << d;
    expect_same(read_npy((d / "C.npy").string(), "C"), make_array(DType::F32, {3, 5}), "C");
    expect_same(read_npy((d / "X.npy").string(), "X"), make_array(DType::I64, {2, 2}), "X");
    expect_same_table(read_npy_table((d / "L.npy").string(), "L"), sample_table(7));
  }
  EXPECT_TRUE(fs::is_directory(out)) << "committed directories stay";
  OutputCommit none((dir_ / "empty_run").string());
  none.commit();
  EXPECT_TRUE(fs::is_directory(dir_ / "empty_run"));
}

TEST_F(OutputCommitTest, ResourceErrorsNameThePath) {
  put_file(path("file"), "not a directory");
  for (const std::string& bad : {path("file"), path("file") + "/sub"}) {
    OutputCommit oc(bad);
    std::string m = device_error([&] { oc.stage("C", make_array(DType::F32, {2})); });
    EXPECT_EQ(m.rfind("device error: cannot create output directory " + bad + ": ", 0), 0u) << m;
  }
  fs::create_directory(dir_ / "out");
  fs::create_directory(dir_ / "out" / "C.npy");   // a directory where the output goes
  {
    OutputCommit oc((dir_ / "out").string());
    oc.stage("C", make_array(DType::F32, {2}));
    std::string m = device_error([&] { oc.commit(); });
    EXPECT_EQ(m.rfind("device error: cannot write " + (dir_ / "out" / "C.npy").string() + ": ", 0), 0u) << m;
  }
  EXPECT_EQ(listing(dir_ / "out"), (std::set<std::string>{"C.npy"}));   // the temporary is gone
}
