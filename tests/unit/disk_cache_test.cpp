// The persistent object cache: runtime::DiskCache on raw bytes (round trip,
// every kind of damage read as a miss with one warning, atomic concurrent
// stores, the environment's directory rules, an unusable directory), and
// kiln::compile through it (a disk hit after the memory cache is cleared,
// new entries for changed flags, damaged entries rebuilt and rewritten, two
// processes writing one entry at once, KILN_CACHE=off, an unwritable
// directory). Each test uses its own temporary cache directory.
#include <fcntl.h>
#include <link.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/compile_internal.h"
#include "ir/loop/visitor.h"
#include "kiln/kiln.h"
#include "passes/lower/lower_graph.h"
#include "runtime/disk_cache.h"
#include "runtime/kernel_cache.h"

extern char** environ;

namespace kiln::test {
namespace {

namespace fs = std::filesystem;
using runtime::CacheKey;
using runtime::DiskCache;

// A fresh directory, removed (with what the test left) on destruction.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "kiln-disk-cache-XXXXXX").string();
    KILN_INTERNAL_CHECK(::mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void write_all(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

// Files in `dir` whose name ends with `suffix` (".kc" entries) or holds it (".tmp.").
int count_files(const std::string& dir, const std::string& part) {
  int n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().filename().string().find(part) != std::string::npos) ++n;
  }
  return n;
}

std::string only_entry(const std::string& dir) {
  std::string found;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".kc") {
      EXPECT_TRUE(found.empty()) << "more than one entry in " << dir;
      found = e.path().string();
    }
  }
  return found;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// ------------------------------------------------------------------ DiskCache on bytes

const CacheKey kKey{0x0123456789abcdefull, 0xfedcba9876543210ull};
const std::string kDesc = "test target; cpu imaginary";

std::string payload_of(size_t n) {
  std::string p(n, '\0');
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<char>((i * 131 + 7) & 0xff);
  return p;
}

TEST(DiskCacheBytes, RoundTripWritesOneFileAtomically) {
  TempDir dir;
  DiskCache cache(dir.path() + "/sub/dir");  // created on the first store
  EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
  std::string payload = payload_of(10007);
  ASSERT_TRUE(cache.store(kKey, kDesc, payload));
  std::optional<std::string> got = cache.load(kKey, kDesc);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, payload);
  EXPECT_EQ(cache.entry_path(kKey), dir.path() + "/sub/dir/" + kKey.str() + ".kc");
  EXPECT_EQ(count_files(dir.path() + "/sub/dir", ".kc"), 1);
  EXPECT_EQ(count_files(dir.path() + "/sub/dir", ".tmp."), 0);
  runtime::DiskCacheStats s = cache.stats();
  EXPECT_EQ(s.hits, 1u);
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.writes, 1u);
  EXPECT_EQ(s.corrupt, 0u);
  // An empty payload is an entry too, and a store replaces what was there.
  ASSERT_TRUE(cache.store(kKey, kDesc, ""));
  EXPECT_EQ(cache.load(kKey, kDesc).value_or("absent"), "");
}

TEST(DiskCacheBytes, ChecksumSeesEveryByte) {
  std::string p = payload_of(100);
  uint64_t base = runtime::checksum64(p);
  for (size_t i = 0; i < p.size(); ++i) {
    std::string q = p;
    q[i] = static_cast<char>(q[i] ^ 1);
    EXPECT_NE(runtime::checksum64(q), base) << "byte " << i;
  }
  EXPECT_NE(runtime::checksum64(p + '\0'), base);  // length counts
}

// Each damage is read as a miss with its reason on stderr, once.
struct Damage {
  const char* name;
  std::function<void(std::string&)> apply;
  const char* why;
};

