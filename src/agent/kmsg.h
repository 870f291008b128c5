#pragma once
// The kernel's messages, where the NVIDIA driver reports XID errors (docs/resiliency.md, "XID errors"):
//
//   6,1234,5678901234,-;NVRM: Xid (PCI:0000:10:1c): 79, pid=1234, name=python, GPU has fallen off the bus.
//
// read from /dev/kmsg (one record per read, `prio,seq,usec,flags;text`, continuation lines start with a space), or,
// for tests and for machines that keep the kernel log elsewhere, from a file of such lines (`allot agent --kmsg
// PATH`; plain `dmesg` lines work too: only the "NVRM: Xid" part is read). Only what is written after the reader
// opens counts, and every read is bounded.
//
// Thread-safety: one reader is used by one thread (the health monitor's).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model/result.h"

namespace allot::agent {

// One XID error as the driver logs it.
struct XidEvent {
  int xid = 0;
  std::string device;  // as the driver names the GPU: "PCI:0000:10:1c"
  std::string text;    // the message from "NVRM:" on, at most 200 characters
  bool operator==(const XidEvent&) const = default;
};

// The XID error a kernel message reports, if it reports one.
std::optional<XidEvent> parse_xid(std::string_view line);

class KmsgReader {
 public:
  // At most this much is read per call, and a message is cut at kMaxLine.
  static constexpr size_t kMaxRead = 1 << 20;
  static constexpr size_t kMaxLine = 4096;

  // Opens `path` and skips everything it holds now. /dev/kmsg (a character device) is read record by record; any
  // other path as a file that grows, re-read from its start when it shrinks (rotated or truncated). A file that does
  // not exist yet is read from its start once it does. A device that cannot be opened is an error (/dev/kmsg needs
  // root, or kernel.dmesg_restrict=0).
  static Result<KmsgReader> open(const std::string& path);
  KmsgReader(KmsgReader&& other) noexcept;
  KmsgReader& operator=(KmsgReader&& other) noexcept;
  KmsgReader(const KmsgReader&) = delete;
  KmsgReader& operator=(const KmsgReader&) = delete;
  ~KmsgReader();

  // The messages written since the last call (their text, without the kmsg prefix), at most kMaxRead bytes; the rest
  // waits for the next call. `lost` counts records the kernel overwrote before they were read.
  Result<std::vector<std::string>> read_new();
  uint64_t lost() const { return lost_; }
  const std::string& path() const { return path_; }

 private:
  KmsgReader() = default;
  Result<std::vector<std::string>> read_device();
  Result<std::vector<std::string>> read_file();

  std::string path_;
  int fd_ = -1;          // the device's; a file is opened at each read (it may be replaced)
  uint64_t offset_ = 0;  // a file's: bytes consumed (whole lines only)
  uint64_t lost_ = 0;
};

// The text of one kernel message: after the `prio,seq,usec,flags;` prefix of a kmsg record, else the line as is.
// Continuation lines (" KEY=value") are no messages: empty.
std::string kmsg_text(std::string_view record);

}  // namespace allot::agent
