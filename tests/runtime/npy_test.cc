// .npy files: round trips for every dtype, files written byte by byte as NumPy writes them (format
// versions 1.0, 2.0 and 3.0), and every error a user can meet.
#include "anvil/runtime/npy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace anvil::runtime {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "anvil_npy_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  static std::string read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // The message load_npy throws for a file holding `bytes`.
  std::string load_error(const std::string& bytes) const {
    std::string p = write("bad.npy", bytes);
    try {
      load_npy(p);
    } catch (const std::runtime_error& e) {
      std::string m = e.what();
      EXPECT_NE(m.find(p), std::string::npos) << "the message does not name the file: " << m;
      return m;
    }
    ADD_FAILURE() << "load_npy accepted a bad file";
    return "";
  }

  fs::path dir_;
};

template <typename T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// A version 1.0 file exactly as NumPy writes it: dict, spaces to a multiple of 64 bytes, '\n'.
std::string v1_file(const std::string& dict, const std::string& data) {
  size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
  std::string header = dict + std::string(total - 10 - dict.size() - 1, ' ') + "\n";
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string f32_dict(const std::string& shape) {
  return "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
}

// The bytes of `numpy.save(f, numpy.arange(6, dtype=numpy.float32).reshape(2, 3))` (NumPy 1.14 on),
// kept literally so that the test needs no NumPy: the header is 118 bytes ('v'), the data starts
// at byte 128.
const std::string kNumpyArange2x3 = std::string("\x93NUMPY\x01\x00v\x00", 10) +
                                    "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" +
                                    std::string(58, ' ') + "\n" +
                                    std::string(
                                        "\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40"
                                        "\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\xa0\x40",
                                        24);

TEST_F(NpyTest, ReadsAFileWrittenByNumpy) {
  ASSERT_EQ(kNumpyArange2x3.size(), 152u);  // 128 + 24
  NDArray a = load_npy(write("arange.npy", kNumpyArange2x3));
  EXPECT_EQ(a.shape(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(to_string(a.dtype()), "float32");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(a.data_as<float>()[i], static_cast<float>(i));
}

TEST_F(NpyTest, WritesExactlyWhatNumpyWrites) {
  NDArray a = NDArray::empty({2, 3}, dl_float32());
  for (int i = 0; i < 6; ++i) a.data_as<float>()[i] = static_cast<float>(i);
  save_npy(path("out.npy"), a);
  EXPECT_EQ(read(path("out.npy")), kNumpyArange2x3);
}

TEST_F(NpyTest, WritesOneAndZeroDimensionalShapesAsPythonTuples) {
  save_npy(path("vec.npy"), NDArray::empty({5}, dl_float32(), true));
  EXPECT_EQ(read(path("vec.npy")), v1_file(f32_dict("(5,)"), std::string(20, '\0')));
  NDArray scalar = NDArray::empty({}, dl_int32());
  *scalar.data_as<int32_t>() = 7;
  save_npy(path("scalar.npy"), scalar);
  EXPECT_EQ(read(path("scalar.npy")),
            v1_file("{'descr': '<i4', 'fortran_order': False, 'shape': (), }",
                    std::string("\x07\x00\x00\x00", 4)));
}

struct DtypeCase {
  DLDataType dtype;
  const char* descr;
};

TEST_F(NpyTest, RoundTripsEveryDtype) {
  const std::vector<DtypeCase> cases = {
      {{kDLFloat, 16, 1}, "<f2"}, {{kDLFloat, 32, 1}, "<f4"}, {{kDLFloat, 64, 1}, "<f8"},
      {{kDLInt, 8, 1}, "|i1"},    {{kDLInt, 16, 1}, "<i2"},   {{kDLInt, 32, 1}, "<i4"},
      {{kDLInt, 64, 1}, "<i8"},   {{kDLUInt, 8, 1}, "|u1"},   {{kDLUInt, 16, 1}, "<u2"},
      {{kDLUInt, 32, 1}, "<u4"},  {{kDLUInt, 64, 1}, "<u8"},  {{6, 8, 1}, "|b1"},
  };
  std::mt19937 rng(3);
  for (const DtypeCase& c : cases) {
    SCOPED_TRACE(c.descr);
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{}, {7}, {2, 3, 5}, {1, 4, 0}}) {
      NDArray a = NDArray::empty(shape, c.dtype);
      auto* bytes = static_cast<unsigned char*>(a.data());
      for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] = static_cast<unsigned char>(rng());
      if (c.dtype.code == 6)
        for (size_t i = 0; i < a.nbytes(); ++i) bytes[i] &= 1;
      std::string p = path(std::string("rt") + c.descr + ".npy");
      save_npy(p, a);
      std::string file = read(p);
      EXPECT_NE(file.find(std::string("'descr': '") + c.descr + "'"), std::string::npos);
      EXPECT_EQ((file.size() - a.nbytes()) % 64, 0u) << "the data does not start 64-aligned";
      NDArray b = load_npy(p);
      EXPECT_EQ(b.shape(), shape);
      EXPECT_EQ(to_string(b.dtype()), to_string(c.dtype));
      ASSERT_EQ(b.nbytes(), a.nbytes());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.nbytes()), 0);
    }
  }
}

