#include "config/container_rules.h"

#include <algorithm>
#include <set>

namespace allot::config {
namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool alnum(char c) { return lower_alnum(c) || (c >= 'A' && c <= 'Z'); }
bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A registry host as the first component of a reference: it has a '.' or a ':' (a port), or is localhost.
bool looks_like_registry(std::string_view first) {
  return first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos || first == "localhost";
}

// Why `host` ("registry.example.com:5000"; IPv6 literals are not supported) is not a registry host, or "".
std::string registry_problem(std::string_view host) {
  std::string_view name = host, port;
  if (auto colon = host.rfind(':'); colon != std::string_view::npos) name = host.substr(0, colon), port = host.substr(colon + 1);
  if (host.find(':') != host.rfind(':')) return "has the registry '" + printable(host) + "' with more than one ':'";
  if (host.find(':') != std::string_view::npos && (!digits(port) || port.size() > 5))
    return "has the registry '" + printable(host) + "' with a port that is not a number";
  if (name.empty()) return "has a registry with an empty host name";
  for (size_t start = 0; start <= name.size();) {
    const size_t dot = std::min(name.find('.', start), name.size());
    const std::string_view label = name.substr(start, dot - start);
    if (label.empty() || !alnum(label.front()) || !alnum(label.back()))
      return "has the registry host '" + printable(name) + "', with a part that is empty or does not begin and end with a letter or digit";
    for (char c : label)
      if (!alnum(c) && c != '-') return "has the registry host '" + printable(name) + "', with the character '" + printable(std::string(1, c)) + "'";
    start = dot + 1;
  }
  return "";
}

// Why `component` is not a repository path component ([a-z0-9]+ joined by '.', '_', '__' or '-'+), or "".
std::string component_problem(std::string_view c) {
  if (c.empty()) return "has an empty path component (two '/' in a row, or one at an end)";
  for (char ch : c)
    if (ch >= 'A' && ch <= 'Z') return "has the upper-case letter '" + std::string(1, ch) + "' in its repository (repositories are lowercase)";
  if (!lower_alnum(c.front()) || !lower_alnum(c.back()))
    return "has the path component '" + printable(c) + "', which does not begin and end with a lowercase letter or digit";
  for (size_t i = 0; i < c.size(); ++i) {
    const char ch = c[i];
    if (lower_alnum(ch)) continue;
    if (ch == '-') continue;  // any number of dashes
    if (ch == '.' || ch == '_') {
      const bool double_underscore = ch == '_' && i + 1 < c.size() && c[i + 1] == '_';
      const size_t next = i + (double_underscore ? 2 : 1);
      if (next >= c.size() || !lower_alnum(c[next]))
        return "has the path component '" + printable(c) + "', where a separator ('.', '_', '__', '-') is not between letters or digits";
      i = next - 1;
      continue;
    }
    return "has the character '" + printable(std::string(1, ch)) + "' in its repository";
  }
  return "";
}

std::string tag_problem(std::string_view tag) {
  if (tag.empty()) return "has an empty tag (nothing after ':')";
  if (tag.size() > 128) return "has a tag of " + std::to_string(tag.size()) + " characters (at most 128)";
  if (!(alnum(tag.front()) || tag.front() == '_')) return "has a tag that does not begin with a letter, digit or '_'";
  for (char c : tag)
    if (!(alnum(c) || c == '_' || c == '.' || c == '-'))
      return "has the character '" + printable(std::string(1, c)) + "' in its tag (letters, digits, '_', '.', '-')";
  return "";
}

std::string digest_problem(std::string_view digest) {
  const size_t colon = digest.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == digest.size())
    return "has a digest that is not algorithm:hex (such as sha256:<64 hex digits>)";
  const std::string_view algo = digest.substr(0, colon), hex = digest.substr(colon + 1);
  for (char c : algo)
    if (!(lower_alnum(c) || c == '+' || c == '.' || c == '_' || c == '-')) return "has a digest algorithm with the character '" + printable(std::string(1, c)) + "'";
  for (char c : hex)
    if (!(alnum(c) || c == '=' || c == '_' || c == '-')) return "has a digest with the character '" + printable(std::string(1, c)) + "'";
  if (algo == "sha256" && (hex.size() != 64 || hex.find_first_not_of("0123456789abcdef") != std::string_view::npos))
    return "has a sha256 digest that is not 64 lowercase hex digits";
  return "";
}

