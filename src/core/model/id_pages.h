#pragma once
// IdPages<T>: a value per job ID, in pages of kPage consecutive IDs, each page allocated when first written.
//
// Job IDs are never reused (job_table.h), so a vector indexed by ID grows with every job ever submitted: after a
// day at 1,000 submissions/s a scheduling pass would allocate and clear gigabytes for its per-job records, and
// each index of waiting or running jobs would hold 4 bytes per job ever. Here an ID range costs 16 bytes per
// kPage IDs until a value in it is written; only the pages of jobs actually touched (waiting or running ones,
// which retention keeps few and recent) hold values.
//
// Close to a vector where the hot paths need it: `resize(n)` covers IDs [0, n), and `operator[]` takes any ID
// below size(). Const access to an ID whose page was never written reads the container's own page of T{}
// (no test on that path); non-const access to it allocates the page first, so a reference written through is
// always the ID's own. release() gives a page back: its IDs read T{} again.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace allot {

template <class T>
class IdPages {
 public:
  static constexpr size_t kShift = 8;
  static constexpr size_t kPage = size_t{1} << kShift;

  IdPages() : blank_(std::make_unique<T[]>(kPage)) {}
  IdPages(const IdPages& o) : IdPages() { *this = o; }
  IdPages& operator=(const IdPages& o) {
    if (this == &o) return *this;
    if (!blank_) blank_ = std::make_unique<T[]>(kPage);  // a moved-from container being reused
    pages_.clear();
    pages_.resize(o.pages_.size());
    at_.assign(o.at_.size(), blank_.get());
    for (size_t p = 0; p < o.pages_.size(); ++p) {
      if (!o.pages_[p]) continue;
      pages_[p] = std::make_unique<T[]>(kPage);
      std::copy(o.pages_[p].get(), o.pages_[p].get() + kPage, pages_[p].get());
      at_[p] = pages_[p].get();
    }
    size_ = o.size_;
    return *this;
  }
  // Moving keeps every buffer, blank_ included, so the pointers stay right.
  IdPages(IdPages&&) noexcept = default;
  IdPages& operator=(IdPages&&) noexcept = default;

  size_t size() const { return size_; }
  // Covers IDs [0, n); IDs added read T{} until written. Never shrinks.
  void resize(size_t n) {
    if (n <= size_) return;
    size_ = n;
    const size_t pages = (n + kPage - 1) >> kShift;
    if (pages > at_.size()) {
      at_.resize(pages, blank_.get());
      pages_.resize(pages);
    }
  }

  const T& operator[](size_t id) const { return at_[id >> kShift][id & (kPage - 1)]; }
  T& operator[](size_t id) {
    T* page = at_[id >> kShift];
    if (page == blank_.get()) [[unlikely]]
      page = allocate(id >> kShift);
    return page[id & (kPage - 1)];
  }

  size_t page_of(size_t id) const { return id >> kShift; }
  // Frees page `p`; its IDs read T{} again.
  void release(size_t p) {
    pages_[p].reset();
    at_[p] = blank_.get();
  }
  size_t pages_allocated() const {
    size_t n = 0;
    for (const auto& p : pages_) n += p != nullptr;
    return n;
  }
  // Calls f(T&) for every value of every allocated page (the others all hold T{}).
  template <class F>
  void for_each_allocated(F&& f) {
    for (auto& p : pages_)
      if (p)
        for (size_t i = 0; i < kPage; ++i) f(p[i]);
  }

 private:
  T* allocate(size_t p) {
    pages_[p] = std::make_unique<T[]>(kPage);
    return at_[p] = pages_[p].get();
  }

  std::vector<T*> at_;                       // [page]: the page's values, or blank_
  std::vector<std::unique_ptr<T[]>> pages_;  // [page]: owned pages, null where never written or released
  std::unique_ptr<T[]> blank_;               // kPage values of T{}: what unwritten IDs read
  size_t size_ = 0;
};

}  // namespace allot
