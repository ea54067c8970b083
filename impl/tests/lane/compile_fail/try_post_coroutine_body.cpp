// Must NOT compile: try_post() rejects a coroutine body, naming [LANE-3.2].
// Built by the ctest lane.compile_fail.try_post_coroutine_body.
// spec: [LANE-3.2]
#include "turnstile/state_lane.hpp"

turnstile::Task<> long_wait();

void submit(turnstile::StateLane& lane) {
  (void)lane.try_post([]() -> turnstile::Task<> { co_await long_wait(); });
}
