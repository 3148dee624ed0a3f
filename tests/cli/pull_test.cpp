// `qwen3 pull` against a fake Hub on 127.0.0.1 that serves the fixture model the way huggingface.co
// does.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <openssl/evp.h>
#include <sys/file.h>

#include <chrono>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <thread>

#include "cli/cli_runner.h"
#include "cli/hub_download.h"

namespace qwen3 {
namespace {

namespace fs = std::filesystem;
using test::run_qwen3;

const std::string kRepo = "Qwen/Qwen3-tiny-test";
const std::string kCommit = "c0ffee00112233445566778899aabbccddeeff00";
const std::string kShard = "model-00001-of-00001.safetensors";

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned n = 0;
  EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned i = 0; i < n; ++i)
    hex += {"0123456789abcdef"[digest[i] >> 4], "0123456789abcdef"[digest[i] & 15]};
  return hex;
}

// How the fake Hub misbehaves.
struct HubOptions {
  bool sharded = false;  // model.safetensors.index.json and one shard instead of model.safetensors
  bool drop_once = false;  // the first body of the weights stops halfway and the connection closes
  bool ignore_range = false;  // bodies always come whole, with 200
  bool corrupt = false;       // one byte of the weights flipped, the advertised sha256 unchanged
  bool jinja = false;         // a chat_template.jinja beside the config, as Qwen3.5's repos have
};

