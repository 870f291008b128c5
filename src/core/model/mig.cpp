#include "core/model/mig.h"

#include <array>

#include "core/model/catalog.h"

namespace allot {
namespace {

// The profiles of each MIG-capable GPU among the built-in types, from NVIDIA's MIG user guide ("Supported MIG
// Profiles"): every model has 7 compute slices; a 1g instance with the smallest memory fits 7 times, a 1g with
// twice the memory 4 times, 2g 3 times, 3g twice, 4g and 7g once. The media-extension variants (+me) are left out:
// at most one fits per GPU, so no whole GPU is ever partitioned in one.
constexpr std::array<MigProfile, 6> kA100Mig40 = {{{"1g.5gb", 7, 5}, {"1g.10gb", 4, 10}, {"2g.10gb", 3, 10},
                                                   {"3g.20gb", 2, 20}, {"4g.20gb", 1, 20}, {"7g.40gb", 1, 40}}};
constexpr std::array<MigProfile, 6> kMig80 = {{{"1g.10gb", 7, 10}, {"1g.20gb", 4, 20}, {"2g.20gb", 3, 20},
                                               {"3g.40gb", 2, 40}, {"4g.40gb", 1, 40}, {"7g.80gb", 1, 80}}};
constexpr std::array<MigProfile, 6> kH200Mig141 = {{{"1g.18gb", 7, 18}, {"1g.35gb", 4, 35}, {"2g.35gb", 3, 35},
                                                    {"3g.71gb", 2, 71}, {"4g.71gb", 1, 71}, {"7g.141gb", 1, 141}}};
constexpr std::array<MigProfile, 6> kB200Mig180 = {{{"1g.23gb", 7, 23}, {"1g.45gb", 4, 45}, {"2g.45gb", 3, 45},
                                                    {"3g.90gb", 2, 90}, {"4g.90gb", 1, 90}, {"7g.180gb", 1, 180}}};

struct MigModel {
  std::string_view model;
  int memory_gib;
  std::span<const MigProfile> profiles;
};
// Keyed by the catalog's facts (catalog_builtin.cpp): model and memory per GPU.
const std::array<MigModel, 5> kMigModels = {{{"A100", 40, kA100Mig40},
                                             {"A100", 80, kMig80},
                                             {"H100", 80, kMig80},
                                             {"H200", 141, kH200Mig141},
                                             {"B200", 179, kB200Mig180}}};

}  // namespace

std::span<const MigProfile> mig_profiles(std::string_view accelerator_model, int accelerator_memory_gib) {
  for (const MigModel& m : kMigModels)
    if (m.model == accelerator_model && m.memory_gib == accelerator_memory_gib) return m.profiles;
  return {};
}

std::string mig_type_name(std::string_view base_type, std::string_view profile) {
  return std::string(base_type) + std::string(kMigTypeInfix) + std::string(profile);
}

std::optional<MigTypeParts> split_mig_type_name(std::string_view name) {
  const size_t at = name.rfind(kMigTypeInfix);
  if (at == std::string_view::npos || at == 0 || at + kMigTypeInfix.size() >= name.size()) return std::nullopt;
  return MigTypeParts{std::string(name.substr(0, at)), std::string(name.substr(at + kMigTypeInfix.size()))};
}

std::string mig_resource_name(std::string_view profile) { return std::string(kMigResourcePrefix) + std::string(profile); }

std::vector<InstanceType> mig_instance_types(const InstanceType& base) {
  std::vector<InstanceType> out;
  if (base.accelerator_kind != AcceleratorKind::kNvidiaGpu || !base.mig_profile.empty()) return out;
  for (const MigProfile& p : mig_profiles(base.accelerator_model, base.accelerator_memory_gib)) {
    InstanceType t = base;
    t.name = mig_type_name(base.name, p.name);
    t.mig_base = base.name;
    t.mig_profile = std::string(p.name);
    t.mig_per_gpu = p.per_gpu;
    t.accelerators = base.accelerators * p.per_gpu;
    t.accelerator_memory_gib = p.memory_gib;
    // Device d is instance d % per_gpu of GPU d / per_gpu, so each device stays in the NUMA domain of its GPU.
    for (NumaDomain& d : t.numa) {
      std::vector<int> devices;
      for (int g : d.accelerators)
        for (int i = 0; i < p.per_gpu; ++i) devices.push_back(g * p.per_gpu + i);
      d.accelerators = std::move(devices);
    }
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace allot
