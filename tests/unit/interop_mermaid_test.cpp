// Mermaid flowchart of the topology: valid ids, every node drawn or summarized, counts in the labels.
#include <regex>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "core/model/hostlist.h"
#include "interop/mermaid.h"

namespace allot::interop::interop_mermaid_test {
namespace {

NodeSpec make_node(const std::string& name, std::map<std::string, std::string> labels) {
  NodeSpec n;
  n.name = name;
  n.instance_type = "ml.p5.48xlarge";
  n.labels = std::move(labels);
  return n;
}

std::vector<NodeSpec> cluster() {
  std::vector<NodeSpec> nodes;
  auto add = [&](const std::string& hosts, std::map<std::string, std::string> labels) {
    auto names = expand_hostlist(hosts);  // kept alive: the loop below borrows from it
    for (auto& n : *names) nodes.push_back(make_node(n, labels));
  };
  add("gpu-[1-16]", {{"zone", "us-east-1a"}, {"network-node-layer-1", "nn-1"}, {"network-node-layer-2", "nn-2"},
                     {"network-node-layer-3", "nn-3a"}});
  add("gpu-[17-18]", {{"zone", "us-east-1a"}, {"network-node-layer-1", "nn-1"}, {"network-node-layer-2", "nn-2"},
                      {"network-node-layer-3", "nn \"3b\" <x>"}});
  add("end", {{"zone", "us-east-1a"}, {"network-node-layer-1", "nn-1"}, {"network-node-layer-2", "nn-2"},
              {"network-node-layer-3", "nn-3c"}, {"ultraserver", "us-1"}});
  return nodes;
}

struct Chart {
  std::map<std::string, std::string> boxes;  // id -> label
  std::vector<std::pair<std::string, std::string>> edges;
};

Chart parse(const std::string& text) {
  Chart c;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "flowchart TD");
  static const std::regex box(R"re(^  ([A-Za-z][A-Za-z0-9_]*)\["([^"]*)"\]:::(dom|host)$)re");
  static const std::regex edge(R"(^  ([A-Za-z][A-Za-z0-9_]*) --> ([A-Za-z][A-Za-z0-9_]*)$)");
  static const std::regex cls(R"(^  classDef \w+ .*$)");
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, box)) {
      EXPECT_TRUE(c.boxes.emplace(m[1], m[2]).second) << "duplicate id " << m[1];
    } else if (std::regex_match(line, m, edge)) {
      c.edges.emplace_back(m[1], m[2]);
    } else {
      EXPECT_TRUE(std::regex_match(line, cls)) << "unexpected line '" << line << "'";
    }
  }
  for (auto& [a, b] : c.edges) EXPECT_TRUE(c.boxes.count(a) && c.boxes.count(b)) << a << " --> " << b;
  return c;
}

TEST(InteropMermaid, IdsAreValidAndEveryNodeIsDrawnOrSummarized) {
  auto nodes = cluster();
  auto text = topology_mermaid(nodes);
  ASSERT_TRUE(text.ok()) << text.error().message;
  Chart c = parse(*text);
  std::set<std::string> seen;
  for (auto& [id, label] : c.boxes) {
    EXPECT_NE(id, "end");
    // A summarized group reads "gpu-[1-16] (16 nodes)"; its host list must expand to exactly its nodes.
    std::smatch m;
    static const std::regex group(R"(^(\S+) \((\d+) nodes\)$)");
    if (std::regex_match(label, m, group)) {
      auto names = expand_hostlist(m[1].str());
      ASSERT_TRUE(names.ok()) << label;
      EXPECT_EQ(names->size(), std::stoul(m[2]));
      seen.insert(names->begin(), names->end());
    } else if (label.find("<br/>") == std::string::npos) {
      seen.insert(label);
    }
  }
  EXPECT_EQ(seen.size(), nodes.size());
  for (auto& n : nodes) EXPECT_TRUE(seen.count(n.name)) << n.name;
}

TEST(InteropMermaid, LabelsShowLevelsCountsAndEscapedText) {
  auto text = topology_mermaid(cluster());
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("[\"zone: us-east-1a<br/>19 nodes\"]"), std::string::npos) << *text;
  EXPECT_NE(text->find("[\"layer 3: nn-3a<br/>16 nodes\"]"), std::string::npos) << *text;
  EXPECT_NE(text->find("[\"gpu-[1-16] (16 nodes)\"]"), std::string::npos) << *text;
  EXPECT_NE(text->find("[\"UltraServer: us-1<br/>1 node\"]"), std::string::npos) << *text;
  EXPECT_NE(text->find("nn #quot;3b#quot; #lt;x#gt;"), std::string::npos) << *text;
  EXPECT_NE(text->find("[\"gpu-17\"]"), std::string::npos) << "small groups list each node";
}

TEST(InteropMermaid, SeveralTopDomainsHangOffTheCluster) {
  std::vector<NodeSpec> nodes = {make_node("a", {{"network-node-layer-1", "x"}}),
                                 make_node("b", {{"network-node-layer-1", "y"}}), make_node("c", {})};
  auto text = topology_mermaid(nodes, {.max_nodes_per_group = 1});
  ASSERT_TRUE(text.ok());
  Chart c = parse(*text);
  EXPECT_NE(text->find("[\"cluster<br/>3 nodes\"]"), std::string::npos) << *text;
  EXPECT_EQ(c.edges.size(), c.boxes.size() - 1) << "a tree: one edge into every box but the root";
}

TEST(InteropMermaid, Errors) {
  EXPECT_FALSE(topology_mermaid({}).ok());
  EXPECT_FALSE(topology_mermaid({make_node("a", {})}, {.max_nodes_per_group = 0}).ok());
  EXPECT_EQ(mermaid_id("n1_", "nn-1/a b"), "n1_nn_1_a_b");
  EXPECT_EQ(mermaid_id("", "9lives"), "n9lives");
}

}  // namespace
}  // namespace allot::interop::interop_mermaid_test
