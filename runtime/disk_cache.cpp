// DiskCache: entry files with a self-checking header, written through a
// temporary file and rename(2). POSIX file calls are used directly (not
// iostreams) so every failure has an errno to report and the write can be
// synced before the rename. See disk_cache.h for the format and the rules.
#include "runtime/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "runtime/env_number.h"
#include "runtime/private_files.h"

namespace kiln::runtime {

namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'C', 'A', 'C', 'H'};
constexpr size_t kHeaderSize = 64;
// The header's checksum covers bytes [0, kHeaderChecked) and the description.
constexpr size_t kHeaderChecked = 48;
// No entry is this large; a bigger size field is damage, not something to read.
constexpr uint64_t kMaxPayloadBytes = uint64_t(1) << 30;
constexpr uint64_t kMaxDescriptionBytes = uint64_t(16) << 20;

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

// Why the header `h` (kHeaderSize bytes) does not start a valid entry for
// `key` in a file of `file_size` bytes; empty when it may. Checked before
// anything past the header is read, so a huge file costs one small read.
std::string validate_header(const char* h, uint64_t file_size, const CacheKey& key) {
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) return "bad magic";
  uint32_t version = get_u32(h + 8);
  if (version != kDiskCacheFormatVersion) {
    return "format version " + std::to_string(version) + ", expected " +
           std::to_string(kDiskCacheFormatVersion);
  }
  uint64_t desc_size = get_u32(h + 12);
  CacheKey stored{get_u64(h + 16), get_u64(h + 24)};
  if (!(stored == key)) return "key " + stored.str() + " in entry " + key.str();
  uint64_t payload_size = get_u64(h + 32);
  if (payload_size > kMaxPayloadBytes || desc_size > kMaxDescriptionBytes) return "bad size field";
  uint64_t want = kHeaderSize + desc_size + payload_size;
  if (file_size < want) return "truncated payload";
  if (file_size > want) return "trailing bytes";
  return "";
}

// Why `file` (a whole entry whose header passed validate_header) is not the
// entry of `description`; empty when it is.
std::string validate_body(const std::string& file, std::string_view description) {
  uint64_t desc_size = get_u32(file.data() + 12);
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

// Reads up to `size` bytes at `offset` into out[at..]; how many it read.
size_t read_at(int fd, char* out, size_t size, uint64_t offset) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd, out + got, size - got, off_t(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // shorter than fstat said: reported as truncated
    got += size_t(n);
  }
  return got;
}

bool is_temporary(const std::string& name) {
  return name.size() > 1 && name[0] == '.' && name.find(".tmp.") != std::string::npos;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
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
  std::atomic<uint64_t> hits{0}, misses{0}, corrupt{0}, writes{0}, write_failures{0}, evicted{0},
      refused{0};
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
  // Reports `dir` untrusted once (`path`, it or its parent, is `why`); later
  // loads and stores there are skipped.
  void distrust(const std::string& dir, const std::string& path, const std::string& why) {
    std::lock_guard<std::mutex> lock(mu);
    if (!unusable.insert(dir).second) return;
    std::string fix = why == "writable by group or others" ? " (`chmod go-w " + path + "` fixes it)"
                                                           : std::string();
    std::fprintf(stderr,
                 "kiln: warning: not using the %s in %s: %s is %s%s; continuing without the "
                 "disk cache\n",
                 what.c_str(), dir.c_str(), path.c_str(), why.c_str(), fix.c_str());
  }
  bool is_unusable(const std::string& dir) {
    std::lock_guard<std::mutex> lock(mu);
    return unusable.count(dir) > 0;
  }

  // Opens `dir` (what directory() returned) verified: the environment's
  // directory, then (for a subdirectory cache) the subdirectory inside it,
  // neither through a symlink. A refusal is reported here; `error` is left
  // for the caller (a load ignores it, a store reports it).
  PrivateOpen open_directory(const std::string& dir, bool create) {
    PrivateOpen r;
    std::string base = dir, offender = dir;
    bool sub = !fixed && !subdirectory.empty();
    if (sub) base = dir.substr(0, dir.size() - subdirectory.size() - 1);
    r = open_private_directory(base, create);
    offender = base;
    if (r.ok() && sub) {
      PrivateOpen parent = std::move(r);
      r = open_private_subdirectory(parent.fd.get(), subdirectory, create);
      offender = dir;
    }
    if (!r.refused.empty()) distrust(dir, offender, r.refused);
    return r;
  }

  // Deletes stale temporaries and least recently used entries in `dirfd`:
  // only this user's regular files, by unlinkat on the verified directory.
  size_t trim_in(int dirfd, uint64_t max_bytes);
};

