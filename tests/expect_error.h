// The check every bad-input test makes of a library error: the call throws qwen3::Error of the
// expected kind, with a one-line message holding every expected fragment.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <string>

#include "qwen3/error.h"

namespace qwen3::test {

inline void expect_error(const std::function<void()>& call, ErrorKind kind,
                         std::initializer_list<std::string> fragments) {
  try {
    call();
    ADD_FAILURE() << "accepted; expected an error containing: " << *fragments.begin();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.kind(), kind) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line: " << msg;
    for (auto& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "'" << f << "' not in: " << msg;
  }
}

}  // namespace qwen3::test