TEST(DiskCacheBytes, DamagedEntriesAreMissesWithAWarning) {
  std::string payload = payload_of(4096);
  std::vector<Damage> damages = {
      {"flipped payload byte", [](std::string& f) { f[f.size() - 100] ^= 0x20; },
       "payload checksum mismatch"},
      {"truncated payload", [](std::string& f) { f.resize(f.size() - 1); }, "truncated payload"},
      {"truncated header", [](std::string& f) { f.resize(20); }, "truncated header"},
      {"empty file", [](std::string& f) { f.clear(); }, "truncated header"},
      {"wrong magic", [](std::string& f) { f[0] = 'X'; }, "bad magic"},
      {"future version", [](std::string& f) { f[8] = 99; }, "format version 99, expected 1"},
      {"trailing bytes", [](std::string& f) { f += "junk"; }, "trailing bytes"},
      {"flipped size field", [](std::string& f) { f[33] ^= 1; }, "truncated payload"},
      {"flipped description", [](std::string& f) { f[64] ^= 1; }, "header checksum mismatch"},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    TempDir dir;
    DiskCache cache(dir.path());
    ASSERT_TRUE(cache.store(kKey, kDesc, payload));
    std::string file = read_all(cache.entry_path(kKey));
    d.apply(file);
    write_all(cache.entry_path(kKey), file);
    ::testing::internal::CaptureStderr();
    EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(err, "kiln: warning: cache entry " + cache.entry_path(kKey) + " is corrupt (" +
                       d.why + "); rebuilding\n");
    EXPECT_EQ(cache.stats().corrupt, 1u);
    // The caller rebuilds and overwrites: the entry is whole again.
    ASSERT_TRUE(cache.store(kKey, kDesc, payload));
    EXPECT_EQ(cache.load(kKey, kDesc).value_or(""), payload);
  }
}

TEST(DiskCacheBytes, EntryOfAnotherKeyOrTargetIsRejected) {
  TempDir dir;
  DiskCache cache(dir.path());
  CacheKey other{kKey.hi, kKey.lo + 1};
  ASSERT_TRUE(cache.store(kKey, kDesc, "abc"));
  fs::copy_file(cache.entry_path(kKey), cache.entry_path(other));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(other, kDesc).has_value());
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(), "key " + kKey.str()));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.load(kKey, "another cpu").has_value());
  EXPECT_TRUE(contains(::testing::internal::GetCapturedStderr(),
                       "(made for a different compiler or CPU); rebuilding"));
  EXPECT_EQ(cache.stats().corrupt, 2u);
}

TEST(DiskCacheBytes, ConcurrentStoresLeaveOneWholeEntry) {
  TempDir dir;
  DiskCache cache(dir.path());
  std::string payload = payload_of(1 << 16);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        EXPECT_TRUE(cache.store(kKey, kDesc, payload));
        std::optional<std::string> got = cache.load(kKey, kDesc);
        EXPECT_TRUE(got && *got == payload);  // never half an entry
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(count_files(dir.path(), ".kc"), 1);
  EXPECT_EQ(count_files(dir.path(), ".tmp."), 0);
  EXPECT_EQ(cache.stats().corrupt, 0u);
}

TEST(DiskCacheBytes, UnusableDirectoryWarnsOnceAndNeverThrows) {
  TempDir dir;
  write_all(dir.path() + "/file", "not a directory");
  DiskCache cache(dir.path() + "/file/cache");  // cannot be created, even by root
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(cache.store(kKey, kDesc, "abc"));
  EXPECT_FALSE(cache.store(kKey, kDesc, "abc"));
  EXPECT_FALSE(cache.load(kKey, kDesc).has_value());
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(
      err, "kiln: warning: cannot write the kernel cache in " + dir.path() + "/file/cache"))
      << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "one line: " << err;
  EXPECT_EQ(cache.stats().write_failures, 2u);
}

// Sets (or unsets, for nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      ::setenv(name_, old_.c_str(), 1);
    else
      ::unsetenv(name_);
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