TEST_F(NpyTest, ReadsVersions2And3WithFourByteHeaderLengths) {
  std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }";
  std::string header = dict + std::string(128 - 12 - dict.size() - 1, ' ') + "\n";
  std::vector<int64_t> values = {-1, 0, 1LL << 40};
  for (char major : {'\x02', '\x03'}) {
    std::string file = std::string("\x93NUMPY", 6) + major + '\0';
    file += static_cast<char>(header.size());
    file += std::string(3, '\0');
    NDArray a = load_npy(write("v2.npy", file + header + raw(values)));
    ASSERT_EQ(a.shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(to_string(a.dtype()), "int64");
    for (int i = 0; i < 3; ++i) EXPECT_EQ(a.data_as<int64_t>()[i], values[i]);
  }
}

TEST_F(NpyTest, AcceptsTheHeaderVariationsOfOtherWriters) {
  std::vector<float> v = {1.5f, -2.0f};
  // Double quotes, another key order, no trailing comma, native byte order, Python 2 longs.
  for (const std::string& dict : {
           std::string("{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f4\"}"),
           std::string("{'descr': '=f4', 'fortran_order': False, 'shape': (2L,), }"),
           std::string("{'descr':'<f4','fortran_order':False,'shape':(1,2)}"),
           // Fortran order is the same layout when at most one dimension exceeds 1.
           std::string("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 1), }"),
       }) {
    SCOPED_TRACE(dict);
    NDArray a = load_npy(write("variant.npy", v1_file(dict, raw(v))));
    EXPECT_EQ(a.numel(), 2);
    EXPECT_EQ(a.data_as<float>()[0], 1.5f);
    EXPECT_EQ(a.data_as<float>()[1], -2.0f);
  }
}

TEST_F(NpyTest, RefusesABadMagicString) {
  std::string m = load_error("PK\x03\x04 this is a zip file, not an array");
  EXPECT_NE(m.find("not a .npy file"), std::string::npos) << m;
  m = load_error("");
  EXPECT_NE(m.find("not a .npy file"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesAnUnknownFormatVersion) {
  std::string file = v1_file(f32_dict("(1,)"), std::string(4, '\0'));
  file[6] = '\x04';
  std::string m = load_error(file);
  EXPECT_NE(m.find("format version 4.0"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesFortranOrder) {
  std::string m = load_error(
      v1_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", std::string(24, '\0')));
  EXPECT_NE(m.find("Fortran order"), std::string::npos) << m;
  EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesBigEndianData) {
  std::string m = load_error(
      v1_file("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", std::string(8, '\0')));
  EXPECT_NE(m.find("unsupported dtype '>f4'"), std::string::npos) << m;
  EXPECT_NE(m.find("big-endian"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesUnsupportedDtypes) {
  for (const char* descr : {"<c8", "<f16", "<U3", "|O", "<M8", "<f3", "|b2"}) {
    std::string m = load_error(
        v1_file(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (1,), }",
                std::string(16, '\0')));
    EXPECT_NE(m.find(std::string("unsupported dtype '") + descr + "'"), std::string::npos) << m;
  }
  std::string m = load_error(
      v1_file("{'descr': [('x', '<f4'), ('y', '<i4')], 'fortran_order': False, 'shape': (1,), }",
              std::string(8, '\0')));
  EXPECT_NE(m.find("structured"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesTruncatedData) {
  std::string m = load_error(v1_file(f32_dict("(2, 3)"), std::string(20, '\0')));
  EXPECT_NE(m.find("truncated data"), std::string::npos) << m;
  EXPECT_NE(m.find("needs 24 bytes, the file holds 20"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesATruncatedHeader) {
  std::string file = v1_file(f32_dict("(2, 3)"), "");
  std::string m = load_error(file.substr(0, 40));
  EXPECT_NE(m.find("truncated .npy header"), std::string::npos) << m;
  m = load_error(file.substr(0, 9));
  EXPECT_NE(m.find("truncated .npy header"), std::string::npos) << m;
}

TEST_F(NpyTest, RefusesHeadersThatDoNotParse) {
  std::string m = load_error(v1_file("{'descr': '<f4', 'shape': (2,) ", std::string(8, '\0')));
  EXPECT_NE(m.find("does not parse"), std::string::npos) << m;
  m = load_error(v1_file("{'descr': '<f4', 'fortran_order': False}", std::string(8, '\0')));
  EXPECT_NE(m.find("no 'shape'"), std::string::npos) << m;
  m = load_error(v1_file("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", ""));
  EXPECT_NE(m.find("'fortran_order' is not True or False"), std::string::npos) << m;
  m = load_error(v1_file("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}", ""));
  EXPECT_NE(m.find("non-negative integer"), std::string::npos) << m;
}

TEST_F(NpyTest, AMissingFileIsNamed) {
  std::string p = path("nowhere.npy");
  try {
    load_npy(p);
    FAIL() << "load_npy read a missing file";
  } catch (const std::runtime_error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find(p), std::string::npos) << m;
    EXPECT_NE(m.find("No such file"), std::string::npos) << m;
  }
}

TEST_F(NpyTest, ADirectoryIsNotAFile) {
  try {
    load_npy(dir_.string());
    FAIL() << "load_npy read a directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(dir_.string()), std::string::npos) << e.what();
  }
}

TEST_F(NpyTest, SaveNamesAnUnwritablePathAndAnUnsupportedDtype) {
  std::string p = path("no/such/dir/out.npy");
  try {
    save_npy(p, NDArray::empty({1}, dl_float32()));
    FAIL() << "save_npy wrote into a missing directory";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
  try {
    save_npy(path("bf16.npy"), NDArray::empty({1}, DLDataType{kDLBfloat, 16, 1}));
    FAIL() << "save_npy wrote bfloat16";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bfloat16"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace anvil::runtime
