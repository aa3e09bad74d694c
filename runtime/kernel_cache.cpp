// KernelCache: a mutex-guarded map from key to a shared future of the module,
// plus an LRU list. Builds run outside the lock; concurrent requests for a key
// being built wait on its future. See kernel_cache.h.
#include "runtime/kernel_cache.h"

#include <cstdio>
#include <cstring>
#include <future>
#include <list>
#include <unordered_map>

namespace kiln::runtime {

std::string CacheKey::str() const {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(hi),
                static_cast<unsigned long long>(lo));
  return buf;
}

namespace {

// splitmix64's finalizer: a good avalanche for the per-byte state.
uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

}  // namespace

// Two unrelated 64-bit streams over 8-byte words (a multiply-xorshift each),
// so a key costs about a nanosecond per word: the key of a memory-cache hit
// is computed on every compile().
void KeyHasher::mix_word(uint64_t w) {
  a_ = (a_ ^ w) * 0x9fb21c651e98df25ull;
  a_ ^= a_ >> 28;
  b_ = (b_ + w + 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
  b_ ^= b_ >> 29;
}

KeyHasher& KeyHasher::add(std::string_view bytes) {
  // Length first, so ("ab", "c") and ("a", "bc") differ.
  add(uint64_t(bytes.size()));
  size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    mix_word(w);
  }
  if (i < bytes.size()) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, bytes.size() - i);
    mix_word(w);
  }
  n_ += bytes.size();
  return *this;
}

KeyHasher& KeyHasher::add(uint64_t v) {
  mix_word(v);
  n_ += 8;
  return *this;
}

CacheKey KeyHasher::key() const {
  return {mix(a_ ^ n_), mix(b_ + 0x632be59bd9b4e019ull * n_)};
}

struct KeyHash {
  size_t operator()(const CacheKey& k) const { return size_t(k.lo ^ (k.hi * 31)); }
};

struct KernelCache::Impl {
  using Future = std::shared_future<std::shared_ptr<void>>;
  struct Entry {
    Future module;
    std::list<CacheKey>::iterator lru;
  };
  mutable std::mutex mu;
  size_t capacity;
  std::unordered_map<CacheKey, Entry, KeyHash> map;
  std::list<CacheKey> lru;  // most recent first
  KernelCacheStats stats;

  void evict_locked() {
    auto it = lru.end();
    while (map.size() > capacity && it != lru.begin()) {
      --it;
      auto m = map.find(*it);
      // A module still being built is never evicted (its builder would re-insert it).
      if (m->second.module.wait_for(std::chrono::seconds(0)) != std::future_status::ready) continue;
      map.erase(m);
      it = lru.erase(it);
      ++stats.evictions;
    }
  }
};

KernelCache& KernelCache::global() {
  static KernelCache cache;
  return cache;
}

KernelCache::KernelCache(size_t capacity) : impl_(std::make_unique<Impl>()) {
  impl_->capacity = capacity == 0 ? 1 : capacity;
}
KernelCache::~KernelCache() = default;

std::shared_ptr<void> KernelCache::get_or_build(
    const CacheKey& key, const std::function<std::shared_ptr<void>()>& build) {
  std::promise<std::shared_ptr<void>> promise;
  std::unique_lock<std::mutex> lock(impl_->mu);
  auto it = impl_->map.find(key);
  if (it != impl_->map.end()) {
    ++impl_->stats.hits;
    impl_->lru.splice(impl_->lru.begin(), impl_->lru, it->second.lru);
    Impl::Future f = it->second.module;
    lock.unlock();  // another thread may still be building it: wait without the lock
    return f.get();
  }
  ++impl_->stats.misses;
  impl_->lru.push_front(key);
  impl_->map.emplace(key, Impl::Entry{promise.get_future().share(), impl_->lru.begin()});
  lock.unlock();
  std::shared_ptr<void> module;
  try {
    module = build();
  } catch (...) {
    lock.lock();
    auto failed = impl_->map.find(key);
    if (failed != impl_->map.end()) {
      impl_->lru.erase(failed->second.lru);
      impl_->map.erase(failed);
    }
    lock.unlock();
    promise.set_exception(std::current_exception());
    throw;
  }
  promise.set_value(module);
  lock.lock();
  impl_->evict_locked();
  return module;
}

bool KernelCache::contains(const CacheKey& key) const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->map.count(key) > 0;
}

void KernelCache::clear() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  // In-flight builds keep their promise; their waiters hold the shared future.
  impl_->map.clear();
  impl_->lru.clear();
}

void KernelCache::set_capacity(size_t capacity) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->capacity = capacity == 0 ? 1 : capacity;
  impl_->evict_locked();
}

KernelCacheStats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  KernelCacheStats s = impl_->stats;
  s.entries = impl_->map.size();
  return s;
}

}  // namespace kiln::runtime
