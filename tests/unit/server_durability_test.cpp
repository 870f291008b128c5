// The writer and the journal: a failed journal write answers 500 and leaves the acknowledged state, and
// concurrent requests are grouped into few transactions.
#include "server_test_fixture.h"

namespace allot::server::test::server_durability_test {
namespace {

using nlohmann::json;
using ServerDurability = ServerTest;

TEST_F(ServerDurability, FailedJournalWriteChangesNothing) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("kept")).status, 201);
  auto jobs = list_jobs();
  const size_t records = journal_->records().size();
  journal_->fail_next_appends(1, "injected: disk full");
  auto r = post("/v1/jobs", job("lost"));
  EXPECT_EQ(r.status, 500) << r.body;
  EXPECT_NE(r.body.find("disk full"), std::string::npos) << r.body;
  EXPECT_EQ(get("/v1/jobs/lost").status, 404) << "what was not journaled is not in the state";
  EXPECT_EQ(list_jobs(), jobs);
  EXPECT_EQ(journal_->records().size(), records);
  // The server goes on: the same submission now succeeds, and survives a restart.
  ASSERT_EQ(post("/v1/jobs", job("lost")).status, 201);
  restart();
  EXPECT_EQ(list_jobs().size(), 2u);
}

TEST_F(ServerDurability, ConcurrentSubmissionsShareTransactions) {
  small_cluster();
  const auto before = server_->stats();
  constexpr int kThreads = 8, kEach = 25;
  std::vector<std::thread> clients;
  std::atomic<int> created{0};
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      httplib::Client c("127.0.0.1", server_->port());
      c.set_bearer_token_auth(admin_token_.c_str());
      for (int i = 0; i < kEach; ++i) {
        auto r = c.Post("/v1/jobs", job("c" + std::to_string(t) + "-" + std::to_string(i), "b").dump(), "application/json");
        if (r && r->status == 201) ++created;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(created.load(), kThreads * kEach) << "some submissions were not acknowledged";
  const auto after = server_->stats();
  EXPECT_EQ(after.commands - before.commands, static_cast<uint64_t>(kThreads * kEach));
  // Group commit: with 8 clients at once, some transaction must have carried more than one submission.
  EXPECT_LT(after.batches - before.batches, after.commands - before.commands)
      << "no batch held two submissions: " << after.batches - before.batches << " batches";
  restart();
  EXPECT_EQ(list_jobs("team=b").size(), static_cast<size_t>(kThreads * kEach));
}


// The journal is untrusted input: a record whose placement does not fit (here an accelerator index past the
// node's one GPU, as a damaged database could hold) stops the start with the record's number, instead of being
// shifted into a bit mask.
TEST_F(ServerDurability, AnAdmissionFromTheJournalIsCheckedBeforeItIsApplied) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("j")).status, 201);
  ASSERT_TRUE(eventually([&] { return get("/v1/jobs/j").json.value("state", "") == "Running"; }));
  stop();
  auto damaged = std::make_shared<store::MemStore>();
  uint64_t admit_seq = 0;
  for (store::Record r : journal_->records()) {
    if (auto* a = std::get_if<store::Admit>(&r.op)) {
      a->placement[0].replicas[0].accelerators = {9};
      admit_seq = r.seq;
    }
    ASSERT_TRUE(damaged->append({r}).ok());
  }
  ASSERT_NE(admit_seq, 0u);
  auto s = Server::open(options_, std::make_unique<SharedStore>(damaged));
  ASSERT_TRUE(s.ok()) << s.error().message;
  auto st = (*s)->start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("journal record " + std::to_string(admit_seq) + " (admit) cannot be replayed"), std::string::npos)
      << st.error().message;
  EXPECT_NE(st.error().message.find("accelerator 9 of node"), std::string::npos) << st.error().message;
}

}  // namespace
}  // namespace allot::server::test::server_durability_test
