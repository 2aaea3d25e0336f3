// NumPy .npy files. The format (numpy.lib.format): the magic "\x93NUMPY", a major and a minor
// version byte, the header length (2 bytes little-endian in version 1, 4 bytes in versions 2 and
// 3), then the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n', then the raw elements.
#include "anvil/runtime/npy.h"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace anvil::runtime {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;
constexpr uint8_t kBoolCode = 6;  // kDLBool in DLPack >= 0.8, which this one predates

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("'" + path + "': " + what);
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// A header as quoted in errors: trailing padding dropped, long ones cut.
std::string excerpt(std::string_view header) {
  while (!header.empty() && (header.back() == ' ' || header.back() == '\n'))
    header.remove_suffix(1);
  if (header.size() <= 200) return std::string(header);
  return std::string(header.substr(0, 200)) + "...";
}

// The subset of Python literals .npy headers use: a dict of strings, booleans and tuples of
// integers. Anything else is reported with the offending text.
struct HeaderValue {
  enum class Kind { kString, kBool, kTuple, kOther } kind = Kind::kOther;
  std::string text;  // the string, or the literal as written for kOther
  bool boolean = false;
  std::vector<int64_t> ints;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  std::map<std::string, HeaderValue> dict() {
    std::map<std::string, HeaderValue> out;
    expect('{');
    while (!peek('}')) {
      std::string key = string_literal();
      expect(':');
      out[key] = value();
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (i_ != s_.size()) error("unexpected text after the dict");
    return out;
  }

 private:
  [[noreturn]] void error(const std::string& what) {
    fail(path_, "the header does not parse (" + what + " at offset " + std::to_string(i_) +
                    "): " + excerpt(s_));
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  bool peek(char c) {
    skip_space();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) error(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) error("expected a string");
    char quote = s_[i_++];
    size_t end = s_.find(quote, i_);
    if (end == std::string_view::npos) error("unterminated string");
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  int64_t integer() {
    skip_space();
    size_t start = i_;
    int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (INT64_MAX - 9) / 10) error("integer too large");
      v = v * 10 + (s_[i_++] - '0');
    }
    if (i_ == start) error("expected a non-negative integer");
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 longs in old files
    return v;
  }
  HeaderValue value() {
    skip_space();
    HeaderValue v;
    if (peek('\'') || peek('"')) {
      v.kind = HeaderValue::Kind::kString;
      v.text = string_literal();
    } else if (s_.substr(i_, 4) == "True") {
      v.kind = HeaderValue::Kind::kBool, v.boolean = true, i_ += 4;
    } else if (s_.substr(i_, 5) == "False") {
      v.kind = HeaderValue::Kind::kBool, v.boolean = false, i_ += 5;
    } else if (peek('(')) {
      v.kind = HeaderValue::Kind::kTuple;
      ++i_;
      while (!peek(')')) {
        v.ints.push_back(integer());
        if (!peek(')')) expect(',');
      }
      ++i_;
    } else {
      // Something this reader does not take (a structured dtype's list, say): skip to the next
      // top-level ',' or '}' and keep the text for the error message.
      size_t start = i_;
      int depth = 0;
      while (i_ < s_.size()) {
        char c = s_[i_];
        if (c == '[' || c == '(' || c == '{') ++depth;
        if (c == ']' || c == ')' || c == '}') {
          if (depth == 0) break;
          --depth;
        }
        if (c == ',' && depth == 0) break;
        ++i_;
      }
      v.text = std::string(s_.substr(start, i_ - start));
    }
    return v;
  }

  std::string_view s_;
  size_t i_ = 0;
  const std::string& path_;
};

// descr ('<f4', '|b1', ...) to a DLPack dtype; throws naming the file for anything else.
DLDataType parse_descr(const std::string& descr, const std::string& path) {
  auto unsupported = [&](const std::string& why) -> DLDataType {
    fail(path, "unsupported dtype '" + descr + "'" + why +
                   " (expected little-endian float16/32/64, int8/16/32/64, uint8/16/32/64 or "
                   "bool: '<f4', '|u1', '|b1', ...)");
  };
  if (descr.size() < 3) return unsupported("");
  char order = descr[0];
  char kind = descr[1];
  int bytes = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || bytes > 1000) return unsupported("");
    bytes = bytes * 10 + (descr[i] - '0');
  }
  if (order != '<' && order != '>' && order != '|' && order != '=') return unsupported("");
  // '=' is the writer's native order; Anvil's hosts (x86-64, aarch64) are little-endian.
  if (order == '>' && bytes > 1) return unsupported(": big-endian data");
  DLDataType t{0, static_cast<uint8_t>(bytes * 8), 1};
  switch (kind) {
    case 'f':
      if (bytes != 2 && bytes != 4 && bytes != 8) return unsupported("");
      t.code = kDLFloat;
      return t;
    case 'i':
    case 'u':
      if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return unsupported("");
      t.code = kind == 'i' ? kDLInt : kDLUInt;
      return t;
    case 'b':
      if (bytes != 1) return unsupported("");
      t.code = kBoolCode;
      return t;
    default:
      return unsupported("");
  }
}

