// Hub downloads with libcurl: metadata from the resolve URL's first answer, then resumable,
// verified transfers.
#include "cli/hub_download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <vector>

#include "cli/model_path.h"
#include "qwen3/error.h"
#include "qwen3/model.h"

namespace qwen3::cli {

namespace fs = std::filesystem;

namespace {

[[noreturn]] void fail(const std::string& message) { throw Error(ErrorKind::io, message); }

// Incremental sha256 through OpenSSL's EVP interface (the SHA256_* calls are deprecated in OpenSSL
// 3).
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { reset(); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void reset() { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  void update(const char* data, size_t n) { EVP_DigestUpdate(ctx_, data, n); }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_, digest, &n);
    std::string s;
    for (unsigned i = 0; i < n; ++i)
      s += {"0123456789abcdef"[digest[i] >> 4], "0123456789abcdef"[digest[i] & 15]};
    return s;
  }

 private:
  EVP_MD_CTX* ctx_;
};

using Headers = std::map<std::string, std::string>;  // names lowercased

std::string header(const Headers& h, const std::string& name) {
  auto it = h.find(name);
  return it == h.end() ? "" : it->second;
}

// One libcurl transfer. Redirects are followed, and the headers of every answer on the way are
// kept, because the Hub's metadata (X-Repo-Commit, X-Linked-*) is on the first answer, not on the
// CDN's.
struct Transfer {
  CURL* curl = curl_easy_init();
  curl_slist* request_headers = nullptr;
  char error[CURL_ERROR_SIZE] = {};
  std::vector<long> statuses;
  std::vector<Headers> responses;
  std::function<bool(long status)> headers_done;  // after each answer's headers; false aborts
  std::function<bool(const char*, size_t)> body;  // the final answer's body; false aborts

  Transfer(const HubEndpoint& hub, const std::string& url) {
    if (!curl) fail("libcurl could not start a transfer");
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "qwen3");
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, error);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 20L);
    // A stalled connection fails (and can be resumed) instead of hanging: under 1 byte/s for 60 s.
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
    // libcurl (>= 7.58) drops a custom Authorization header when a redirect leaves the original
    // host, so the token reaches the Hub but not the CDN, as with huggingface_hub.
    if (!hub.token.empty()) {
      request_headers =
          curl_slist_append(request_headers, ("Authorization: Bearer " + hub.token).c_str());
      curl_easy_setopt(curl, CURLOPT_HTTPHEADER, request_headers);
    }
  }
  ~Transfer() {
    curl_slist_free_all(request_headers);
    curl_easy_cleanup(curl);
  }
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  CURLcode perform() { return curl_easy_perform(curl); }
  long status() const { return statuses.empty() ? 0 : statuses.back(); }
  std::string message(CURLcode code) const { return error[0] ? error : curl_easy_strerror(code); }

  static size_t on_header(char* data, size_t size, size_t n, void* self) {
    auto& t = *static_cast<Transfer*>(self);
    std::string line(data, size * n);
    while (!line.empty() && (line.back() == '\r' || line.back() == '\n')) line.pop_back();
    if (line.rfind("HTTP/", 0) == 0) {
      const auto space = line.find(' ');
      t.statuses.push_back(space == std::string::npos ? 0 : std::atol(line.c_str() + space + 1));
      t.responses.emplace_back();
    } else if (line.empty()) {
      if (!t.statuses.empty() && t.headers_done && !t.headers_done(t.statuses.back())) return 0;
    } else if (auto colon = line.find(':'); colon != std::string::npos && !t.responses.empty()) {
      std::string name = line.substr(0, colon), value = line.substr(colon + 1);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      value.erase(0, value.find_first_not_of(" \t"));
      t.responses.back()[name] = value;
    }
    return size * n;
  }
  static size_t on_body(char* data, size_t size, size_t n, void* self) {
    auto& t = *static_cast<Transfer*>(self);
    return !t.body || t.body(data, size * n) ? size * n : 0;
  }
};

