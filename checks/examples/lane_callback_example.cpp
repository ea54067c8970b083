// The example of impl/include/turnstile/lane_callback.hpp, run: a listener that
// calls back into the component's public API between turn A and turn B, with no
// reentrancy error.
// spec: [LANE-6.3] [LANE-8.6]
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_lane_callback {
using namespace turnstile;

struct Conn {
  int id;
};

class Connections {
 public:
  enum class State { opening, open, closed };
  struct Pending {
    int id;
    std::uint64_t generation;
  };

  explicit Connections(std::function<Task<bool>(int)> listener) : listener_(std::move(listener)) {}

  // doc: impl/include/turnstile/lane_callback.hpp
  // Before: lock { validate; state = Opening; listener(conn); } and the
  // listener called back into the component, relying on a reentrant lock.
  Task<bool> open(Conn c) {
    return split_callback(lane_,
        [this, c] { validate_on_lane(c);                  // turn A: validate,
                    state_[c.id] = State::opening;        //   every transition made
                    return Pending{c.id, ++generation_}; },//   before the callback, and a
                                                           //   placeholder claim
        [this](Pending& p) { return listener_(p.id); },   // outside the lane: may call
                                                           //   this component's public API
        [this](Pending& p, CallbackOutcome<bool>& r) {     // turn B: replace the
          if (generation_ != p.generation) return false;   //   placeholder with the
          state_[p.id] = r.ok() && r.value() ? State::open //   result, or settle the
                                             : State::closed; // failure
          return r.ok() && r.value(); });
  }
  // end doc

  // Public API the listener may call back into: a turn of its own.
  Task<State> state_of(int id) {
    return lane_.run([this, id] { return state_.at(id); });
  }
  Task<> close() { return lane_.close(); }

 private:
  void validate_on_lane(const Conn& c) {
    if (state_.count(c.id) != 0) throw std::invalid_argument("connection already open");
  }

  StateLane lane_{"connections"};
  std::map<int, State> state_;
  std::uint64_t generation_ = 0;
  std::function<Task<bool>(int)> listener_;
};

Task<int> open_one() {
  Connections* self = nullptr;
  bool saw_opening = false;
  // The listener runs outside the lane: it may call the component back. It
  // sees turn A's transition already made.
  Connections conns([&](int id) -> Task<bool> {
    saw_opening = co_await self->state_of(id) == Connections::State::opening;
    co_return true;
  });
  self = &conns;
  const bool opened = co_await conns.open(Conn{3});
  const auto state = co_await conns.state_of(3);
  co_await conns.close();
  co_return opened && saw_opening && state == Connections::State::open ? 0 : 1;
}

int run() { return sync_wait(open_one()); }

}  // namespace ex_lane_callback

TURNSTILE_EXAMPLE(lane_callback, &ex_lane_callback::run);