TEST(DiskCacheBytes, TrimDeletesLeastRecentlyUsedAndStaleTemporaries) {
  TempDir dir;
  DiskCache cache(dir.path());
  std::string payload = payload_of(1000);
  auto now = fs::file_time_type::clock::now();
  std::vector<CacheKey> keys;
  for (uint64_t i = 0; i < 10; ++i) {
    keys.push_back(CacheKey{i, 42});
    ASSERT_TRUE(cache.store(keys.back(), kDesc, payload));
    // Entry i was last used i minutes after entry 0.
    fs::last_write_time(cache.entry_path(keys.back()), now - std::chrono::minutes(60 - i));
  }
  // A hit makes entry 0 the most recently used.
  ASSERT_TRUE(cache.load(keys[0], kDesc).has_value());
  write_all(dir.path() + "/.stale.tmp.1.2.3", "x");
  fs::last_write_time(dir.path() + "/.stale.tmp.1.2.3", now - std::chrono::hours(2));
  write_all(dir.path() + "/.fresh.tmp.1.2.3", "x");
  uint64_t entry_size = fs::file_size(cache.entry_path(keys[0]));
  EXPECT_EQ(cache.trim(entry_size * 100), 0u);  // under the limit: nothing goes
  EXPECT_FALSE(fs::exists(dir.path() + "/.stale.tmp.1.2.3"));
  EXPECT_TRUE(fs::exists(dir.path() + "/.fresh.tmp.1.2.3"));
  // Down to 90% of 5 entries: 4 stay, the most recently used ones.
  EXPECT_EQ(cache.trim(entry_size * 5), 6u);
  for (int i = 0; i < 10; ++i) {
    bool kept = i == 0 || i >= 7;
    EXPECT_EQ(fs::exists(cache.entry_path(keys[i])), kept) << "entry " << i;
  }
  EXPECT_EQ(cache.stats().evicted, 6u);
  ScopedEnv none("KILN_CACHE_MAX_MB", nullptr);
  EXPECT_EQ(DiskCache::max_bytes_from_environment(), uint64_t(512) << 20);
  ScopedEnv mb("KILN_CACHE_MAX_MB", "3");
  EXPECT_EQ(DiskCache::max_bytes_from_environment(), uint64_t(3) << 20);
}

TEST(DiskCacheBytes, DirectoryFromEnvironment) {
  ScopedEnv cache("KILN_CACHE", nullptr), dir("KILN_CACHE_DIR", nullptr),
      xdg("XDG_CACHE_HOME", nullptr), home("HOME", "/home/someone");
  EXPECT_EQ(DiskCache::directory_from_environment(), "/home/someone/.cache/kiln");
  {
    ScopedEnv x("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DiskCache::directory_from_environment(), "/xdg/kiln");
    ScopedEnv relative("XDG_CACHE_HOME", "relative");  // invalid per XDG: ignored
    EXPECT_EQ(DiskCache::directory_from_environment(), "/home/someone/.cache/kiln");
    ScopedEnv d("KILN_CACHE_DIR", "/explicit");
    EXPECT_EQ(DiskCache::directory_from_environment(), "/explicit");
    for (const char* off : {"off", "OFF", "0", "false", "no"}) {
      ScopedEnv o("KILN_CACHE", off);
      EXPECT_EQ(DiskCache::directory_from_environment(), "") << off;
      EXPECT_FALSE(DiskCache().enabled()) << off;
    }
    ScopedEnv on("KILN_CACHE", "on");
    EXPECT_EQ(DiskCache::directory_from_environment(), "/explicit");
  }
  TempDir t;
  ScopedEnv d("KILN_CACHE_DIR", t.path().c_str());
  ScopedEnv o("KILN_CACHE", "off");
  DiskCache follows;  // reads the environment at each use
  EXPECT_FALSE(follows.store(kKey, kDesc, "abc"));
  EXPECT_EQ(count_files(t.path(), ""), 0);
}

// ------------------------------------------------------------------ compile() through it

// y = sigmoid(x * 0.75 - 0.5) * tanh(x) + 0.5 * x over f32[n].
Function chain(int64_t n) {
  Builder b("chain");
  Var x = b.input("x", DType::F32, {n});
  return b.build({sigmoid(x * 0.75 - 0.5) * tanh(x) + 0.5 * x});
}

constexpr int64_t kN = 1027;  // not a multiple of any vector width: the tail runs too

// Runs `f` on a fixed input and checks every element against double math.
void expect_chain_values(const CompiledFunction& f, int64_t n = kN) {
  Tensor x = Tensor::randn({n}, /*seed=*/7);
  std::vector<Tensor> out = f({x});
  ASSERT_EQ(out.size(), 1u);
  const float* xp = x.data<float>();
  const float* yp = out[0].data<float>();
  for (int64_t i = 0; i < n; ++i) {
    double v = xp[i];
    double want = 1.0 / (1.0 + std::exp(-(v * 0.75 - 0.5))) * std::tanh(v) + 0.5 * v;
    ASSERT_NEAR(yp[i], want, 1e-5 + 1e-5 * std::fabs(want)) << "element " << i;
  }
}

// Each test: its own KILN_CACHE_DIR, the cache on, the memory cache empty.
class CompileDiskCache : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("KILN_CACHE_DIR", dir_.path().c_str(), 1);
    ::unsetenv("KILN_CACHE");
    runtime::KernelCache::global().clear();
    DiskCache::global().reset_stats();
  }
  void TearDown() override { ::unsetenv("KILN_CACHE_DIR"); }

  // Compiles with the memory cache emptied first, so the disk is asked.
  CompiledFunction compile_fresh(const Function& f, CompileOptions o = {}) {
    runtime::KernelCache::global().clear();
    return compile(f, o);
  }
  runtime::DiskCacheStats disk() const { return DiskCache::global().stats(); }

  TempDir dir_;
};

