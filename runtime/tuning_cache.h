// TuningCache — measured choices that outlive the process: small records
// ("candidate X won, these were the times") stored under a key text. It knows
// no compiler: the api layer's autotuner decides what the key covers (op,
// shapes, dtypes, attributes, candidates, CPU, Kiln's version) and what the
// names mean.
//
// Two layers. In memory: a map from key text to record, so a process that
// meets the same problem twice measures it once. On disk: one DiskCache entry
// per key in the `tuning/` subdirectory of the kernel cache's directory
// ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln), with all
// of DiskCache's rules: a versioned, self-checking header; the full 128-bit
// key in the entry; the full key text stored as the entry's description and
// compared on load; payload checksum; writes through a temporary file and an
// atomic rename; the same trust checks (a private directory, tuning/
// itself opened without following a symlink, only the user's own regular
// files read or trimmed); a corrupt, truncated or mismatched entry is
// reported once on stderr and read as a miss (the caller measures again and overwrites it); an
// unwritable directory is reported once and skipped; KILN_CACHE=off (0,
// false, no) turns the disk layer off. A record that fails to parse is
// treated the same way. Nothing here throws.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/disk_cache.h"

namespace kiln::runtime {

// One candidate of a tuned problem.
struct TuningMeasurement {
  TuningMeasurement() = default;
  TuningMeasurement(std::string n, double s, bool r) : name(std::move(n)), seconds(s), rejected(r) {}
  std::string name;     // no whitespace
  double seconds = -1;  // best time; < 0: not timed
  bool rejected = false;
};

struct TuningRecord {
  std::string choice;  // the winner (one of `candidates`)
  std::vector<TuningMeasurement> candidates;
  int64_t measured_at = 0;  // when (seconds since the Unix epoch)
  double budget_s = 0;      // the time budget it was measured under
  bool complete = true;     // every candidate was timed within the budget
  std::string note;         // free text on one line, e.g. "N=32"

  bool operator==(const TuningRecord&) const;
  // The choice's time, or -1.
  double choice_seconds() const;
};

// The payload form of a record (a few lines of text) and back; nullopt for
// anything that is not exactly a record this version writes.
std::string serialize_tuning_record(const TuningRecord& r);
std::optional<TuningRecord> parse_tuning_record(std::string_view text);

struct TuningCacheStats {
  uint64_t memory_hits = 0;
  uint64_t disk_hits = 0;
  uint64_t misses = 0;   // loads that found nothing usable (corrupt entries included)
  uint64_t corrupt = 0;  // disk entries found but rejected (bad bytes or bad record)
  uint64_t stores = 0;   // records stored (memory, and disk when it is on)
  uint64_t disk_writes = 0;
};

class TuningCache {
 public:
  // The process-wide cache; its directory follows the environment.
  static TuningCache& global();

  // Follows the environment: <kernel cache directory>/tuning.
  TuningCache();
  // Entries in `directory` whatever the environment says ("": memory only).
  explicit TuningCache(std::string directory);
  TuningCache(const TuningCache&) = delete;
  TuningCache& operator=(const TuningCache&) = delete;

  // The record stored under `key_text`: from memory, else from disk (then
  // kept in memory); nothing when absent, off or corrupt. `use_disk` false
  // reads memory only.
  std::optional<TuningRecord> load(std::string_view key_text, bool use_disk = true);
  // Stores (replaces) the record under `key_text` in memory and, when
  // `use_disk` and the disk layer is on, on disk; false when the disk write
  // failed (reported once per directory).
  bool store(std::string_view key_text, const TuningRecord& record, bool use_disk = true);

  // Forgets the memory layer (the disk keeps its entries): what a new process sees.
  void clear_memory();

  // The directory entries go to now; empty when the disk layer is off.
  std::string directory() const { return disk_.directory(); }
  // The file of `key_text`'s entry (whether or not it exists); empty when off.
  std::string entry_path(std::string_view key_text) const;
  // The 128-bit key a key text is stored under.
  static CacheKey key_of(std::string_view key_text);

  TuningCacheStats stats() const;
  void reset_stats();

 private:
  DiskCache disk_;
  mutable std::mutex mu_;
  std::map<std::string, TuningRecord, std::less<>> memory_;
  TuningCacheStats stats_;
};

}  // namespace kiln::runtime
