// GGUF v3: the header, metadata and tensor infos read front to back, every count, length and
// offset checked against the file before it is used.
#include "io/gguf.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <tuple>

#include "io/gguf_values.h"
#include "qwen3/error.h"

namespace qwen3::io {

namespace {

constexpr uint32_t kVersion = 3;
constexpr uint32_t kMaxDims = 4;          // ggml's GGML_MAX_DIMS
constexpr size_t kDefaultAlignment = 32;  // when general.alignment is absent
constexpr int kMaxArrayDepth = 8;  // nested arrays: a bound keeps the recursion below shallow

// Each key is at least a length, a value type and a one-byte value; each tensor info at least a
// name length, n_dims, a type and an offset. Counts beyond what the file could hold are refused
// before any loop runs on them.
constexpr size_t kMinKeyBytes = 8 + 4 + 1, kMinTensorInfoBytes = 8 + 4 + 4 + 8;

class Reader {
 public:
  Reader(const uint8_t* data, size_t size, const std::string& file)
      : data_(data), size_(size), file_(file) {}

  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  const uint8_t* at(size_t pos) const { return data_ + pos; }

  [[noreturn]] void fail(const std::string& what, ErrorKind kind = ErrorKind::format) const {
    throw Error(kind, file_ + ": " + what);
  }

