// Consumer of the installed turnstile package: runs a trivial coroutine to completion.
// Exits 0 iff sync_wait returns the coroutine's result, 42.
#include <turnstile/turnstile.hpp>

namespace {
turnstile::Task<int> answer() { co_return 42; }
}  // namespace

int main() { return turnstile::sync_wait(answer()) == 42 ? 0 : 1; }
