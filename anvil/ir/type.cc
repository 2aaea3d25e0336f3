#include "anvil/ir/type.h"

#include <charconv>
#include <limits>
#include <sstream>

#include "anvil/support/error.h"

namespace anvil::ir {

int64_t DataType::min_value() const {
  ANVIL_ICHECK(is_int_or_uint() || is_bool(), "min_value of ", to_string());
  if (!is_int()) return 0;
  return bits_ >= 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (bits_ - 1));
}

int64_t DataType::max_value() const {
  ANVIL_ICHECK(is_int_or_uint() || is_bool(), "max_value of ", to_string());
  if (is_bool()) return 1;
  int value_bits = is_int() ? bits_ - 1 : bits_;
  return value_bits >= 63 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << value_bits) - 1;
}

std::string DataType::to_string() const {
  std::ostringstream os;
  switch (code_) {
    case Code::kInt:
      os << "int" << int{bits_};
      break;
    case Code::kUInt:
      os << "uint" << int{bits_};
      break;
    case Code::kFloat:
      os << "float" << int{bits_};
      break;
    case Code::kBFloat:
      os << "bfloat" << int{bits_};
      break;
    case Code::kBool:
      os << "bool";
      break;
    case Code::kHandle:
      os << "handle";
      break;
  }
  if (lanes_ > 1) os << "x" << lanes_;
  return os.str();
}

namespace {

bool valid_bits(DataType::Code code, int bits) {
  switch (code) {
    case DataType::Code::kInt:
    case DataType::Code::kUInt:
      return bits == 8 || bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kFloat:
      return bits == 16 || bits == 32 || bits == 64;
    case DataType::Code::kBFloat:
      return bits == 16;
    default:
      return true;
  }
}

}  // namespace

DataType DataType::parse(std::string_view text) {
  std::string_view rest = text;
  Code code;
  int bits = 0;
  auto take = [&](std::string_view prefix) {
    if (rest.substr(0, prefix.size()) != prefix) return false;
    rest.remove_prefix(prefix.size());
    return true;
  };
  if (take("bool")) {
    code = Code::kBool, bits = 1;
  } else if (take("handle")) {
    code = Code::kHandle, bits = 64;
  } else if (take("uint")) {
    code = Code::kUInt;
  } else if (take("int")) {
    code = Code::kInt;
  } else if (take("bfloat")) {
    code = Code::kBFloat;
  } else if (take("float")) {
    code = Code::kFloat;
  } else {
    ANVIL_FAIL("'", text, "' is not a data type (expected e.g. int32, float32x8, bool)");
  }
  auto number = [&](int& out) {
    auto [ptr, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), out);
    bool ok = ec == std::errc() && ptr != rest.data();
    rest.remove_prefix(ptr - rest.data());
    return ok;
  };
  if (bits == 0) {
    ANVIL_CHECK(number(bits) && valid_bits(code, bits), "'", text, "' has an invalid bit width");
  }
  int lanes = 1;
  if (take("x")) {
    ANVIL_CHECK(number(lanes) && lanes >= 1 && lanes <= 65535, "'", text,
                "' has an invalid lane count");
  }
  ANVIL_CHECK(rest.empty(), "'", text, "' is not a data type (unexpected '", rest, "')");
  return DataType(code, bits, lanes);
}

std::ostream& operator<<(std::ostream& os, DataType t) {
  return os << t.to_string();
}

}  // namespace anvil::ir
