// Reads off the write path (writer.h): a GET is answered from the writer's published view while the writer is
// held busy in a batch, sees every change answered before it, and none that is not answered yet.
#include <future>
#include <mutex>

#include "server/writer/writer.h"
#include "server_test_fixture.h"
#include "writer_gate.h"

namespace allot::server::test::server_read_view_test {
namespace {

class ServerReadView : public ServerTest {
 protected:
  void SetUp() override {
    options_.before_batch = [this] { gate_.pass(); };
    ServerTest::SetUp();
  }
  void TearDown() override {
    release();
    ServerTest::TearDown();
  }
  void hold() { gate_.hold(); }
  void release() { gate_.release(); }
  void wait_held() { gate_.wait_held(); }

  WriterGate gate_;
};

TEST_F(ServerReadView, AReadIsAnsweredWhileTheWriterIsHeldInABatch) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("first")).status, 201);
  // This read asks for a view; the writer publishes one before answering it. Nothing changes afterwards (the
  // nodes have no agent to time out and the job is placed).
  ASSERT_EQ(get("/v1/jobs/first").status, 200);

  hold();
  auto submitted = std::async(std::launch::async, [this] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_bearer_token_auth(admin_token_.c_str());
    c.set_read_timeout(30, 0);
    auto r = c.Post("/v1/jobs", job("second").dump(), "application/json");
    return r ? r->status : 0;
  });
  wait_held();
  // The writer is inside the batch of the second submission and cannot answer anything: these reads are
  // answered from the view, and the view holds what was acknowledged, not what is being written.
  auto first = get("/v1/jobs/first");
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.json["state"], "Running") << first.body;
  EXPECT_EQ(get("/v1/jobs/second").status, 404) << "a read must not see a change that is not acknowledged yet";
  auto listed = get("/v1/jobs");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.json["items"].size(), 1u) << listed.body;
  EXPECT_EQ(get("/v1/nodes").status, 200);
  EXPECT_EQ(submitted.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
      << "the writer was released before the reads were answered";
  EXPECT_GE(server_->stats().batches, 1u);

  release();
  ASSERT_EQ(submitted.get(), 201);
  // Read-your-writes: the answered submission is visible to the next read.
  auto second = get("/v1/jobs/second");
  ASSERT_EQ(second.status, 200) << second.body;
  EXPECT_EQ(get("/v1/jobs").json["items"].size(), 2u);
}

TEST(ReadOnlyTxn, RefusesToChangeTheState) {
  ServerState st;
  Txn txn(static_cast<const ServerState&>(st), 1'700'000'000'000);
  EXPECT_EQ(&txn.cluster(), &st.cluster);
  auto applied = txn.apply(store::Cancel{"x"});
  ASSERT_FALSE(applied.ok());
  EXPECT_NE(applied.error().message.find("read-only"), std::string::npos) << applied.error().message;
  EXPECT_THROW(txn.state(), std::logic_error);
  EXPECT_EQ(st.last_seq, 0u);
}

// A read command that tries to change the state is refused: reads are answered on the published view only (the
// first one waits for the writer to publish one), never in the writer's batch.
TEST(WriterRead, AReadGetsAReadOnlyTxn) {
  auto journal = std::make_shared<store::MemStore>();
  ServerOptions options;
  options.data_dir = (std::filesystem::temp_directory_path() / "allot-writer-read-test").string();
  options.tick = std::chrono::milliseconds(10);
  options.clock = [] { return int64_t{1'700'000'000'000}; };
  EventLog events(100);
  AuthGate auth;
  Writer writer(options, std::make_unique<SharedStore>(journal), events, auth);
  ASSERT_TRUE(writer.recover().ok());
  writer.start();
  const Command writes = [](Txn& txn) -> Result<Render> {
    if (auto st = txn.apply(store::Audit{"GET /v1/jobs", "", 200, ""}); !st) return st.error();
    return Render([](const ServerState&) { return json_reply(200, nlohmann::json::object()); });
  };
  const Command touches = [](Txn& txn) -> Result<Render> {
    txn.state().admissions_total++;
    return Render([](const ServerState&) { return json_reply(200, nlohmann::json::object()); });
  };
  const auto records = journal->records().size();
  const auto batches = writer.stats().commands;
  for (const Command& cmd : {writes, touches, writes, touches}) {
    Reply r = writer.read(cmd, CallContext{store::Actor{.token = "test", .role = auth::Role::kAdmin}, std::nullopt});
    EXPECT_EQ(r.status, 500) << r.body;
    EXPECT_NE(r.body.find("read-only"), std::string::npos) << r.body;
  }
  EXPECT_EQ(writer.view_stats().reads_from_view, 4u) << "a read was not answered from the view";
  EXPECT_EQ(writer.stats().commands, batches) << "a read went through the writer's batch";
  writer.stop();
  EXPECT_EQ(journal->records().size(), records) << "a read wrote to the journal";
  // A stopped writer answers reads 503.
  EXPECT_EQ(writer.read(writes, CallContext{store::Actor{.token = "test", .role = auth::Role::kAdmin}, std::nullopt}).status, 503);
}

}  // namespace
}  // namespace allot::server::test::server_read_view_test
