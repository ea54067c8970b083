// coawait_temporary_probe.cpp: the configure-time probe behind
// turnstile_check_coawait_temporaries() (TurnstileCoawaitProbe.cmake).
//
// GCC 12 destroys twice a temporary with a non-trivial destructor that is built
// inside a `co_await` operand (an aggregate, or a lambda capturing by value, passed
// to a coroutine by value). This program builds both forms, counts constructions
// against destructions, and exits 0 when they balance (the compiler is sound), 1
// when something was destroyed more often than built (the miscompile). It needs
// only the standard library, so the check can run before turnstile is built.
#include <coroutine>
#include <exception>

namespace {

int live = 0;  // Counted objects constructed minus destroyed

struct Counted {
  int v;
  explicit Counted(int x) : v(x) { ++live; }
  Counted(const Counted& o) : v(o.v) { ++live; }
  Counted(Counted&& o) noexcept : v(o.v) { ++live; }
  Counted& operator=(const Counted&) = default;
  ~Counted() { --live; }
};

struct Item {  // an aggregate: the `Item{id, FiberContext::capture()}` shape
  int id;
  Counted payload;
};

struct Task {
  struct promise_type {
    std::coroutine_handle<> cont;
    Task get_return_object() {
      return Task{std::coroutine_handle<promise_type>::from_promise(*this)};
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    struct Final {
      bool await_ready() noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> h) noexcept {
        auto c = h.promise().cont;
        return c ? c : std::noop_coroutine();
      }
      void await_resume() noexcept {}
    };
    Final final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() { std::terminate(); }
  };
  std::coroutine_handle<promise_type> h;
  explicit Task(std::coroutine_handle<promise_type> x) : h(x) {}
  Task(Task&& o) noexcept : h(o.h) { o.h = {}; }
  ~Task() {
    if (h) h.destroy();
  }
  bool await_ready() { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> c) {
    h.promise().cont = c;
    return h;
  }
  void await_resume() {}
};

Task send(Item item) {
  (void)item.id;
  co_return;
}

template <class F>
Task run(F f) {
  f();
  co_return;
}

Task body() {
  co_await send(Item{1, Counted{2}});              // the hazard, aggregate form
  co_await run([c = Counted{3}] { (void)c.v; });   // the hazard, lambda form
}

}  // namespace

int main() {
  {
    Task t = body();
    t.h.resume();
  }
  return live == 0 ? 0 : 1;
}
