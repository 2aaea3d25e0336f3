// DataType: the scalar or vector type of an IR value. The codes follow DLPack's DLDataTypeCode
// so that a DataType maps one to one onto the tensor ABI.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

namespace anvil::ir {

class DataType {
 public:
  enum class Code : uint8_t {
    kInt = 0,
    kUInt = 1,
    kFloat = 2,
    kHandle = 3,
    kBFloat = 4,
    kBool = 6
  };

  constexpr DataType() = default;
  constexpr DataType(Code code, int bits, int lanes = 1)
      : code_(code), bits_(static_cast<uint8_t>(bits)), lanes_(static_cast<uint16_t>(lanes)) {}

  static constexpr DataType Int(int bits, int lanes = 1) { return {Code::kInt, bits, lanes}; }
  static constexpr DataType UInt(int bits, int lanes = 1) { return {Code::kUInt, bits, lanes}; }
  static constexpr DataType Float(int bits, int lanes = 1) { return {Code::kFloat, bits, lanes}; }
  static constexpr DataType BFloat16(int lanes = 1) { return {Code::kBFloat, 16, lanes}; }
  static constexpr DataType Bool(int lanes = 1) { return {Code::kBool, 1, lanes}; }
  static constexpr DataType Handle() { return {Code::kHandle, 64, 1}; }
  static constexpr DataType Int32(int lanes = 1) { return Int(32, lanes); }
  static constexpr DataType Int64(int lanes = 1) { return Int(64, lanes); }
  static constexpr DataType Float32(int lanes = 1) { return Float(32, lanes); }

  constexpr Code code() const { return code_; }
  constexpr int bits() const { return bits_; }
  constexpr int lanes() const { return lanes_; }
  // Bytes one element occupies in memory (a bool is stored as one byte).
  constexpr int bytes() const { return (bits_ + 7) / 8; }

  constexpr bool is_int() const { return code_ == Code::kInt; }
  constexpr bool is_uint() const { return code_ == Code::kUInt; }
  // Signed or unsigned integer (not bool).
  constexpr bool is_int_or_uint() const { return is_int() || is_uint(); }
  // float16/32/64 or bfloat16.
  constexpr bool is_float() const { return code_ == Code::kFloat || code_ == Code::kBFloat; }
  constexpr bool is_bool() const { return code_ == Code::kBool; }
  constexpr bool is_handle() const { return code_ == Code::kHandle; }
  // Integers and floats: the types arithmetic is defined on.
  constexpr bool is_numeric() const { return is_int_or_uint() || is_float(); }
  constexpr bool is_scalar() const { return lanes_ == 1; }
  constexpr bool is_vector() const { return lanes_ > 1; }

  constexpr DataType with_lanes(int lanes) const { return {code_, bits_, lanes}; }
  constexpr DataType element_of() const { return with_lanes(1); }

  // Range of an integer type (bool is [0, 1]). Only for integer and bool types.
  int64_t min_value() const;
  int64_t max_value() const;  // uint64 saturates at INT64_MAX

  // "int32", "float32x4", "bool", "handle".
  std::string to_string() const;
  // Inverse of to_string; throws anvil::Error naming the text when it is not a type.
  static DataType parse(std::string_view text);

  friend constexpr bool operator==(DataType a, DataType b) {
    return a.code_ == b.code_ && a.bits_ == b.bits_ && a.lanes_ == b.lanes_;
  }

 private:
  Code code_ = Code::kInt;
  uint8_t bits_ = 32;
  uint16_t lanes_ = 1;
};

std::ostream& operator<<(std::ostream& os, DataType t);

}  // namespace anvil::ir
