// DiskCache: entry files with a self-checking header, written through a
// temporary file and rename(2). POSIX file calls are used directly (not
// iostreams) so every failure has an errno to report and the write can be
// synced before the rename. See disk_cache.h for the format and the rules.
#include "runtime/disk_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'A', 'C', 'H'};
constexpr size_t kHeaderSize = 64;
// The header's checksum covers bytes [0, kHeaderChecked) and the description.
constexpr size_t kHeaderChecked = 48;
// No entry is this large; a bigger file is damage, not something to read.
constexpr uint64_t kMaxEntryBytes = uint64_t(1) << 30;

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Entries are written little-endian whatever the host.
void put_u64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// The header of an entry, with the checksum over it and the description.
std::string make_header(const CacheKey& key, std::string_view description,
                        std::string_view payload) {
  std::string h(kHeaderSize, '\0');
  std::memcpy(h.data(), kMagic, sizeof kMagic);
  put_u32(h.data() + 8, kDiskCacheFormatVersion);
  put_u32(h.data() + 12, static_cast<uint32_t>(description.size()));
  put_u64(h.data() + 16, key.hi);
  put_u64(h.data() + 24, key.lo);
  put_u64(h.data() + 32, payload.size());
  put_u64(h.data() + 40, checksum64(payload));
  std::string checked = h.substr(0, kHeaderChecked);
  checked += description;
  put_u64(h.data() + 48, checksum64(checked));
  return h;
}

// Why `file` is not a valid entry for (key, description); empty when it is.
std::string validate(const std::string& file, const CacheKey& key, std::string_view description) {
  if (file.size() < kHeaderSize) return "truncated header";
  if (std::memcmp(file.data(), kMagic, sizeof kMagic) != 0) return "bad magic";
  uint32_t version = get_u32(file.data() + 8);
  if (version != kDiskCacheFormatVersion) {
    return "format version " + std::to_string(version) + ", expected " +
           std::to_string(kDiskCacheFormatVersion);
  }
  uint64_t desc_size = get_u32(file.data() + 12);
  CacheKey stored{get_u64(file.data() + 16), get_u64(file.data() + 24)};
  if (!(stored == key)) return "key " + stored.str() + " in entry " + key.str();
  uint64_t payload_size = get_u64(file.data() + 32);
  if (payload_size > kMaxEntryBytes || desc_size > kMaxEntryBytes) return "bad size field";
  uint64_t want = kHeaderSize + desc_size + payload_size;
  if (file.size() < want) return "truncated payload";
  if (file.size() > want) return "trailing bytes";
  std::string checked = file.substr(0, kHeaderChecked);
  checked.append(file, kHeaderSize, desc_size);
  if (checksum64(checked) != get_u64(file.data() + 48)) return "header checksum mismatch";
  if (std::string_view(file).substr(kHeaderSize, desc_size) != description) {
    return "made for a different compiler or CPU";
  }
  std::string_view payload = std::string_view(file).substr(kHeaderSize + desc_size);
  if (checksum64(payload) != get_u64(file.data() + 40)) return "payload checksum mismatch";
  return "";
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(size_t(n));
  }
  return true;
}

// Reads all of `path` into *out; false with errno set when it cannot.
bool read_file(const std::string& path, std::string* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    errno = EINVAL;
    return false;
  }
  // Cap the read: a huge file is rejected by validate() on its size fields.
  size_t size = size_t(std::min<uint64_t>(uint64_t(st.st_size), kMaxEntryBytes + kHeaderSize));
  out->resize(size);
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::read(fd, out->data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shorter than fstat said: validate() sees the truncation
    got += size_t(n);
  }
  ::close(fd);
  out->resize(got);
  return true;
}

}  // namespace

uint64_t checksum64(std::string_view bytes) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (bytes.size() * 0xff51afd7ed558ccdull);
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t v = h ^ mix(get_u64(bytes.data() + i));
    h = (v << 27 | v >> 37) * 0x9fb21c651e98df25ull + 0x632be59bd9b4e019ull;
  }
  uint64_t tail = 0;
  for (size_t k = 0; i + k < bytes.size(); ++k) {
    tail |= uint64_t(static_cast<unsigned char>(bytes[i + k])) << (8 * k);
  }
  return mix(h ^ mix(tail + 0x2545f4914f6cdd1dull));
}

struct DiskCache::Impl {
  std::optional<std::string> fixed;  // the directory when not following the environment
  std::string subdirectory;          // of the environment's directory ("": itself)
  std::string what = "kernel cache";
  std::atomic<uint64_t> hits{0}, misses{0}, corrupt{0}, writes{0}, write_failures{0}, evicted{0};
  std::mutex mu;
  std::set<std::string> unusable;  // directories reported and skipped since
  std::set<std::string> trimmed;   // directories trimmed by this process
  std::atomic<uint64_t> temp_counter{0};

  // Reports `dir` unusable once; later stores there are skipped.
  void give_up(const std::string& dir, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    if (!unusable.insert(dir).second) return;
    std::fprintf(stderr,
                 "kiln: warning: cannot write the %s in %s (%s); continuing without "
                 "the disk cache\n",
                 what.c_str(), dir.c_str(), why.c_str());
  }
  bool is_unusable(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu);
    return unusable.count(dir) > 0;
  }
};

DiskCache& DiskCache::global() {
  // Never destroyed: compiles may still run on other threads during exit.
  static DiskCache* cache = new DiskCache();
  return *cache;
}

DiskCache::DiskCache() : impl_(std::make_unique<Impl>()) {}
DiskCache::DiskCache(std::string directory, std::string what) : impl_(std::make_unique<Impl>()) {
  impl_->fixed = std::move(directory);
  impl_->what = std::move(what);
}
DiskCache::DiskCache(Subdirectory sub) : impl_(std::make_unique<Impl>()) {
  impl_->subdirectory = std::move(sub.name);
  impl_->what = std::move(sub.what);
}
DiskCache::~DiskCache() = default;

