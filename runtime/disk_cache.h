// DiskCache — a persistent, content-addressed store of byte strings (compiled
// object files), one file per runtime::CacheKey. It knows no compiler: the api
// layer decides what the key covers and what the payload means.
//
// Where: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else $HOME/.cache/kiln.
// KILN_CACHE=off (or 0, false, no) turns it off. The cache made by global()
// reads the environment at each use, so a test's setenv() takes effect.
//
// An entry is `<dir>/<32 hex digits of the key>.kc`: a fixed header (magic,
// format version, the full key, payload size, a 64-bit checksum of the payload,
// a checksum of the header itself) then a description string (e.g. LLVM version
// and CPU) and the payload. A reader trusts nothing: a short file, wrong magic,
// version, key, description, size or checksum is reported once on stderr
// ("kiln: warning: cache entry <path> is corrupt (<why>); rebuilding") and read
// as a miss, and the caller's store() then overwrites it.
//
// Writes are atomic: the entry is written to a unique temporary file in the
// same directory (pid, thread and a counter in its name) and renamed over the
// final name, so readers in any process see the old entry, the new one, or
// none — never half of one. (Not synced: after a power loss an entry may hold
// garbage, which its checksums turn into a miss.) A directory that cannot be created or
// written is reported once per process (per directory) and then skipped; no
// method throws.
//
// Trust: an entry is code Kiln will run, so the cache is exactly as trusted as
// the user's own files. The directory is created 0700 (whatever the umask)
// and opened without following a symlink (the tuning/ subdirectory too,
// relative to the verified parent); a directory that is a symlink, not a
// directory, not owned by the effective user or writable by group or others
// is reported once ("kiln: warning: not using the kernel cache in DIR: PATH
// is <why>; continuing without the disk cache") and the process runs without
// it. An entry is opened relative to that directory with O_NOFOLLOW and
// O_NONBLOCK (a FIFO cannot hang a load) and must be a regular file owned by
// the user and not group/other-writable, else "kiln: warning: ignoring cache
// entry PATH: it is <why>" and a miss (counted in DiskCacheStats::refused).
// Sizes in the header are checked against fstat before the body is read
// (payload at most 1 GiB, description at most 16 MiB). The 128-bit key and
// checksums catch damage, not forgery: an entry written by the same user is
// trusted.
//
// Size: the first store of a process into a directory trims it to
// $KILN_CACHE_MAX_MB (default 512) by deleting the entries least recently
// used (a hit refreshes an entry's modification time), and removes temporary
// files a crashed writer left over an hour ago; it only ever unlinks the
// user's own regular files in the verified directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "runtime/kernel_cache.h"

namespace kiln::runtime {

struct DiskCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;   // loads that returned nothing (corrupt entries included)
  uint64_t corrupt = 0;  // entries found but rejected
  uint64_t writes = 0;   // entries stored
  uint64_t write_failures = 0;
  uint64_t evicted = 0;  // entries deleted by trim()
  uint64_t refused = 0;  // entries not trusted (not ours, writable by others, not a file)
};

// The format version in every entry's header; bump it when the layout changes.
inline constexpr uint32_t kDiskCacheFormatVersion = 1;

class DiskCache {
 public:
  // The process-wide cache; its directory follows the environment.
  static DiskCache& global();

  // A cache that follows the environment (KILN_CACHE, KILN_CACHE_DIR, ...).
  DiskCache();
  // A cache at `directory` regardless of the environment ("" disables it);
  // `what` names it in warnings.
  explicit DiskCache(std::string directory, std::string what = "kernel cache");
  // A cache that follows the environment like DiskCache() but keeps its
  // entries in a subdirectory of that directory (other stores built on this
  // one, e.g. the tuning cache, so the kernel cache's trim never sees them).
  struct Subdirectory {
    std::string name;  // "tuning"
    std::string what;  // "tuning cache", in warnings
  };
  explicit DiskCache(Subdirectory sub);
  ~DiskCache();
  DiskCache(const DiskCache&) = delete;
  DiskCache& operator=(const DiskCache&) = delete;

  // The directory entries go to now; empty when the cache is off.
  std::string directory() const;
  bool enabled() const { return !directory().empty(); }
  // The file of `key`'s entry (whether or not it exists); empty when off.
  std::string entry_path(const CacheKey& key) const;

  // The payload stored under `key`, or nothing (missing, off, corrupt).
  // `description` must match the one the entry was stored with.
  std::optional<std::string> load(const CacheKey& key, std::string_view description);
  // Stores `payload` under `key` atomically; false when it could not (the
  // first failure per directory is reported on stderr).
  bool store(const CacheKey& key, std::string_view description, std::string_view payload);

  DiskCacheStats stats() const;
  void reset_stats();

  // Deletes least recently used entries until the directory holds at most
  // `max_bytes` of them, and stale temporary files; returns how many entries
  // it deleted. store() calls it once per directory with the configured limit.
  size_t trim(uint64_t max_bytes);
  // $KILN_CACHE_MAX_MB in bytes (default 512 MiB; 1 to 2^44 - 1 MiB, anything
  // else is warned about once and the default used).
  static uint64_t max_bytes_from_environment();

  // The directory the environment names: KILN_CACHE_DIR, XDG_CACHE_HOME/kiln,
  // HOME/.cache/kiln; empty when KILN_CACHE turns the cache off (or no
  // variable gives a place).
  static std::string directory_from_environment();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A 64-bit checksum of `bytes` (word at a time; stable across runs and hosts
// of the same endianness). Exposed for tests that forge entries.
uint64_t checksum64(std::string_view bytes);

}  // namespace kiln::runtime
