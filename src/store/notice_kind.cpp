#include "store/notice_kind.h"

namespace allot::store {

const char* notice_kind_name(NoticeKind k) {
  switch (k) {
    case NoticeKind::kJobStarted: return "job.started";
    case NoticeKind::kJobSucceeded: return "job.succeeded";
    case NoticeKind::kJobFailed: return "job.failed";
    case NoticeKind::kJobCancelled: return "job.cancelled";
    case NoticeKind::kJobPreempted: return "job.preempted";
    case NoticeKind::kJobRequeued: return "job.requeued";
    case NoticeKind::kNodeUnhealthy: return "node.unhealthy";
    case NoticeKind::kNodeReplaced: return "node.replaced";
  }
  return "job.failed";
}

std::optional<NoticeKind> parse_notice_kind(std::string_view name) {
  for (NoticeKind k : kAllNoticeKinds)
    if (name == notice_kind_name(k)) return k;
  return std::nullopt;
}

std::string notice_kind_list() {
  std::string out;
  for (NoticeKind k : kAllNoticeKinds) out += (out.empty() ? "" : ", ") + std::string(notice_kind_name(k));
  return out;
}

bool is_job_notice(NoticeKind k) {
  switch (k) {
    case NoticeKind::kJobStarted:
    case NoticeKind::kJobSucceeded:
    case NoticeKind::kJobFailed:
    case NoticeKind::kJobCancelled:
    case NoticeKind::kJobPreempted:
    case NoticeKind::kJobRequeued: return true;
    case NoticeKind::kNodeUnhealthy:
    case NoticeKind::kNodeReplaced: return false;
  }
  return false;
}

}  // namespace allot::store
