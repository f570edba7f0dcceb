// Paths of test data: the shared/ folder beside the checkout (or $GS_SHARED_DIR).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <unistd.h>

namespace gs::test {

inline std::string shared_dir() {
  if (const char* env = std::getenv("GS_SHARED_DIR"); env && *env) return env;
  return GS_SHARED_DIR;
}

// Absolute path of shared/<rel>; the test fails (not skips) with a clear message when the
// file is missing.
inline std::string shared_path(const std::string& rel) {
  const std::string p = shared_dir() + "/" + rel;
  if (!std::filesystem::exists(p)) {
    ADD_FAILURE() << "test data " << p << " is missing: the shared/ folder is expected beside the checkout "
                  << "(or set GS_SHARED_DIR)";
  }
  return p;
}

inline std::string source_path(const std::string& rel) { return std::string(GS_SOURCE_DIR) + "/" + rel; }

// A fresh temporary directory for one test.
inline std::filesystem::path temp_dir(const std::string& tag) {
  auto p = std::filesystem::temp_directory_path() /
           ("gemmaserve-test-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()));
  std::filesystem::create_directories(p);
  return p;
}

// A temp_dir removed (with its files) when this object is destroyed; as a function-local
// static it serves one test run and goes when the test binary exits.
struct ScratchDir {
  explicit ScratchDir(const std::string& tag) : path(temp_dir(tag)) {}
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::filesystem::path path;
};

}  // namespace gs::test