// huggingface.co in miniature. /{repo}/resolve/main/{file} answers with X-Repo-Commit and an ETag;
// LFS files
// (*.safetensors) get a 302 to /cdn/<sha256> with X-Linked-Etag and X-Linked-Size, as the Hub
// redirects to its CDN, while small files are served directly with a weak git-style ETag. Bodies
// honour Range requests.
class FakeHub {
 public:
  explicit FakeHub(HubOptions options = {}) : options_(options) {
    for (const char* name :
         {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"})
      files_[name] = read_bytes(test::tiny_model() / name);
    if (options.jinja)
      files_["chat_template.jinja"] = read_bytes(test::qwen35_chat() / "chat_template.jinja");
    const std::string weights = read_bytes(test::tiny_model() / "model.safetensors");
    weights_ = options.sharded ? kShard : "model.safetensors";
    files_[weights_] = weights;
    if (options.sharded)
      files_["model.safetensors.index.json"] =
          R"({"metadata": {}, "weight_map": {"model.embed_tokens.weight": ")" + kShard + R"("}})";
    for (auto& [name, data] : files_) sha_[name] = sha256_hex(data);

    server_.Get(R"(/([^/]+/[^/]+)/resolve/main/(.+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  resolve(req.matches[1], req.matches[2], req, res);
                });
    server_.Get(R"(/cdn/([0-9a-f]{64}))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  for (auto& [name, sha] : sha_)
                    if (sha == req.matches[1].str()) return serve_body(name, req, res);
                  res.status = 404;
                });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the accept loop runs would be lost, and the destructor's join would wait
    // forever.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeHub() {
    server_.stop();
    thread_.join();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& weights() const { return weights_; }
  const std::string& data(const std::string& file) const { return files_.at(file); }
  const std::string& sha(const std::string& file) const { return sha_.at(file); }
  uint64_t served(const std::string& file) {
    std::lock_guard lock(mutex_);
    return served_[file];
  }

 private:
  void resolve(const std::string& repo, const std::string& file, const httplib::Request& req,
               httplib::Response& res) {
    if (repo != kRepo || !files_.count(file)) {
      res.status = 404;
      res.set_header("X-Error-Code", repo != kRepo ? "RepoNotFound" : "EntryNotFound");
      return;
    }
    res.set_header("X-Repo-Commit", kCommit);
    const std::string& sha = sha_.at(file);
    if (file.ends_with(".safetensors")) {
      res.status = 302;
      res.set_header("Location", "/cdn/" + sha);
      res.set_header("X-Linked-Etag", "\"" + sha + "\"");
      res.set_header("X-Linked-Size", std::to_string(files_.at(file).size()));
      res.set_header("ETag", "\"" + sha + "\"");
      return;
    }
    res.set_header("ETag", "W/\"" + sha.substr(0, 40) + "\"");
    serve_body(file, req, res);
  }

  // httplib answers a Range request with 206 and the asked-for slice by itself, from the ranges it
  // parsed into the request; a server that ignores ranges is one where that list is empty.
  void serve_body(const std::string& file, const httplib::Request& req, httplib::Response& res) {
    if (options_.ignore_range) const_cast<httplib::Request&>(req).ranges.clear();
    const std::string& data = files_.at(file);
    res.set_content_provider(
        data.size(), "application/octet-stream",
        [this, file, &data](size_t offset, size_t length, httplib::DataSink& sink) {
          std::string chunk = data.substr(offset, std::min<size_t>(length, 65536));
          const bool weights = file == weights_;
          if (weights && options_.corrupt && offset <= data.size() / 3 &&
              data.size() / 3 < offset + chunk.size())
            chunk[data.size() / 3 - offset] ^= 1;
          bool drop = false;
          if (weights && options_.drop_once && !dropped_ &&
              offset + chunk.size() > data.size() / 2) {
            chunk.resize(data.size() / 2 - offset);
            dropped_ = drop = true;
          }
          sink.write(chunk.data(), chunk.size());
          std::lock_guard lock(mutex_);
          served_[file] += chunk.size();
          return !drop;  // false makes httplib close the connection mid-body
        });
  }

  HubOptions options_;
  std::map<std::string, std::string> files_, sha_;
  std::string weights_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mutex_;
  std::map<std::string, uint64_t> served_;
  bool dropped_ = false;
};

// Sets an environment variable (or unsets it, for nullptr) for one scope; qwen3 runs as a child and
// inherits it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    value ? ::setenv(name, value, 1) : ::unsetenv(name);
  }
  ~ScopedEnv() { old_ ? ::setenv(name_, old_->c_str(), 1) : ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A fresh HF_HOME per test, removed afterwards, and no HF_HUB_CACHE or HF_TOKEN from the caller's
// environment.
class PullCli : public ::testing::Test {
 protected:
  PullCli()
      : home_(fs::temp_directory_path() /
              ("qwen3-pull-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        home_env_("HF_HOME", home_.c_str()) {
    fs::remove_all(home_);
    fs::create_directories(home_);
  }
  ~PullCli() override { fs::remove_all(home_); }

  test::CliRun pull(FakeHub& hub, const std::string& repo = kRepo) {
    ScopedEnv endpoint("HF_ENDPOINT", hub.url().c_str());
    return run_qwen3("pull " + repo, "", false);
  }
  fs::path repo_dir() const { return home_ / "hub" / "models--Qwen--Qwen3-tiny-test"; }
  fs::path blob(FakeHub& hub, const std::string& file) const {
    return repo_dir() / "blobs" / hub.sha(file);
  }

  const fs::path home_;
  ScopedEnv home_env_, cache_env_{"HF_HUB_CACHE", nullptr}, token_env_{"HF_TOKEN", nullptr};
};

TEST_F(PullCli, DownloadsIntoTheHubCacheLayoutAndRunFindsIt) {
  FakeHub hub;
  auto run = pull(hub);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path snapshot = repo_dir() / "snapshots" / kCommit;
  EXPECT_EQ(run.output, snapshot.string() + "\n");
  EXPECT_EQ(read_bytes(repo_dir() / "refs" / "main"), kCommit);
  for (const char* file : {"config.json", "generation_config.json", "tokenizer.json",
                           "tokenizer_config.json", "model.safetensors"}) {
    // LFS blobs are named by their sha256; the others by the git ETag the Hub sends, quotes and W/
    // removed.
    const std::string etag =
        std::string(file) == "model.safetensors" ? hub.sha(file) : hub.sha(file).substr(0, 40);
    ASSERT_TRUE(fs::is_symlink(snapshot / file)) << file;
    EXPECT_EQ(fs::read_symlink(snapshot / file), fs::path("../../blobs") / etag) << file;
    EXPECT_EQ(sha256_hex(read_bytes(snapshot / file)), hub.sha(file)) << file;
    EXPECT_EQ(hub.served(file), hub.data(file).size()) << file << " was sent more than once";
  }
  EXPECT_FALSE(fs::exists(blob(hub, "model.safetensors").string() + ".incomplete"));

  // `run` resolves the Hub id through refs/main to the snapshot and generates what it does from the
  // folder.
  const std::string prompt = " 'The capital of France is' --temp 0 -n 3";
  auto from_cache = run_qwen3("run " + kRepo + prompt, "", false);
  auto from_folder =
      run_qwen3("run " + test::shell_quote(test::tiny_model().string()) + prompt, "", false);
  ASSERT_EQ(from_cache.exit_code, 0) << from_cache.err;
  EXPECT_EQ(from_cache.output, from_folder.output);

  // `bench` too, and it finds the map of the weights behind the snapshot's symlink (-1: none
  // found).
  auto bench = run_qwen3("bench " + kRepo + " -p 4 -n 2 -r 1 -t 1 --json", "", false);
  ASSERT_EQ(bench.exit_code, 0) << bench.err;
  const double share =
      nlohmann::json::parse(bench.output)["tests"][0]["huge_page_share"].get<double>();
  EXPECT_GE(share, 0.0);
  EXPECT_LE(share, 1.0);
}

TEST_F(PullCli, SecondPullDownloadsNothing) {
  FakeHub hub;
  ASSERT_EQ(pull(hub).exit_code, 0);
  const uint64_t served = hub.served("model.safetensors") + hub.served("tokenizer.json");
  auto again = pull(hub);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(hub.served("model.safetensors") + hub.served("tokenizer.json"), served);
  EXPECT_NE(again.err.find("Done: 0 downloaded, 5 already in the cache"), std::string::npos)
      << again.err;
}

TEST_F(PullCli, InterruptedDownloadResumesWithARangeRequest) {
  FakeHub hub({.drop_once = true});
  auto first = pull(hub);
  EXPECT_EQ(first.exit_code, 1);
  EXPECT_NE(
      first.err.find("error: Qwen/Qwen3-tiny-test: model.safetensors: download interrupted after "),
      std::string::npos)
      << first.err;
  EXPECT_NE(first.err.find("run `qwen3 pull Qwen/Qwen3-tiny-test` again to resume"),
            std::string::npos);
  const fs::path part = blob(hub, "model.safetensors").string() + ".incomplete";
  ASSERT_TRUE(fs::exists(part));
  const uint64_t kept = fs::file_size(part), size = hub.data("model.safetensors").size();
  EXPECT_GT(kept, 0u);
  EXPECT_LT(kept, size);
  EXPECT_FALSE(fs::exists(repo_dir() / "refs" / "main"));

  const uint64_t served_before = hub.served("model.safetensors");
  auto second = pull(hub);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(hub.served("model.safetensors") - served_before, size - kept)
      << "only the missing tail is fetched";
  EXPECT_NE(second.err.find("resumed at"), std::string::npos) << second.err;
  EXPECT_EQ(sha256_hex(read_bytes(blob(hub, "model.safetensors"))), hub.sha("model.safetensors"));
  EXPECT_FALSE(fs::exists(part));
}

TEST_F(PullCli, ServerIgnoringTheRangeMakesTheDownloadStartOver) {
  FakeHub hub({.drop_once = true, .ignore_range = true});
  EXPECT_EQ(pull(hub).exit_code, 1);
  const uint64_t served_before = hub.served("model.safetensors"),
                 size = hub.data("model.safetensors").size();
  auto second = pull(hub);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(hub.served("model.safetensors") - served_before, size);
  EXPECT_EQ(sha256_hex(read_bytes(blob(hub, "model.safetensors"))), hub.sha("model.safetensors"));
}

TEST_F(PullCli, CorruptBodyIsRefusedAndDeleted) {
  FakeHub hub({.corrupt = true});
  auto run = pull(hub);
  EXPECT_EQ(run.exit_code, 1);
  const std::string expected =
      "error: Qwen/Qwen3-tiny-test: model.safetensors: downloaded file is corrupt (sha256 ";
  EXPECT_NE(run.err.find(expected), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(", expected " + hub.sha("model.safetensors") + "); it was deleted\n"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(blob(hub, "model.safetensors")));
  EXPECT_FALSE(fs::exists(blob(hub, "model.safetensors").string() + ".incomplete"));
  EXPECT_FALSE(fs::exists(repo_dir() / "snapshots" / kCommit / "model.safetensors"));
}

TEST_F(PullCli, ABlobBeingDownloadedElsewhereIsLeftAlone) {
  FakeHub hub;
  // The lock huggingface_hub holds while it downloads a blob.
  const fs::path lock = home_ / "hub" / ".locks" / "models--Qwen--Qwen3-tiny-test" /
                        (hub.sha("model.safetensors") + ".lock");
  fs::create_directories(lock.parent_path());
  const int fd = ::open(lock.c_str(), O_CREAT | O_RDWR, 0644);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  auto run = pull(hub);
  ::close(fd);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(
      run.err.find(
          "error: Qwen/Qwen3-tiny-test: model.safetensors: another download of it is running ("),
      std::string::npos)
      << run.err;
  EXPECT_EQ(hub.served("model.safetensors"), 0u);
}

TEST_F(PullCli, ShardedModelFetchesTheIndexAndItsShards) {
  FakeHub hub({.sharded = true});
  auto run = pull(hub);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const fs::path snapshot = repo_dir() / "snapshots" / kCommit;
  EXPECT_FALSE(fs::exists(snapshot / "model.safetensors"));
  EXPECT_EQ(sha256_hex(read_bytes(snapshot / "model.safetensors.index.json")),
            hub.sha("model.safetensors.index.json"));
  EXPECT_EQ(sha256_hex(read_bytes(snapshot / kShard)), hub.sha(kShard));
  auto generated = run_qwen3("run " + kRepo + " 'Hello' --temp 0 -n 2", "", false);
  EXPECT_EQ(generated.exit_code, 0) << generated.err;
}

TEST_F(PullCli, FetchesChatTemplateJinjaWhereTheRepoHasOne) {
  FakeHub without;
  ASSERT_EQ(pull(without).exit_code, 0);
  const fs::path snapshot = repo_dir() / "snapshots" / kCommit;
  EXPECT_FALSE(fs::exists(snapshot / "chat_template.jinja"));  // optional: Qwen3 has none
  FakeHub with({.jinja = true});
  auto run = pull(with);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(read_bytes(snapshot / "chat_template.jinja"), with.data("chat_template.jinja"));
}

TEST_F(PullCli, UnknownRepoIsOneErrorLine) {
  FakeHub hub;
  auto run = pull(hub, "Qwen/Nope");
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("\nerror: Qwen/Nope: not found on " + hub.url() + " (HTTP 404)\n"),
            std::string::npos)
      << run.err;
  EXPECT_EQ(run.output, "");
}

TEST_F(PullCli, UnreachableHubIsOneErrorLine) {
  std::string url;
  {
    FakeHub closed;  // its port is free again once it stops, so nothing answers there
    url = closed.url();
  }
  ScopedEnv endpoint("HF_ENDPOINT", url.c_str());
  auto run = run_qwen3("pull " + kRepo, "", false);
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("\nerror: cannot reach " + url + ": "), std::string::npos) << run.err;
}

TEST_F(PullCli, RejectsWhatIsNotAHubId) {
  FakeHub hub;
  for (const char* bad : {"Qwen3-0.6B", "../x", "Qwen/../x", "a/b/c"}) {
    auto run = pull(hub, bad);
    EXPECT_EQ(run.exit_code, 1) << bad;
    EXPECT_NE(run.err.find("not a Hub id"), std::string::npos) << run.err;
  }
}

TEST(HubFileInfo, ReadsTheMetadataOfTheFirstAnswer) {
  FakeHub hub;
  const cli::HubEndpoint endpoint{hub.url(), ""};
  auto weights = cli::hub_file_info(endpoint, kRepo, "model.safetensors");
  ASSERT_TRUE(weights);
  EXPECT_EQ(weights->commit, kCommit);
  EXPECT_EQ(weights->etag, hub.sha("model.safetensors"));
  EXPECT_EQ(weights->size, hub.data("model.safetensors").size());
  EXPECT_TRUE(cli::is_sha256(weights->etag));
  auto config = cli::hub_file_info(endpoint, kRepo, "config.json");
  ASSERT_TRUE(config);
  EXPECT_EQ(config->etag, hub.sha("config.json").substr(0, 40));
  EXPECT_FALSE(cli::is_sha256(config->etag));
  EXPECT_EQ(config->size, hub.data("config.json").size());
  EXPECT_FALSE(cli::hub_file_info(endpoint, kRepo, "model.safetensors.index.json"));
  EXPECT_EQ(hub.served("model.safetensors") + hub.served("config.json"), 0u)
      << "HEAD requests carry no body";
}

}  // namespace
}  // namespace qwen3
