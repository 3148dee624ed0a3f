// Running the built qwen3 executable from tests, with stdin text, capturing its output.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "test_paths.h"

namespace qwen3::test {

struct CliRun {
  int exit_code = -1;
  std::string output;  // stdout, plus stderr when merged
  std::string err;     // stderr when not merged
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline CliRun run_qwen3(const std::string& args, const std::string& stdin_text = "",
                        bool merge_stderr = true) {
  const auto err_file =
      std::filesystem::temp_directory_path() / ("qwen3-cli-err-" + std::to_string(::getpid()));
  std::string command = shell_quote(qwen3_binary()) + " " + args +
                        (merge_stderr ? " 2>&1" : " 2>" + shell_quote(err_file.string()));
  command = "printf '%s' " + shell_quote(stdin_text) + " | " + command;
  std::FILE* pipe = popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  CliRun run;
  char buffer[4096];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0;)
    run.output.append(buffer, n);
  int status = pclose(pipe);
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!merge_stderr) {
    std::ifstream in(err_file);
    std::stringstream s;
    s << in.rdbuf();
    run.err = s.str();
    std::filesystem::remove(err_file);
  }
  return run;
}

}  // namespace qwen3::test
