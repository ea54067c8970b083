// turnstile built as a subproject: a lane turn from a fiber. Exits 0 on success.
#include <turnstile/turnstile.hpp>

namespace {
turnstile::Task<int> twice(turnstile::StateLane& lane, int n) {
  const int r = co_await lane.run([n] { return 2 * n; });
  co_await lane.close();
  co_return r;
}
}  // namespace

int main() {
  turnstile::StateLane lane("dependency");
  return turnstile::sync_wait(twice(lane, 21)) == 42 ? 0 : 1;
}