// The parts of a reference: [registry/]repository[:tag][@digest].
struct Reference {
  std::string_view registry, repository, tag, digest;
  bool has_tag = false, has_digest = false;
};
Reference split_reference(std::string_view image) {
  Reference r;
  std::string_view rest = image;
  if (auto at = rest.find('@'); at != std::string_view::npos) r.digest = rest.substr(at + 1), r.has_digest = true, rest = rest.substr(0, at);
  const size_t slash = rest.rfind('/');
  if (auto colon = rest.rfind(':'); colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash))
    r.tag = rest.substr(colon + 1), r.has_tag = true, rest = rest.substr(0, colon);
  if (auto first = rest.find('/'); first != std::string_view::npos && looks_like_registry(rest.substr(0, first)))
    r.registry = rest.substr(0, first), rest = rest.substr(first + 1);
  r.repository = rest;
  return r;
}

constexpr const char* kReserved[] = {"/dev", "/proc", "/sys", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/run/.containerenv"};

}  // namespace

int64_t default_shm_mib(int64_t memory_mib) { return std::max(kMinDefaultShmMib, memory_mib / 4); }

Status check_image_reference(std::string_view image) {
  const std::string rule = "an OCI image reference: [registry[:port]/]repository[:tag][@sha256:digest], such as "
                           "registry.example.com/team/train:1.4";
  auto bad = [&](const std::string& why) { return Error::invalid("image '" + printable(image) + "' " + why + "; give " + rule); };
  if (image.empty()) return bad("is empty");
  if (image.size() > kMaxImageReference)
    return Error::invalid("image is " + std::to_string(image.size()) + " characters long; at most " + std::to_string(kMaxImageReference));
  for (char c : image) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return bad("has a space, a control character or a character beyond ASCII");
  }
  if (image.find('@') != image.rfind('@')) return bad("has more than one '@'");
  const Reference r = split_reference(image);
  if (r.has_digest)
    if (auto why = digest_problem(r.digest); !why.empty()) return bad(why);
  if (r.has_tag)
    if (auto why = tag_problem(r.tag); !why.empty()) return bad(why);
  if (!r.registry.empty())
    if (auto why = registry_problem(r.registry); !why.empty()) return bad(why);
  if (r.repository.empty()) return bad("has no repository");
  if (r.repository.size() > 255) return bad("has a repository of " + std::to_string(r.repository.size()) + " characters (at most 255)");
  for (size_t start = 0; start <= r.repository.size();) {
    const size_t slash = std::min(r.repository.find('/', start), r.repository.size());
    if (auto why = component_problem(r.repository.substr(start, slash - start)); !why.empty()) return bad(why);
    start = slash + 1;
  }
  return ok_status();
}

PullPolicy default_pull_policy(std::string_view image) {
  const Reference r = split_reference(image);
  if (r.has_digest) return PullPolicy::kIfNotPresent;
  if (!r.has_tag || r.tag == "latest") return PullPolicy::kAlways;
  return PullPolicy::kIfNotPresent;
}

std::optional<PullPolicy> pull_policy_named(std::string_view name) {
  for (PullPolicy p : kPullPolicies)
    if (name == pull_policy_name(p)) return p;
  return std::nullopt;
}

