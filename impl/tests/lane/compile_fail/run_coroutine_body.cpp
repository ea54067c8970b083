// Must NOT compile: a turn runs one plain callable; run() rejects a body that
// is a coroutine (returns a Task), with a diagnostic naming [LANE-3.2].
// Built by the ctest lane.compile_fail.run_coroutine_body, which passes when
// the compiler's output names the rule.
// spec: [LANE-3.2]
#include "turnstile/state_lane.hpp"

turnstile::Task<int> long_wait();

void submit(turnstile::StateLane& lane) {
  auto t = lane.run([]() -> turnstile::Task<int> { co_return co_await long_wait(); });
  (void)t;
}