std::string resolve_url(const HubEndpoint& hub, const std::string& repo, const std::string& file) {
  return hub.url + "/" + repo + "/resolve/main/" + file;
}

// An etag or commit becomes a file or folder name, so it must not be able to climb out of the
// cache.
std::string checked_name(const std::string& value, const std::string& what,
                         const std::string& url) {
  const bool ok =
      !value.empty() && value.find_first_not_of(
                            "0123456789abcdefABCDEF"
                            "ghijklmnopqrstuvwxyzGHIJKLMNOPQRSTUVWXYZ-_") == std::string::npos;
  if (!ok) fail(url + ": unexpected " + what + " '" + value + "'");
  return value;
}

uint64_t parse_size(const std::string& value, const std::string& url) {
  uint64_t size = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), size);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size())
    fail(url + ": unexpected file size '" + value + "'");
  return size;
}

// ETag: W/"abc" or "abc" -> abc.
std::string unquote_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag.erase(0, 2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"')
    etag = etag.substr(1, etag.size() - 2);
  return etag;
}

void hash_file(const fs::path& path, Sha256& sha) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buffer(1 << 20);
  while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0)
    sha.update(buffer.data(), static_cast<size_t>(in.gcount()));
}

// Appends the rest of the file to `part` (which holds `have` bytes), asking for them with a Range
// request. A server that ignores the range answers 200 with the whole file: then the partial data
// is dropped and the download starts over.
void receive(const HubEndpoint& hub, const std::string& repo, const std::string& file,
             const HubFileInfo& info, const fs::path& part, uint64_t& have, Sha256& sha,
             PullProgress& progress) {
  std::FILE* out = std::fopen(part.c_str(), have ? "ab" : "wb");
  if (!out) fail("cannot write " + part.string() + ": " + std::strerror(errno));
  const std::string url = resolve_url(hub, repo, file);
  Transfer t(hub, url);
  const std::string range = std::to_string(have) + "-";
  if (have) curl_easy_setopt(t.curl, CURLOPT_RANGE, range.c_str());
  bool write_failed = false;
  t.headers_done = [&](long status) {
    if (status == 200 && have > 0) {
      out = std::freopen(part.c_str(), "wb", out);
      write_failed = !out;
      have = 0;
      sha.reset();
      progress.started(file, 0, info.size);
      return !write_failed;
    }
    return status < 400;
  };
  t.body = [&](const char* data, size_t n) {
    if (t.status() != 200 && t.status() != 206) return false;
    if (std::fwrite(data, 1, n, out) != n) return !(write_failed = true);
    sha.update(data, n);
    have += n;
    progress.advanced(have);
    return have <= info.size;  // a body longer than announced is refused by the size check below
  };
  const CURLcode code = t.perform();
  if ((out && std::fclose(out) != 0) || write_failed)
    fail("cannot write " + part.string() + ": " + std::strerror(errno));
  if (t.status() == 416)
    fs::remove(part);  // the partial file no longer fits the blob; start over next time
  if (t.status() >= 400)
    fail(repo + ": " + file + ": HTTP " + std::to_string(t.status()) + " from " + url);
  if (code != CURLE_OK && have <= info.size)
    fail(repo + ": " + file + ": download interrupted after " + std::to_string(have) + " of " +
         std::to_string(info.size) + " bytes (" + t.message(code) + "); run `qwen3 pull " + repo +
         "` again to resume");
}

// An exclusive flock on <hub_cache>/.locks/models--owner--name/<etag>.lock, the lock
// huggingface_hub takes (its filelock uses flock too), so two downloads of one blob never
// interleave their writes into one .incomplete file.
class BlobLock {
 public:
  BlobLock(const fs::path& repo_dir, const std::string& etag, const std::string& what) {
    const fs::path path = hub_cache() / ".locks" / repo_dir.filename() / (etag + ".lock");
    fs::create_directories(path.parent_path());
    fd_ = ::open(path.c_str(), O_CREAT | O_RDWR, 0644);
    if (fd_ < 0) fail("cannot create " + path.string() + ": " + std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      ::close(fd_);
      fail(what + ": another download of it is running (" + path.string() + " is locked)");
    }
  }
  ~BlobLock() { ::close(fd_); }
  BlobLock(const BlobLock&) = delete;
  BlobLock& operator=(const BlobLock&) = delete;

