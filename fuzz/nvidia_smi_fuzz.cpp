// `nvidia-smi -L` with MIG devices (interop/nvidia_smi.h), read by the agent at start. An accepted list must
// put every MIG device under a GPU it listed, and mig_type_of on it must answer (a type or an error with a
// message) for a base type with MIG profiles.
#include "core/model/catalog.h"
#include "fuzz_checks.h"
#include "interop/nvidia_smi.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  static const Catalog catalog = Catalog::builtin();
  const std::string text = fuzz::text_of(data, size);
  auto list = interop::parse_nvidia_smi_mig(text);
  if (!fuzz::accepted(list, "parse_nvidia_smi_mig")) return 0;
  for (const auto& d : list->mig) {
    fuzz::require(d.gpu >= 0 && d.gpu < list->gpus, "a MIG device under a listed GPU", d.uuid);
    fuzz::require(d.uuid.rfind("MIG-", 0) == 0, "a MIG device's UUID begins with MIG-", d.uuid);
  }
  auto type = interop::mig_type_of(catalog.at(*catalog.find("ml.p4de.24xlarge")), *list, catalog);
  if (type) fuzz::require(catalog.find(*type).has_value(), "mig_type_of names a catalog type", *type);
  else fuzz::check_rejection(type.error(), "mig_type_of");
  return 0;
}
