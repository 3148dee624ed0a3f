// SamplingParams: validation at the boundary and defaults from generation_config.json.
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "qwen3/error.h"
#include "qwen3/sampler.h"

namespace qwen3 {
namespace {

std::string show(float v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

[[noreturn]] void reject(const char* field, const std::string& rule, float value) {
  throw Error(ErrorKind::invalid_argument, std::string("sampling parameter ") + field +
                                               " must be " + rule + ", got " + show(value));
}

void check_finite(const char* field, float value) {
  if (!std::isfinite(value)) reject(field, "finite", value);
}

// Reads one optional numeric field; a present field of the wrong type is a format error.
template <typename T>
void read_field(const nlohmann::json& config, const char* key, const std::filesystem::path& file,
                T& out) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return;
  if (!it->is_number()) {
    throw Error(ErrorKind::format,
                file.string() + ": field " + key + ": expected a number, got " + it->dump());
  }
  out = it->get<T>();
}

}  // namespace

void SamplingParams::validate() const {
  check_finite("temperature", temperature);
  check_finite("top_p", top_p);
  check_finite("min_p", min_p);
  check_finite("repetition_penalty", repetition_penalty);
  check_finite("presence_penalty", presence_penalty);
  check_finite("frequency_penalty", frequency_penalty);
  if (temperature < 0) reject("temperature", ">= 0", temperature);
  if (top_k < 0) reject("top_k", ">= 0", static_cast<float>(top_k));
  if (!(top_p > 0 && top_p <= 1)) reject("top_p", "in (0, 1]", top_p);
  if (!(min_p >= 0 && min_p <= 1)) reject("min_p", "in [0, 1]", min_p);
  if (!(repetition_penalty > 0)) reject("repetition_penalty", "> 0", repetition_penalty);
  if (!(presence_penalty >= -2 && presence_penalty <= 2))
    reject("presence_penalty", "in [-2, 2]", presence_penalty);
  if (!(frequency_penalty >= -2 && frequency_penalty <= 2)) {
    reject("frequency_penalty", "in [-2, 2]", frequency_penalty);
  }
}

SamplingParams SamplingParams::from_generation_config(const std::filesystem::path& model_dir) {
  SamplingParams params;
  const auto file = model_dir / "generation_config.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) return params;  // a model without generation_config.json samples with the defaults
  nlohmann::json config;
  try {
    config = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(ErrorKind::format, file.string() + ": malformed JSON: " + e.what());
  }
  if (!config.is_object())
    throw Error(ErrorKind::format, file.string() + ": expected a JSON object");
  read_field(config, "temperature", file, params.temperature);
  read_field(config, "top_k", file, params.top_k);
  read_field(config, "top_p", file, params.top_p);
  read_field(config, "min_p", file, params.min_p);
  read_field(config, "repetition_penalty", file, params.repetition_penalty);
  // Hugging Face ignores the warpers when do_sample is false and decodes greedily.
  auto do_sample = config.find("do_sample");
  if (do_sample != config.end() && do_sample->is_boolean() && !do_sample->get<bool>())
    params.temperature = 0;
  return params;
}

}  // namespace qwen3
