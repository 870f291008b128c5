// Kubernetes Job and PyTorchJob manifests as `allot submit` reads them (interop/k8s_manifest.h): the YAML
// document, the manifest check, and the conversion with its quantities, affinities and annotations.
#include "config/yaml_read.h"
#include "fuzz_checks.h"
#include "interop/k8s_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace allot;
  auto doc = load_yaml(fuzz::text_of(data, size), YamlContext{"job.yaml", "", 0});
  if (!fuzz::accepted(doc, "load_yaml")) return 0;
  if (!interop::is_k8s_manifest(*doc)) return 0;
  auto job = interop::job_from_manifest(*doc, "job.yaml");
  fuzz::accepted(job, "job_from_manifest");
  return 0;
}
