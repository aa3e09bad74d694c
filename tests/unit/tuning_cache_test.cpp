// runtime::TuningCache: records round-trip through memory and disk; every kind
// of damage to an entry (truncation, a flipped byte, another format version,
// another key, another key text, a payload that is no record) is reported and
// read as a miss, and the next store repairs it; an unwritable directory is
// reported once; KILN_CACHE=off keeps the cache in memory only.
#include "runtime/tuning_cache.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "cache_test_util.h"

namespace kiln::test {
namespace {

using runtime::DiskCache;
using runtime::TuningCache;
using runtime::TuningRecord;
namespace fs = std::filesystem;

const std::string kKey = "kiln 0.1.0; cpu test; matmul(f32[3, 4], f32[4, 5]); candidates a,b";
const std::string kOtherKey = "kiln 0.1.0; cpu test; matmul(f32[6, 4], f32[4, 5]); candidates a,b";

TuningRecord record(const std::string& choice = "b") {
  TuningRecord r;
  r.choice = choice;
  r.candidates = {{"a", 0.25, false}, {"b", 1.5e-3, false}, {"c", 1e-6, true}, {"d", -1, false}};
  r.measured_at = 1700000000;
  r.budget_s = 0.5;
  r.complete = false;
  r.note = "N=32";
  return r;
}

// Loads `key` from a fresh cache on `dir` (nothing in memory), with stderr captured.
std::optional<TuningRecord> load_fresh(const std::string& dir, const std::string& key,
                                       std::string* err) {
  TuningCache fresh(dir);
  ::testing::internal::CaptureStderr();
  std::optional<TuningRecord> r = fresh.load(key);
  *err = ::testing::internal::GetCapturedStderr();
  return r;
}

TEST(TuningRecordText, RoundTrips) {
  TuningRecord r = record();
  std::optional<TuningRecord> back = runtime::parse_tuning_record(serialize_tuning_record(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, r);
  EXPECT_DOUBLE_EQ(back->choice_seconds(), 1.5e-3);
}

TEST(TuningRecordText, RejectsAnythingElse) {
  std::string good = serialize_tuning_record(record());
  EXPECT_FALSE(runtime::parse_tuning_record(""));
  EXPECT_FALSE(runtime::parse_tuning_record("garbage\n"));
  EXPECT_FALSE(runtime::parse_tuning_record(good.substr(0, good.size() - 1)));  // no last '\n'
  EXPECT_FALSE(runtime::parse_tuning_record(good.substr(0, good.size() - 4)));  // no "end"
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return runtime::parse_tuning_record(s);
  };
  EXPECT_FALSE(edited("kiln-tuning-record 1", "kiln-tuning-record 2"));
  EXPECT_FALSE(edited("choice b", "choice zz"));  // the winner must be a listed candidate
  EXPECT_FALSE(edited("budget 0.5", "budget nan"));
  EXPECT_FALSE(edited("complete 0", "complete 2"));
  EXPECT_FALSE(edited("candidate a 0.25 ok", "candidate a x ok"));
  EXPECT_FALSE(edited("candidate a 0.25 ok", "candidate a 0.25 maybe"));
  EXPECT_FALSE(edited("measured_at 1700000000", "measured_at soon"));
}

TEST(TuningCacheTest, StoresAndReloadsFromDisk) {
  TempDir dir;
  TuningCache cache(dir.path());
  EXPECT_FALSE(cache.load(kKey));
  EXPECT_TRUE(cache.store(kKey, record()));
  EXPECT_EQ(cache.load(kKey), record());  // from memory
  EXPECT_EQ(cache.stats().memory_hits, 1u);
  EXPECT_EQ(cache.stats().disk_writes, 1u);
  EXPECT_TRUE(fs::exists(cache.entry_path(kKey)));
  EXPECT_EQ(fs::path(cache.entry_path(kKey)).parent_path(), fs::path(dir.path()));

  std::string err;
  EXPECT_EQ(load_fresh(dir.path(), kKey, &err), record());  // a new process: from disk
  EXPECT_EQ(err, "");
  EXPECT_FALSE(load_fresh(dir.path(), kOtherKey, &err));
  EXPECT_EQ(err, "");  // absent is a plain miss

  TuningCache second(dir.path());
  ASSERT_TRUE(second.load(kKey));
  EXPECT_EQ(second.stats().disk_hits, 1u);
  ASSERT_TRUE(second.load(kKey));
  EXPECT_EQ(second.stats().memory_hits, 1u);  // the disk hit was kept in memory
  second.clear_memory();
  ASSERT_TRUE(second.load(kKey));
  EXPECT_EQ(second.stats().disk_hits, 2u);
}

TEST(TuningCacheTest, StoreReplacesTheRecord) {
  TempDir dir;
  TuningCache cache(dir.path());
  cache.store(kKey, record("a"));
  cache.store(kKey, record("b"));
  std::string err;
  std::optional<TuningRecord> r = load_fresh(dir.path(), kKey, &err);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->choice, "b");
}

// Each damaged entry is reported, read as a miss, and repaired by the next store.
class DamagedEntry : public ::testing::Test {
 protected:
  void SetUp() override {
    TuningCache cache(dir_.path());
    ASSERT_TRUE(cache.store(kKey, record()));
    path_ = cache.entry_path(kKey);
    bytes_ = read_all(path_);
    ASSERT_GT(bytes_.size(), 64u);
  }

