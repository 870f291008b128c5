// ChunkTable (core/model/chunk_table.h): reads as a plain vector; a view reads as the table did when it was taken,
// whatever the live table does afterwards, and shares with the previous view exactly the chunks not written since.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/model/chunk_table.h"
#include "core/model/state.h"
#include "published_readers.h"
#include "server/writer/server_state.h"

namespace allot::chunk_table_test {
namespace {

using Table = ChunkTable<std::string>;
constexpr size_t kChunk = Table::kChunk;

Table filled(size_t n, const std::string& prefix) {
  Table t;
  for (size_t i = 0; i < n; ++i) t.push_back(prefix + std::to_string(i));
  return t;
}

std::vector<std::string> contents(const Table& t) { return {t.begin(), t.end()}; }

TEST(ChunkTable, ReadsAsAPlainVectorUnderRandomAppendsEditsAndPops) {
  std::mt19937 rng(5);
  Table t;
  std::vector<std::string> plain;
  for (int step = 0; step < 5000; ++step) {
    const int what = static_cast<int>(rng() % 10);
    if (what < 5 || plain.empty()) {
      t.push_back("v" + std::to_string(step));
      plain.push_back("v" + std::to_string(step));
    } else if (what < 8) {
      const size_t i = rng() % plain.size();
      t.edit(i) = "e" + std::to_string(step);
      plain[i] = "e" + std::to_string(step);
    } else {
      t.pop_back();
      plain.pop_back();
    }
    ASSERT_EQ(t.size(), plain.size());
  }
  EXPECT_EQ(contents(t), plain);
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(t.front(), plain.front());
  EXPECT_EQ(t.back(), plain.back());
  // Iterators are random access, for the standard algorithms.
  const auto it = std::find(t.begin(), t.end(), plain[plain.size() / 2]);
  EXPECT_EQ(static_cast<size_t>(it - t.begin()), static_cast<size_t>(std::find(plain.begin(), plain.end(), plain[plain.size() / 2]) - plain.begin()));
  EXPECT_EQ(*(t.begin() + 3), plain[3]);
  EXPECT_EQ(t.end() - t.begin(), static_cast<std::ptrdiff_t>(plain.size()));
  const Table copy = t;
  EXPECT_EQ(copy, t);
  t.edit(0) = "other";
  EXPECT_FALSE(copy == t) << "a copy is a table of its own";
}

TEST(ChunkTable, ReferencesStayValidWhileAppending) {
  Table t;
  t.push_back("first");
  const std::string* first = &t[0];
  std::string& edited = t.edit(0);
  for (size_t i = 1; i < 5 * kChunk; ++i) t.push_back("x");
  EXPECT_EQ(&t[0], first);
  edited = "changed";
  EXPECT_EQ(t[0], "changed");
}

TEST(ChunkTableView, KeepsItsValuesWhenTheLiveTableChanges) {
  Table live = filled(3 * kChunk, "n");
  const Table first = Table::view_of(live, nullptr);
  Table::ViewCost cost;
  const Table second = Table::view_of(live, &first, &cost);
  EXPECT_EQ(cost.chunks_copied, 0u) << "nothing changed since the first view";
  EXPECT_EQ(cost.chunks_shared, 3u);
  live.edit(70) = "changed";
  EXPECT_EQ(first[70], "n70");
  EXPECT_EQ(second[70], "n70") << "a chunk shared between views is never written";
  const Table third = Table::view_of(live, &second, &cost);
  EXPECT_EQ(cost.chunks_copied, 1u) << "only the changed chunk is copied";
  EXPECT_EQ(cost.chunks_shared, 2u);
  EXPECT_EQ(third[70], "changed");
  EXPECT_TRUE(third.shares(0, second)) << "an unchanged chunk is the previous view's";
  EXPECT_FALSE(third.shares(70, second));
  EXPECT_NE(&third[0], &live[0]) << "and never the live table's";
  // Const reads of the live table mark nothing.
  size_t named = 0;
  for (const std::string& s : live) named += s[0] == 'n';
  EXPECT_EQ(live[5], "n5");
  const Table fourth = Table::view_of(live, &third, &cost);
  EXPECT_EQ(cost.chunks_copied, 0u);
  EXPECT_EQ(named, 3 * kChunk - 1);
  (void)fourth;
}

TEST(ChunkTableView, AppendsAndPopsMarkTheLastChunk) {
  Table live = filled(kChunk + 3, "n");
  Table view = Table::view_of(live, nullptr);
  Table::ViewCost cost;
  live.push_back("appended");
  const Table grown = Table::view_of(live, &view, &cost);
  EXPECT_EQ(grown.size(), kChunk + 4);
  EXPECT_EQ(grown.back(), "appended");
  EXPECT_EQ(view.size(), kChunk + 3) << "the view before keeps its size";
  EXPECT_EQ(cost.chunks_copied, 1u);
  EXPECT_EQ(cost.chunks_shared, 1u);
  for (int i = 0; i < 4; ++i) live.pop_back();
  live.pop_back();  // into the first chunk, which the views share
  const Table shrunk = Table::view_of(live, &grown, &cost);
  EXPECT_EQ(shrunk.size(), kChunk - 1);
  EXPECT_EQ(shrunk.back(), "n" + std::to_string(kChunk - 2));
  EXPECT_EQ(grown[kChunk - 1], "n" + std::to_string(kChunk - 1)) << "a view keeps what the live table took back";
  EXPECT_EQ(cost.chunks_copied, 1u);
  live.push_back("again");
  const Table regrown = Table::view_of(live, &shrunk, &cost);
  EXPECT_EQ(regrown.back(), "again");
  EXPECT_EQ(shrunk.back(), "n" + std::to_string(kChunk - 2));
}

TEST(ChunkTableView, SharesNothingWithTheViewOfAnotherTable) {
  Table live = filled(2 * kChunk, "old");
  const Table old_view = Table::view_of(live, nullptr);
  Table rebuilt = filled(2 * kChunk, "new");
  Table::ViewCost cost;
  const Table view = Table::view_of(rebuilt, &old_view, &cost);
  EXPECT_EQ(cost.chunks_shared, 0u);
  EXPECT_EQ(view[0], "new0");
  Table copy = live;
  copy.edit(1) = "copy";
  const Table copy_view = Table::view_of(copy, &old_view, &cost);
  EXPECT_EQ(cost.chunks_shared, 0u);
  EXPECT_EQ(copy_view[1], "copy");
  EXPECT_EQ(old_view[1], "old1");
}

// Random changes and views; every view, read again after all later changes, is the table as it was when taken.
TEST(ChunkTableView, EveryViewReadsAsItsMomentUnderRandomChanges) {
  for (uint32_t seed = 1; seed <= 6; ++seed) {
    std::mt19937 rng(seed);
    Table live;
    std::vector<std::string> plain;
    std::vector<std::pair<Table, std::vector<std::string>>> views;
    size_t shared = 0;
    for (int step = 0; step < 2000; ++step) {
      const int what = static_cast<int>(rng() % 12);
      if (what < 4 || plain.empty()) {
        live.push_back("a" + std::to_string(step));
        plain.push_back("a" + std::to_string(step));
      } else if (what < 8) {
        const size_t i = rng() % plain.size();
        live.edit(i) = "e" + std::to_string(step);
        plain[i] = "e" + std::to_string(step);
      } else if (what < 9) {
        live.pop_back();
        plain.pop_back();
      } else {
        Table::ViewCost cost;
        Table v = Table::view_of(live, views.empty() ? nullptr : &views.back().first, &cost);
        shared += cost.chunks_shared;
        views.emplace_back(std::move(v), plain);
      }
    }
    SCOPED_TRACE("seed " + std::to_string(seed));
    EXPECT_GT(shared, 0u) << "views shared chunks";
    for (size_t v = 0; v < views.size(); ++v) ASSERT_EQ(contents(views[v].first), views[v].second) << "view " << v;
  }
}

// Readers on other threads read views while the owner changes the live table and takes new views: the chunks
// they read are never written (a ThreadSanitizer build reports it if they were).
TEST(ChunkTableView, ReadersOnOtherThreadsSeeEachViewWhole) {
  Table live = filled(8 * kChunk, "");
  for (size_t i = 0; i < live.size(); ++i) live.edit(i) = "0";
  test_support::PublishedReaders<Table> readers(std::make_shared<const Table>(Table::view_of(live, nullptr)), [](const Table& v) {
    int torn = 0;
    for (size_t i = 0; i < v.size(); ++i) torn += v[i] != v[i / kChunk * kChunk];
    return torn;
  });
  for (int round = 1; round <= 200; ++round) {
    const size_t changed = static_cast<size_t>(round) % 8;
    for (size_t i = 0; i < live.size(); ++i)
      if (round % 10 == 0 || i / kChunk == changed) live.edit(i) = std::to_string(round);
    readers.publish(std::make_shared<const Table>(Table::view_of(live, readers.latest())));
  }
  EXPECT_EQ(readers.stop(), 0);
}

// The server's read views: a node's change shows in the next view only, and the chunks of nodes not changed are
// the previous view's.
TEST(ChunkTableView, TheServersViewsShareTheNodesNotChanged) {
  server::ServerState live;
  std::vector<NodeSpec> specs;
  for (size_t i = 0; i < 3 * kChunk; ++i) specs.push_back(NodeSpec{"n" + std::to_string(i), "ml.g5.8xlarge", "", {}});
  ASSERT_TRUE(add_nodes(live.cluster, specs, 0).ok());
  const auto first = server::view_of(live, nullptr);
  ASSERT_TRUE(set_cordon(live.cluster, "n70", true).ok());
  const auto second = server::view_of(live, first.get());
  EXPECT_FALSE(first->cluster.nodes[70].cordoned);
  EXPECT_TRUE(second->cluster.nodes[70].cordoned);
  EXPECT_TRUE(second->cluster.nodes.shares(0, first->cluster.nodes));
  EXPECT_FALSE(second->cluster.nodes.shares(70, first->cluster.nodes));
  EXPECT_EQ(live.cluster.nodes.size(), 3 * kChunk) << "the live table is put back whole";
  EXPECT_TRUE(live.cluster.nodes[70].cordoned);
  EXPECT_EQ(second->cluster.find_node("n100")->id.index(), 100u);
}

}  // namespace
}  // namespace allot::chunk_table_test
