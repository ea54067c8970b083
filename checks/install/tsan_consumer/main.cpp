// A concurrent load on a ThreadPool of 4 carriers, built with ThreadSanitizer
// against a TSan-built turnstile (test install.tsan_consumer): workers in a Scope
// run turns on two lanes (closures holding shared_ptrs, whose refcounts the
// library's own code also touches), call a serial Activation, and hand items with a
// captured FiberContext through a Channel to a collector that runs in each item's
// context. Exits 0 when every count adds up; the test also requires that
// ThreadSanitizer reported nothing.
//
// `tsan_load --plant-race` instead runs two plain threads that increment one int
// without synchronisation: the test's bad input, proving it sees a report.
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <turnstile/turnstile.hpp>

namespace {
using namespace turnstile;

constexpr int kWorkers = 8;
constexpr int kItems = 150;

inline FiberLocal<std::string> request_id("request_id");

std::string id_of(int w) { return "request-" + std::to_string(w) + "-padded-past-small-string"; }

struct Item {
  int worker;
  FiberContext ctx;
};
struct Tally {
  int calls = 0;
};

struct World {
  explicit World(ThreadPool& pool)
      : lanes{std::make_unique<StateLane>("lane-a", pool), std::make_unique<StateLane>("lane-b", pool)},
        tally("tally", Tally{}, {}, pool) {}
  std::unique_ptr<StateLane> lanes[2];
  long on_lane[2] = {0, 0};  // each owned by its lane: never locked
  Activation<Tally> tally;
  Channel<Item> ch{16};
  int errors = 0;            // written by the collector only
};

Task<> worker(World& world, int w) {
  const std::string id = id_of(w);
  auto body = [&world, w]() -> Task<> {
    for (int i = 0; i < kItems; ++i) {
      const int l = (w + i) % 2;
      auto box = std::make_shared<long>(i);
      auto work = [box, &world, l] {  // named local: GCC 12
        world.on_lane[l] += *box;
        return request_id.get().size();  // a lane turn sees the caller's bindings
      };
      const std::size_t seen = co_await world.lanes[l]->run(std::move(work));
      if (seen != id_of(w).size()) throw std::logic_error("a lane turn saw the wrong request id");
      auto bump = [](TurnContext<Tally>& ctx) -> Task<int> { co_return ++ctx.state().calls; };
      (void)co_await world.tally.call("bump", bump);
      Item item{w, FiberContext::capture()};  // named local: GCC 12
      co_await world.ch.send(std::move(item));
    }
  };
  co_await request_id.where(id, std::move(body));
}

Task<> collector(World& world) {
  for (int n = 0; n < kWorkers * kItems; ++n) {
    std::optional<Item> item = co_await world.ch.receive();
    if (!item) throw std::logic_error("the channel closed early");
    const int w = item->worker;
    const bool ok = item->ctx.run([w] { return request_id.get() == id_of(w); });
    if (!ok) ++world.errors;
  }
}

Task<int> load(ThreadPool& pool) {
  World world(pool);
  {
    Scope scope;
    scope.spawn(collector(world));
    for (int w = 0; w < kWorkers; ++w) scope.spawn(worker(world, w));
    co_await scope.join();
  }
  co_await world.lanes[0]->close();
  co_await world.lanes[1]->close();
  const long expected = static_cast<long>(kWorkers) * kItems * (kItems - 1) / 2;
  const long sum = world.on_lane[0] + world.on_lane[1];
  const int calls = world.tally.snapshot()->calls;
  std::printf("tsan_load: %d workers x %d items on %u carriers: lane sum %ld (expected %ld), "
              "%d serial calls, %d context errors\n",
              kWorkers, kItems, pool.carriers(), sum, expected, calls, world.errors);
  co_return sum == expected && calls == kWorkers * kItems && world.errors == 0 ? 0 : 1;
}

}  // namespace

int plant_race() {
  int racy = 0;
  std::thread a([&racy] { for (int i = 0; i < 1000; ++i) ++racy; });
  std::thread b([&racy] { for (int i = 0; i < 1000; ++i) ++racy; });
  a.join();
  b.join();
  return racy > 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--plant-race") return plant_race();
  ThreadPool pool(4);
  return sync_wait(pool, load(pool));
}
