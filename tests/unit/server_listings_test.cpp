// Job listings off the writer (issue 25, item 7): the bound on listings rendered at once (read_seats.h), pages
// consistent while submissions go on, and a lister that goes away mid-answer.
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <atomic>
#include <future>
#include <set>
#include <thread>

#include "server/http/read_seats.h"
#include "server/thread_priority.h"
#include "server_test_fixture.h"

namespace allot::server::test::server_listings_test {
namespace {

TEST(ReadSeats, TheSeatPastTheBoundIsRefusedAndAGivenBackSeatServesTheNext) {
  ReadSeats seats(2);
  auto a = seats.take(std::chrono::milliseconds(0));
  auto b = seats.take(std::chrono::milliseconds(0));
  ASSERT_TRUE(a && b);
  EXPECT_EQ(seats.in_use(), 2u);
  EXPECT_FALSE(seats.take(std::chrono::milliseconds(0))) << "a third seat of two";
  EXPECT_EQ(seats.refused(), 1u);
  a.reset();
  EXPECT_EQ(seats.in_use(), 1u);
  EXPECT_TRUE(seats.take(std::chrono::milliseconds(0))) << "a seat given back serves the next";
  EXPECT_EQ(seats.in_use(), 1u) << "the seat taken above was given back when dropped";
}

TEST(ReadSeats, AWaitingTakerGetsTheSeatGivenBack) {
  ReadSeats seats(1);
  auto held = seats.take(std::chrono::milliseconds(0));
  ASSERT_TRUE(held);
  std::atomic<bool> waiting{false};
  auto waiter = std::async(std::launch::async, [&] {
    waiting = true;
    return seats.take(std::chrono::seconds(60)).has_value();
  });
  while (!waiting) std::this_thread::yield();
  held.reset();
  EXPECT_TRUE(waiter.get());
  EXPECT_EQ(seats.refused(), 0u);
  EXPECT_EQ(seats.in_use(), 0u);
}

// The seats' threads run at a lower CPU priority than the threads that hand them work (Linux keeps a nice value
// per thread), and what the work throws reaches the caller.

TEST(ReadSeats, WorkRunsOnTheSeatsThreadAtALowerPriority) {
  ReadSeats seats(2, 7);
  const int mine = thread_nice();
  const std::thread::id me = std::this_thread::get_id();
  EXPECT_EQ(seats.nice(), std::min(7, 19 - mine)) << "nice values stop at 19";
  for (int round = 0; round < 3; ++round) {
    auto seat = seats.take(std::chrono::milliseconds(0));
    ASSERT_TRUE(seat);
    int theirs = -100;
    std::thread::id ran_on;
    seat->run([&] {
      theirs = thread_nice();
      ran_on = std::this_thread::get_id();
    });
    EXPECT_NE(ran_on, me) << "the work ran on the caller's thread";
    EXPECT_EQ(theirs, mine + seats.nice());
    EXPECT_EQ(thread_nice(), mine) << "the caller's own priority is untouched";
  }
  auto seat = seats.take(std::chrono::milliseconds(0));
  ASSERT_TRUE(seat);
  EXPECT_THROW(seat->run([] { throw std::runtime_error("render failed"); }), std::runtime_error);
  int after = 0;
  seat->run([&] { after = 1; });
  EXPECT_EQ(after, 1) << "a seat whose work threw serves the next";
}

TEST(ReadSeats, NiceZeroKeepsThePriority) {
  ReadSeats seats(1, 0);
  EXPECT_EQ(seats.nice(), 0);
  auto seat = seats.take(std::chrono::milliseconds(0));
  ASSERT_TRUE(seat);
  int theirs = -100;
  seat->run([&] { theirs = thread_nice(); });
  EXPECT_EQ(theirs, thread_nice());
}

class ServerListings : public ServerTest {
 protected:
  void SetUp() override {
    options_.max_listings = 1;
    ServerTest::SetUp();
  }
};

TEST_F(ServerListings, AListingPastTheSeatsGets503WithRetryAfter) {
  small_cluster();
  ASSERT_EQ(post("/v1/jobs", job("a1")).status, 201);
  ReadSeats& seats = server_->listings();
  ASSERT_EQ(seats.seats(), 1u);
  {
    auto taken = seats.take(std::chrono::milliseconds(0));  // as a listing being rendered holds it
    ASSERT_TRUE(taken);
    auto r = client_->Get("/v1/jobs");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    EXPECT_EQ(r->get_header_value("Retry-After"), "1");
    auto body = nlohmann::json::parse(r->body);
    EXPECT_EQ(body["error"]["code"], "Unavailable");
    EXPECT_NE(body["error"]["message"].get<std::string>().find("--max-listings"), std::string::npos) << r->body;
    // Other reads take no listing seat.
    EXPECT_EQ(get("/v1/jobs/a1").status, 200);
    EXPECT_EQ(seats.refused(), 1u);
  }
  auto listed = get("/v1/jobs");
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.json["items"].size(), 1u);
  EXPECT_EQ(seats.in_use(), 0u) << "a listing gives its seat back once rendered";
}

TEST_F(ServerListings, ListingsRenderAtTheConfiguredLowerPriority) {
  EXPECT_EQ(options_.listing_nice, ReadSeats::kDefaultNice);
  EXPECT_EQ(server_->listings().nice(), std::min(ReadSeats::kDefaultNice, 19 - thread_nice()));
}

// Pages read while submissions go on: each page lists jobs in submission order without repeats, every job
// acknowledged before a listing began is in it (read-your-writes), and the continue tokens chain the pages.
TEST_F(ServerListings, PagesStayConsistentWhileSubmissionsGoOn) {
  small_cluster();
  std::atomic<int> acknowledged{0};
  std::atomic<bool> stop{false};
  auto submitter = std::async(std::launch::async, [&] {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_bearer_token_auth(admin_token_.c_str());
    c.set_read_timeout(30, 0);
    for (int i = 0; !stop && i < 400; ++i) {
      auto r = c.Post("/v1/jobs", job("s" + std::to_string(i)).dump(), "application/json");
      if (!r || r->status != 201) return i;
      acknowledged = i + 1;
    }
    return -1;
  });
  int passes = 0;
  for (; passes < 20; ++passes) {
    const int before = acknowledged.load();  // every one of these was answered before the listing began
    std::vector<std::string> names;
    std::string cont;
    do {
      auto page = get("/v1/jobs?limit=7" + (cont.empty() ? "" : "&continue=" + cont));
      ASSERT_EQ(page.status, 200) << page.body;
      for (const auto& item : page.json["items"]) names.push_back(item["name"].get<std::string>());
      cont = page.json.contains("continue") ? page.json["continue"].get<std::string>() : "";
    } while (!cont.empty());
    std::set<std::string> seen(names.begin(), names.end());
    ASSERT_EQ(seen.size(), names.size()) << "a job listed twice in one pass";
    int last = -1;
    for (const auto& n : names) {
      const int k = std::stoi(n.substr(1));
      ASSERT_GT(k, last) << "jobs out of submission order: " << n;
      last = k;
    }
    for (int i = 0; i < before; ++i)
      ASSERT_TRUE(seen.count("s" + std::to_string(i))) << "job s" << i << " was acknowledged before the listing and is missing";
  }
  stop = true;
  EXPECT_EQ(submitter.get(), -1) << "a submission failed";
  EXPECT_EQ(server_->listings().in_use(), 0u);
}

// A lister that sends a request for a large page and goes away before reading the answer: the server writes
// into a closed connection, drops it, and holds nothing (no seat); the next listing is answered.
TEST_F(ServerListings, AListerThatGoesAwayMidAnswerHoldsNothing) {
  small_cluster();
  for (int i = 0; i < 300; ++i) ASSERT_EQ(post("/v1/jobs", job("d" + std::to_string(i))).status, 201);
  for (int round = 0; round < 5; ++round) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server_->port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    const std::string request = "GET /v1/jobs?limit=5000 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + admin_token_ + "\r\n\r\n";
    ASSERT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
    if (round % 2) {
      char some[512];
      (void)::recv(fd, some, sizeof some, 0);  // the first bytes of the answer, then away
    }
    ::close(fd);
  }
  // The abandoned requests may still be read or rendered on their threads, each holding its seat meanwhile (a
  // 503 with Retry-After, as any client is told); once they are done the listing is answered and no seat is held.
  Response listed;
  eventually([&] { return (listed = get("/v1/jobs?limit=5000")).status != 503; });
  ASSERT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.json["items"].size(), 300u);
  for (int i = 0; i < 3000 && server_->listings().in_use() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server_->listings().in_use(), 0u) << "a seat stayed held after its client went away";
}

}  // namespace
}  // namespace allot::server::test::server_listings_test
