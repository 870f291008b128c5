#pragma once
// CowMap: a hash map whose copies share its entries, shard by shard, until one of them writes.
//
// The writer publishes a copy of its state for readers on other threads every few hundred milliseconds
// (server/writer/writer.h), and a state of 50,000 jobs holds maps with an entry per job (the names' index, the
// server's per-job tables) that every submission changes. Copied whole, each map costs an allocation per entry
// per copy. Split into kShards maps held by shared pointers, a copy costs kShards pointers, and a write clones
// only the shard it changes, and only if a copy still holds it: between two copies, the writer clones as many
// shards as it touches (a few entries each), not the map.
//
// Thread safety: copies may be read on any thread and dropped on any thread while the original (or another
// copy) writes. A shard is written in place only when its pointer's use count is 1: then no other map holds
// it, and none can start to (a new holder is made only by copying a map that holds it, and this map is the
// only one, owned by the thread writing). A count read as higher than it is (a copy being dropped meanwhile) only
// clones a shard needlessly. The count is read relaxed, so the acquire fence after it orders this thread's
// writes after every read the dropped copies made of the shard (their decrements release).
//
// REQUIRES: a map and its copies are written by one thread each at a time (a copy being read is const).
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

namespace allot {

template <class K, class V, class Hash = std::hash<K>>
class CowMap {
 public:
  static constexpr size_t kShards = 1024;
  using Shard = std::unordered_map<K, V, Hash>;

  CowMap() = default;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  bool contains(const K& k) const { return find(k) != nullptr; }

  // The value of `k`, or null. Valid until the map is next written.
  const V* find(const K& k) const {
    if (shards_.empty()) return nullptr;
    const auto& s = shards_[shard_of(k)];
    if (!s) return nullptr;
    auto it = s->find(k);
    return it == s->end() ? nullptr : &it->second;
  }
  // The value of `k` to change in place, or null (nothing is cloned then). Valid until the map is next written.
  V* find_mutable(const K& k) {
    if (!find(k)) return nullptr;
    return &own(shard_of(k)).find(k)->second;
  }
  // The value of `k` to change in place, value-initialised first when absent. Valid until the map is next written.
  V& edit(const K& k) {
    Shard& s = own(shard_of(k));
    auto [it, inserted] = s.try_emplace(k);
    size_ += inserted ? 1 : 0;
    return it->second;
  }
  // Inserts `v` under `k` unless `k` is there; whether it was inserted.
  bool emplace(const K& k, V v) {
    if (find(k)) return false;
    own(shard_of(k)).emplace(k, std::move(v));
    ++size_;
    return true;
  }
  void insert_or_assign(const K& k, V v) {
    Shard& s = own(shard_of(k));
    size_ -= s.size();
    s.insert_or_assign(k, std::move(v));
    size_ += s.size();
  }
  // Whether `k` was there.
  bool erase(const K& k) {
    if (!find(k)) return false;
    own(shard_of(k)).erase(k);
    --size_;
    return true;
  }
  // Erases every entry for which pred(key, value) holds; only the shards that lose an entry are cloned.
  template <class Pred>
  void erase_if(Pred pred) {
    for (size_t i = 0; i < shards_.size(); ++i) {
      if (!shards_[i]) continue;
      bool any = false;
      for (const auto& [k, v] : *shards_[i])
        if (pred(k, v)) {
          any = true;
          break;
        }
      if (!any) continue;
      Shard& s = own(i);
      for (auto it = s.begin(); it != s.end();) it = pred(it->first, it->second) ? (--size_, s.erase(it)) : std::next(it);
    }
  }
  void clear() {
    shards_.clear();
    size_ = 0;
  }
  // Visits every entry, f(key, value), in no defined order.
  template <class F>
  void for_each(F f) const {
    for (const auto& s : shards_)
      if (s)
        for (const auto& [k, v] : *s) f(k, v);
  }

 private:
  size_t shard_of(const K& k) const { return Hash{}(k) % kShards; }
  Shard& own(size_t i) {
    if (shards_.empty()) shards_.resize(kShards);
    std::shared_ptr<Shard>& s = shards_[i];
    if (!s) {
      s = std::make_shared<Shard>();
    } else if (s.use_count() > 1) {
      s = std::make_shared<Shard>(*s);  // a copy holds it: this map's own from now on
    } else {
      std::atomic_thread_fence(std::memory_order_acquire);  // see "Thread safety" above
    }
    return *s;
  }

  std::vector<std::shared_ptr<Shard>> shards_;  // [hash % kShards], all null (or none) until written
  size_t size_ = 0;
};

}  // namespace allot