  // Writes `damaged` over the entry and checks the miss, the warning, the repair.
  void expect_rejected(const std::string& damaged, const std::string& why) {
    write_all(path_, damaged);
    std::string err;
    EXPECT_FALSE(load_fresh(dir_.path(), kKey, &err));
    EXPECT_TRUE(contains(err, "kiln: warning: ")) << err;
    EXPECT_TRUE(contains(err, path_)) << err;
    EXPECT_TRUE(contains(err, why)) << err;
    TuningCache repair(dir_.path());
    EXPECT_TRUE(repair.store(kKey, record()));
    EXPECT_EQ(load_fresh(dir_.path(), kKey, &err), record());
    EXPECT_EQ(err, "");
  }

  TempDir dir_;
  std::string path_, bytes_;
};

TEST_F(DamagedEntry, Truncated) {
  expect_rejected(bytes_.substr(0, bytes_.size() - 5), "truncated payload");
  expect_rejected(bytes_.substr(0, 20), "truncated header");
  expect_rejected("", "truncated header");
}

TEST_F(DamagedEntry, FlippedByte) {
  std::string b = bytes_;
  b[b.size() - 8] ^= 0x20;  // in the record
  expect_rejected(b, "payload checksum mismatch");
  b = bytes_;
  b[70] ^= 0x01;  // in the key text
  expect_rejected(b, "header checksum mismatch");
}

TEST_F(DamagedEntry, WrongVersion) {
  std::string b = bytes_;
  b[8] = static_cast<char>(runtime::kDiskCacheFormatVersion + 1);
  expect_rejected(b, "format version");
}

TEST_F(DamagedEntry, WrongKey) {
  // Another key's entry under this key's name (a copy, or a hash collision).
  TuningCache other(dir_.path() + "/other");
  ASSERT_TRUE(other.store(kOtherKey, record("a")));
  expect_rejected(read_all(other.entry_path(kOtherKey)), "key ");
}

TEST_F(DamagedEntry, WrongKeyText) {
  // The right 128-bit key but another key text: the full text is compared.
  DiskCache disk(dir_.path() + "/forged");
  ASSERT_TRUE(disk.store(TuningCache::key_of(kKey), kOtherKey,
                         serialize_tuning_record(record("a"))));
  expect_rejected(read_all(disk.entry_path(TuningCache::key_of(kKey))), "made for a different");
}

TEST_F(DamagedEntry, NotARecord) {
  // Intact bytes, checksums and all, around a payload that is no record.
  DiskCache disk(dir_.path() + "/forged");
  ASSERT_TRUE(disk.store(TuningCache::key_of(kKey), kKey, "choice a\n"));
  expect_rejected(read_all(disk.entry_path(TuningCache::key_of(kKey))), "not a tuning record");
}

TEST(TuningCacheTest, UnwritableDirectoryWarnsOnceAndKeepsMemory) {
  TempDir dir;
  std::string file = dir.path() + "/file";
  write_all(file, "x");
  TuningCache cache(file + "/cache");  // under a regular file: cannot be created
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store(kKey, record()));
  EXPECT_FALSE(cache.store(kOtherKey, record()));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "cannot write the tuning cache in " + file + "/cache")) << err;
  EXPECT_EQ(err.find("kiln: warning"), err.rfind("kiln: warning")) << "warned twice: " << err;
  EXPECT_EQ(cache.load(kKey), record());  // memory still works
}

TEST(TuningCacheTest, FollowsTheEnvironment) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv on("KILN_CACHE", nullptr);
  TuningCache cache;
  EXPECT_EQ(cache.directory(), dir.path() + "/tuning");
  EXPECT_TRUE(cache.store(kKey, record()));
  EXPECT_TRUE(fs::exists(dir.path() + "/tuning/" + TuningCache::key_of(kKey).str() + ".kc"));
  // The kernel cache's directory listing (and its trim) never sees tuning entries.
  for (const auto& e : fs::directory_iterator(dir.path())) {
    EXPECT_NE(e.path().extension(), ".kc") << e.path();
  }
}

TEST(TuningCacheTest, OffKeepsMemoryOnly) {
  TempDir dir;
  ScopedEnv cache_dir("KILN_CACHE_DIR", dir.path().c_str());
  ScopedEnv off("KILN_CACHE", "off");
  TuningCache cache;
  EXPECT_EQ(cache.directory(), "");
  EXPECT_EQ(cache.entry_path(kKey), "");
  EXPECT_TRUE(cache.store(kKey, record()));
  EXPECT_EQ(cache.load(kKey), record());
  EXPECT_EQ(cache.stats().disk_writes, 0u);
  cache.clear_memory();
  EXPECT_FALSE(cache.load(kKey));
  EXPECT_FALSE(fs::exists(dir.path() + "/tuning"));
}

TEST(TuningCacheTest, UseDiskFalseStaysInMemory) {
  TempDir dir;
  TuningCache cache(dir.path());
  EXPECT_TRUE(cache.store(kKey, record(), /*use_disk=*/false));
  EXPECT_FALSE(fs::exists(cache.entry_path(kKey)));
  EXPECT_TRUE(cache.store(kKey, record(), /*use_disk=*/true));
  cache.clear_memory();
  EXPECT_FALSE(cache.load(kKey, /*use_disk=*/false));
  EXPECT_TRUE(cache.load(kKey, /*use_disk=*/true));
}

}  // namespace
}  // namespace kiln::test