size_t DiskCache::Impl::trim_in(int dirfd, uint64_t max_bytes) {
  int walk_fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (walk_fd < 0) return 0;
  DIR* d = ::fdopendir(walk_fd);
  if (!d) {
    ::close(walk_fd);
    return 0;
  }
  struct Entry {
    struct timespec time;
    uint64_t size;
    std::string name;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  struct timespec now;
  ::clock_gettime(CLOCK_REALTIME, &now);
  uid_t me = ::geteuid();
  while (struct dirent* de = ::readdir(d)) {
    std::string name = de->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != me) continue;  // never someone else's file
    if (is_temporary(name)) {
      // A writer renames within milliseconds; an hour-old temporary file is a crash's.
      if (now.tv_sec - st.st_mtim.tv_sec > 3600) ::unlinkat(dirfd, name.c_str(), 0);
      continue;
    }
    if (!ends_with(name, ".kc")) continue;
    entries.push_back({st.st_mtim, uint64_t(st.st_size), name});
    total += uint64_t(st.st_size);
  }
  ::closedir(d);
  if (total <= max_bytes) return 0;
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.time.tv_sec != b.time.tv_sec) return a.time.tv_sec < b.time.tv_sec;
    return a.time.tv_nsec < b.time.tv_nsec;
  });
  size_t removed = 0;
  // Down to 90% of the limit, so the next few stores do not trim again.
  for (const Entry& e : entries) {
    if (total <= max_bytes / 10 * 9) break;
    if (::unlinkat(dirfd, e.name.c_str(), 0) == 0) {
      total -= e.size;
      ++removed;
    }
  }
  evicted += removed;
  return removed;
}

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
  std::string dir = directory();
  auto miss = [&] {
    ++impl_->misses;
    return std::nullopt;
  };
  if (dir.empty() || impl_->is_unusable(dir)) return miss();
  PrivateOpen d = impl_->open_directory(dir, /*create=*/false);
  if (!d.ok()) return miss();  // absent (or refused, reported above)
  std::string name = key.str() + ".kc";
  std::string path = dir + "/" + name;
  long long size = 0;
  PrivateOpen f = open_private_file(d.fd.get(), name, &size);
  if (!f.refused.empty()) {
    ++impl_->refused;
    std::fprintf(stderr, "kiln: warning: ignoring cache entry %s: it is %s\n", path.c_str(),
                 f.refused.c_str());
    return miss();
  }
  if (!f.ok()) return miss();  // absent (or unreadable, which a store will report if it matters)
  auto corrupt = [&](const std::string& why) {
    ++impl_->corrupt;
    std::fprintf(stderr, "kiln: warning: cache entry %s is corrupt (%s); rebuilding\n",
                 path.c_str(), why.c_str());
    return miss();
  };
  char header[kHeaderSize];
  if (size < static_cast<long long>(kHeaderSize) ||
      read_at(f.fd.get(), header, kHeaderSize, 0) < kHeaderSize) {
    return corrupt("truncated header");
  }
  std::string why = validate_header(header, uint64_t(size), key);
  if (!why.empty()) return corrupt(why);
  // The size is now known to be at most the limits: read exactly it.
  std::string file(size_t(size), '\0');
  std::memcpy(file.data(), header, kHeaderSize);
  size_t rest = size_t(size) - kHeaderSize;
  if (read_at(f.fd.get(), file.data() + kHeaderSize, rest, kHeaderSize) < rest) {
    return corrupt("truncated payload");
  }
  why = validate_body(file, description);
  if (!why.empty()) return corrupt(why);
  ++impl_->hits;
  // Marks the entry recently used for trim(); a read-only cache just stays as it is.
  ::futimens(f.fd.get(), nullptr);
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
  PrivateOpen d = impl_->open_directory(dir, /*create=*/true);
  if (!d.refused.empty()) {
    ++impl_->write_failures;
    return false;
  }
  if (!d.ok()) return fail(std::strerror(d.error));
  int dirfd = d.fd.get();

  std::string final_name = key.str() + ".kc";
  // Unique among processes (pid), threads (id hash) and calls (counter).
  std::string temp_name = "." + key.str() + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) +
                          "." + std::to_string(impl_->temp_counter.fetch_add(1));
  int fd = ::openat(dirfd, temp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                    0600);
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
  // rename replaces whatever had the name (an entry, or a refused FIFO or symlink).
  if (ok && ::renameat(dirfd, temp_name.c_str(), dirfd, final_name.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlinkat(dirfd, temp_name.c_str(), 0);
    return fail(std::strerror(err ? err : EIO));
  }
  ++impl_->writes;
  bool first_store_here = false;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    first_store_here = impl_->trimmed.insert(dir).second;
  }
  if (first_store_here) impl_->trim_in(dirfd, max_bytes_from_environment());
  return true;
}

uint64_t DiskCache::max_bytes_from_environment() {
  // At most 2^44 - 1 MiB, so the limit in bytes fits in 64 bits.
  return env_uint("KILN_CACHE_MAX_MB", 512, 1, (uint64_t(1) << 44) - 1) << 20;
}

size_t DiskCache::trim(uint64_t max_bytes) {
  std::string dir = directory();
  if (dir.empty() || impl_->is_unusable(dir)) return 0;
  PrivateOpen d = impl_->open_directory(dir, /*create=*/false);
  if (!d.ok()) return 0;
  return impl_->trim_in(d.fd.get(), max_bytes);
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  s.hits = impl_->hits;
  s.misses = impl_->misses;
  s.corrupt = impl_->corrupt;
  s.writes = impl_->writes;
  s.write_failures = impl_->write_failures;
  s.evicted = impl_->evicted;
  s.refused = impl_->refused;
  return s;
}

void DiskCache::reset_stats() {
  impl_->hits = impl_->misses = impl_->corrupt = impl_->writes = impl_->write_failures = 0;
  impl_->evicted = impl_->refused = 0;
}

}  // namespace kiln::runtime
