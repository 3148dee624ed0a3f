// Running requests through a Scheduler in tests: submit them all, wait for each to finish.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "server/scheduler.h"

namespace qwen3::server {

// The ids each prompt generated, in the prompts' order; an error fails the calling test.
inline std::vector<std::vector<TokenId>> run_jobs(Scheduler& scheduler,
                                                  const std::vector<std::vector<TokenId>>& prompts,
                                                  const GenerationOptions& options) {
  std::vector<std::shared_ptr<Job>> jobs;
  for (auto& p : prompts) jobs.push_back(scheduler.submit(p, options));
  std::vector<std::vector<TokenId>> out;
  for (auto& job : jobs) {
    std::vector<TokenId> ids;
    for (Job::Update u; !u.finished;) {
      u = job->wait(std::chrono::milliseconds(1000));
      for (auto& t : u.tokens) ids.push_back(t.id);
      EXPECT_TRUE(u.error.empty()) << u.error;
    }
    out.push_back(ids);
  }
  return out;
}

}  // namespace qwen3::server