  const uint8_t* take(size_t n, const std::string& what) {
    if (n > left())
      fail("truncated at byte " + std::to_string(pos_) + ": " + what + " needs " +
           std::to_string(n) + " bytes, " + std::to_string(left()) + " remain");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint32_t u32(const std::string& what) { return uint32_t(read_le(take(4, what), 4)); }
  uint64_t u64(const std::string& what) { return read_le(take(8, what), 8); }
  std::string_view string(const std::string& what) {
    const size_t start = pos_;
    const uint64_t n = u64(what);
    if (n > left())
      fail(what + " at byte " + std::to_string(start) + ": length " + std::to_string(n) +
           " runs past the end of the file (" + std::to_string(size_) + " bytes)");
    return {reinterpret_cast<const char*>(take(n, what)), size_t(n)};
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
  const std::string& file_;
};

GgufValueType value_type(Reader& r, const std::string& what) {
  const uint32_t t = r.u32(what);
  if (t > uint32_t(GgufValueType::float64))
    r.fail(what + " is " + std::to_string(t) + ", not a GGUF value type (0..12)");
  return GgufValueType(t);
}

void check_bools(Reader& r, const uint8_t* p, uint64_t n, const std::string& where) {
  for (uint64_t i = 0; i < n; ++i)
    if (p[i] > 1) r.fail(where + ": bool value " + std::to_string(p[i]) + " is neither 0 nor 1");
}

// Steps over one value of type `t` (the value type already read), checking everything in it.
// For an array, fills element_type and count.
void skip_value(Reader& r, GgufValueType t, GgufValue& v, const std::string& where, int depth) {
  if (t == GgufValueType::string) {
    r.string(where + ": string");
  } else if (t == GgufValueType::array) {
    if (depth >= kMaxArrayDepth)
      r.fail(where + ": arrays nested more than " + std::to_string(kMaxArrayDepth) + " deep");
    const GgufValueType et = value_type(r, where + ": array element type");
    const uint64_t n = r.u64(where + ": array length");
    const size_t fixed = gguf_value_size(et);
    const size_t least = fixed                         ? fixed
                         : et == GgufValueType::string ? 8
                                                       : 12;  // a length / a type and a length
    if (n > r.left() / least)
      r.fail(where + ": array of " + std::to_string(n) + " " + gguf_value_type_name(et) +
             " runs past the end of the file (" + std::to_string(r.left()) + " bytes remain)");
    v.element_type = et;
    v.count = n;
    if (fixed) {
      const uint8_t* p = r.take(size_t(n) * fixed, where);
      if (et == GgufValueType::boolean) check_bools(r, p, n, where);
    } else if (et == GgufValueType::string) {
      // One label for all: a vocabulary holds 150k strings, and the byte offset in the message
      // says which one failed.
      const std::string label = where + ": string";
      for (uint64_t i = 0; i < n; ++i) r.string(label);
    } else {
      // An inner array is encoded like a value of type array, minus the type.
      GgufValue inner;
      for (uint64_t i = 0; i < n; ++i)
        skip_value(r, et, inner, where + "[" + std::to_string(i) + "]", depth + 1);
    }
  } else {
    const uint8_t* p = r.take(gguf_value_size(t), where + ": " + gguf_value_type_name(t));
    if (t == GgufValueType::boolean) check_bools(r, p, 1, where);
  }
}

void read_metadata(Reader& r, uint64_t count, std::vector<std::pair<std::string, GgufValue>>& out,
                   std::map<std::string, size_t, std::less<>>& index) {
  for (uint64_t i = 0; i < count; ++i) {
    std::string key(r.string("key " + std::to_string(i)));
    if (index.count(key)) r.fail("duplicate key " + key);
    GgufValue v;
    v.type = value_type(r, "key " + key + ": value type");
    const size_t start = r.pos();
    skip_value(r, v.type, v, "key " + key, 0);
    // An array's data starts after its element type and length.
    const size_t head = v.type == GgufValueType::array ? 12 : 0;
    v.data = r.at(start + head);
    v.bytes = r.pos() - start - head;
    index.emplace(key, out.size());
    out.emplace_back(std::move(key), v);
  }
}

// One tensor info: name, dims, type, offset (appended to `offsets`); checks all but the data.
GgufTensor read_tensor_info(Reader& r, uint64_t index, size_t alignment,
                            std::vector<uint64_t>& offsets) {
  GgufTensor t;
  t.name = std::string(r.string("tensor " + std::to_string(index) + " name"));
  const std::string what = "tensor " + t.name;
  const uint32_t n_dims = r.u32(what + ": n_dims");
  if (n_dims > kMaxDims)
    r.fail(what + ": " + std::to_string(n_dims) + " dimensions, more than " +
           std::to_string(kMaxDims));
  int64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const uint64_t dim = r.u64(what + ": dimension");
    if (dim > uint64_t(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, int64_t(dim), &numel))
      r.fail(what + ": dimensions overflow int64 at dimension " + std::to_string(d) + " (" +
             std::to_string(dim) + ")");
    t.dims.push_back(int64_t(dim));
  }
  const uint32_t type = r.u32(what + ": type");
  const GgmlTypeInfo* info = ggml_type_info(type);
  if (!info) r.fail(what + ": unknown ggml type " + std::to_string(type), ErrorKind::unsupported);
  t.type = GgmlType(type);
  const int64_t row = t.dims.empty() ? 1 : t.dims[0];
  if (row % info->block_size)
    r.fail(what + ": " + t.describe() + ": row length " + std::to_string(row) +
           " is not a multiple of the block size " + std::to_string(info->block_size));
  if (__builtin_mul_overflow(uint64_t(numel / info->block_size), uint64_t(info->block_bytes),
                             &t.bytes))
    r.fail(what + ": " + t.describe() + " overflows the address space");
  const uint64_t offset = r.u64(what + ": offset");
  if (offset % alignment)
    r.fail(what + ": data offset " + std::to_string(offset) +
           " is not a multiple of the alignment " + std::to_string(alignment));
  offsets.push_back(offset);
  return t;
}

}  // namespace

int64_t GgufTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string GgufTensor::describe() const {
  std::string s = std::string(ggml_type_name(type)) + " [";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

bool is_gguf_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic, 4) && std::string_view(magic, 4) == "GGUF";
}

GgufFile GgufFile::open(const std::filesystem::path& path, bool read_into_memory) {
  auto file = std::make_unique<MappedFile>(path, read_into_memory);
  GgufFile g = parse(file->data(), file->size(), path.filename().string());
  g.file_ = std::move(file);
  return g;
}

GgufFile GgufFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  GgufFile g;
  g.name_ = name;
  Reader r(data, size, g.name_);

