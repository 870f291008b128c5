#pragma once
// Kubernetes resource quantities ("500m", "2", "1.5", "16Gi", "1G", "128974848", "1e3") turned into allot's
// integer units. The grammar is Kubernetes' own: a signed decimal, then a binary suffix (Ki Mi Gi Ti Pi Ei),
// a decimal suffix (n u m k M G T P E; K is accepted as k), or a decimal exponent (e3, E3).
#include <cstdint>
#include <string_view>

#include "core/model/result.h"

namespace allot::interop {

// vCPUs in milli-units, rounded up as Kubernetes rounds CPU to the millicore: "500m" -> 500, "1.5" -> 1500.
Result<int64_t> parse_cpu_milli(std::string_view quantity);
// Memory in MiB, rounded up so a request is never shrunk: "16Gi" -> 16384, "1G" -> 954, "1048576" -> 1.
Result<int64_t> parse_memory_mib(std::string_view quantity);
// A device count (nvidia.com/gpu, aws.amazon.com/neurondevice): a whole, non-negative number.
Result<int64_t> parse_device_count(std::string_view quantity);

}  // namespace allot::interop
