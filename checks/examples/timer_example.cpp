// The example of impl/include/turnstile/timer.hpp, run on a ManualScheduler (virtual
// time): the sleep resumes once 200 ms have passed, the cancelled callback never runs.
// spec: [RT-8.2] [RT-8.4]
#include <chrono>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_timer {
using namespace turnstile;
using namespace std::chrono_literals;

int warnings = 0;
void warn() { ++warnings; }
bool slept = false;

Task<> body(Scheduler& s) {
  // doc: impl/include/turnstile/timer.hpp
  co_await sleep_for(200ms);                        // this fiber, later
  TimerHandle h = s.call_after(5s, [] { warn(); }); // a callback, later
  if (h.cancel()) { /* warn() never runs */ }
  // end doc
  slept = true;
}

int run() {
  ManualScheduler s;
  detach(s, body(s));
  s.run_until_idle();
  if (slept) return 1;  // nothing fires early
  s.advance(200ms);
  s.run_until_idle();
  s.advance(10s);
  s.run_until_idle();
  return slept && warnings == 0 ? 0 : 1;
}

}  // namespace ex_timer

TURNSTILE_EXAMPLE(timer, &ex_timer::run);
