// A gtest fixture for tests that compile through the caches: the process's
// kernel cache starts and ends empty, the disk cache's counters start at 0,
// and KILN_CACHE_DIR points at a scratch directory with the cache on, so a
// test sees exactly the compiles and disk reads it caused.
#pragma once

#include <gtest/gtest.h>

#include "cache_test_util.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"

namespace kiln::test {

class FreshCachesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    runtime::KernelCache::global().clear();
    runtime::DiskCache::global().reset_stats();
  }
  void TearDown() override { runtime::KernelCache::global().clear(); }

  TempDir dir_;
  ScopedEnv cache_dir_{"KILN_CACHE_DIR", dir_.path().c_str()};
  ScopedEnv cache_on_{"KILN_CACHE", nullptr};
};

}  // namespace kiln::test