TEST_F(CompileDiskCache, SecondCompileLoadsTheObjectFromDisk) {
  Function f = chain(kN);
  CompiledFunction a = compile_fresh(f);
  expect_chain_values(a);
  EXPECT_EQ(disk().writes, 1u);
  EXPECT_EQ(disk().hits, 0u);
  EXPECT_EQ(count_files(dir_.path(), ".kc"), 1);
  CompiledFunction b = compile_fresh(f);
  EXPECT_EQ(disk().hits, 1u);
  EXPECT_EQ(disk().writes, 1u);  // a hit writes nothing
  expect_chain_values(b);
  expect_chain_values(a);  // both modules live side by side
  // A memory hit does not read the disk.
  CompiledFunction c = compile(f);
  EXPECT_EQ(disk().hits, 1u);
  expect_chain_values(c);
  // use_cache=false skips the memory cache, not the disk.
  CompileOptions no_memory;
  no_memory.use_cache = false;
  expect_chain_values(compile(f, no_memory));
  EXPECT_EQ(disk().hits, 2u);
}

TEST_F(CompileDiskCache, ChangedFlagsMakeNewEntries) {
  Function f = chain(kN);
  compile_fresh(f);
  CompileOptions o2;
  o2.opt_level = 2;
  expect_chain_values(compile_fresh(f, o2));
  EXPECT_EQ(count_files(dir_.path(), ".kc"), 2);
  CompileOptions fast;
  fast.fast_math = true;
  expect_chain_values(compile_fresh(f, fast));
  EXPECT_EQ(count_files(dir_.path(), ".kc"), 3);
  expect_chain_values(compile_fresh(chain(kN + 1)), kN + 1);  // other kernels
  EXPECT_EQ(count_files(dir_.path(), ".kc"), 4);
  EXPECT_EQ(disk().hits, 0u);
  EXPECT_EQ(disk().writes, 4u);
  // Each one is found again.
  compile_fresh(f, o2);
  compile_fresh(f, fast);
  EXPECT_EQ(disk().hits, 2u);
}

// The build identity in every key covers each loaded Kiln library, not only
// the one holding the key code: the lowering and the code generator are
// libraries of their own, and rebuilding one of them leaves libkiln.so
// byte-identical (the disk cache then served the previous build's kernels).
TEST(ModuleKey, BuildIdentityCoversEveryKilnLibrary) {
  std::vector<std::string> libs;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        std::string file = info->dlpi_name ? info->dlpi_name : "";
        std::string base = file.substr(file.rfind('/') + 1);
        auto* out = static_cast<std::vector<std::string>*>(data);
        if (base.rfind("libkiln", 0) == 0) out->push_back(base);
        return 0;
      },
      &libs);
  const std::string id = compile_detail::build_identity();
  ASSERT_EQ(id.rfind("build-id ", 0), 0u) << id;
  size_t parts = 0;
  for (size_t at = 0; (at = id.find(' ', at)) != std::string::npos; ++at) ++parts;
  if (libs.empty()) {
    EXPECT_EQ(parts, 1u) << id;  // a static build: one binary
  } else {
    // The codegen and passes libraries are among them whenever Kiln is shared.
    EXPECT_NE(std::find(libs.begin(), libs.end(), "libkiln_codegen.so"), libs.end());
    EXPECT_EQ(parts, libs.size()) << id;
  }
  EXPECT_EQ(compile_detail::build_identity(), id);  // computed once
}