 private:
  int fd_ = -1;
};

// Downloads into blobs/<etag>.incomplete, resuming what an earlier run left there, then verifies
// and renames it.
void download(const HubEndpoint& hub, const std::string& repo, const std::string& file,
              const HubFileInfo& info, const fs::path& blob, PullProgress& progress) {
  fs::create_directories(blob.parent_path());
  const BlobLock lock(blob.parent_path().parent_path(), info.etag, repo + ": " + file);
  const fs::path part = blob.string() + ".incomplete";
  uint64_t have = fs::is_regular_file(part) ? fs::file_size(part) : 0;
  if (have > info.size) {
    fs::remove(part);
    have = 0;
  }
  Sha256 sha;
  if (have) hash_file(part, sha);
  progress.started(file, have, info.size);
  if (have < info.size || !fs::exists(part))
    receive(hub, repo, file, info, part, have, sha, progress);
  std::string problem;
  if (have != info.size)
    problem = "size " + std::to_string(have) + " bytes, expected " + std::to_string(info.size);
  else if (const std::string got = sha.hex(); is_sha256(info.etag) && got != info.etag)
    problem = "sha256 " + got + ", expected " + info.etag;
  if (!problem.empty()) {
    fs::remove(part);  // corrupt data must not be resumed from, nor taken for the blob
    fail(repo + ": " + file + ": downloaded file is corrupt (" + problem + "); it was deleted");
  }
  fs::rename(part, blob);
  if (file.ends_with(".safetensors")) drop_from_page_cache(blob);  // see qwen3/model.h
  progress.finished(file);
}

// snapshots/<commit>/<file> -> ../../blobs/<etag>, relative so the cache folder can be moved.
void link_snapshot(const fs::path& link, const fs::path& blob) {
  fs::create_directories(link.parent_path());
  const fs::path target = blob.lexically_relative(link.parent_path());
  if (fs::is_symlink(link) && fs::read_symlink(link) == target) return;
  fs::remove(link);
  fs::create_symlink(target, link);
}

// Shard names come from a downloaded file and become paths; like the loader, accept plain file
// names only.
void check_shard_name(const std::string& repo, const std::string& name) {
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    fail(repo + ": model.safetensors.index.json names a shard '" + name +
         "' that is not a plain file name");
}

}  // namespace

HubEndpoint HubEndpoint::from_env() {
  HubEndpoint hub{"https://huggingface.co", ""};
  if (const char* e = std::getenv("HF_ENDPOINT"); e && *e) hub.url = e;
  while (hub.url.size() > 1 && hub.url.back() == '/') hub.url.pop_back();
  if (const char* t = std::getenv("HF_TOKEN"); t && *t) hub.token = t;
  return hub;
}

bool is_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::optional<HubFileInfo> hub_file_info(const HubEndpoint& hub, const std::string& repo,
                                         const std::string& file) {
  const std::string url = resolve_url(hub, repo, file);
  Transfer t(hub, url);
  curl_easy_setopt(t.curl, CURLOPT_NOBODY, 1L);
  if (const CURLcode code = t.perform(); code != CURLE_OK)
    fail("cannot reach " + hub.url + ": " + t.message(code));
  const long status = t.status();
  const std::string http = " (HTTP " + std::to_string(status) + ")";
  if (status == 404 && header(t.responses.back(), "x-error-code") != "RepoNotFound")
    return std::nullopt;
  // The Hub answers 401 for a repo that does not exist, or that is private to someone else.
  if (status == 401 || status == 404)
    fail(repo + ": not found on " + hub.url + http +
         (status == 401 && hub.token.empty() ? "; if it is private, set HF_TOKEN" : ""));
  if (status == 403)
    fail(repo + ": access denied on " + hub.url + http +
         "; a gated repo needs HF_TOKEN from an account with access");
  if (status >= 400) fail(repo + ": " + file + ": HTTP " + std::to_string(status) + " from " + url);
  for (const Headers& h : t.responses) {
    const std::string linked_etag = header(h, "x-linked-etag");
    const std::string etag = unquote_etag(linked_etag.empty() ? header(h, "etag") : linked_etag);
    if (etag.empty())
      continue;  // e.g. a redirect of a renamed repo: the metadata comes on a later answer
    const std::string commit = header(h, "x-repo-commit");
    if (commit.empty()) fail(url + ": no X-Repo-Commit header; is HF_ENDPOINT a Hugging Face Hub?");
    const std::string linked_size = header(h, "x-linked-size");
    return HubFileInfo{
        checked_name(commit, "commit", url), checked_name(etag, "etag", url),
        parse_size(linked_size.empty() ? header(h, "content-length") : linked_size, url)};
  }
  fail(url + ": no ETag header; is HF_ENDPOINT a Hugging Face Hub?");
}

