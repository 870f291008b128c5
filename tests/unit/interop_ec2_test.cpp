// EC2 describe-instance-topology JSON -> nodes with topology labels.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "core/placement/topology_levels.h"
#include "interop/ec2_topology.h"

namespace allot::interop::interop_ec2_test {
namespace {

std::string data(const std::string& name) {
  std::ifstream in(std::string(ALLOT_SOURCE_DIR) + "/tests/data/topology/" + name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const std::string kL1 = "topology.k8s.aws/network-node-layer-1";
const std::string kL3 = "topology.k8s.aws/network-node-layer-3";
const std::string kL4 = "topology.k8s.aws/network-node-layer-4";
const std::string kZone = "topology.kubernetes.io/zone";
const std::string kUs = "topology.k8s.aws/ultraserver-id";

class InteropEc2 : public ::testing::Test {
 protected:
  Catalog catalog = Catalog::builtin();
  std::string error_of(const std::string& json) {
    auto r = import_ec2_topology(json, catalog);
    EXPECT_FALSE(r.ok()) << json;
    return r.ok() ? "" : r.error().message;
  }
};

TEST_F(InteropEc2, ThreeLayersTopToBottom) {
  auto r = import_ec2_topology(data("ec2_p5_3layer.json"), catalog);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 3u);
  const NodeSpec& n = r->nodes[2];
  EXPECT_EQ(n.name, "i-0a1b2c3d4e5f60003");
  EXPECT_EQ(n.instance_type, "ml.p5.48xlarge");
  EXPECT_EQ(n.labels.at(kL1), "nn-5f1a2b3c4d5e6f701");  // listed first: the top layer
  EXPECT_EQ(n.labels.at(kL3), "nn-1c2d3e4f5a6b7c802");  // listed last: attached to the instance
  EXPECT_EQ(n.labels.at(kZone), "us-east-1b");
  EXPECT_EQ(n.labels.count(kL4), 0u);
  EXPECT_EQ(n.labels.count(kUs), 0u);
  EXPECT_TRUE(r->warnings.empty());
}

TEST_F(InteropEc2, FourLayersZoneIdFallbackAndNextTokenWarning) {
  auto r = import_ec2_topology(data("ec2_p6_b200_4layer.json"), catalog);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 2u);
  EXPECT_EQ(r->nodes[0].labels.at(kL4), "nn-dd01");
  EXPECT_EQ(r->nodes[1].labels.at(kL4), "nn-dd02");
  EXPECT_EQ(r->nodes[1].labels.at(kZone), "usw2-az1");  // no AvailabilityZone: the zone id names the zone
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("NextToken"), std::string::npos);
}

TEST_F(InteropEc2, UltraServerFromCapacityBlockId) {
  auto r = import_ec2_topology(data("ec2_p6e_ultraserver.json"), catalog);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->nodes.size(), 4u);
  EXPECT_EQ(r->nodes[0].instance_type, "ml.p6e-gb200.36xlarge");
  EXPECT_EQ(r->nodes[0].labels.at(kUs), "cr-0us0000000000001");
  EXPECT_EQ(r->nodes[2].labels.at(kUs), "cr-0us0000000000002");
  // CapacityBlockId null (EC2 is eventually consistent): no label, and a warning naming the instance.
  EXPECT_EQ(r->nodes[3].labels.count(kUs), 0u);
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("i-0e00000000000e004"), std::string::npos);
}

TEST_F(InteropEc2, CapacityBlockOfATypeWithoutUltraServersIsIgnored) {
  auto r = import_ec2_topology(R"({"Instances":[{"InstanceId":"i-1","InstanceType":"p5.48xlarge",
      "NetworkNodes":["a","b","c"],"AvailabilityZone":"z","CapacityBlockId":"cr-1"}]})",
                               catalog);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes[0].labels.count(kUs), 0u);
  EXPECT_EQ(r->warnings.size(), 1u);
}

TEST_F(InteropEc2, UnknownTypeIsKeptWithAWarning) {
  auto r = import_ec2_topology(R"({"Instances":[{"InstanceId":"i-1","InstanceType":"hpc7a.96xlarge",
      "NetworkNodes":["a","b","c"],"AvailabilityZone":"z"}]})",
                               catalog);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes[0].instance_type, "ml.hpc7a.96xlarge");
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("not in the catalog"), std::string::npos);
}

