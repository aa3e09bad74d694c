// Where unit tests find the PyTorch conformance corpus: $KILN_SHARED_DIR/conformance
// (tests/CMakeLists.txt sets it to <source>/../shared), else
// KILN_SOURCE_DIR/../shared/conformance. The corpus sits beside the clone, not
// in it, so a fresh clone elsewhere has none: a test that reads it starts with
// KILN_SKIP_WITHOUT_CORPUS(), which skips it with the path it looked at. When
// the corpus is there, a missing case or file is a failure, not a skip.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace kiln::test {

inline std::filesystem::path conformance_dir() {
  const char* env = std::getenv("KILN_SHARED_DIR");
  std::filesystem::path shared = env && *env ? env : KILN_SOURCE_DIR "/../shared";
  return shared / "conformance";
}

inline bool corpus_present() { return std::filesystem::is_directory(conformance_dir()); }

}  // namespace kiln::test

// Skips the current test (GTEST_SKIP, so only in a test body or SetUp) when the
// corpus is absent.
#define KILN_SKIP_WITHOUT_CORPUS()                                                     \
  do {                                                                                 \
    if (!::kiln::test::corpus_present())                                               \
      GTEST_SKIP() << "no conformance corpus at " << ::kiln::test::conformance_dir().string(); \
  } while (0)
