// The caches hold code Kiln runs, so they are trusted only as far as the
// user's own files (issue 15, items 10-13 and 16): directories created 0700
// whatever the umask; a cache directory (or tuning/ subdirectory) that is a
// symlink, not the user's or writable by group/others is refused with one
// warning and the run goes on without the disk cache; an entry that is not
// a regular file of the user's (a FIFO, another user's file, a
// group-writable one) is ignored without hanging; a huge junk entry is
// rejected from its header and fstat without being read; trimming never
// leaves the verified directory; numeric environment variables never wrap.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <thread>

#include "cache_test_util.h"
#include "kiln/kiln.h"
#include "runtime/disk_cache.h"
#include "runtime/env_number.h"
#include "runtime/kernel_cache.h"
#include "runtime/tuning_cache.h"

namespace kiln::test {
namespace {

namespace fs = std::filesystem;
using runtime::CacheKey;
using runtime::DiskCache;

const CacheKey kKey{0x1122334455667788ull, 0x99aabbccddeeff00ull};
const std::string kDesc = "trust test; cpu imaginary";

mode_t mode_of(const std::string& path) {
  struct stat st;
  EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

bool is_root() {
  return ::geteuid() == 0;
}

// Sets the umask for one scope.
class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t m) : old_(::umask(m)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

std::string capture_err(const std::function<void()>& f) {
  ::testing::internal::CaptureStderr();
  f();
  return ::testing::internal::GetCapturedStderr();
}

std::string refused_dir_warning(const std::string& what, const std::string& dir,
                                const std::string& path, const std::string& why) {
  return "kiln: warning: not using the " + what + " in " + dir + ": " + path + " is " + why +
         "; continuing without the disk cache\n";
}

// Bytes read by this process so far (/proc/self/io's rchar); -1 when unknown.
long long bytes_read() {
  std::ifstream in("/proc/self/io");
  std::string word;
  long long v = -1;
  while (in >> word) {
    if (word == "rchar:") {
      in >> v;
      break;
    }
  }
  return v;
}

// ------------------------------------------------------------------ directories

TEST(CacheTrust, DirectoriesAreCreated0700UnderUmask000) {
  TempDir dir;
  std::string path = dir.path() + "/a/b/cache";
  {
    ScopedUmask all(0);
    DiskCache cache(path);
    ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
    EXPECT_EQ(cache.load(kKey, kDesc).value_or(""), "payload");
    EXPECT_EQ(mode_of(cache.entry_path(kKey)), 0600u);
  }
  EXPECT_EQ(mode_of(path), 0700u);
  EXPECT_EQ(mode_of(dir.path() + "/a"), 0700u);
  EXPECT_EQ(mode_of(dir.path() + "/a/b"), 0700u);
  // The tuning/ subdirectory too.
  ScopedEnv on("KILN_CACHE", "on");
  ScopedEnv where("KILN_CACHE_DIR", (dir.path() + "/env").c_str());
  ScopedUmask all(0);
  runtime::TuningCache tuning;
  runtime::TuningRecord r;
  r.choice = "naive";
  r.candidates.emplace_back("naive", 1e-3, false);
  ASSERT_TRUE(tuning.store("problem", r));
  EXPECT_EQ(mode_of(dir.path() + "/env"), 0700u);
  EXPECT_EQ(mode_of(dir.path() + "/env/tuning"), 0700u);
}

TEST(CacheTrust, GroupWritableDirectoryIsRefusedOnceAndSkipped) {
  TempDir dir;
  std::string path = dir.path() + "/cache";
  {
    DiskCache cache(path);
    ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
  }
  ASSERT_EQ(::chmod(path.c_str(), 0770), 0);
  DiskCache cache(path);
  std::string err = capture_err([&] {
    EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
    EXPECT_FALSE(cache.store(kKey, kDesc, "other"));
    EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
  });
  EXPECT_EQ(
      err, refused_dir_warning("kernel cache", path, path,
                               "writable by group or others (`chmod go-w " + path + "` fixes it)"));
  EXPECT_EQ(cache.stats().hits, 0u);
  // Nothing was written there.
  ASSERT_EQ(::chmod(path.c_str(), 0700), 0);
  EXPECT_EQ(DiskCache(path).load(kKey, kDesc).value_or(""), "payload");
}

TEST(CacheTrust, SymlinkedCacheDirectoryIsNeitherUsedNorTrimmed) {
  TempDir dir;
  std::string target = dir.path() + "/victim", link = dir.path() + "/cache";
  ASSERT_EQ(::mkdir(target.c_str(), 0700), 0);
  write_all(target + "/precious.kc", "do not delete");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  DiskCache cache(link);
  std::string err = capture_err([&] {
    EXPECT_FALSE(cache.store(kKey, kDesc, "payload"));
    EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
    EXPECT_EQ(cache.trim(0), 0u);
  });
  EXPECT_EQ(err, refused_dir_warning("kernel cache", link, link, "a symlink"));
  DiskCache slash(link + "/");  // a trailing slash does not follow it either
  err = capture_err([&] { EXPECT_EQ(slash.trim(0), 0u); });
  EXPECT_TRUE(contains(err, "is a symlink")) << err;
  EXPECT_TRUE(fs::exists(target + "/precious.kc"));
  EXPECT_FALSE(fs::exists(target + "/" + kKey.str() + ".kc"));
}

TEST(CacheTrust, SymlinkedTuningDirectoryIsNeitherUsedNorTrimmed) {
  TempDir dir;
  std::string base = dir.path() + "/cache", victim = dir.path() + "/victim";
  ASSERT_EQ(::mkdir(base.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(victim.c_str(), 0700), 0);
  write_all(victim + "/precious.kc", "do not delete");
  ASSERT_EQ(::symlink(victim.c_str(), (base + "/tuning").c_str()), 0);
  ScopedEnv on("KILN_CACHE", "on");
  ScopedEnv where("KILN_CACHE_DIR", base.c_str());
  runtime::TuningCache tuning;
  runtime::TuningRecord r;
  r.choice = "naive";
  r.candidates.emplace_back("naive", 1e-3, false);
  std::string err = capture_err([&] {
    EXPECT_FALSE(tuning.store("problem", r));
    tuning.clear_memory();
    EXPECT_FALSE(tuning.load("problem").has_value());
  });
  EXPECT_EQ(err,
            refused_dir_warning("tuning cache", base + "/tuning", base + "/tuning", "a symlink"));
  DiskCache sub(DiskCache::Subdirectory{"tuning", "tuning cache"});
  capture_err([&] { EXPECT_EQ(sub.trim(0), 0u); });
  // The kernel cache's own trim skips the symlink (and everything not a regular file).
  DiskCache kernels(base);
  ASSERT_TRUE(kernels.store(kKey, kDesc, "payload"));
  EXPECT_EQ(kernels.trim(0), 1u);
  EXPECT_TRUE(fs::exists(victim + "/precious.kc"));
  EXPECT_EQ(std::distance(fs::directory_iterator(victim), fs::directory_iterator()), 1);
}

// ------------------------------------------------------------------ entries

TEST(CacheTrust, FifoEntryIsIgnoredWithoutHanging) {
  TempDir dir;
  DiskCache cache(dir.path());
  std::string entry = cache.entry_path(kKey);
  ASSERT_EQ(::mkfifo(entry.c_str(), 0600), 0);
  auto done = std::make_shared<std::promise<std::optional<std::string>>>();
  std::future<std::optional<std::string>> result = done->get_future();
  ::testing::internal::CaptureStderr();
  std::thread t([&cache, done] { done->set_value(cache.load(kKey, kDesc)); });
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    t.detach();  // stuck in open(2): the process ends with the test
    FAIL() << "load() of a FIFO entry hangs";
  }
  t.join();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(result.get().has_value());
  EXPECT_EQ(err, "kiln: warning: ignoring cache entry " + entry + ": it is not a regular file\n");
  EXPECT_EQ(cache.stats().refused, 1u);
  EXPECT_EQ(cache.stats().misses, 1u);
  // A store replaces it with a real entry.
  ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
  EXPECT_EQ(cache.load(kKey, kDesc).value_or(""), "payload");
}

TEST(CacheTrust, SymlinkedEntryIsIgnored) {
  TempDir dir;
  DiskCache cache(dir.path() + "/cache");
  DiskCache elsewhere(dir.path() + "/elsewhere");
  ASSERT_TRUE(elsewhere.store(kKey, kDesc, "payload"));
  ASSERT_TRUE(cache.store(CacheKey{1, 2}, kDesc, "x"));  // creates the directory
  ASSERT_EQ(::symlink(elsewhere.entry_path(kKey).c_str(), cache.entry_path(kKey).c_str()), 0);
  std::string err = capture_err([&] { EXPECT_FALSE(cache.load(kKey, kDesc).has_value()); });
  EXPECT_EQ(
      err, "kiln: warning: ignoring cache entry " + cache.entry_path(kKey) + ": it is a symlink\n");
  EXPECT_EQ(cache.trim(0), 1u);  // only the real entry; the link and its target stay
  EXPECT_TRUE(fs::is_symlink(cache.entry_path(kKey)));
  EXPECT_TRUE(fs::exists(elsewhere.entry_path(kKey)));
}

TEST(CacheTrust, GroupWritableEntryIsIgnored) {
  TempDir dir;
  DiskCache cache(dir.path());
  ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
  ASSERT_EQ(::chmod(cache.entry_path(kKey).c_str(), 0666), 0);
  std::string err = capture_err([&] { EXPECT_FALSE(cache.load(kKey, kDesc).has_value()); });
  EXPECT_EQ(err, "kiln: warning: ignoring cache entry " + cache.entry_path(kKey) +
                     ": it is writable by group or others\n");
  EXPECT_EQ(cache.stats().refused, 1u);
}

TEST(CacheTrust, EntryOrDirectoryOfAnotherUserIsRefused) {
  if (!is_root()) GTEST_SKIP() << "needs root to give a file to another user (uid 65534)";
  TempDir dir;
  DiskCache cache(dir.path() + "/cache");
  ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
  ASSERT_EQ(::chown(cache.entry_path(kKey).c_str(), 65534, 65534), 0);
  std::string err = capture_err([&] { EXPECT_FALSE(cache.load(kKey, kDesc).has_value()); });
  EXPECT_EQ(err, "kiln: warning: ignoring cache entry " + cache.entry_path(kKey) +
                     ": it is not owned by you\n");
  EXPECT_EQ(cache.stats().refused, 1u);
  // Trimming leaves another user's file alone.
  EXPECT_EQ(cache.trim(0), 0u);
  EXPECT_TRUE(fs::exists(cache.entry_path(kKey)));
  // A directory of another user is refused as a whole.
  ASSERT_EQ(::chown((dir.path() + "/cache").c_str(), 65534, 65534), 0);
  DiskCache theirs(dir.path() + "/cache");
  err = capture_err([&] { EXPECT_FALSE(theirs.store(CacheKey{3, 4}, kDesc, "x")); });
  EXPECT_EQ(err, refused_dir_warning("kernel cache", dir.path() + "/cache", dir.path() + "/cache",
                                     "not owned by you"));
}

TEST(CacheTrust, HugeJunkEntryIsRejectedWithoutBeingRead) {
  TempDir dir;
  DiskCache cache(dir.path());
  ASSERT_TRUE(cache.store(kKey, kDesc, "payload"));
  std::string good = read_all(cache.entry_path(kKey));
  struct Case {
    const char* name;
    std::string header;  // written at offset 0 of a 2 GiB sparse file
    std::string why;
  };
  std::string huge_payload = good.substr(0, 64);
  uint64_t two_gib = uint64_t(2) << 30;
  for (int i = 0; i < 8; ++i) huge_payload[32 + i] = static_cast<char>((two_gib - 64) >> (8 * i));
  std::string huge_desc = good.substr(0, 64);
  huge_desc[12] = 0, huge_desc[13] = 0, huge_desc[14] = 0, huge_desc[15] = 0x02;  // 32 MiB
  std::string within_limits = good.substr(0, 64);  // sizes fine: the file is too long
  std::vector<Case> cases = {{"zeros", "", "bad magic"},
                             {"payload size over 1 GiB", huge_payload, "bad size field"},
                             {"description over 16 MiB", huge_desc, "bad size field"},
                             {"valid header", within_limits, "trailing bytes"}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string entry = cache.entry_path(kKey);
    int fd = ::open(entry.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, c.header.data(), c.header.size()), ssize_t(c.header.size()));
    ASSERT_EQ(::ftruncate(fd, off_t(two_gib)), 0);
    ::close(fd);
    long long before = bytes_read();
    auto start = std::chrono::steady_clock::now();
    std::string err = capture_err([&] { EXPECT_FALSE(cache.load(kKey, kDesc).has_value()); });
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(err,
              "kiln: warning: cache entry " + entry + " is corrupt (" + c.why + "); rebuilding\n");
    if (before >= 0) {
      EXPECT_LT(bytes_read() - before, 1 << 20) << "read the junk";
    }
    EXPECT_LT(seconds, 5.0);
  }
}

// Item 10: an entry carrying other code under a key (x*3's object under
// x*2's key, header and checksums made consistent) is refused when someone
// else could have written it; the user's own such file passes the key and
// checksums (they detect damage, not forgery) but its object's entry is
// named by x*3's key, so it does not link and is rebuilt.
TEST(CacheTrust, ForgedEntryIsRefusedUnlessTheUsersOwn) {
  TempDir dir;
  ScopedEnv on("KILN_CACHE", "on");
  auto run = [&](const std::string& cache_dir, const char* source) {
    ScopedEnv where("KILN_CACHE_DIR", cache_dir.c_str());
    runtime::KernelCache::global().clear();
    Function f = load_script(source, "", {bind_tensor("x", DType::F32, {4})});
    CompiledFunction c = compile(f);
    Tensor y = c({Tensor::arange(0, 4, 1, DType::F32)})[0];
    std::vector<double> v;
    for (int64_t i = 0; i < 4; ++i) v.push_back(y.get(std::vector<int64_t>{i}));
    return v;
  };
  const char* times2 = "def f(x: Tensor) -> Tensor:\n    return x * 2\n";
  const char* times3 = "def f(x: Tensor) -> Tensor:\n    return x * 3\n";
  std::string a = dir.path() + "/a", b = dir.path() + "/b";
  EXPECT_EQ(run(a, times2), (std::vector<double>{0, 2, 4, 6}));
  EXPECT_EQ(run(b, times3), (std::vector<double>{0, 3, 6, 9}));
  auto only = [](const std::string& d) {
    std::string found;
    for (const auto& e : fs::directory_iterator(d)) {
      if (e.path().extension() == ".kc") found = e.path().string();
    }
    return found;
  };
  std::string entry2 = only(a), entry3 = only(b);
  ASSERT_FALSE(entry2.empty());
  ASSERT_FALSE(entry3.empty());
  std::string forged = read_all(entry3), real = read_all(entry2);
  forged.replace(16, 16, real.substr(16, 16));  // x*2's key
  uint32_t desc_size = 0;
  for (int i = 0; i < 4; ++i)
    desc_size |= uint32_t(static_cast<unsigned char>(forged[12 + i])) << (8 * i);
  uint64_t sum = runtime::checksum64(forged.substr(0, 48) + forged.substr(64, desc_size));
  for (int i = 0; i < 8; ++i) forged[48 + i] = static_cast<char>(sum >> (8 * i));
  write_all(entry2, forged);
  ASSERT_EQ(::chmod(entry2.c_str(), 0600), 0);
  // The user's own file is inside the trust model, but an object's entry is
  // named by its own key (api/compile_backend.cpp), so x*3's object does not
  // link under x*2's key: reported as corrupt and rebuilt.
  std::string err;
  std::vector<double> got;
  err = capture_err([&] { got = run(a, times2); });
  EXPECT_EQ(got, (std::vector<double>{0, 2, 4, 6}));
  EXPECT_TRUE(contains(err, "cache entry " + entry2 + " is corrupt")) << err;
  // Writable by others: refused before it is read, rebuilt, right again.
  write_all(entry2, forged);
  ASSERT_EQ(::chmod(entry2.c_str(), 0666), 0);
  err = capture_err([&] { got = run(a, times2); });
  EXPECT_EQ(got, (std::vector<double>{0, 2, 4, 6}));
  EXPECT_TRUE(
      contains(err, "ignoring cache entry " + entry2 + ": it is writable by group or others"))
      << err;
  if (!is_root()) return;  // the other-user half needs chown
  write_all(entry2, forged);
  ASSERT_EQ(::chmod(entry2.c_str(), 0600), 0);
  ASSERT_EQ(::chown(entry2.c_str(), 65534, 65534), 0);
  err = capture_err([&] { got = run(a, times2); });
  EXPECT_EQ(got, (std::vector<double>{0, 2, 4, 6}));
  EXPECT_TRUE(contains(err, "ignoring cache entry " + entry2 + ": it is not owned by you")) << err;
}

TEST(CacheTrust, UntrustedCompileCacheFallsBackWithTheRightResult) {
  TempDir dir;
  std::string path = dir.path() + "/cache";
  ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(path.c_str(), 0777), 0);
  ScopedEnv on("KILN_CACHE", "on");
  ScopedEnv where("KILN_CACHE_DIR", path.c_str());
  runtime::KernelCache::global().clear();
  Function f = load_script("def f(x: Tensor) -> Tensor:\n    return x * 2 + 1\n", "",
                           {bind_tensor("x", DType::F32, {3})});
  std::vector<Tensor> out;
  std::string err = capture_err([&] { out = compile(f)({Tensor::arange(0, 3, 1, DType::F32)}); });
  EXPECT_EQ(out[0].get(std::vector<int64_t>{2}), 5.0);
  EXPECT_TRUE(contains(err, "kiln: warning: not using the kernel cache in " + path + ": " + path +
                                " is writable by group or others"))
      << err;
  EXPECT_EQ(std::distance(fs::directory_iterator(path), fs::directory_iterator()), 0);
}

// ------------------------------------------------------------------ environment numbers

TEST(EnvNumber, CacheLimitNeverWraps) {
  ScopedEnv none("KILN_CACHE_MAX_MB", nullptr);
  EXPECT_EQ(DiskCache::max_bytes_from_environment(), uint64_t(512) << 20);
  {
    // 2^44 MiB is 2^64 bytes: it used to wrap to 0 and evict everything.
    ScopedEnv big("KILN_CACHE_MAX_MB", "17592186044416");
    uint64_t got = 0;
    std::string err = capture_err([&] { got = DiskCache::max_bytes_from_environment(); });
    EXPECT_EQ(got, uint64_t(512) << 20);
    EXPECT_EQ(err,
              "kiln: warning: ignoring KILN_CACHE_MAX_MB=17592186044416: expected a whole number "
              "from 1 to 17592186044415; using 512\n");
  }
  {
    ScopedEnv top("KILN_CACHE_MAX_MB", "17592186044415");
    EXPECT_EQ(DiskCache::max_bytes_from_environment(), ((uint64_t(1) << 44) - 1) << 20);
  }
  for (const char* bad : {"0", "-1", "12abc", " 5", "99999999999999999999999", "1e3"}) {
    SCOPED_TRACE(bad);
    ScopedEnv v("KILN_CACHE_MAX_MB", bad);
    uint64_t got = 0;
    std::string err = capture_err([&] { got = DiskCache::max_bytes_from_environment(); });
    EXPECT_EQ(got, uint64_t(512) << 20);
    EXPECT_TRUE(contains(err, "ignoring KILN_CACHE_MAX_MB=")) << err;
    // Once per value.
    EXPECT_EQ(capture_err([&] { DiskCache::max_bytes_from_environment(); }), "");
  }
}

TEST(EnvNumber, RangeAndEscaping) {
  const char* name = "KILN_TEST_ENV_NUMBER";
  uint64_t max = uint64_t(1) << 20;
  {
    ScopedEnv v(name, "1048576");
    EXPECT_EQ(runtime::env_uint(name, 8, 1, max), max);
  }
  {
    ScopedEnv v(name, "1048577");
    std::string err = capture_err([&] { EXPECT_EQ(runtime::env_uint(name, 8, 1, max), 8u); });
    EXPECT_TRUE(contains(err, "from 1 to 1048576; using 8")) << err;
  }
  {
    ScopedEnv v(name, "18446744073709551616");  // 2^64
    capture_err([&] { EXPECT_EQ(runtime::env_uint(name, 8, 1, max), 8u); });
  }
  {
    ScopedEnv v(name, "\x1b[2J");
    std::string err = capture_err([&] { EXPECT_EQ(runtime::env_uint(name, 8, 1, max), 8u); });
    EXPECT_TRUE(contains(err, "=\\x1b[2J:")) << err;
  }
  {
    ScopedEnv v(name, "");
    EXPECT_EQ(capture_err([&] { EXPECT_EQ(runtime::env_uint(name, 8, 1, max), 8u); }), "");
  }
}

}  // namespace
}  // namespace kiln::test
