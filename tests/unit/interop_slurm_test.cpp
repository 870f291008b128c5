// Slurm topology.conf: tree (switch hierarchy, host lists), block (Slurm 24.05 syntax), and the auto choice.
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/model/hostlist.h"
#include "interop/slurm_topology.h"

namespace allot::interop::interop_slurm_test {
namespace {

using Labels = std::map<std::string, std::string>;

NodeSpec make_node(const std::string& name, const std::string& type, const Labels& labels) {
  NodeSpec n;
  n.name = name;
  n.instance_type = type;
  n.labels = labels;
  return n;
}

// Nodes from a host list expression, all with the same type and labels.
void add(std::vector<NodeSpec>& nodes, const std::string& hosts, const std::string& type, const Labels& labels) {
  auto names = expand_hostlist(hosts);
  ASSERT_TRUE(names.ok());
  for (auto& n : *names) nodes.push_back(make_node(n, type, labels));
}

Labels net(std::string l1, std::string l2, std::string l3, std::string l4 = "") {
  Labels l{{"network-node-layer-1", l1}, {"network-node-layer-2", l2}, {"network-node-layer-3", l3}};
  if (!l4.empty()) l["network-node-layer-4"] = l4;
  return l;
}

Labels with(Labels l, const std::string& k, const std::string& v) {
  l[k] = v;
  return l;
}

// A parsed topology.conf: name -> the names (expanded) listed after Nodes= or Switches=.
struct Parsed {
  std::map<std::string, std::vector<std::string>> leaf, upper, blocks;
  std::vector<long> block_sizes;
  std::vector<std::string> comments;
};

Parsed parse(const std::string& text) {
  Parsed p;
  std::istringstream in(text);
  std::string line;
  static const std::regex switch_re(R"(^SwitchName=([A-Za-z0-9_-]+) (Nodes|Switches)=(\S+)(  # .*)?$)");
  static const std::regex block_re(R"(^BlockName=([A-Za-z0-9_-]+) Nodes=(\S+)(  # .*)?$)");
  static const std::regex sizes_re(R"(^BlockSizes=(\d+(,\d+)*)$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (line.rfind("#", 0) == 0) {
      p.comments.push_back(line);
    } else if (std::regex_match(line, m, switch_re)) {
      auto names = expand_hostlist(m[3].str());
      EXPECT_TRUE(names.ok()) << line;
      (m[2] == "Nodes" ? p.leaf : p.upper)[m[1]] = *names;
    } else if (std::regex_match(line, m, block_re)) {
      auto names = expand_hostlist(m[2].str());
      EXPECT_TRUE(names.ok()) << line;
      p.blocks[m[1]] = *names;
    } else if (std::regex_match(line, m, sizes_re)) {
      std::istringstream s(m[1].str());
      for (std::string v; std::getline(s, v, ',');) p.block_sizes.push_back(std::stol(v));
    } else {
      ADD_FAILURE() << "not Slurm topology.conf syntax: '" << line << "'";
    }
  }
  return p;
}

// Every node on exactly one leaf switch, every switch but one (the top) the child of exactly one switch.
void expect_valid_tree(const Parsed& p, size_t node_count) {
  std::multiset<std::string> nodes, children;
  for (auto& [s, ns] : p.leaf) nodes.insert(ns.begin(), ns.end());
  for (auto& [s, cs] : p.upper) {
    for (auto& c : cs) EXPECT_TRUE(p.leaf.count(c) || p.upper.count(c)) << "unknown child switch " << c;
    children.insert(cs.begin(), cs.end());
  }
  EXPECT_EQ(nodes.size(), node_count);
  EXPECT_EQ(std::set<std::string>(nodes.begin(), nodes.end()).size(), node_count);
  EXPECT_EQ(children.size(), p.leaf.size() + p.upper.size() - 1);
}

bool has_comment(const Parsed& p, const std::string& part) {
  for (auto& c : p.comments)
    if (c.find(part) != std::string::npos) return true;
  return false;
}

TEST(InteropSlurmTree, TwoLeavesUnderOneSpine) {
  std::vector<NodeSpec> nodes;
  add(nodes, "gpu-[5-8]", "ml.p5.48xlarge", with(net("spine-1", "agg-1", "leaf-b"), "zone", "us-east-1a"));
  add(nodes, "gpu-[1-4]", "ml.p5.48xlarge", with(net("spine-1", "agg-1", "leaf-a"), "zone", "us-east-1a"));
  auto text = slurm_tree_conf(nodes);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_EQ(*text,
            "# Slurm topology.conf for TopologyPlugin=topology/tree, written by allot topology slurm-conf\n"
            "# 8 nodes, 5 switches, 4 levels (Slurm's Level 0 is the leaf switches)\n"
            "SwitchName=leaf-a Nodes=gpu-[1-4]  # network-node-layer-3\n"
            "SwitchName=leaf-b Nodes=gpu-[5-8]  # network-node-layer-3\n"
            "SwitchName=agg-1 Switches=leaf-a,leaf-b  # network-node-layer-2\n"
            "SwitchName=spine-1 Switches=agg-1  # network-node-layer-1\n"
            "SwitchName=us-east-1a Switches=spine-1  # zone\n");
  expect_valid_tree(parse(*text), 8);
}

TEST(InteropSlurmTree, CompressesHostListsAndJoinsTopLevelSwitchesUnderARoot) {
  std::vector<NodeSpec> nodes;
  add(nodes, "gpu-[1-4,7]", "ml.p5.48xlarge", net("s1", "a1", "l1"));
  add(nodes, "gpu-[5-6,8]", "ml.p5.48xlarge", net("s1", "a1", "l2"));
  add(nodes, "gpu-[9-12]", "ml.p5.48xlarge", net("s2", "a2", "l3"));
  auto text = slurm_tree_conf(nodes);
  ASSERT_TRUE(text.ok()) << text.error().message;
  Parsed p = parse(*text);
  expect_valid_tree(p, 12);
  EXPECT_NE(text->find("SwitchName=l1 Nodes=gpu-[1-4,7]"), std::string::npos) << *text;
  EXPECT_EQ(text->find("SwitchName=l[1-2]"), std::string::npos) << "a SwitchName line names one switch";
  EXPECT_NE(text->find("SwitchName=a1 Switches=l[1-2]"), std::string::npos) << *text;
  EXPECT_NE(text->find("SwitchName=root Switches=s[1-2]"), std::string::npos) << *text;
  EXPECT_TRUE(has_comment(p, "\"root\" joins the top-level domains"));
}

TEST(InteropSlurmTree, ThreeAndFourLayerNodesUnderOneSwitch) {
  std::vector<NodeSpec> nodes;
  add(nodes, "p5-[1-2]", "ml.p5.48xlarge", net("t", "m", "b"));
  add(nodes, "b200-[1-2]", "ml.p6-b200.48xlarge", net("t", "m", "b", "x"));
  auto text = slurm_tree_conf(nodes);
  ASSERT_TRUE(text.ok()) << text.error().message;
  Parsed p = parse(*text);
  expect_valid_tree(p, 4);
  // Slurm rejects a switch with both Nodes= and Switches=, so the 3-layer nodes get their own leaf.
  EXPECT_EQ(p.leaf.at("b-nodes"), (std::vector<std::string>{"p5-1", "p5-2"}));
  EXPECT_EQ(p.leaf.at("x"), (std::vector<std::string>{"b200-1", "b200-2"}));
  EXPECT_EQ(p.upper.at("b"), (std::vector<std::string>{"b-nodes", "x"}));
}

TEST(InteropSlurmTree, SanitizesAndDisambiguatesSwitchNames) {
  std::vector<NodeSpec> nodes;
  add(nodes, "a-1", "ml.p5.48xlarge", net("top", "nn/1 x.y", "leaf"));
  add(nodes, "a-2", "ml.p5.48xlarge", net("top", "nn-2", "leaf"));
  auto text = slurm_tree_conf(nodes);
  ASSERT_TRUE(text.ok()) << text.error().message;
  Parsed p = parse(*text);
  expect_valid_tree(p, 2);
  EXPECT_TRUE(p.upper.count("nn_1_x_y")) << *text;
  EXPECT_TRUE(p.leaf.count("leaf") && p.leaf.count("leaf-2")) << *text;
  EXPECT_EQ(slurm_safe_name(std::string(100, 'a')).size(), 48u);
  EXPECT_EQ(slurm_safe_name(""), "unnamed");
}

TEST(InteropSlurmTree, NodesWithoutNetworkLabels) {
  std::vector<NodeSpec> flat;
  add(flat, "cpu-[1-3]", "ml.m5.xlarge", {});
  auto text = slurm_tree_conf(flat);
  ASSERT_TRUE(text.ok());
  Parsed p = parse(*text);
  EXPECT_EQ(p.leaf.size(), 1u);
  EXPECT_EQ(p.leaf.at("cluster").size(), 3u);
  EXPECT_TRUE(has_comment(p, "one flat switch"));

  std::vector<NodeSpec> some = flat;
  add(some, "gpu-[1-2]", "ml.p5.48xlarge", net("t", "m", "b"));
  text = slurm_tree_conf(some);
  ASSERT_TRUE(text.ok());
  p = parse(*text);
  expect_valid_tree(p, 5);
  EXPECT_EQ(p.leaf.at("unlabeled").size(), 3u);
  EXPECT_TRUE(has_comment(p, "cpu-[1-3]"));
}

TEST(InteropSlurmTree, RejectsNamesSlurmCannotRead) {
  std::vector<NodeSpec> nodes = {make_node("a,b", "ml.p5.48xlarge", {})};
  EXPECT_FALSE(slurm_tree_conf(nodes).ok());
  EXPECT_FALSE(slurm_tree_conf({}).ok());
}

class InteropSlurmBlock : public ::testing::Test {
 protected:
  Catalog catalog = Catalog::builtin();
  const std::string gb = "ml.p6e-gb200.36xlarge";
};

TEST_F(InteropSlurmBlock, OneBlockPerUltraServerWithBlockSizes) {
  std::vector<NodeSpec> nodes;
  add(nodes, "gb-[19-36]", gb, with(net("t", "m", "b2"), "ultraserver", "us-b"));
  add(nodes, "gb-[1-18]", gb, with(net("t", "m", "b1"), "ultraserver", "us-a"));
  auto text = slurm_block_conf(nodes, catalog);
  ASSERT_TRUE(text.ok()) << text.error().message;
  EXPECT_NE(text->find("BlockName=us-a Nodes=gb-[1-18]\nBlockName=us-b Nodes=gb-[19-36]\n"), std::string::npos)
      << *text;
  Parsed p = parse(*text);
  EXPECT_EQ(p.blocks.size(), 2u);
  EXPECT_EQ(p.block_sizes, (std::vector<long>{18, 36}));
}

TEST_F(InteropSlurmBlock, BlockSizesFollowSlurmRules) {
  // Five UltraServers, one of them short of two nodes: the base must be the smallest block (Slurm refuses a
  // block with fewer nodes than the base), then base x 2^k up to the number of blocks.
  std::vector<NodeSpec> nodes;
  for (int u = 0; u < 5; ++u) {
    int first = u * 18 + 1, last = u * 18 + (u == 3 ? 16 : 18);
    add(nodes, "gb-[" + std::to_string(first) + "-" + std::to_string(last) + "]", gb,
        with(net("t", "m", "b" + std::to_string(u)), "ultraserver", "us-" + std::to_string(u)));
  }
  auto text = slurm_block_conf(nodes, catalog);
  ASSERT_TRUE(text.ok()) << text.error().message;
  Parsed p = parse(*text);
  ASSERT_FALSE(p.block_sizes.empty());
  EXPECT_EQ(p.block_sizes, (std::vector<long>{16, 32, 64}));
  size_t total = 0;
  for (auto& [name, ns] : p.blocks) {
    EXPECT_GE(long(ns.size()), p.block_sizes[0]) << name;
    total += ns.size();
  }
  EXPECT_EQ(total, nodes.size());
  for (size_t i = 1; i < p.block_sizes.size(); ++i) {
    long ratio = p.block_sizes[i] / p.block_sizes[0];
    EXPECT_EQ(p.block_sizes[i] % p.block_sizes[0], 0);
    EXPECT_EQ(ratio & (ratio - 1), 0) << "each size is the base times a power of two";
  }
}

TEST_F(InteropSlurmBlock, BlocksAreListedInNetworkOrder) {
  std::vector<NodeSpec> nodes;
  add(nodes, "gb-[1-18]", gb, with(net("t", "m", "b2"), "ultraserver", "aaa"));
  add(nodes, "gb-[19-36]", gb, with(net("t", "m", "b1"), "ultraserver", "zzz"));
  auto text = slurm_block_conf(nodes, catalog);
  ASSERT_TRUE(text.ok());
  EXPECT_LT(text->find("BlockName=zzz"), text->find("BlockName=aaa")) << *text;
}

TEST_F(InteropSlurmBlock, ErrorsSayWhatIsWrong) {
  std::vector<NodeSpec> nodes;
  add(nodes, "gb-[1-18]", gb, with(net("t", "m", "b"), "ultraserver", "us-a"));
  add(nodes, "gb-[19-20]", gb, net("t", "m", "b"));
  auto missing = slurm_block_conf(nodes, catalog);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("2 nodes have no ultraserver-id label (gb-[19-20])"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().message.find("--plugin tree"), std::string::npos);

  std::vector<NodeSpec> big;
  add(big, "gb-[1-19]", gb, {{"ultraserver", "us-a"}});
  auto overflow = slurm_block_conf(big, catalog);
  ASSERT_FALSE(overflow.ok());
  EXPECT_NE(overflow.error().message.find("holds 18"), std::string::npos) << overflow.error().message;
}

TEST(InteropSlurmAuto, ChoosesBlockOnlyForOneUltraServerType) {
  Catalog catalog = Catalog::builtin();
  std::vector<NodeSpec> us;
  add(us, "gb-[1-18]", "p6e-gb200.36xlarge", with(net("t", "m", "b"), "ultraserver", "us-a"));
  auto block = slurm_topology_conf(us, catalog, SlurmPlugin::kAuto);
  ASSERT_TRUE(block.ok()) << block.error().message;
  EXPECT_EQ(block->plugin, SlurmPlugin::kBlock);
  EXPECT_EQ(block->text.rfind("# block: every node is a ml.p6e-gb200.36xlarge", 0), 0u) << block->text;

  std::vector<NodeSpec> mixed = us;
  add(mixed, "p5-[1-4]", "ml.p5.48xlarge", net("t", "m", "c"));
  auto tree = slurm_topology_conf(mixed, catalog, SlurmPlugin::kAuto);
  ASSERT_TRUE(tree.ok()) << tree.error().message;
  EXPECT_EQ(tree->plugin, SlurmPlugin::kTree);
  EXPECT_EQ(tree->text.rfind("# tree: the cluster mixes instance types (ml.p5.48xlarge, ml.p6e-gb200.36xlarge)", 0),
            0u)
      << tree->text;
  expect_valid_tree(parse(tree->text), 22);

  std::vector<NodeSpec> p5;
  add(p5, "p5-[1-4]", "ml.p5.48xlarge", net("t", "m", "c"));
  auto plain = slurm_topology_conf(p5, catalog, SlurmPlugin::kAuto);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->plugin, SlurmPlugin::kTree);
  EXPECT_NE(plain->reason.find("has no UltraServers"), std::string::npos);

