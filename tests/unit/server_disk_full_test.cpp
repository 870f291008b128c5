// A full disk under the journal (server/writer/writer.h, docs/deployment.md "A full disk"): the write that fails costs one
// rebuild of the state; while the journal has no room, changes are refused at once with 507 and Retry-After, reads
// are answered, and changes resume when space returns, with no rebuild per refused change. The journal is the
// fixture's in-memory store, made to run out of room (store/mem_store.h).
#include "server_test_fixture.h"

namespace allot::server::test::server_disk_full_test {
namespace {

using nlohmann::json;
using ServerDiskFull = ServerTest;

TEST_F(ServerDiskFull, ChangesAreRefusedAtOnceUntilSpaceReturnsWithOneRebuild) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("kept")).status, 201);
  const size_t records = journal_->records().size();
  journal_->fail_after_records(0);
  auto failed = post("/v1/jobs", job("first"));
  EXPECT_EQ(failed.status, 500) << failed.body;  // the write that found the disk full
  EXPECT_EQ(server_->stats().rebuilds, 1u);
  for (int i = 0; i < 20; ++i) {
    auto r = client_->Post("/v1/jobs", job("refused-" + std::to_string(i)).dump(), "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 507) << r->body;
    EXPECT_EQ(r->get_header_value("Retry-After"), "5");
    EXPECT_NE(r->body.find("no room"), std::string::npos) << r->body;
  }
  // Reads are answered meanwhile, from the acknowledged state.
  auto jobs = list_jobs();
  ASSERT_TRUE(jobs.is_array());
  EXPECT_EQ(jobs.size(), 1u) << jobs.dump();
  EXPECT_EQ(get("/v1/jobs/kept").status, 200);
  EXPECT_EQ(server_->stats().rebuilds, 1u) << "a refused change rebuilt the state";
  EXPECT_EQ(server_->stats().refused_no_space, 20u);
  EXPECT_EQ(journal_->records().size(), records);
  // Space returns: changes are made again, without a restart.
  journal_->make_room();
  ASSERT_TRUE(eventually([&] { return post("/v1/jobs", job("after")).status == 201; }));
  EXPECT_EQ(get("/v1/jobs/after").status, 200);
  EXPECT_EQ(server_->stats().rebuilds, 1u);
  restart();
  EXPECT_EQ(list_jobs().size(), 2u);
}

TEST_F(ServerDiskFull, AFailureOfAnotherKindRefusesNothingAfterIt) {
  small_cluster();
  journal_->fail_next_appends(1, "injected: I/O error");
  EXPECT_EQ(post("/v1/jobs", job("lost")).status, 500);
  // The journal has room: the next change is tried, and made.
  EXPECT_EQ(post("/v1/jobs", job("made")).status, 201);
}

}  // namespace
}  // namespace allot::server::test::server_disk_full_test