TEST(ModuleKey, CoversFlagsKernelsAndBufferIdentity) {
  // The same function lowered twice: one key; any flag or size: another.
  std::vector<loop::Kernel> k1 = passes::lower_graph(chain(kN).graph());
  std::vector<loop::Kernel> k2 = passes::lower_graph(chain(kN).graph());
  std::vector<loop::Kernel> k3 = passes::lower_graph(chain(kN + 1).graph());
  codegen::CodegenOptions o;
  EXPECT_EQ(compile_detail::module_key(k1, o), compile_detail::module_key(k2, o));
  codegen::CodegenOptions o2 = o, fm = o, cpu = o;
  o2.opt_level = 2;
  fm.fast_math = true;
  cpu.cpu = "x86-64";
  EXPECT_NE(compile_detail::module_key(k1, o), compile_detail::module_key(k1, o2));
  EXPECT_NE(compile_detail::module_key(k1, o), compile_detail::module_key(k1, fm));
  EXPECT_NE(compile_detail::module_key(k1, o), compile_detail::module_key(k1, cpu));
  EXPECT_NE(compile_detail::module_key(k1, o), compile_detail::module_key(k3, o));

  // Two buffers that share a name are still two buffers: copying one way or
  // the other prints the same text but is different code.
  using namespace loop;
  Buf p = make_buf("a", DType::F32), q = make_buf("a", DType::F32);
  Expr i = loop::Var::make(i64_t(), "i");
  auto copy = [&](Buf from, Buf to) {
    return Kernel{"copy",
                  {p, q},
                  {},
                  For::make(i, make_int(0), make_int(4), ForKind::Serial,
                            Store::make(to, i, Load::make(from, i)))};
  };
  std::vector<Kernel> pq = {copy(p, q)}, qp = {copy(q, p)};
  ASSERT_EQ(to_string(pq[0]), to_string(qp[0]));
  EXPECT_NE(compile_detail::canonical_kernels(pq), compile_detail::canonical_kernels(qp));
  EXPECT_NE(compile_detail::module_key(pq, o), compile_detail::module_key(qp, o));
  // A float differing in its last bit changes the key.
  auto scale = [&](double c) {
    return std::vector<Kernel>{Kernel{
        "scale",
        {p, q},
        {},
        For::make(i, make_int(0), make_int(4), ForKind::Serial,
                  Store::make(q, i, Load::make(p, i) * FloatImm::make({DType::F32, 1}, c)))}};
  };
  EXPECT_NE(compile_detail::module_key(scale(0.1), o),
            compile_detail::module_key(scale(std::nextafter(0.1, 1.0)), o));
}

// Damages the one entry, recompiles: a warning naming it, a rebuild with
// correct values, and a valid entry in its place (the next compile hits).
void check_rebuilds(const std::string& dir, const std::function<void(std::string&)>& damage,
                    const std::string& why, const std::function<CompiledFunction()>& compile_fresh,
                    const std::function<runtime::DiskCacheStats()>& disk) {
  compile_fresh();
  std::string entry = only_entry(dir);
  ASSERT_FALSE(entry.empty());
  std::string good = read_all(entry);
  std::string bad = good;
  damage(bad);
  write_all(entry, bad);
  runtime::DiskCacheStats before = disk();
  ::testing::internal::CaptureStderr();
  CompiledFunction f = compile_fresh();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "kiln: warning: cache entry " + entry + " is corrupt (" + why + "); rebuilding\n");
  expect_chain_values(f);
  EXPECT_EQ(disk().corrupt, before.corrupt + 1);
  EXPECT_EQ(disk().writes, before.writes + 1);
  // Rewritten: the next compile loads it without a warning. (Not compared
  // byte for byte with `good`: the emitter orders closure fields by buffer
  // address, so two builds of one kernel may differ in layout.)
  EXPECT_TRUE(read_all(entry) != bad);
  ::testing::internal::CaptureStderr();
  expect_chain_values(compile_fresh());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(disk().hits, before.hits + 1);
}

TEST_F(CompileDiskCache, CorruptEntriesAreRebuilt) {
  Function f = chain(kN);
  auto fresh = [&] { return compile_fresh(f); };
  auto stats = [&] { return disk(); };
  {
    SCOPED_TRACE("flipped payload byte");
    check_rebuilds(
        dir_.path(), [](std::string& s) { s[s.size() / 2 + 100] ^= 0x40; },
        "payload checksum mismatch", fresh, stats);
  }
  {
    SCOPED_TRACE("truncated");
    check_rebuilds(
        dir_.path(), [](std::string& s) { s.resize(s.size() * 2 / 3); }, "truncated payload", fresh,
        stats);
  }
  {
    SCOPED_TRACE("wrong header");
    check_rebuilds(
        dir_.path(), [](std::string& s) { s.replace(0, 4, "ELF!"); }, "bad magic", fresh, stats);
  }
}