TEST_F(InteropEc2, MalformedInputsNameTheInstanceAndTheProblem) {
  EXPECT_NE(error_of(data("ec2_truncated.json")).find("not valid JSON"), std::string::npos);
  std::string layers = error_of(data("ec2_bad_layers.json"));
  EXPECT_NE(layers.find("Instances[1] (i-0badlayers)"), std::string::npos) << layers;
  EXPECT_NE(layers.find("NetworkNodes: network layers: 2 given; EC2 lists 3 or 4"), std::string::npos) << layers;
  EXPECT_NE(error_of(R"({"Instances": [], "Huge": 1e400})").find("not valid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"([1,2])").find("\"Instances\""), std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": {}})").find("must be an array"), std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": []})").find("empty"), std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceType": "p5.48xlarge"}]})").find("Instances[0] has no InstanceId"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "NetworkNodes": ["a","b","c"]}]})")
                .find("(i-1) has no InstanceType"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "InstanceType": "p5.48xlarge"}]})")
                .find("(i-1) has no NetworkNodes"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "InstanceType": "p5.48xlarge",
                          "NetworkNodes": ["a", 7, "c"], "AvailabilityZone": "z"}]})")
                .find("NetworkNodes[1] must be a string, not number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "InstanceType": "p5.48xlarge",
                          "NetworkNodes": ["a", "", "c"], "AvailabilityZone": "z"}]})")
                .find("(i-1): NetworkNodes: network layer 2 is empty"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": 5}]})").find("InstanceId must be a string"), std::string::npos);
  // Found by fuzz/ec2_topology_fuzz.cpp: such ids made a nodes file that read back as other nodes, or not at all.
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1,i-2", "InstanceType": "p5.48xlarge"}]})")
                .find("InstanceId 'i-1,i-2' cannot name a node"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-[1-3]", "InstanceType": "p5.48xlarge"}]})")
                .find("cannot name a node"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "InstanceType": "p5.48xlarge\u0000"}]})")
                .find("InstanceType contains a control character"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"Instances": [{"InstanceId": "i-1", "InstanceType": "p5.48xlarge",
                          "NetworkNodes": ["a","b","c"]}]})")
                .find("neither AvailabilityZone nor ZoneId"),
            std::string::npos);
  std::string one = R"({"InstanceId": "i-1", "InstanceType": "p5.48xlarge", "NetworkNodes": ["a","b","c"],
                        "AvailabilityZone": "z"})";
  EXPECT_NE(error_of("{\"Instances\": [" + one + "," + one + "]}").find("more than once"), std::string::npos);
}

// The instances as read for `allot topology apply` and `allot agent --ec2-topology`: each entry's layers, found
// by instance id; the imported nodes carry that id as a label, so an apply matches them too.
TEST_F(InteropEc2, InstancesFoundByIdAndImportedNodesCarryTheirId) {
  auto parsed = parse_ec2_instances(data("ec2_p6_b200_4layer.json"));
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  ASSERT_EQ(parsed->instances.size(), 2u);
  const Ec2Instance* second = find_instance(*parsed, parsed->instances[1].id);
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->network_nodes.size(), 4u);
  EXPECT_EQ(second->network_nodes.back(), "nn-dd02");
  EXPECT_EQ(find_instance(*parsed, "i-0nosuchinstance"), nullptr);
  auto r = import_ec2_topology(data("ec2_p5_3layer.json"), catalog);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->nodes[0].labels.at(std::string(kInstanceIdLabel)), r->nodes[0].name);
}

// The one rule for layers, wherever they come from (a file, a registration, an apply request, a record).
TEST(NetworkLayersRule, ThreeOrFourNonEmptyPrintableLayers) {
  EXPECT_TRUE(check_network_layers({"a", "b", "c"}).ok());
  EXPECT_TRUE(check_network_layers({"a", "b", "c", "d"}).ok());
  auto msg = [](std::vector<std::string> l) {
    auto st = check_network_layers(l);
    return st.ok() ? std::string("ok") : st.error().message;
  };
  EXPECT_NE(msg({"a", "b"}).find("2 given; EC2 lists 3 or 4"), std::string::npos);
  EXPECT_NE(msg({"a", "b", "c", "d", "e"}).find("5 given"), std::string::npos);
  EXPECT_NE(msg({}).find("0 given"), std::string::npos);
  EXPECT_NE(msg({"a", "", "c"}).find("network layer 2 is empty"), std::string::npos);
  EXPECT_NE(msg({"a", "b", "c\n"}).find("network layer 3 contains a control character"), std::string::npos);
  EXPECT_NE(msg({"a", "b", std::string(256, 'x')}).find("at most 255"), std::string::npos);
  EXPECT_TRUE(check_network_layers({"a", "b", std::string(255, 'x')}).ok());
}

TEST_F(InteropEc2, NameMapRenamesAndRejectsCollisions) {
  auto r = import_ec2_topology(data("ec2_p5_3layer.json"), catalog);
  ASSERT_TRUE(r.ok());
  auto map = parse_name_map("i-0a1b2c3d4e5f60001: gpu-1\ni-0a1b2c3d4e5f60002: gpu-2\n");
  ASSERT_TRUE(map.ok()) << map.error().message;
  std::vector<std::string> warnings;
  ASSERT_TRUE(rename_nodes(r->nodes, *map, warnings).ok());
  EXPECT_EQ(r->nodes[0].name, "gpu-1");
  EXPECT_EQ(r->nodes[2].name, "i-0a1b2c3d4e5f60003");  // not in the map: keeps its id
  EXPECT_EQ(warnings.size(), 1u);

  auto clash = parse_name_map("i-0a1b2c3d4e5f60001: gpu-1\ni-0a1b2c3d4e5f60002: gpu-1\n");
  ASSERT_TRUE(clash.ok());
  auto fresh = import_ec2_topology(data("ec2_p5_3layer.json"), catalog);
  ASSERT_TRUE(fresh.ok());
  auto st = rename_nodes(fresh->nodes, *clash, warnings);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("both be named gpu-1"), std::string::npos);

  EXPECT_FALSE(parse_name_map("- a\n- b\n").ok());
  EXPECT_FALSE(parse_name_map("i-1: 'gpu 1'\n").ok());
}

}  // namespace
}  // namespace allot::interop::interop_ec2_test
