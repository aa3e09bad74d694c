// TuningCache: a map in memory in front of a DiskCache in the `tuning/`
// subdirectory; records are a few lines of text (see tuning_cache.h).
#include "runtime/tuning_cache.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kiln::runtime {

namespace {

// The first line of every record; bump it when the record's lines change.
constexpr std::string_view kRecordHeader = "kiln-tuning-record 1";

bool has_space(std::string_view s) {
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

std::string number(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// Parses all of `s` as a finite double.
std::optional<double> parse_double(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return int64_t(v);
}

// Splits "word rest of line" at the first space.
std::pair<std::string, std::string> split_first(std::string_view line) {
  size_t sp = line.find(' ');
  if (sp == std::string_view::npos) return {std::string(line), ""};
  return {std::string(line.substr(0, sp)), std::string(line.substr(sp + 1))};
}

}  // namespace

bool TuningRecord::operator==(const TuningRecord& o) const {
  if (choice != o.choice || measured_at != o.measured_at || budget_s != o.budget_s ||
      complete != o.complete || note != o.note || candidates.size() != o.candidates.size()) {
    return false;
  }
  for (size_t i = 0; i < candidates.size(); ++i) {
    const TuningMeasurement &a = candidates[i], &b = o.candidates[i];
    if (a.name != b.name || a.seconds != b.seconds || a.rejected != b.rejected) return false;
  }
  return true;
}

double TuningRecord::choice_seconds() const {
  for (const TuningMeasurement& m : candidates) {
    if (m.name == choice) return m.seconds;
  }
  return -1;
}

std::string serialize_tuning_record(const TuningRecord& r) {
  std::string s(kRecordHeader);
  s += "\nchoice " + r.choice;
  s += "\nmeasured_at " + std::to_string(r.measured_at);
  s += "\nbudget " + number(r.budget_s);
  s += std::string("\ncomplete ") + (r.complete ? "1" : "0");
  s += "\nnote " + one_line(r.note);
  for (const TuningMeasurement& m : r.candidates) {
    s += "\ncandidate " + m.name + " " + number(m.seconds) + (m.rejected ? " rejected" : " ok");
  }
  s += "\nend\n";
  return s;
}

std::optional<TuningRecord> parse_tuning_record(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;  // every line ends in '\n'
    lines.push_back(text.substr(0, nl));
    text.remove_prefix(nl + 1);
  }
  // header, choice, measured_at, budget, complete, note, candidates..., end
  if (lines.size() < 8 || lines[0] != kRecordHeader || lines.back() != "end") return std::nullopt;
  TuningRecord r;
  auto field = [&](size_t i, std::string_view name) -> std::optional<std::string> {
    auto [word, rest] = split_first(lines[i]);
    if (word != name) return std::nullopt;
    return rest;
  };
  auto choice = field(1, "choice");
  auto at = field(2, "measured_at");
  auto budget = field(3, "budget");
  auto complete = field(4, "complete");
  auto note = field(5, "note");
  if (!choice || !at || !budget || !complete || !note) return std::nullopt;
  std::optional<int64_t> at_v = parse_int(*at);
  std::optional<double> budget_v = parse_double(*budget);
  if (choice->empty() || has_space(*choice) || !at_v || !budget_v) return std::nullopt;
  if (*complete != "0" && *complete != "1") return std::nullopt;
  r.choice = *choice;
  r.measured_at = *at_v;
  r.budget_s = *budget_v;
  r.complete = *complete == "1";
  r.note = *note;
  bool chosen_listed = false;
  for (size_t i = 6; i + 1 < lines.size(); ++i) {
    auto rest = field(i, "candidate");
    if (!rest) return std::nullopt;
    auto [name, tail] = split_first(*rest);
    auto [secs, verdict] = split_first(tail);
    std::optional<double> s = parse_double(secs);
    if (name.empty() || !s || (verdict != "ok" && verdict != "rejected")) return std::nullopt;
    r.candidates.emplace_back(name, *s, verdict == "rejected");
    chosen_listed = chosen_listed || name == r.choice;
  }
  if (!chosen_listed) return std::nullopt;
  return r;
}

TuningCache& TuningCache::global() {
  // Never destroyed: compiles may still run on other threads during exit.
  static TuningCache* cache = new TuningCache();
  return *cache;
}

TuningCache::TuningCache() : disk_(DiskCache::Subdirectory{"tuning", "tuning cache"}) {}
TuningCache::TuningCache(std::string directory) : disk_(std::move(directory), "tuning cache") {}

CacheKey TuningCache::key_of(std::string_view key_text) {
  KeyHasher h;
  h.add("kiln-tuning-key-v1").add(key_text);
  return h.key();
}

std::string TuningCache::entry_path(std::string_view key_text) const {
  return disk_.entry_path(key_of(key_text));
}

std::optional<TuningRecord> TuningCache::load(std::string_view key_text, bool use_disk) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(key_text);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  std::optional<TuningRecord> record;
  bool bad_record = false;
  if (use_disk && disk_.enabled()) {
    CacheKey key = key_of(key_text);
    if (std::optional<std::string> payload = disk_.load(key, key_text)) {
      record = parse_tuning_record(*payload);
      bad_record = !record;
      if (bad_record) {
        // Intact bytes (the checksums held) that are no record of ours.
        std::fprintf(stderr,
                     "kiln: warning: tuning cache entry %s is corrupt (not a tuning record); "
                     "retuning\n",
                     disk_.entry_path(key).c_str());
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!record) {
    ++stats_.misses;
    if (bad_record) ++stats_.corrupt;  // DiskCache counts bad bytes itself
    return std::nullopt;
  }
  ++stats_.disk_hits;
  memory_.insert_or_assign(std::string(key_text), *record);
  return record;
}

bool TuningCache::store(std::string_view key_text, const TuningRecord& record, bool use_disk) {
  // A record that would not read back (a name with a space) is kept in memory only.
  bool representable = !has_space(record.choice);
  for (const TuningMeasurement& m : record.candidates) {
    representable = representable && !m.name.empty() && !has_space(m.name);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    memory_.insert_or_assign(std::string(key_text), record);
    ++stats_.stores;
  }
  if (!use_disk || !disk_.enabled() || !representable) return true;
  bool ok = disk_.store(key_of(key_text), key_text, serialize_tuning_record(record));
  if (ok) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.disk_writes;
  }
  return ok;
}

void TuningCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
}

TuningCacheStats TuningCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TuningCacheStats s = stats_;
  s.corrupt += disk_.stats().corrupt;
  return s;
}

void TuningCache::reset_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = TuningCacheStats{};
  disk_.reset_stats();
}

}  // namespace kiln::runtime
