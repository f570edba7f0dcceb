// GGUF metadata value types and a materialised value (scalars, strings, nested arrays).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace gs::gguf {

// Value type ids as stored in GGUF (gguf.h's enum gguf_type).
enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

std::string_view value_type_name(ValueType type);
bool is_valid_value_type(uint32_t raw);
// Bytes of one scalar of `type`; 0 for string and array (variable size).
size_t value_type_scalar_bytes(ValueType type);

struct Value;
struct ArrayValue {
  ValueType elem_type = ValueType::kU8;
  std::vector<Value> items;
  uint64_t total_count = 0;  // elements in the file (items may hold fewer when shortened)
};

// A fully read value. Integers keep their signedness in the variant alternative.
struct Value {
  ValueType type = ValueType::kU8;
  std::variant<uint64_t, int64_t, double, bool, std::string, ArrayValue> data;
};

}  // namespace gs::gguf
