// Turning a command-line model argument into a folder: a path, or a Hub id such as
// "Qwen/Qwen3-0.6B" found in the standard Hugging Face cache.
#pragma once

#include <filesystem>
#include <string>

namespace qwen3::cli {

// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::filesystem::path hub_cache();

// The cache folder of a repo id: <hub_cache>/models--Qwen--Qwen3-0.6B.
std::filesystem::path hub_repo_dir(const std::string& repo_id);

// True for an "owner/name" Hub id: one slash, letters, digits, - _ . and no part starting with a
// dot.
bool is_hub_id(const std::string& arg);

// A folder or file (GGUF) as given, or the snapshot of a Hub id (refs/main, else the only/newest
// snapshot). Throws Error(io) saying where it looked.
std::filesystem::path resolve_model(const std::string& arg);

}  // namespace qwen3::cli