  const uint8_t* magic = r.take(4, "magic");
  if (std::string_view(reinterpret_cast<const char*>(magic), 4) != "GGUF")
    r.fail("not a GGUF file (no \"GGUF\" magic)");
  const uint32_t version = r.u32("version");
  if (version != kVersion) {
    const uint32_t swapped = __builtin_bswap32(version);
    if (swapped >= 1 && swapped <= kVersion)
      r.fail("big-endian GGUF files are not supported", ErrorKind::unsupported);
    if (version == 1 || version == 2)
      r.fail("GGUF version " + std::to_string(version) + " is not supported (only version 3)",
             ErrorKind::unsupported);
    r.fail("unknown GGUF version " + std::to_string(version) + " (this build reads version 3)",
           ErrorKind::unsupported);
  }
  const uint64_t n_tensors = r.u64("tensor count"), n_keys = r.u64("metadata count");
  if (n_keys > r.left() / kMinKeyBytes)
    r.fail("metadata count " + std::to_string(n_keys) + " is more than the file's " +
           std::to_string(size) + " bytes could hold");
  read_metadata(r, n_keys, g.metadata_, g.key_index_);
  if (n_tensors > r.left() / kMinTensorInfoBytes)
    r.fail("tensor count " + std::to_string(n_tensors) + " is more than the file's " +
           std::to_string(size) + " bytes could hold");

  g.alignment_ = kDefaultAlignment;
  if (g.has_key("general.alignment")) {
    // The format says uint32; ggml refuses any other type, and so does this reader.
    if (g.find_key("general.alignment")->type != GgufValueType::uint32)
      g.key_error("general.alignment",
                  "expected uint32, got " + g.find_key("general.alignment")->type_name());
    const uint32_t a = g.get_u32("general.alignment");
    if (a == 0 || (a & (a - 1)))
      r.fail("general.alignment " + std::to_string(a) + " is not a power of two");
    g.alignment_ = a;
  }

  std::vector<uint64_t> offsets;  // of each tensor's data, in the data section
  for (uint64_t i = 0; i < n_tensors; ++i) {
    GgufTensor t = read_tensor_info(r, i, g.alignment_, offsets);
    if (g.tensor_index_.count(t.name)) r.fail("duplicate tensor " + t.name);
    g.tensor_index_.emplace(t.name, g.tensors_.size());
    g.tensors_.push_back(std::move(t));
  }

  // The data section starts at the next multiple of the alignment; a file without tensor bytes
  // may end before it.
  g.data_offset_ = (r.pos() + g.alignment_ - 1) / g.alignment_ * g.alignment_;
  const size_t data_size = size > g.data_offset_ ? size - g.data_offset_ : 0;
  std::vector<std::tuple<uint64_t, uint64_t, size_t>> ranges;  // begin, end, tensor
  for (size_t i = 0; i < g.tensors_.size(); ++i) {
    GgufTensor& t = g.tensors_[i];
    if (offsets[i] > data_size || t.bytes > data_size - offsets[i])
      r.fail("tensor " + t.name + ": " + t.describe() + " needs " + std::to_string(t.bytes) +
             " bytes at data offset " + std::to_string(offsets[i]) +
             ", past the end of the data section (" + std::to_string(data_size) + " bytes)");
    if (t.bytes) {
      t.data = data + g.data_offset_ + offsets[i];
      ranges.emplace_back(offsets[i], offsets[i] + t.bytes, i);
    }
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (std::get<0>(ranges[i]) < std::get<1>(ranges[i - 1]))
      r.fail("tensors " + g.tensors_[std::get<2>(ranges[i - 1])].name + " and " +
             g.tensors_[std::get<2>(ranges[i])].name + " overlap at data offset " +
             std::to_string(std::get<0>(ranges[i])));
  return g;
}

const GgufTensor* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const GgufValue* GgufFile::find_key(std::string_view key) const {
  auto it = key_index_.find(key);
  return it == key_index_.end() ? nullptr : &metadata_[it->second].second;
}

}  // namespace qwen3::io
