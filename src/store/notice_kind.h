#pragma once
// The kinds of event a webhook may ask for (docs/api.md, "Webhooks"): a closed set, each one a change of a job's
// or a node's state that the event stream (server/writer/event_log.h) already carries. One table holds their spellings
// for the API, the CLI and the journal.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace allot::store {

enum class NoticeKind {
  kJobStarted,    // admitted and placed: its run starts (an admit record)
  kJobSucceeded,  // every replica exited 0
  kJobFailed,     // ended Failed: retries used up, its wall-time limit, a node failure with no retry left
  kJobCancelled,  // cancelled by request
  kJobPreempted,  // suspended by the scheduler for another job (a preempt record)
  kJobRequeued,   // its run stopped for a cause not its own and it waits again: a node failed or left, its
                  // rendezvous port was taken, its start timed out, its node was drained
  kNodeUnhealthy, // a node's health became anything but Schedulable
  kNodeReplaced,  // a replacement node passed its deep check and retired the node it replaces
};

inline constexpr NoticeKind kAllNoticeKinds[] = {
    NoticeKind::kJobStarted,   NoticeKind::kJobSucceeded, NoticeKind::kJobFailed,     NoticeKind::kJobCancelled,
    NoticeKind::kJobPreempted, NoticeKind::kJobRequeued,  NoticeKind::kNodeUnhealthy, NoticeKind::kNodeReplaced};

// "job.started", "job.failed", "node.replaced", ...
const char* notice_kind_name(NoticeKind k);
std::optional<NoticeKind> parse_notice_kind(std::string_view name);
// "job.started, job.succeeded, ...", for messages.
std::string notice_kind_list();
// About a job (a team's webhook may ask for it) rather than a node (cluster-wide webhooks only).
bool is_job_notice(NoticeKind k);

}  // namespace allot::store
