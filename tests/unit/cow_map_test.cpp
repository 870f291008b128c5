// CowMap (core/model/cow_map.h): copies share shards until one writes; a copy reads as the map did when it was made,
// whatever the map does afterwards, and the other way round.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/model/cow_map.h"
#include "published_readers.h"

namespace allot::cow_map_test {
namespace {

using Map = CowMap<uint32_t, std::string>;

std::map<uint32_t, std::string> contents(const Map& m) {
  std::map<uint32_t, std::string> out;
  m.for_each([&](uint32_t k, const std::string& v) { EXPECT_TRUE(out.emplace(k, v).second) << "key " << k << " twice"; });
  EXPECT_EQ(out.size(), m.size());
  return out;
}

TEST(CowMap, ACopyKeepsItsValuesWhateverTheOriginalWrites) {
  Map live;
  for (uint32_t k = 0; k < 5000; ++k) live.insert_or_assign(k, "v" + std::to_string(k));
  const Map copy = live;
  const auto before = contents(copy);
  live.insert_or_assign(7, "changed");
  live.insert_or_assign(90000, "new");
  EXPECT_TRUE(live.erase(8));
  EXPECT_FALSE(live.erase(8));
  *live.find_mutable(9) = "in place";
  EXPECT_EQ(live.find_mutable(123456), nullptr);
  live.erase_if([](uint32_t k, const std::string&) { return k >= 4000 && k < 4100; });
  EXPECT_EQ(contents(copy), before) << "the copy reads as the map did when it was made";
  EXPECT_EQ(*live.find(7), "changed");
  EXPECT_EQ(*live.find(9), "in place");
  EXPECT_EQ(live.find(8), nullptr);
  EXPECT_EQ(live.find(4050), nullptr);
  EXPECT_EQ(*copy.find(4050), "v4050");
  EXPECT_EQ(live.size(), 5000u + 1 - 1 - 100);
  // Unchanged shards are the same memory in both (key 500's shard had no write); a changed one is not.
  EXPECT_EQ(live.find(500), copy.find(500));
  EXPECT_NE(live.find(7), copy.find(7));
}

TEST(CowMap, TheOriginalKeepsItsValuesWhenACopyWrites) {
  CowMap<std::string, int> live;
  live.insert_or_assign("a", 1);
  live.insert_or_assign("b", 2);
  CowMap<std::string, int> copy = live;
  copy.insert_or_assign("a", 10);
  copy.erase("b");
  EXPECT_EQ(*live.find("a"), 1);
  EXPECT_EQ(*live.find("b"), 2);
  EXPECT_EQ(*copy.find("a"), 10);
  EXPECT_FALSE(copy.contains("b"));
  EXPECT_EQ(live.size(), 2u);
  EXPECT_EQ(copy.size(), 1u);
}

TEST(CowMap, EveryCopyReadsAsItsMomentUnderRandomWrites) {
  std::mt19937 rng(3);
  Map live;
  std::map<uint32_t, std::string> plain;
  std::vector<std::pair<Map, std::map<uint32_t, std::string>>> copies;
  for (int step = 0; step < 20000; ++step) {
    const uint32_t k = rng() % 3000;
    switch (rng() % 8) {
      case 0: case 1: case 2: {
        const std::string v = std::to_string(step);
        live.insert_or_assign(k, v);
        plain[k] = v;
        break;
      }
      case 3:
        EXPECT_EQ(live.erase(k), plain.erase(k) == 1);
        break;
      case 4:
        if (std::string* v = live.find_mutable(k)) {
          *v += "+";
          plain[k] += "+";
        } else {
          EXPECT_FALSE(plain.contains(k));
        }
        break;
      case 5:
        if (step % 50 == 0) {
          const uint32_t mod = 1 + rng() % 7;
          live.erase_if([&](uint32_t key, const std::string&) { return key % 97 == mod; });
          std::erase_if(plain, [&](const auto& e) { return e.first % 97 == mod; });
        }
        break;
      default:
        if (step % 40 == 0) copies.emplace_back(live, plain);
    }
  }
  EXPECT_EQ(contents(live), plain);
  for (size_t c = 0; c < copies.size(); ++c) ASSERT_EQ(contents(copies[c].first), copies[c].second) << "copy " << c;
}

// edit() inserts a value-initialised entry when the key is absent and changes it in place otherwise; emplace()
// never overwrites; a copy keeps what it had either way.
TEST(CowMap, EditInsertsOrChangesAndCopiesKeepTheirs) {
  Map live;
  live.insert_or_assign(1, "one");
  const Map copy = live;
  EXPECT_EQ(live.edit(2), "");
  EXPECT_EQ(live.size(), 2u);
  live.edit(2) = "two";
  live.edit(1) += "!";
  EXPECT_FALSE(live.emplace(1, "uno"));
  EXPECT_TRUE(live.emplace(3, "three"));
  EXPECT_EQ(live.size(), 3u);
  EXPECT_EQ(*live.find(1), "one!");
  EXPECT_EQ(*live.find(2), "two");
  EXPECT_EQ(*live.find(3), "three");
  EXPECT_EQ(copy.size(), 1u);
  EXPECT_EQ(*copy.find(1), "one");
  EXPECT_FALSE(copy.contains(2));
}

// Readers on other threads read and drop copies while the owner writes: a shard a copy holds is never written
// (a ThreadSanitizer build reports it if it were).
TEST(CowMap, CopiesReadOnOtherThreadsStayWhole) {
  Map live;
  for (uint32_t k = 0; k < 4096; ++k) live.insert_or_assign(k, "0");
  // Each round sets every key of one shard's stride to the round: within a copy, keys k and k + kShards (the same
  // shard) always agree.
  test_support::PublishedReaders<Map> readers(std::make_shared<const Map>(live), [](const Map& m) {
    int torn = 0;
    for (uint32_t k = 0; k + Map::kShards < 4096; ++k) torn += *m.find(k) != *m.find(k + Map::kShards);
    return torn;
  });
  for (int round = 1; round <= 300; ++round) {
    const uint32_t shard = static_cast<uint32_t>(round) % Map::kShards;
    for (uint32_t k = shard; k < 4096; k += Map::kShards) *live.find_mutable(k) = std::to_string(round);
    readers.publish(std::make_shared<const Map>(live));
  }
  EXPECT_EQ(readers.stop(), 0);
}

}  // namespace
}  // namespace allot::cow_map_test
