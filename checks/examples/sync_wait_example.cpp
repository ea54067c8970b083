// The example of impl/include/turnstile/sync_wait.hpp, run: the blocking bridge
// from main() into a fiber. (Its `main` lives in a namespace here, so it is an
// ordinary function the examples runner calls.)
// spec: [RT-6.1]
#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_sync_wait {
using turnstile::Task;

bool ran = false;
Task<int> run_app() {
  ran = true;
  co_return 0;
}

// doc: impl/include/turnstile/sync_wait.hpp
int main() { return turnstile::sync_wait(run_app()); }
// end doc

int run() { return main() == 0 && ran ? 0 : 1; }

}  // namespace ex_sync_wait

TURNSTILE_EXAMPLE(sync_wait, &ex_sync_wait::run);
