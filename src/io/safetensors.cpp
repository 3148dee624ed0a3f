// safetensors: an 8-byte little-endian header length, a JSON header, then the raw tensor bytes.
#include "io/safetensors.h"

#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "io/json_file.h"
#include "io/quant_blocks.h"
#include "qwen3/error.h"

namespace qwen3::io {

namespace {

[[noreturn]] void fail(ErrorKind kind, const std::string& file, const std::string& what) {
  throw Error(kind, file + ": " + what);
}

DType parse_dtype(const std::string& s, const std::string& file, const std::string& tensor) {
  if (s == "F32") return DType::f32;
  if (s == "F16") return DType::f16;
  if (s == "BF16") return DType::bf16;
  if (s == "Q8_0") return DType::q8_0;  // block-quantized, see io/quant_blocks.h
  if (s == "Q4_0") return DType::q4_0;
  fail(
      ErrorKind::unsupported, file,
      "tensor " + tensor + ": unsupported dtype " + s + " (supported: BF16, F16, F32, Q8_0, Q4_0)");
}

// A quantized folder says so in the metadata, with the layout of its matrices; an unknown scheme
// or layout is refused rather than misread. Returns whether block-quantized tensors may follow.
bool check_metadata(const nlohmann::json& meta, const std::string& file) {
  if (!meta.is_object() || !meta.contains("quantization")) return false;
  const auto& q = meta["quantization"];
  if (!q.is_string() || (q != "q8_0" && q != "q4_0"))
    fail(ErrorKind::unsupported, file,
         "unknown quantization " + q.dump() + " in __metadata__ (supported: q8_0, q4_0)");
  if (!meta.contains("layout"))
    fail(ErrorKind::unsupported, file,
         std::string("quantized in the plain row layout of an older qwen3 quantize; run `qwen3 "
                     "quantize` again "
                     "on the float model (this build reads layout \"") +
             kQuantLayout + "\")");
  if (meta["layout"] != kQuantLayout)
    fail(ErrorKind::unsupported, file,
         "unknown layout " + meta["layout"].dump() + " in __metadata__ (supported: \"" +
             kQuantLayout + "\")");
  return true;
}

}  // namespace

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorView::describe() const {
  std::string s = std::string(dtype_name(dtype)) + " [";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<TensorView> parse_safetensors_header(std::string_view header, uint64_t data_size,
                                                 const std::string& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(header);
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorKind::format, file, std::string("header is not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) fail(ErrorKind::format, file, "header is not a JSON object");

  std::vector<TensorView> out;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  bool quantized_layout = false;
  for (auto& [name, entry] : j.items()) {
    if (name == "__metadata__") {
      quantized_layout = check_metadata(entry, file);
      continue;
    }
    auto bad = [&](const std::string& what) {
      fail(ErrorKind::format, file, "tensor " + name + ": " + what);
    };
    if (!entry.is_object()) bad("entry is not an object");
    if (!entry.contains("dtype") || !entry["dtype"].is_string()) bad("missing dtype");
    if (!entry.contains("shape") || !entry["shape"].is_array()) bad("missing shape");
    if (!entry.contains("data_offsets") || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2)
      bad("missing data_offsets [begin, end]");

    TensorView t;
    t.name = name;
    t.file = file;
    t.dtype = parse_dtype(entry["dtype"].get<std::string>(), file, name);
    uint64_t numel = 1;
    for (auto& d : entry["shape"]) {
      if (!d.is_number_unsigned()) bad("shape has a non-integer or negative dimension");
      uint64_t v = d.get<uint64_t>();
      if (v > (1ull << 40) || (v && numel > (1ull << 40) / v)) bad("shape is too large");
      numel *= v;
      t.shape.push_back(static_cast<int64_t>(v));
    }
    auto& offs = entry["data_offsets"];
    if (!offs[0].is_number_unsigned() || !offs[1].is_number_unsigned())
      bad("data_offsets are not unsigned integers");
    uint64_t begin = offs[0].get<uint64_t>(), end = offs[1].get<uint64_t>();
    if (begin > end || end > data_size)
      bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
          "] outside the data section of " + std::to_string(data_size) + " bytes");
    const uint64_t cols = t.shape.empty() ? 1 : t.shape.back();
    if (is_block_quantized(t.dtype) && (t.shape.empty() || cols % kQuantBlock))
      bad(t.describe() +
          ": a block-quantized tensor needs its last dimension to be a multiple of " +
          std::to_string(kQuantBlock));
    const uint64_t nbytes = cols ? numel / cols * row_bytes(t.dtype, cols) : 0;
    if (end - begin != nbytes)
      bad("holds " + std::to_string(end - begin) + " bytes, but " + t.describe() + " needs " +
          std::to_string(nbytes));
    t.data = reinterpret_cast<const void*>(static_cast<uintptr_t>(begin));
    t.nbytes = end - begin;
    if (t.nbytes) ranges.emplace_back(begin, end);
    out.push_back(std::move(t));
  }
  for (const auto& t : out)
    if (is_block_quantized(t.dtype) && !quantized_layout)
      fail(ErrorKind::unsupported, file,
           "tensor " + t.name + " is " + dtype_name(t.dtype) +
               " but __metadata__ names no quantization layout");
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second)
      fail(ErrorKind::format, file,
           "tensor data ranges overlap at byte " + std::to_string(ranges[i].first));
  return out;
}

void SafetensorsArchive::add_file(const std::filesystem::path& path, bool read_into_memory) {
  auto file = std::make_unique<MappedFile>(path, read_into_memory);
  std::string name = path.filename().string();
  if (file->size() < 8)
    fail(ErrorKind::format, name,
         "file is " + std::to_string(file->size()) + " bytes, too short for a header");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | file->data()[i];
  if (header_len > file->size() - 8)
    fail(ErrorKind::format, name,
         "header length " + std::to_string(header_len) + " runs past the end of the file (" +
             std::to_string(file->size()) + " bytes)");
  std::string_view header(reinterpret_cast<const char*>(file->data() + 8), header_len);
  const uint8_t* data = file->data() + 8 + header_len;
  for (auto& t : parse_safetensors_header(header, file->size() - 8 - header_len, name)) {
    t.data = data + reinterpret_cast<uintptr_t>(t.data);
    if (tensors_.count(t.name))
      fail(ErrorKind::format, name, "tensor " + t.name + " appears in two files");
    tensors_.emplace(t.name, std::move(t));
  }
  files_.push_back(std::move(file));
}

SafetensorsArchive SafetensorsArchive::open(const std::filesystem::path& dir,
                                            bool read_into_memory) {
  SafetensorsArchive archive;
  auto single = dir / "model.safetensors";
  auto index = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(single)) {
    archive.add_file(single, read_into_memory);
  } else if (std::filesystem::exists(index)) {
    auto j = read_json(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      fail(ErrorKind::format, index.string(), "missing object \"weight_map\"");
    std::set<std::string> shards;
    for (auto& [tensor, shard] : j["weight_map"].items()) {
      if (!shard.is_string())
        fail(ErrorKind::format, index.string(), "weight_map." + tensor + " is not a file name");
      shards.insert(shard.get<std::string>());
    }
    for (auto& shard : shards) {
      if (shard.find('/') != std::string::npos)
        fail(ErrorKind::format, index.string(),
             "shard name " + shard + " is not a plain file name");
      archive.add_file(dir / shard, read_into_memory);
    }
  } else {
    throw Error(ErrorKind::io,
                single.string() + ": no such file (nor model.safetensors.index.json)");
  }
  return archive;
}

const TensorView* SafetensorsArchive::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

uint64_t SafetensorsArchive::total_bytes() const {
  uint64_t n = 0;
  for (auto& f : files_) n += f->size();
  return n;
}

}  // namespace qwen3::io
