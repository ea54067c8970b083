// README.md, "Model-check your own program": an actor and a lane with a planted
// race, found by explore(), shrunk, and replayed from its shrunk schedule.
// (It sits in a namespace here, so its `main` is an ordinary function; built
// with TURNSTILE_EXAMPLE_STANDALONE it is a program of its own, which the
// install test builds against the installed package.)
// spec: [EXP-3.1] [EXP-4.2] [EXP-4.3]
#include <iostream>

#include "example_registry.hpp"
#include "turnstile/testing/explore.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_model_check {

// doc: README.md
#include <turnstile/testing/explore.hpp>
#include <turnstile/turnstile.hpp>
using namespace turnstile;

// An account actor, and a lane that records payouts. The planted race: the
// balance is checked in one turn and debited in another.
Task<> withdraw(Activation<int>& account, StateLane& payouts, int& paid) {
  Task<int> read = account.call("balance", [](int& b) { return b; });
  if (co_await std::move(read) < 10) co_return;
  Task<> debit = account.call("debit", [](int& b) { b -= 10; });
  co_await std::move(debit);
  Task<> pay = payouts.run([&paid] { paid += 10; });
  co_await std::move(pay);
}

Task<> two_withdrawals(ManualScheduler& s) {   // one run of the program
  Activation<int> account("account", 10, {}, s);
  StateLane payouts("payouts", s);
  int paid = 0;
  Scope scope;
  scope.spawn(withdraw(account, payouts, paid));
  for (int i = 0; i < 3; ++i) co_await yield();  // the second request comes later
  scope.spawn(withdraw(account, payouts, paid));
  Task<> joined = scope.join();
  co_await std::move(joined);
  testing::check_that(paid <= 10, "paid out more than the balance");
}

int main() {
  testing::ExploreOptions options;            // exhaustive, at most 2 deviations
  testing::ExploreResult r = testing::explore(options, two_withdrawals);
  if (!r.failure) return 1;                   // the race must be found
  std::cout << r.summary();                   // kind, tokens, shrunk schedule
  testing::ExploreResult again = testing::replay(options, two_withdrawals, r.failure->shrunk);
  return again.failure ? 0 : 1;               // the shrunk schedule fails again
}
// end doc

}  // namespace ex_model_check

#ifdef TURNSTILE_EXAMPLE_STANDALONE
int main() { return ex_model_check::main(); }
#else
TURNSTILE_EXAMPLE(model_check, &ex_model_check::main);
#endif
