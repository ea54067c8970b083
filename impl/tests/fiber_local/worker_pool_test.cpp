// The worker-pool case end to end: requests each bound to their own id are
// handed through a Channel, with a captured FiberContext, to two long-lived
// worker fibers on a ThreadPool(2). Every line logged on a request's path must
// carry that request's id, and a worker must never see a binding between
// requests.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fl_support.hpp"

namespace {

using namespace turnstile;
using fl_test::Tracked;
using fl_test::TrackedLeakCheck;

using FiberLocalWorkerPool = TrackedLeakCheck;  // counts Tracked values: none may be left alive

FiberLocal<std::string> request_id("request_id");
FiberLocal<std::string> worker_name("worker_name");
FiberLocal<Tracked> request_payload("request_payload");  // counts: no request outlives the test
FiberLocal<int> stage("stage");

constexpr int kRequests = 50;
constexpr int kLinesPerRequest = 6;

struct LogLine {
  int request;           // which request the line is about (from the work item, not ambient)
  std::string id;        // request_id.get() at the line
  std::string where;     // which step logged it
  bool saw_worker_name;  // run must replace the worker's chain, not merge into it
};

class Log {
 public:
  void add(int request, std::string where) {
    LogLine line{request, request_id.or_else("<unbound>"), std::move(where),
                 worker_name.is_bound()};
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<LogLine> take() {
    std::lock_guard lock(mu_);
    return std::move(lines_);
  }

 private:
  std::mutex mu_;
  std::vector<LogLine> lines_;
};

struct WorkItem {
  int request;
  FiberContext ctx;
};

// Code deep on the request's path: takes no context parameter.
Task<> validate(int request, Log* log) {
  log->add(request, "validate");
  co_await yield();
  log->add(request, "validate after yield");
}

Task<> process(int request, Log* log) {
  log->add(request, "process start");
  co_await yield();
  log->add(request, "process after yield");
  co_await validate(request, log);
  // A nested binding inside the reinstalled context.
  co_await stage.where(2, [&]() -> Task<> {
    co_await yield();
    if (stage.get() == 2 && request_payload.get().id() == request) log->add(request, "staged");  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  });
  log->add(request, "process end");
}

struct WorkerStats {
  std::atomic<int> handled{0};
  std::atomic<int> bound_between_requests{0};  // request_id seen outside run
  std::atomic<int> lost_own_binding{0};        // worker_name missing after run
};

Task<> worker(std::string name, Channel<WorkItem>* ch, Log* log, WorkerStats* stats) {
  co_await worker_name.where(name, [&]() -> Task<> {
    for (;;) {
      std::optional<WorkItem> item = co_await ch->receive();
      if (!item) break;
      if (request_id.is_bound() || request_payload.is_bound() || stage.is_bound())
        stats->bound_between_requests.fetch_add(1);
      const int request = item->request;
      co_await item->ctx.run([&]() -> Task<> { co_await process(request, log); });
      if (request_id.is_bound() || request_payload.is_bound() || stage.is_bound())
        stats->bound_between_requests.fetch_add(1);
      if (worker_name.or_else("") != name) stats->lost_own_binding.fetch_add(1);
      stats->handled.fetch_add(1);
    }
  });
}

// One request's own fiber: binds its id, does a little work, then hands the
// rest to the worker pool with the captured context.
Task<> request(int i, Channel<WorkItem>* ch, Log* log) {
  co_await request_id.where("req-" + std::to_string(i), [&]() -> Task<> {
    co_await request_payload.where(Tracked(i), [&]() -> Task<> {
      log->add(i, "accepted");
      // A named item, not `send(WorkItem{...})`: see the GCC 12 note in fl_support.hpp.
      WorkItem item{i, FiberContext::capture()};
      co_await ch->send(std::move(item));
    });
  });
}

Task<> server(Channel<WorkItem>* ch, Log* log, WorkerStats* stats) {
  Scope workers;
  workers.spawn(worker("worker-0", ch, log, stats));
  workers.spawn(worker("worker-1", ch, log, stats));
  Scope requests;
  for (int i = 0; i < kRequests; ++i) requests.spawn(request(i, ch, log));
  co_await requests.join();
  ch->close();
  co_await workers.join();
}

// spec: [FL-3.5] [FL-3.6] [FL-6.1] [FL-1.1] [FL-5.6]
TEST_F(FiberLocalWorkerPool, EveryLogLineCarriesItsOwnRequestId) {
  ThreadPool pool(2);
  for (int round = 0; round < 5; ++round) {
    Channel<WorkItem> ch(4);
    Log log;
    WorkerStats stats;
    ASSERT_FALSE(request_id.is_bound());
    sync_wait(pool, server(&ch, &log, &stats));

    EXPECT_EQ(stats.handled.load(), kRequests) << "round " << round;
    EXPECT_EQ(stats.bound_between_requests.load(), 0)
        << "round " << round << ": a worker saw a request's binding outside run";
    EXPECT_EQ(stats.lost_own_binding.load(), 0)
        << "round " << round << ": run did not restore the worker's own chain";

    const std::vector<LogLine> lines = log.take();
    ASSERT_EQ(lines.size(), static_cast<std::size_t>(kRequests * (kLinesPerRequest + 1)))
        << "round " << round;
    std::map<int, int> per_request;
    for (const LogLine& line : lines) {
      ++per_request[line.request];
      EXPECT_EQ(line.id, "req-" + std::to_string(line.request))
          << "round " << round << ": line '" << line.where << "' of request " << line.request;
      EXPECT_FALSE(line.saw_worker_name)
          << "round " << round << ": run merged the worker's chain into the request's";
    }
    ASSERT_EQ(per_request.size(), static_cast<std::size_t>(kRequests));
    for (const auto& [req, n] : per_request) {
      EXPECT_EQ(n, kLinesPerRequest + 1) << "round " << round << " request " << req;
    }
    EXPECT_EQ(Tracked::values(), 0)
        << "round " << round << ": a request's binding outlived its handling";
  }
}

}  // namespace