FetchResult hub_fetch(const HubEndpoint& hub, const std::string& repo, const std::string& file,
                      const HubFileInfo& info, PullProgress& progress) {
  const fs::path dir = hub_repo_dir(repo);
  const fs::path blob = dir / "blobs" / info.etag;
  FetchResult result = FetchResult::cached;
  if (fs::is_regular_file(blob) && fs::file_size(blob) == info.size) {
    progress.cached(file, info.size);
  } else {
    download(hub, repo, file, info, blob, progress);
    result = FetchResult::downloaded;
  }
  link_snapshot(dir / "snapshots" / info.commit / file, blob);
  return result;
}

fs::path hub_pull(const HubEndpoint& hub, const std::string& repo, PullProgress& progress) {
  std::string commit;
  // Each file is resolved on main; a push during the pull would mix two commits in one snapshot.
  auto fetch = [&](const std::string& file, const HubFileInfo& info) {
    if (commit.empty()) commit = info.commit;
    if (info.commit != commit)
      fail(repo + ": changed on " + hub.url + " during the pull (commit " + commit + ", then " +
           info.commit + "); run `qwen3 pull " + repo + "` again");
    hub_fetch(hub, repo, file, info, progress);
  };
  auto fetch_required = [&](const std::string& file) {
    auto info = hub_file_info(hub, repo, file);
    if (!info) fail(repo + ": " + file + " not found on " + hub.url + " (HTTP 404)");
    fetch(file, *info);
  };
  fetch_required("config.json");
  // The engine samples with its defaults when a model has no generation_config.json.
  if (auto info = hub_file_info(hub, repo, "generation_config.json"))
    fetch("generation_config.json", *info);
  fetch_required("tokenizer.json");
  fetch_required("tokenizer_config.json");
  // Newer repos (Qwen3.5) keep the chat template in a file of its own.
  if (auto info = hub_file_info(hub, repo, "chat_template.jinja"))
    fetch("chat_template.jinja", *info);
  const fs::path snapshot = hub_repo_dir(repo) / "snapshots" / commit;
  if (auto info = hub_file_info(hub, repo, "model.safetensors")) {
    fetch("model.safetensors", *info);
  } else {
    fetch_required("model.safetensors.index.json");
    std::set<std::string> shards;
    try {
      std::ifstream in(snapshot / "model.safetensors.index.json");
      const auto index = nlohmann::json::parse(in);
      for (auto& [tensor, shard] : index.at("weight_map").items())
        shards.insert(shard.get<std::string>());
    } catch (const nlohmann::json::exception& e) {
      fail(repo + ": model.safetensors.index.json: " + e.what());
    }
    for (const std::string& shard : shards) {
      check_shard_name(repo, shard);
      fetch_required(shard);
    }
  }
  fs::create_directories(hub_repo_dir(repo) / "refs");
  std::ofstream(hub_repo_dir(repo) / "refs" / "main", std::ios::binary)
      << commit;  // no newline, as huggingface_hub
  return snapshot;
}

}  // namespace qwen3::cli
