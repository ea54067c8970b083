// The example of impl/include/turnstile/gate.hpp, run: a lane awaited while a
// gate is held (allowed, [LANE-4.6]), then the external operation.
// spec: [LANE-4.6] [LANE-4.5]
#include <map>
#include <string>
#include <vector>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_gate {
using namespace turnstile;

using Key = int;
struct Connection {
  std::vector<std::string> written;
  Task<> write(std::string route) {
    written.push_back(std::move(route));
    co_return;
  }
};
std::map<Key, std::string> routes;  // the lane's state in this example
std::string claim_route(Key k) { return routes[k] = "route-" + std::to_string(k); }

// doc: impl/include/turnstile/gate.hpp
Task<> send(Gate& gate, Connection& c, StateLane& lane, Key k) {
  Gate::Holder held = co_await gate.acquire();       // waits its turn (FIFO)
  auto route = co_await lane.run([&] { return claim_route(k); });  // allowed
  co_await c.write(route);                            // the external operation
}                                                     // ~Holder releases
// end doc

Task<> send_and_close(Gate& gate, Connection& c, StateLane& lane) {
  co_await send(gate, c, lane, 7);
  co_await lane.close();
}

int run() {
  Gate gate("socket-write");
  StateLane lane("routes");
  Connection c;
  sync_wait(send_and_close(gate, c, lane));
  return c.written == std::vector<std::string>{"route-7"} && !gate.is_held() ? 0 : 1;
}

}  // namespace ex_gate

TURNSTILE_EXAMPLE(gate, &ex_gate::run);
