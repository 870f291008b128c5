#pragma once
// The rules of a job's container and a team's container settings (docs/jobs.md, "Images";
// docs/teams-and-policy.md, "Containers"), shared by every reader of them: the job and team YAML (which the API
// reads too), the Kubernetes manifest reader, Kueue import, and the server's submission check. Pure functions
// of their arguments.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"
#include "core/model/spec.h"

namespace allot::config {

// An image reference is at most this long (Docker's repository names are at most 255 characters, a tag 128,
// a sha512 digest 135; this leaves room for a registry host and port).
inline constexpr size_t kMaxImageReference = 512;
// A host or container path, and the number of volumes a job may give.
inline constexpr size_t kMaxContainerPath = 4096;
inline constexpr size_t kMaxVolumes = 64;
// /dev/shm: at most 16 TiB (beyond any node's memory; the replica's memory request bounds it when given).
inline constexpr int64_t kMaxShmMib = int64_t{16} << 20;
// The default /dev/shm of a replica that gives none: a quarter of its memory request, at least 64 MiB (podman's
// own default), and 64 MiB without a request (memory_mib 0).
inline constexpr int64_t kMinDefaultShmMib = 64;
int64_t default_shm_mib(int64_t memory_mib);
// Host path prefixes and capabilities a team may list.
inline constexpr size_t kMaxTeamHostPaths = 64;

// Why `image` is not an OCI image reference ([registry[:port]/]repository[:tag][@algorithm:digest], repository
// components lowercase letters and digits joined by '.', '_', '__' or '-'), naming the first fault; ok when it is.
Status check_image_reference(std::string_view image);

// Kubernetes' default imagePullPolicy: Always for an image without a tag or with the tag `latest` (unless it
// gives a digest), IfNotPresent otherwise.
PullPolicy default_pull_policy(std::string_view image);
// The policy named `name` (its pull_policy_name spelling), or nothing.
std::optional<PullPolicy> pull_policy_named(std::string_view name);

// `path` as an absolute normalised path: '//' and '/./' collapsed, no trailing '/' (but "/" itself); refused:
// a relative path, a '..' component, a control character, more than kMaxContainerPath bytes. `what` names the
// path in the error ("host_path").
Result<std::string> normal_path(std::string_view path, const std::string& what);
// Whether the normalised `path` is `prefix` or inside it, component by component (/data2 is not inside /data).
bool path_within(std::string_view path, std::string_view prefix);

// Container paths that allot or podman mount themselves, where a volume may not go: /, /dev (and below, /dev/shm
// included: shm_size_gib sizes it), /proc, /sys, /etc/hosts, /etc/hostname, /etc/resolv.conf, /run/.containerenv.
// The replica's working directory and ALLOT_CHECKPOINT_DIR are mounted at their host paths too; the server
// refuses a volume inside its checkpoint root (api_jobs.cpp).
std::optional<std::string> reserved_container_path(std::string_view path);  // the reserved path it hits

// Checks a job's volumes as a whole: container paths each once and not reserved. Each path must already be
// normalised (normal_path).
Status check_volumes(const std::vector<VolumeSpec>& volumes);

// The capability named `name` ("NET_RAW" or "CAP_NET_RAW"), or nothing.
std::optional<Capability> capability_named(std::string_view name);
// Every capability name, for messages.
std::string capability_names();

// The submission check of a job of `team`: each volume's host_path must be inside one of the team's
// host_paths (path_within); a team without host_paths may mount none. The error names the volume, its path and
// the allowed list.
Status check_host_paths_allowed(const ContainerSpec& container, const std::string& team, const TeamContainerSettings& settings);

}  // namespace allot::config
