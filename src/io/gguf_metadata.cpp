// GGUF metadata: value type names and GgufFile's typed getters (the values were checked at open).
#include <cstring>
#include <limits>

#include "io/gguf.h"
#include "io/gguf_values.h"
#include "qwen3/error.h"

namespace qwen3::io {

namespace {

bool is_integer(GgufValueType t) {
  switch (t) {
    case GgufValueType::uint8:
    case GgufValueType::int8:
    case GgufValueType::uint16:
    case GgufValueType::int16:
    case GgufValueType::uint32:
    case GgufValueType::int32:
    case GgufValueType::uint64:
    case GgufValueType::int64: return true;
    default: return false;
  }
}

bool is_float(GgufValueType t) {
  return t == GgufValueType::float32 || t == GgufValueType::float64;
}

// The integer of type t (is_integer) at p; false when a uint64 is beyond int64.
bool read_integer(GgufValueType t, const uint8_t* p, int64_t& out) {
  const uint64_t u = read_le(p, int(gguf_value_size(t)));
  switch (t) {
    case GgufValueType::int8: out = int8_t(u); break;
    case GgufValueType::int16: out = int16_t(u); break;
    case GgufValueType::int32: out = int32_t(u); break;
    case GgufValueType::int64: out = int64_t(u); break;
    default:
      if (u > uint64_t(std::numeric_limits<int64_t>::max())) return false;
      out = int64_t(u);
  }
  return true;
}

float read_float(GgufValueType t, const uint8_t* p) {
  if (t == GgufValueType::float32) {
    const auto bits = uint32_t(read_le(p, 4));
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  const uint64_t bits = read_le(p, 8);
  double d;
  std::memcpy(&d, &bits, 8);
  return float(d);
}

}  // namespace

const char* gguf_value_type_name(GgufValueType type) {
  switch (type) {
    case GgufValueType::uint8: return "uint8";
    case GgufValueType::int8: return "int8";
    case GgufValueType::uint16: return "uint16";
    case GgufValueType::int16: return "int16";
    case GgufValueType::uint32: return "uint32";
    case GgufValueType::int32: return "int32";
    case GgufValueType::float32: return "float32";
    case GgufValueType::boolean: return "bool";
    case GgufValueType::string: return "string";
    case GgufValueType::array: return "array";
    case GgufValueType::uint64: return "uint64";
    case GgufValueType::int64: return "int64";
    case GgufValueType::float64: return "float64";
  }
  return "?";
}

std::string GgufValue::type_name() const {
  if (type != GgufValueType::array) return gguf_value_type_name(type);
  return std::string("array of ") + gguf_value_type_name(element_type);
}

void GgufFile::key_error(std::string_view key, const std::string& what) const {
  throw Error(ErrorKind::format, name_ + ": key " + std::string(key) + ": " + what);
}

const GgufValue& GgufFile::require(std::string_view key) const {
  const GgufValue* v = find_key(key);
  if (!v) throw Error(ErrorKind::format, name_ + ": missing key " + std::string(key));
  return *v;
}

std::string_view GgufFile::get_string(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::string) key_error(key, "expected string, got " + v.type_name());
  return {reinterpret_cast<const char*>(v.data + 8), size_t(read_le(v.data, 8))};
}

int64_t GgufFile::get_int(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) key_error(key, "expected an integer, got " + v.type_name());
  int64_t out;
  if (!read_integer(v.type, v.data, out))
    key_error(key, "value " + std::to_string(read_le(v.data, 8)) + " does not fit int64");
  return out;
}

uint32_t GgufFile::get_u32(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_integer(v.type)) key_error(key, "expected uint32, got " + v.type_name());
  const int64_t n = get_int(key);
  if (n < 0 || n > int64_t(std::numeric_limits<uint32_t>::max()))
    key_error(key, "value " + std::to_string(n) + " does not fit uint32");
  return uint32_t(n);
}

float GgufFile::get_f32(std::string_view key) const {
  const GgufValue& v = require(key);
  if (!is_float(v.type)) key_error(key, "expected float32, got " + v.type_name());
  return read_float(v.type, v.data);
}

bool GgufFile::get_bool(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::boolean) key_error(key, "expected bool, got " + v.type_name());
  return v.data[0] != 0;
}

std::vector<std::string_view> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::array || v.element_type != GgufValueType::string)
    key_error(key, "expected array of string, got " + v.type_name());
  std::vector<std::string_view> out;
  out.reserve(v.count);
  for (const uint8_t* p = v.data; out.size() < v.count;) {
    const auto n = size_t(read_le(p, 8));
    out.emplace_back(reinterpret_cast<const char*>(p + 8), n);
    p += 8 + n;
  }
  return out;
}

std::vector<int64_t> GgufFile::get_int_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::array || !is_integer(v.element_type))
    key_error(key, "expected array of integers, got " + v.type_name());
  const size_t size = gguf_value_size(v.element_type);
  std::vector<int64_t> out(v.count);
  for (size_t i = 0; i < out.size(); ++i)
    if (!read_integer(v.element_type, v.data + i * size, out[i]))
      key_error(key, "element " + std::to_string(i) + " does not fit int64");
  return out;
}

std::vector<float> GgufFile::get_f32_array(std::string_view key) const {
  const GgufValue& v = require(key);
  if (v.type != GgufValueType::array || !is_float(v.element_type))
    key_error(key, "expected array of float32, got " + v.type_name());
  const size_t size = gguf_value_size(v.element_type);
  std::vector<float> out(v.count);
  for (size_t i = 0; i < out.size(); ++i) out[i] = read_float(v.element_type, v.data + i * size);
  return out;
}

}  // namespace qwen3::io
