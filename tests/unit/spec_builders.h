#pragma once
// Job specs for unit tests, built up from what a case is about:
//
//   job_spec("train", "a")                              one pod set "main": 1 replica of 1 accelerator, any type
//   job_spec("wide", "ml").replicas(2).accelerators(8).priority("high")
//   job_spec("gang", "ml").replicas(4).whole_nodes().topology({.required = "network-node-layer-3"})
//
// Every field not named keeps the default of JobSpec / PodSetSpec (core/model/spec.h), except the accelerators per
// replica, which are 1 unless set (most cases are about counting GPUs). The builder converts to a JobSpec
// wherever one is expected; a file whose jobs all share some fields says so once, in a function that returns a
// JobBuilder with them set.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "core/model/spec.h"

namespace allot::test {

class JobBuilder {
 public:
  JobBuilder(std::string name, std::string team) {
    spec_.name = std::move(name);
    spec_.team = std::move(team);
    PodSetSpec ps;
    ps.per_replica.accelerators = 1;
    spec_.pod_sets = {std::move(ps)};
  }

  // The pod set.
  JobBuilder& replicas(int n) {
    pod_set().replicas = n;
    return *this;
  }
  // Elastic: the smallest size it runs at (nullopt: not elastic).
  JobBuilder& min_replicas(std::optional<int> n) {
    pod_set().min_replicas = n;
    return *this;
  }
  JobBuilder& accelerators(int64_t n) {
    pod_set().per_replica.accelerators = n;
    pod_set().per_replica.whole_node = false;
    return *this;
  }
  // Each replica takes a whole node (and names no accelerator count).
  JobBuilder& whole_nodes() {
    pod_set().per_replica.accelerators.reset();
    pod_set().per_replica.whole_node = true;
    return *this;
  }
  JobBuilder& instance_type(std::string type) {
    pod_set().instance_type = std::move(type);
    return *this;
  }
  JobBuilder& topology(TopologySpec t) {
    pod_set().topology = std::move(t);
    return *this;
  }
  JobBuilder& pod_set_name(std::string name) {
    pod_set().name = std::move(name);
    return *this;
  }

  // The job.
  JobBuilder& priority(std::string p) {
    spec_.priority = std::move(p);
    return *this;
  }
  JobBuilder& max_retries(int n) {
    spec_.max_retries = n;
    return *this;
  }
  JobBuilder& checkpoint_interval_s(int64_t s) {
    spec_.checkpoint_interval_s = s;
    return *this;
  }
  JobBuilder& plan(std::string p) {
    spec_.plan = std::move(p);
    return *this;
  }
  JobBuilder& reservation(std::string r) {
    spec_.reservation = std::move(r);
    return *this;
  }

  const JobSpec& spec() const { return spec_; }
  operator JobSpec() const { return spec_; }  // NOLINT(google-explicit-constructor): used where a JobSpec is expected

 private:
  PodSetSpec& pod_set() { return spec_.pod_sets.front(); }
  JobSpec spec_;
};

inline JobBuilder job_spec(std::string name, std::string team) { return JobBuilder(std::move(name), std::move(team)); }

}  // namespace allot::test