std::string DiskCache::directory_from_environment() {
  std::string mode = lower(env("KILN_CACHE"));
  if (mode == "off" || mode == "0" || mode == "false" || mode == "no") return "";
  std::string dir = env("KILN_CACHE_DIR");
  if (!dir.empty()) return dir;
  // The XDG rule: a relative XDG_CACHE_HOME is invalid and ignored.
  std::string xdg = env("XDG_CACHE_HOME");
  if (!xdg.empty() && xdg[0] == '/') return xdg + "/kiln";
  std::string home = env("HOME");
  if (!home.empty()) return home + "/.cache/kiln";
  return "";
}

std::string DiskCache::directory() const {
  if (impl_->fixed) return *impl_->fixed;
  std::string dir = directory_from_environment();
  if (dir.empty() || impl_->subdirectory.empty()) return dir;
  return dir + "/" + impl_->subdirectory;
}

std::string DiskCache::entry_path(const CacheKey& key) const {
  std::string dir = directory();
  return dir.empty() ? dir : dir + "/" + key.str() + ".kc";
}

std::optional<std::string> DiskCache::load(const CacheKey& key, std::string_view description) {
  std::string path = entry_path(key);
  std::string file;
  if (path.empty() || !read_file(path, &file)) {
    ++impl_->misses;  // absent (or unreadable, which a store will report if it matters)
    return std::nullopt;
  }
  std::string why = validate(file, key, description);
  if (!why.empty()) {
    ++impl_->corrupt;
    ++impl_->misses;
    std::fprintf(stderr, "kiln: warning: cache entry %s is corrupt (%s); rebuilding\n",
                 path.c_str(), why.c_str());
    return std::nullopt;
  }
  ++impl_->hits;
  // Marks the entry recently used for trim(); a read-only cache just stays as it is.
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  size_t desc_size = get_u32(file.data() + 12);
  file.erase(0, kHeaderSize + desc_size);
  return file;
}

bool DiskCache::store(const CacheKey& key, std::string_view description, std::string_view payload) {
  std::string dir = directory();
  if (dir.empty()) return false;
  if (impl_->is_unusable(dir)) {
    ++impl_->write_failures;
    return false;
  }
  auto fail = [&](const std::string& why) {
    ++impl_->write_failures;
    impl_->give_up(dir, why);
    return false;
  };
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return fail(ec.message());

  std::string final_path = dir + "/" + key.str() + ".kc";
  // Unique among processes (pid), threads (id hash) and calls (counter).
  std::string temp_path = dir + "/." + key.str() + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) +
                          "." + std::to_string(impl_->temp_counter.fetch_add(1));
  int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fail(std::strerror(errno));
  bool ok = write_all(fd, make_header(key, description, payload)) && write_all(fd, description) &&
            write_all(fd, payload);
  int err = ok ? 0 : errno;
  // Not fsync'ed: a sync costs 0.4 ms here (tens on a slow disk) on every
  // compile that misses, and buys nothing a cache needs. After a power loss
  // the renamed name may hold data that never reached the disk; the
  // checksums make that entry a reported miss that is rebuilt, never a
  // trusted one.
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(temp_path.c_str());
    return fail(std::strerror(err ? err : EIO));
  }
  ++impl_->writes;
  bool first_store_here = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    first_store_here = impl_->trimmed.insert(dir).second;
  }
  if (first_store_here) trim(max_bytes_from_environment());
  return true;
}

uint64_t DiskCache::max_bytes_from_environment() {
  std::string mb = env("KILN_CACHE_MAX_MB");
  char* end = nullptr;
  unsigned long long v = mb.empty() ? 0 : std::strtoull(mb.c_str(), &end, 10);
  if (mb.empty() || !end || *end != '\0') v = 512;
  return uint64_t(v) << 20;
}

size_t DiskCache::trim(uint64_t max_bytes) {
  std::string dir = directory();
  if (dir.empty()) return 0;
  struct Entry {
    std::filesystem::file_time_type time;
    uint64_t size;
    std::filesystem::path path;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  std::error_code ec;
  auto now = std::filesystem::file_time_type::clock::now();
  for (auto it = std::filesystem::directory_iterator(dir, ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code e2;
    auto time = it->last_write_time(e2);
    if (e2) continue;
    if (name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos) {
      // A writer renames within milliseconds; an hour-old temporary file is a crash's.
      if (now - time > std::chrono::hours(1)) std::filesystem::remove(it->path(), e2);
      continue;
    }
    if (it->path().extension() != ".kc") continue;
    uint64_t size = it->file_size(e2);
    if (e2) continue;
    entries.push_back({time, size, it->path()});
    total += size;
  }
  if (total <= max_bytes) return 0;
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.time < b.time; });
  size_t removed = 0;
  // Down to 90% of the limit, so the next few stores do not trim again.
  for (const Entry& e : entries) {
    if (total <= max_bytes / 10 * 9) break;
    std::error_code e2;
    if (std::filesystem::remove(e.path, e2)) {
      total -= e.size;
      ++removed;
    }
  }
  impl_->evicted += removed;
  return removed;
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  s.hits = impl_->hits;
  s.misses = impl_->misses;
  s.corrupt = impl_->corrupt;
  s.writes = impl_->writes;
  s.write_failures = impl_->write_failures;
  s.evicted = impl_->evicted;
  return s;
}

void DiskCache::reset_stats() {
  impl_->hits = impl_->misses = impl_->corrupt = impl_->writes = impl_->write_failures = 0;
  impl_->evicted = 0;
}

}  // namespace kiln::runtime
