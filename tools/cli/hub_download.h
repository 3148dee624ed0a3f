// Downloading a model repo from the Hugging Face Hub into the standard Hub cache, laid out as
// huggingface_hub does: blobs/<etag>, snapshots/<commit>/<file> -> ../../blobs/<etag>, refs/main.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace qwen3::cli {

// Where the Hub is and who asks: $HF_ENDPOINT (default https://huggingface.co) and $HF_TOKEN.
struct HubEndpoint {
  std::string url;    // no trailing slash
  std::string token;  // sent as "Authorization: Bearer", never to the CDN a download redirects to
  static HubEndpoint from_env();
};

// What the Hub says about one file on main, from the first response that carries an etag (before
// any CDN redirect).
struct HubFileInfo {
  std::string commit;  // X-Repo-Commit
  std::string etag;    // X-Linked-Etag, else ETag, without quotes or W/: the sha256 for LFS files
  uint64_t size = 0;   // X-Linked-Size, else Content-Length
};

// How a file came to be in the snapshot.
enum class FetchResult { cached, downloaded };

// Told how each file goes, so the command can draw a progress bar or print lines.
class PullProgress {
 public:
  virtual ~PullProgress() = default;
  virtual void cached(const std::string& file, uint64_t size) = 0;
  // `from` > 0 when an interrupted download resumes from blobs/<etag>.incomplete.
  virtual void started(const std::string& file, uint64_t from, uint64_t size) = 0;
  virtual void advanced(uint64_t done) = 0;  // bytes of the file on disk so far
  virtual void finished(const std::string& file) = 0;
};

// True for a 64-character lowercase hex string: the etag of an LFS file is its sha256.
bool is_sha256(const std::string& s);

// HEAD {endpoint}/{repo}/resolve/main/{file}. nullopt when the file does not exist (404) in a repo
// that does. Throws Error(io) when the repo is missing or not accessible (401/403/404 RepoNotFound)
// or the Hub cannot be reached.
std::optional<HubFileInfo> hub_file_info(const HubEndpoint& hub, const std::string& repo,
                                         const std::string& file);

// Makes snapshots/<commit>/<file> a link to a verified blobs/<etag>, downloading it unless the blob
// is already complete. An interrupted download stays in blobs/<etag>.incomplete and the next call
// resumes it with a Range request; a body whose size or sha256 differs from `info` is deleted and
// refused with an Error(io).
FetchResult hub_fetch(const HubEndpoint& hub, const std::string& repo, const std::string& file,
                      const HubFileInfo& info, PullProgress& progress);

// Pulls a Qwen3 model repo: config.json, generation_config.json (when present), tokenizer.json,
// tokenizer_config.json and model.safetensors, or, when that is absent,
// model.safetensors.index.json and every shard it lists. Writes refs/main last and returns the
// snapshot folder.
std::filesystem::path hub_pull(const HubEndpoint& hub, const std::string& repo,
                               PullProgress& progress);

}  // namespace qwen3::cli
