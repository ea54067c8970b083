// README.md, "Using turnstile from another project": the whole program, run.
// (It sits in a namespace here, so its `main` is an ordinary function.)
// spec: [LANE-5.1] [FL-3.9]
#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_readme_use {

// doc: README.md
#include <turnstile/turnstile.hpp>
using namespace turnstile;

inline FiberLocal<std::string> request_id("request_id");

class Counter {                       // C2 state: owned by one lane, plain fields
 public:
  Task<int> add(int n) { return lane_.run([this, n] { return total_ += n; }); }
 private:
  StateLane lane_{"counter"};
  int total_ = 0;                     // never locked: the lane is the exclusion
};

Task<int> handle(Counter& c) {
  co_return co_await request_id.where("req-1", [&]() -> Task<int> {
    co_return co_await c.add(1);      // the turn sees request_id too
  });
}

int main() {
  Counter c;
  return sync_wait(handle(c)) == 1 ? 0 : 1;
}
// end doc

}  // namespace ex_readme_use

TURNSTILE_EXAMPLE(readme_use, &ex_readme_use::main);
