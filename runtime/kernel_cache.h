// KernelCache — an in-memory cache of compiled modules, keyed by a 128-bit
// content hash. The api layer builds the key from everything that changes the
// code (canonical loop-IR hash of all kernels, codegen options, LLVM version,
// CPU name and features); the runtime sees only the key and an opaque module
// handle, so it knows no compiler.
//
// Thread-safe. Two threads asking for the same missing key compile once: the
// second waits for the first's result. A failed build is not cached (the next
// request retries and gets the error again). Least recently used entries are
// evicted beyond a capacity.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace kiln::runtime {

struct CacheKey {
  uint64_t hi = 0, lo = 0;
  bool operator==(const CacheKey&) const = default;
  std::string str() const;  // 32 hex digits
};

// Accumulates bytes into a 128-bit key (two independently seeded 64-bit
// mixes); stable across runs and processes, so a key can name a file later.
class KeyHasher {
 public:
  KeyHasher& add(std::string_view bytes);
  KeyHasher& add(uint64_t v);
  CacheKey key() const;

 private:
  void mix_word(uint64_t w);
  uint64_t a_ = 0xcbf29ce484222325ull, b_ = 0x84222325cbf29ce4ull;
  uint64_t n_ = 0;
};

struct KernelCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;  // builds started
  uint64_t evictions = 0;
  uint64_t entries = 0;
};

class KernelCache {
 public:
  static KernelCache& global();

  explicit KernelCache(size_t capacity = 256);
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  // The module cached under `key`, or the one `build` makes (then cached).
  // `build` runs without the cache lock held; its exception propagates.
  std::shared_ptr<void> get_or_build(const CacheKey& key,
                                     const std::function<std::shared_ptr<void>()>& build);

  // Typed convenience: the caller stores and reads back one module type per key space.
  template <typename T>
  std::shared_ptr<T> get_or_build_as(const CacheKey& key,
                                     const std::function<std::shared_ptr<T>()>& build) {
    return std::static_pointer_cast<T>(
        get_or_build(key, [&]() -> std::shared_ptr<void> { return build(); }));
  }

  bool contains(const CacheKey& key) const;
  void clear();
  void set_capacity(size_t capacity);
  KernelCacheStats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::runtime