std::string descr_of(DLDataType t, const std::string& path) {
  auto unsupported = [&]() -> std::string {
    fail(path, "cannot write dtype " + to_string(t) +
                   " (.npy files take float16/32/64, int8-64, uint8-64 and bool)");
  };
  if (t.lanes != 1) return unsupported();
  std::string bytes = std::to_string(t.bits / 8);
  switch (t.code) {
    case kDLFloat:
      if (t.bits != 16 && t.bits != 32 && t.bits != 64) return unsupported();
      return "<f" + bytes;
    case kDLInt:
    case kDLUInt:
      if (t.bits != 8 && t.bits != 16 && t.bits != 32 && t.bits != 64) return unsupported();
      return std::string(t.bits == 8 ? "|" : "<") + (t.code == kDLInt ? "i" : "u") + bytes;
    case kBoolCode:
      if (t.bits != 8) return unsupported();
      return "|b1";
    default:
      return unsupported();
  }
}

uint32_t read_le(const unsigned char* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

NDArray load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open the .npy file: ") + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (end < 0) fail(path, "cannot read the .npy file (is it a directory?)");
  const auto file_size = static_cast<uint64_t>(end);
  in.seekg(0);

  unsigned char prefix[12] = {};
  in.read(reinterpret_cast<char*>(prefix), 8);
  if (in.gcount() < 8 || std::memcmp(prefix, kMagic, kMagicSize) != 0)
    fail(path, "not a .npy file (it does not start with the magic string \"\\x93NUMPY\")");
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0)
    fail(path, "unsupported .npy format version " + std::to_string(major) + "." +
                   std::to_string(minor) + " (expected 1.0, 2.0 or 3.0)");
  const int len_bytes = major == 1 ? 2 : 4;
  in.read(reinterpret_cast<char*>(prefix + 8), len_bytes);
  if (in.gcount() < len_bytes) fail(path, "truncated .npy header (the file ends in its length)");
  const uint64_t header_len = read_le(prefix + 8, len_bytes);
  const uint64_t data_offset = 8 + len_bytes + header_len;
  if (data_offset > file_size)
    fail(path, "truncated .npy header: it claims " + std::to_string(header_len) +
                   " bytes, the file has " + std::to_string(file_size) + " in all");
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));

  std::map<std::string, HeaderValue> dict = HeaderParser(header, path).dict();
  auto field = [&](const char* key, HeaderValue::Kind kind, const char* expected) {
    auto it = dict.find(key);
    if (it == dict.end())
      fail(path, std::string("the header has no '") + key + "': " + excerpt(header));
    if (it->second.kind != kind)
      fail(path,
           std::string("the header's '") + key + "' is not " + expected + ": " + excerpt(header));
    return it->second;
  };
  if (auto it = dict.find("descr");
      it != dict.end() && it->second.kind == HeaderValue::Kind::kOther)
    fail(path, "unsupported dtype " + it->second.text + " (structured dtypes are not supported)");
  const HeaderValue descr = field("descr", HeaderValue::Kind::kString, "a string");
  const bool fortran = field("fortran_order", HeaderValue::Kind::kBool, "True or False").boolean;
  const std::vector<int64_t> shape = field("shape", HeaderValue::Kind::kTuple, "a tuple").ints;
  const DLDataType dtype = parse_descr(descr.text, path);

  // Fortran and C order coincide when at most one dimension exceeds 1.
  int non_trivial = 0;
  bool empty = false;
  for (int64_t d : shape) {
    non_trivial += d > 1;
    empty = empty || d == 0;
  }
  if (fortran && non_trivial > 1 && !empty)
    fail(path, "the array of shape " + shape_string(shape) +
                   " is in Fortran order (expected C order: save it with "
                   "numpy.ascontiguousarray)");

  NDArray array;
  try {
    array = NDArray::empty(shape, dtype);
  } catch (const std::exception& e) {
    fail(path, e.what());
  }
  const uint64_t available = file_size - data_offset;
  if (available < array.nbytes())
    fail(path, "truncated data: shape " + shape_string(shape) + " of " + to_string(dtype) +
                   " needs " + std::to_string(array.nbytes()) + " bytes, the file holds " +
                   std::to_string(available));
  in.read(static_cast<char*>(array.data()), static_cast<std::streamsize>(array.nbytes()));
  if (static_cast<size_t>(in.gcount()) != array.nbytes())
    fail(path, std::string("reading the data failed: ") + std::strerror(errno));
  return array;
}

void save_npy(const std::string& path, const NDArray& array) {
  if (!array.defined()) fail(path, "cannot write an undefined array");
  std::string dict =
      "{'descr': '" + descr_of(array.dtype(), path) + "', 'fortran_order': False, 'shape': (";
  const std::vector<int64_t>& shape = array.shape();
  for (size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  // NumPy pads the header with spaces so that the data starts at a multiple of 64 bytes.
  const bool v1 = dict.size() + 11 + 64 <= 65535;
  const size_t prefix = v1 ? 10 : 12;
  const size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  std::string header = dict + std::string(total - prefix - dict.size() - 1, ' ') + "\n";

  std::string head(kMagic, kMagicSize);
  head += static_cast<char>(v1 ? 1 : 2);
  head += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    head += static_cast<char>((header.size() >> (8 * i)) & 0xff);

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) fail(path, std::string("cannot write the .npy file: ") + std::strerror(errno));
  out.write(head.data(), static_cast<std::streamsize>(head.size()));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(array.data()), static_cast<std::streamsize>(array.nbytes()));
  out.close();
  if (!out) fail(path, std::string("writing the .npy file failed: ") + std::strerror(errno));
}

}  // namespace anvil::runtime
