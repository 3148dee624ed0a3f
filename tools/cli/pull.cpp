// `qwen3 pull Qwen/Qwen3-0.6B`: download a model from the Hugging Face Hub into the standard Hub
// cache. Progress goes to stderr (a bar on a terminal, one line per file otherwise); the snapshot
// folder to stdout.
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/commands.h"
#include "cli/hub_download.h"
#include "cli/model_path.h"
#include "qwen3/error.h"

namespace qwen3::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Decimal units, as the Hub shows file sizes.
std::string human_bytes(double n) {
  const char* units[] = {"B", "kB", "MB", "GB", "TB"};
  int u = 0;
  for (; n >= 1000 && u < 4; ++u) n /= 1000;
  char s[32];
  std::snprintf(s, sizeof s, u ? "%.1f %s" : "%.0f %s", n, units[u]);
  return s;
}

class Reporter : public PullProgress {
 public:
  explicit Reporter(bool tty) : tty_(tty) {}
  // On an error the bar is left open; end its line so `error: ...` starts on its own.
  ~Reporter() override {
    if (bar_open_) std::fputc('\n', stderr);
  }
  Reporter(const Reporter&) = delete;
  Reporter& operator=(const Reporter&) = delete;

  int downloaded = 0, cached_files = 0;

  void cached(const std::string& file, uint64_t size) override {
    ++cached_files;
    std::fprintf(stderr, "  %-34s %10s  already in the cache\n", file.c_str(),
                 human_bytes(size).c_str());
  }
  void started(const std::string& file, uint64_t from, uint64_t size) override {
    file_ = file, from_ = from, size_ = size, start_ = Clock::now(), drawn_ = {};
    if (tty_) draw(from);
  }
  void advanced(uint64_t done) override {
    // Redrawing on every 16 kB chunk would cost more than the download; ten frames a second is
    // enough.
    if (tty_ && Clock::now() - drawn_ >= std::chrono::milliseconds(100)) draw(done);
  }
  void finished(const std::string& file) override {
    ++downloaded;
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    const std::string rate = human_bytes(s > 0 ? (size_ - from_) / s : 0) + "/s";
    if (tty_) {
      draw(size_);
      std::fputc('\n', stderr);
      bar_open_ = false;
    } else {
      std::fprintf(stderr, "  %-34s %10s  downloaded in %.1f s (%s)%s\n", file.c_str(),
                   human_bytes(size_).c_str(), s, rate.c_str(),
                   from_ ? (", resumed at " + human_bytes(from_)).c_str() : "");
    }
  }

 private:
  void draw(uint64_t done) {
    constexpr int width = 30;
    const double frac = size_ ? static_cast<double>(done) / size_ : 1.0;
    const int filled = static_cast<int>(frac * width);
    const double s = std::chrono::duration<double>(Clock::now() - start_).count();
    const std::string bar = std::string(filled, '#') + std::string(width - filled, '.');
    const std::string amount = human_bytes(done) + " / " + human_bytes(size_);
    const std::string rate = s > 0.2 ? human_bytes((done - from_) / s) + "/s" : "";
    // \r rewrites the line in place; \033[K clears what a longer previous frame left behind.
    std::fprintf(stderr, "\r  %-34s [%s] %3.0f%%  %s  %s\033[K", file_.c_str(), bar.c_str(),
                 frac * 100, amount.c_str(), rate.c_str());
    std::fflush(stderr);
    drawn_ = Clock::now();
    bar_open_ = true;
  }

  bool tty_, bar_open_ = false;
  std::string file_;
  uint64_t from_ = 0, size_ = 0;
  Clock::time_point start_, drawn_;
};

}  // namespace

void add_pull_command(CLI::App& app) {
  auto repo = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "pull",
      "Download a model from the Hugging Face Hub into its cache (resumable, sha256-verified)");
  cmd->add_option("repo", *repo, "Hub id, e.g. Qwen/Qwen3-0.6B")->required();
  cmd->footer(
      "Files: config.json, generation_config.json, tokenizer.json, tokenizer_config.json, "
      "chat_template.jinja and model.safetensors\n"
      "(or model.safetensors.index.json and its shards), from main. Interrupted downloads resume "
      "on the next pull;\n"
      "files already in the cache are not downloaded again. Then `qwen3 run <repo> ...` finds it.\n"
      "Environment: HF_ENDPOINT (default https://huggingface.co), HF_TOKEN (private or gated "
      "repos),\n"
      "HF_HUB_CACHE or HF_HOME (the cache: $HF_HOME/hub, default ~/.cache/huggingface/hub).");
  cmd->callback([repo] {
    if (!is_hub_id(*repo))
      throw Error(ErrorKind::invalid_argument, *repo + ": not a Hub id such as Qwen/Qwen3-0.6B");
    const HubEndpoint hub = HubEndpoint::from_env();
    std::fprintf(stderr, "Pulling %s from %s into %s\n", repo->c_str(), hub.url.c_str(),
                 hub_repo_dir(*repo).string().c_str());
    Reporter reporter(isatty(STDERR_FILENO));
    const auto snapshot = hub_pull(hub, *repo, reporter);
    std::fprintf(stderr,
                 "Done: %d downloaded, %d already in the cache. Try: qwen3 run %s \"Hello\"\n",
                 reporter.downloaded, reporter.cached_files, repo->c_str());
    std::printf("%s\n", snapshot.c_str());
  });
}

}  // namespace qwen3::cli