TEST_F(CompileDiskCache, OffWritesNothing) {
  Function f = chain(kN);
  {
    ScopedEnv off("KILN_CACHE", "off");
    expect_chain_values(compile_fresh(f));
    expect_chain_values(compile_fresh(f));
  }
  CompileOptions no_disk;
  no_disk.disk_cache = false;
  expect_chain_values(compile_fresh(f, no_disk));
  EXPECT_EQ(count_files(dir_.path(), ""), 0);
  EXPECT_EQ(disk().writes, 0u);
  EXPECT_EQ(disk().hits + disk().misses, 0u);  // not even looked at
}

TEST_F(CompileDiskCache, UnwritableDirectoryStillCompiles) {
  write_all(dir_.path() + "/file", "x");
  std::string bad = dir_.path() + "/file/cache";
  ScopedEnv d("KILN_CACHE_DIR", bad.c_str());
  ::testing::internal::CaptureStderr();
  expect_chain_values(compile_fresh(chain(kN)));
  expect_chain_values(compile_fresh(chain(kN + 3)), kN + 3);
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(contains(err, "cannot write the kernel cache in " + bad)) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << "warned once: " << err;
  EXPECT_EQ(disk().writes, 0u);
}

// --- two processes writing one entry at once

// The child half: run by TwoProcessesWriteOneEntry through this very
// executable (DISABLED_ keeps it out of normal runs). Waits for the parent's
// go file so both children compile at the same moment.
TEST(DiskCacheChild, DISABLED_CompileChain) {
  const char* go = std::getenv("KILN_TEST_GO_FILE");
  ASSERT_NE(go, nullptr);
  for (int i = 0; i < 20000 && !fs::exists(go); ++i) ::usleep(100);
  runtime::KernelCache::global().clear();
  expect_chain_values(compile(chain(kN)));
  EXPECT_EQ(DiskCache::global().stats().hits + DiskCache::global().stats().writes, 1u);
}

pid_t spawn_child(const std::string& go_file, const std::string& dir) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    if (kv.rfind("KILN_CACHE", 0) != 0) env.push_back(kv);
  }
  env.push_back("KILN_CACHE_DIR=" + dir);
  env.push_back("KILN_TEST_GO_FILE=" + go_file);
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string self = fs::read_symlink("/proc/self/exe").string();
  std::string a1 = "--gtest_also_run_disabled_tests",
              a2 = "--gtest_filter=DiskCacheChild.DISABLED_CompileChain";
  char* argv[] = {self.data(), a1.data(), a2.data(), nullptr};
  pid_t pid = -1;
  // Quiet children: their gtest output would interleave with ours.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

TEST_F(CompileDiskCache, TwoProcessesWriteOneEntry) {
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    TempDir cache;
    std::string go = cache.path() + "-go";
    pid_t a = spawn_child(go, cache.path());
    pid_t b = spawn_child(go, cache.path());
    ASSERT_GT(a, 0);
    ASSERT_GT(b, 0);
    ::usleep(300000);  // both started and waiting (a late one only hits the entry)
    write_all(go, "go");
    for (pid_t p : {a, b}) {
      int status = 0;
      ASSERT_EQ(::waitpid(p, &status, 0), p);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child failed: " << status;
    }
    fs::remove(go);
    EXPECT_EQ(count_files(cache.path(), ".kc"), 1);
    EXPECT_EQ(count_files(cache.path(), ".tmp."), 0);
    EXPECT_EQ(count_files(cache.path(), ""), 1);
    // The entry is valid: this process loads it without a warning.
    ScopedEnv d("KILN_CACHE_DIR", cache.path().c_str());
    DiskCache::global().reset_stats();
    ::testing::internal::CaptureStderr();
    expect_chain_values(compile_fresh(chain(kN)));
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(disk().hits, 1u);
  }
}

}  // namespace
}  // namespace kiln::test