  std::vector<NodeSpec> partial = us;
  add(partial, "gb-[19-20]", "ml.p6e-gb200.36xlarge", net("t", "m", "b"));
  auto part = slurm_topology_conf(partial, catalog, SlurmPlugin::kAuto);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(part->plugin, SlurmPlugin::kTree);
  EXPECT_NE(part->reason.find("2 nodes have no ultraserver-id label (gb-[19-20])"), std::string::npos) << part->reason;

  auto asked = slurm_topology_conf(p5, catalog, SlurmPlugin::kTree);
  ASSERT_TRUE(asked.ok());
  EXPECT_TRUE(asked->reason.empty());
  EXPECT_FALSE(slurm_topology_conf(p5, catalog, SlurmPlugin::kBlock).ok());
}

TEST(InteropSlurmAuto, ParsesPluginNames) {
  EXPECT_EQ(*parse_slurm_plugin("tree"), SlurmPlugin::kTree);
  EXPECT_EQ(*parse_slurm_plugin("block"), SlurmPlugin::kBlock);
  EXPECT_EQ(*parse_slurm_plugin("auto"), SlurmPlugin::kAuto);
  EXPECT_FALSE(parse_slurm_plugin("torus").ok());
}

}  // namespace
}  // namespace allot::interop::interop_slurm_test
