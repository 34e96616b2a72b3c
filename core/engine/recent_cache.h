// RecentCache: the last few results of an expensive computation (drawn parameters, packed weights),
// most recent first, bounded by count and by bytes. The newest entry is always kept; older ones go
// once the entries together would hold more than the byte bound, so a module of 4096-wide weights
// is kept once, not four times, while the book's small modules keep their undo/redo neighbours.
// Thread-safe.
#pragma once
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <utility>

namespace attnscope {

template <class Key, class Value>
class RecentCache {
 public:
  RecentCache(std::size_t max_entries, std::size_t max_bytes) : max_entries_(max_entries), max_bytes_(max_bytes) {}

  // The value of the first key `match` accepts, moved to the front; none if no key matches.
  template <class Match>
  std::optional<Value> find(const Match& match) {
    const std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (match(it->key)) {
        entries_.splice(entries_.begin(), entries_, it);
        return it->value;
      }
    return std::nullopt;
  }

  // Kept first; the oldest go while there are too many or they hold too much.
  void insert(Key key, Value value, std::size_t bytes) {
    const std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_front({std::move(key), std::move(value), bytes});
    std::size_t total = 0, kept = 0;
    for (auto it = entries_.begin(); it != entries_.end(); ++kept) {
      total += it->bytes;
      if (kept > 0 && (kept >= max_entries_ || total > max_bytes_))
        it = entries_.erase(it);
      else
        ++it;
    }
  }

 private:
  struct Entry {
    Key key;
    Value value;
    std::size_t bytes;
  };
  const std::size_t max_entries_, max_bytes_;
  std::mutex mutex_;
  std::list<Entry> entries_;
};

}  // namespace attnscope