Result<std::string> normal_path(std::string_view path, const std::string& what) {
  if (path.empty()) return Error::invalid(what + " is empty; give an absolute path");
  if (path.size() > kMaxContainerPath)
    return Error::invalid(what + " is " + std::to_string(path.size()) + " bytes long; at most " + std::to_string(kMaxContainerPath));
  for (char c : path) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return Error::invalid(what + " '" + printable(path) + "' has a control character");
    if (c == ',') return Error::invalid(what + " '" + printable(path) + "' has a ',' (podman's mount syntax cannot carry one)");
  }
  if (path.front() != '/') return Error::invalid(what + " '" + printable(path) + "' is not absolute; give a path beginning with '/'");
  std::string out;
  for (size_t start = 1; start <= path.size();) {
    const size_t slash = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, slash - start);
    start = slash + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return Error::invalid(what + " '" + printable(path) + "' has a '..' component; give the path without it");
    out += '/';
    out += part;
  }
  return out.empty() ? std::string("/") : out;
}

bool path_within(std::string_view path, std::string_view prefix) {
  if (prefix == "/") return !path.empty() && path.front() == '/';
  if (path.size() < prefix.size() || path.substr(0, prefix.size()) != prefix) return false;
  return path.size() == prefix.size() || path[prefix.size()] == '/';
}

std::optional<std::string> reserved_container_path(std::string_view path) {
  if (path == "/") return std::string("/");
  for (const char* r : kReserved)
    if (path_within(path, r)) return std::string(r);
  return std::nullopt;
}

Status check_volumes(const std::vector<VolumeSpec>& volumes) {
  if (volumes.size() > kMaxVolumes)
    return Error::invalid("a job has " + std::to_string(volumes.size()) + " volumes; at most " + std::to_string(kMaxVolumes));
  std::set<std::string> seen;
  for (size_t i = 0; i < volumes.size(); ++i) {
    const VolumeSpec& v = volumes[i];
    const std::string which = "volume " + std::to_string(i) + " (path " + printable(v.path) + ")";
    if (auto r = reserved_container_path(v.path))
      return Error::invalid(which + ": allot mounts " + *r + " itself; mount elsewhere (not /, /dev, /proc, /sys, /etc/hosts, "
                            "/etc/hostname, /etc/resolv.conf, /run/.containerenv; /dev/shm is sized by shm_size_gib)");
    if (!seen.insert(v.path).second) return Error::invalid(which + ": another volume is mounted at the same path; give each path once");
  }
  return ok_status();
}

std::optional<Capability> capability_named(std::string_view name) {
  if (name.substr(0, 4) == "CAP_") name.remove_prefix(4);
  for (int i = 0; i < kCapabilityCount; ++i)
    if (name == capability_name(static_cast<Capability>(i))) return static_cast<Capability>(i);
  return std::nullopt;
}

std::string capability_names() {
  std::string out;
  for (int i = 0; i < kCapabilityCount; ++i) out += (i ? ", " : "") + std::string(capability_name(static_cast<Capability>(i)));
  return out;
}

Status check_host_paths_allowed(const ContainerSpec& container, const std::string& team, const TeamContainerSettings& settings) {
  std::string allowed;
  for (const auto& p : settings.host_paths) allowed += (allowed.empty() ? "" : ", ") + p;
  for (size_t i = 0; i < container.volumes.size(); ++i) {
    const VolumeSpec& v = container.volumes[i];
    const bool inside = std::any_of(settings.host_paths.begin(), settings.host_paths.end(),
                                    [&](const std::string& prefix) { return path_within(v.host_path, prefix); });
    if (inside) continue;
    const std::string which = "volume " + std::to_string(i) + " (host_path " + printable(v.host_path, 200) + ", path " +
                              printable(v.path, 200) + ")";
    if (settings.host_paths.empty())
      return Error::invalid(which + ": team " + team + " may mount no host paths (its containers.host_paths is empty); "
                            "an admin allows directories in the team's containers settings (docs/teams-and-policy.md)");
    return Error::invalid(which + ": " + printable(v.host_path, 200) + " is not inside a host path team " + team +
                          " may mount; allowed: " + allowed);
  }
  return ok_status();
}

}  // namespace allot::config
