// FiberLocal / FiberContext on a plain thread: keys, where, the reads, value
// types, lookup order, capture/run, the deferred and non-goal decisions.
#include <gtest/gtest.h>

#include <array>
#include <barrier>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "fl_support.hpp"

namespace {

using namespace turnstile;
using namespace fl_test;

// Suites whose tests count Tracked values (none may be left alive).
using FiberContextCapture = TrackedLeakCheck;
using FiberLocalLifetime = TrackedLeakCheck;

FiberLocal<std::string> text("text");

// ------------------------------------------------------------------ keys

// spec: [FL-4.1]
TEST(FiberLocalKey, IsANamedUnboundIdentityThatCannotBeCopied) {
  static_assert(!std::is_copy_constructible_v<FiberLocal<int>>);
  static_assert(!std::is_copy_assignable_v<FiberLocal<int>>);
  static_assert(!std::is_move_constructible_v<FiberLocal<int>>);
  static_assert(!std::is_move_assignable_v<FiberLocal<int>>);
  static_assert(std::is_default_constructible_v<FiberLocal<int>>);
  static_assert(!std::is_convertible_v<std::string, FiberLocal<int>>,
                "the debug-name constructor is explicit");

  const FiberLocal<int> unnamed;
  const FiberLocal<int> named("tenant");
  EXPECT_EQ(unnamed.name(), "");
  EXPECT_EQ(named.name(), "tenant");
  EXPECT_FALSE(unnamed.is_bound());
  EXPECT_FALSE(named.is_bound());

  // Two keys of the same type are two identities: binding one leaves the other
  // unbound.
  named.where(1, [&] {
    EXPECT_TRUE(named.is_bound());
    EXPECT_FALSE(unnamed.is_bound());
    unnamed.where(2, [&] {
      EXPECT_EQ(named.get(), 1);
      EXPECT_EQ(unnamed.get(), 2);
    });
  });
}

// ------------------------------------------------------------------ where

// spec: [FL-3.1]
TEST(FiberLocalWhere, BindsForTheBodyAndRestoresUnboundOnReturn) {
  EXPECT_FALSE(number.is_bound());
  bool ran = false;
  number.where(7, [&] {
    ran = true;
    EXPECT_EQ(number.get(), 7);
  });
  EXPECT_TRUE(ran);
  EXPECT_FALSE(number.is_bound());
}

// spec: [FL-3.1] [FL-4.7]
TEST(FiberLocalWhere, PlainBodyResultIsReturned) {
  static_assert(std::is_same_v<decltype(number.where(1, [] { return 2.5; })), double>);
  static_assert(std::is_void_v<decltype(number.where(1, [] {}))>);
  const int r = number.where(20, [] { return number.get() + 1; });
  EXPECT_EQ(r, 21);
  const std::string s = text.where("abc", [] { return text.get() + "!"; });
  EXPECT_EQ(s, "abc!");
  EXPECT_FALSE(number.is_bound());
  EXPECT_FALSE(text.is_bound());
}

// spec: [FL-3.1] [FL-5.5]
TEST(FiberLocalWhere, NestedWhereShadowsForItsOwnExtent) {
  number.where(1, [] {
    EXPECT_EQ(number.get(), 1);
    number.where(2, [] {
      EXPECT_EQ(number.get(), 2);
      number.where(3, [] { EXPECT_EQ(number.get(), 3); });
      EXPECT_EQ(number.get(), 2);
    });
    EXPECT_EQ(number.get(), 1);
  });
  EXPECT_FALSE(number.is_bound());
}

// spec: [FL-3.1] [FL-6.2]
TEST(FiberLocalWhere, RestoresOnThrowExactlyAsOnReturn) {
  number.where(1, [] {
    EXPECT_THROW(number.where(2, []() -> int { throw Boom("inner"); }), Boom);
    EXPECT_EQ(number.get(), 1) << "the outer binding is back after the throw";
  });
  EXPECT_FALSE(number.is_bound());

  // From unbound, through several levels and several keys at once.
  try {
    number.where(1, [] { text.where("t", [] { number.where(2, [] { throw Boom("deep"); }); }); });
    ADD_FAILURE() << "the exception must propagate out of where";
  } catch (const Boom& e) {
    EXPECT_STREQ(e.what(), "deep") << "where must not replace the body's exception";
  }
  EXPECT_FALSE(number.is_bound());
  EXPECT_FALSE(text.is_bound());
  EXPECT_TRUE(FiberContext::capture().empty());
}

// spec: [FL-2.1]
TEST(FiberLocalWhere, BindingIsImmutableForItsExtent) {
  // The reads hand out const access only: nothing can change a binding in place.
  static_assert(std::is_same_v<decltype(text.get()), const std::string&>);
  static_assert(std::is_same_v<decltype(text.try_get()), const std::string*>);

  text.where("fixed", [] {
    const std::string* first = &text.get();
    // Other keys and an inner shadowing binding come and go ...
    number.where(1, [] { text.where("inner", [] { EXPECT_EQ(text.get(), "inner"); }); });
    // ... and the outer binding is the very same object with the same value.
    EXPECT_EQ(&text.get(), first);
    EXPECT_EQ(text.get(), "fixed");
  });
}

// ------------------------------------------------------------------ reads

// spec: [FL-4.2] [FL-8.2]
TEST(FiberLocalGet, UnboundThrowsUnboundFiberLocalNamingTheKey) {
  static_assert(std::is_base_of_v<std::logic_error, UnboundFiberLocal>);
  const FiberLocal<int> request_id("request_id");
  try {
    (void)request_id.get();
    ADD_FAILURE() << "get() on an unbound key must throw";
  } catch (const UnboundFiberLocal& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("'request_id'"), std::string::npos) << what;
    EXPECT_NE(what.find("or_else"), std::string::npos) << what;
    EXPECT_NE(what.find("try_get"), std::string::npos) << what;
    EXPECT_NE(what.find("FiberContext::capture"), std::string::npos) << what;
  }
}

// spec: [FL-4.2] [FL-8.2]
TEST(FiberLocalGet, UnnamedKeyIsReportedAsUnnamed) {
  const FiberLocal<int> anonymous;
  try {
    (void)anonymous.get();
    ADD_FAILURE() << "get() on an unbound key must throw";
  } catch (const UnboundFiberLocal& e) {
    EXPECT_NE(std::string(e.what()).find("<unnamed>"), std::string::npos) << e.what();
  }
}

// spec: [FL-4.2] [FL-8.2]
TEST(FiberLocalGet, ReturnsTheInnermostBindingAndThrowsAgainAfterIt) {
  number.where(5, [] {
    EXPECT_EQ(number.get(), 5);
    number.where(6, [] { EXPECT_EQ(number.get(), 6); });
  });
  EXPECT_THROW((void)number.get(), UnboundFiberLocal) << "never a silent default";
}

// spec: [FL-4.3]
TEST(FiberLocalOrElse, ReturnsBindingOrFallback) {
  EXPECT_EQ(number.or_else(-1), -1);
  EXPECT_FALSE(number.is_bound()) << "or_else does not bind the fallback";
  number.where(3, [] {
    EXPECT_EQ(number.or_else(-1), 3);
    number.where(4, [] { EXPECT_EQ(number.or_else(-1), 4); });
  });
  EXPECT_EQ(text.or_else("none"), "none");
  text.where("x", [] { EXPECT_EQ(text.or_else("none"), "x"); });
}

// spec: [FL-4.4]
TEST(FiberLocalIsBound, TracksTheCurrentContext) {
  EXPECT_FALSE(number.is_bound());
  number.where(0, [] {  // a binding whose value is "falsy" is still a binding
    EXPECT_TRUE(number.is_bound());
    EXPECT_FALSE(text.is_bound());
    text.where("", [] { EXPECT_TRUE(text.is_bound()); });
    EXPECT_FALSE(text.is_bound());
  });
  EXPECT_FALSE(number.is_bound());
}

// spec: [FL-4.5]
TEST(FiberLocalTryGet, PointsAtTheSameObjectAsGetOrIsNull) {
  EXPECT_EQ(number.try_get(), nullptr);
  number.where(1, [] {
    const int* outer = number.try_get();
    ASSERT_NE(outer, nullptr);
    EXPECT_EQ(outer, &number.get());
    EXPECT_EQ(*outer, 1);
    number.where(2, [&] {
      const int* inner = number.try_get();
      ASSERT_NE(inner, nullptr);
      EXPECT_EQ(inner, &number.get());
      EXPECT_NE(inner, outer);
      EXPECT_EQ(*inner, 2);
    });
    EXPECT_EQ(number.try_get(), outer) << "the outer frame is reached again, not a copy";
  });
  EXPECT_EQ(number.try_get(), nullptr);
}

// ------------------------------------------------------------------ value types

struct alignas(64) Overaligned {
  std::uint64_t word;
};

struct Point {
  int x;
  int y;
  bool operator==(const Point&) const = default;
};

// spec: [FL-4.6]
TEST(FiberLocalValueType, ScalarsStringsAndAggregatesRoundTrip) {
  static const FiberLocal<double> real("real");
  static const FiberLocal<bool> flag("flag");
  static const FiberLocal<char> letter("letter");
  static const FiberLocal<Point> point("point");
  static const FiberLocal<std::array<int, 64>> big("big");
  static const FiberLocal<Overaligned> aligned("aligned");
  static const FiberLocal<const char*> cstr("cstr");

  std::array<int, 64> arr{};
  for (int i = 0; i < 64; ++i) arr[static_cast<std::size_t>(i)] = i * i;
  static const char hello[] = "hello";

  // Keys of different types bound together: each reads back as its own T.
  number.where(-123456789, [&] {
    real.where(0.1, [&] {
      flag.where(true, [&] {
        letter.where('z', [&] {
          point.where(Point{3, -4}, [&] {
            big.where(arr, [&] {
              aligned.where(Overaligned{0xdeadbeefcafef00dULL}, [&] {
                cstr.where(hello, [&] {
                  text.where(std::string(1000, 'q'), [&] {
                    EXPECT_EQ(number.get(), -123456789);
                    EXPECT_EQ(real.get(), 0.1);
                    EXPECT_TRUE(flag.get());
                    EXPECT_EQ(letter.get(), 'z');
                    EXPECT_EQ(point.get(), (Point{3, -4}));
                    EXPECT_EQ(big.get(), arr);
                    EXPECT_EQ(aligned.get().word, 0xdeadbeefcafef00dULL);
                    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&aligned.get()) % 64, 0u)
                        << "an over-aligned T is stored with its alignment";
                    EXPECT_EQ(cstr.get(), hello);
                    EXPECT_EQ(text.get(), std::string(1000, 'q'));
                  });
                });
              });
            });
          });
        });
      });
    });
  });
}

// spec: [FL-4.6]
TEST(FiberLocalValueType, MoveOnlyValueIsAcceptedAndReadByReference) {
  static const FiberLocal<std::unique_ptr<int>> owned("owned");
  static_assert(std::is_same_v<decltype(owned.get()), const std::unique_ptr<int>&>);
  static_assert(std::is_same_v<decltype(owned.try_get()), const std::unique_ptr<int>*>);

  auto p = std::make_unique<int>(42);
  const int* raw = p.get();
  owned.where(std::move(p), [&] {
    const std::unique_ptr<int>& ref = owned.get();
    EXPECT_EQ(ref.get(), raw) << "the pointee is moved in, not copied";
    EXPECT_EQ(*ref, 42);
    EXPECT_EQ(owned.try_get(), &ref);
    owned.where(std::make_unique<int>(43), [&] { EXPECT_EQ(*owned.get(), 43); });
    EXPECT_EQ(owned.get().get(), raw);
  });
  EXPECT_FALSE(owned.is_bound());
}

// ------------------------------------------------------------------ lookup order

// spec: [FL-5.5]
TEST(FiberLocalLookup, NewestFrameForTheKeyWinsAcrossOtherKeys) {
  // Chain, newest first: number=4, text=c, number=3, text=b, number=2, text=a, number=1.
  number.where(1, [] {
    text.where("a", [] {
      number.where(2, [] {
        text.where("b", [] {
          number.where(3, [] {
            text.where("c", [] {
              number.where(4, [] {
                EXPECT_EQ(number.get(), 4);
                EXPECT_EQ(text.get(), "c");
              });
              EXPECT_EQ(number.get(), 3);
              EXPECT_EQ(text.get(), "c");
            });
            EXPECT_EQ(text.get(), "b");
          });
          EXPECT_EQ(number.get(), 2);
        });
      });
    });
  });
}

// spec: [FL-5.5] [FL-3.5]
TEST(FiberLocalLookup, SnapshotKeepsNewestFirstOrder) {
  const FiberContext ctx =
      number.where(1, [] { return number.where(2, [] { return FiberContext::capture(); }); });
  ctx.run([] { EXPECT_EQ(number.get(), 2) << "the shadowing frame is found first"; });  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
}

// ------------------------------------------------------------------ plain threads

// spec: [FL-5.2] [FL-1.1]
TEST(FiberLocalPlainThread, MainThreadAndAStdThreadHaveTheirOwnSlots) {
  std::barrier both_bound(2);
  std::barrier main_checked(2);
  std::optional<int> thread_saw_at_start;
  std::optional<int> thread_saw_while_both_bound;
  std::optional<int> thread_saw_at_end;

  number.where(1, [&] {
    std::thread other([&] {
      thread_saw_at_start = number.or_else(-1);
      number.where(2, [&] {
        both_bound.arrive_and_wait();  // main is inside its own where(1) now
        main_checked.arrive_and_wait();
        thread_saw_while_both_bound = number.get();
      });
      thread_saw_at_end = number.or_else(-1);
    });
    both_bound.arrive_and_wait();  // the thread is inside its where(2) now
    EXPECT_EQ(number.get(), 1) << "the thread's binding must not show on main";
    main_checked.arrive_and_wait();
    other.join();
    EXPECT_EQ(number.get(), 1);
  });
  EXPECT_EQ(thread_saw_at_start, -1) << "a new thread starts unbound";
  EXPECT_EQ(thread_saw_while_both_bound, 2);
  EXPECT_EQ(thread_saw_at_end, -1);
  EXPECT_FALSE(number.is_bound());
}

// spec: [FL-5.2] [FL-3.5] [FL-3.6]
TEST(FiberLocalPlainThread, CaptureOnOneThreadRunOnAnother) {
  const FiberContext ctx =
      number.where(7, [] { return text.where("seven", [] { return FiberContext::capture(); }); });
  EXPECT_FALSE(number.is_bound());

  std::optional<int> before, inside, after;
  std::optional<std::string> inside_text;
  std::thread other([&] {
    text.where("thread-own", [&] {
      before = number.or_else(-1);
      ctx.run([&] {
        inside = number.get();
        inside_text = text.get();
      });
      after = number.or_else(-1);
      EXPECT_EQ(text.get(), "thread-own") << "run restores the thread's own chain";
    });
  });
  other.join();
  EXPECT_EQ(before, -1);
  EXPECT_EQ(inside, 7);
  EXPECT_EQ(inside_text, "seven");
  EXPECT_EQ(after, -1);
}

// ------------------------------------------------------------------ capture / run

// spec: [FL-3.5] [FL-3.6]
TEST(FiberContextRun, InstallsTheSnapshotReplacingAndNotMergingThenRestores) {
  static const FiberLocal<int> worker_only("worker_only");
  const FiberContext ctx = number.where(1, [] { return FiberContext::capture(); });

  worker_only.where(99, [&] {
    number.where(2, [&] {
      const int r = ctx.run([] {
        EXPECT_EQ(number.get(), 1) << "the snapshot's binding, not the runner's";
        EXPECT_FALSE(worker_only.is_bound()) << "run replaces the chain: no merge";
        return 5;
      });
      EXPECT_EQ(r, 5) << "a plain body's result is returned";
      EXPECT_EQ(number.get(), 2);
      EXPECT_EQ(worker_only.get(), 99);
    });
  });

  // The empty context runs a body with nothing bound.
  number.where(3, [] {
    FiberContext{}.run([] { EXPECT_FALSE(number.is_bound()); });
    EXPECT_EQ(number.get(), 3);
  });
}

// spec: [FL-3.8] [FL-3.5]
TEST(FiberContextRun, KeepsTheRunningFibersPositionNotTheSnapshots) {
  // User bindings come from the snapshot; the lane marker (a position key)
  // stays as the running fiber has it, in both directions.
  ManualScheduler ms;
  StateLane lane("position", ms);
  static const FiberLocal<std::string> who("who");
  std::optional<FiberContext> in_turn;
  const FiberContext outside = who.where(std::string("outside"), [] { return FiberContext::capture(); });
  std::string seen_inside, seen_after;
  const StateLane* lane_inside = &lane;
  const StateLane* lane_after = &lane;
  ASSERT_TRUE(lane.try_post([&] {
    who.where(std::string("turn"), [&] { in_turn = FiberContext::capture(); });
    outside.run([&] {
      seen_inside = who.get();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
      lane_inside = StateLane::current();
    });
  }));
  ms.run_until_idle();
  ASSERT_TRUE(in_turn.has_value());
  in_turn->run([&] {
    seen_after = who.get();  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
    lane_after = StateLane::current();
  });
  EXPECT_EQ(seen_inside, "outside");  // [FL-3.5] the snapshot's binding
  EXPECT_EQ(lane_inside, &lane);      // [FL-3.8] still in the turn
  EXPECT_EQ(seen_after, "turn");
  EXPECT_EQ(lane_after, nullptr);     // [FL-3.8] the turn did not travel
}

// spec: [FL-3.6] [FL-6.2]
TEST(FiberContextRun, RestoresTheRunnerOnThrow) {
  const FiberContext ctx = number.where(1, [] { return FiberContext::capture(); });
  text.where("runner", [&] {
    EXPECT_THROW(ctx.run([] {
      EXPECT_EQ(number.get(), 1);
      number.where(2, [] { throw Boom("in run"); });
    }),
                 Boom);
    EXPECT_FALSE(number.is_bound());
    EXPECT_EQ(text.get(), "runner");
  });
}

// spec: [FL-5.3]
TEST_F(FiberContextCapture, CaptureIsOnePointerWhateverTheNumberOfBindings) {
  static_assert(sizeof(FiberContext) == sizeof(void*), "a snapshot is one chain head");

  EXPECT_TRUE(FiberContext::capture().empty());
  EXPECT_EQ(FiberContext::capture(), FiberContext{}) << "unbound: the empty context";

  // Build a chain of 1000 bindings; at depth 1 and at depth 1000 a capture is
  // the same kind of thing: a shared head, no value copied.
  std::vector<FiberContext> at_depth;  // capture taken at each depth
  std::function<void(int)> nest = [&](int depth) {
    tracked.where(Tracked(depth), [&] {
      const FiberContext a = FiberContext::capture();
      const FiberContext b = FiberContext::capture();
      EXPECT_EQ(a, b) << "two captures of one context share its head";
      EXPECT_EQ(Tracked::values(), depth) << "capturing copies no value";
      if (depth == 1 || depth == 1000) at_depth.push_back(a);
      if (depth < 1000) nest(depth + 1);
      EXPECT_EQ(FiberContext::capture(), a) << "after an inner where the head is back";
    });
  };
  nest(1);
  ASSERT_EQ(at_depth.size(), 2u);
  EXPECT_NE(at_depth[0], at_depth[1]);
  EXPECT_EQ(Tracked::values(), 1000) << "the deepest snapshot holds the whole chain";

  // Capturing again, from the snapshots themselves, copies nothing either.
  const int values_before = Tracked::values();
  at_depth[1].run([&] {
    EXPECT_EQ(FiberContext::capture(), at_depth[1]);
    EXPECT_EQ(tracked.get().id(), 1000);  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  });
  at_depth[0].run([&] { EXPECT_EQ(FiberContext::capture(), at_depth[0]); });
  EXPECT_EQ(Tracked::values(), values_before);
  at_depth.clear();
}

// spec: [FL-5.3]
TEST_F(FiberContextCapture, WhereMakesOneFrameHoldingOneValue) {
  tracked.where(Tracked(1), [] {
    EXPECT_EQ(Tracked::values(), 1) << "the value is moved into its frame, not copied";
    tracked.where(Tracked(2), [] { EXPECT_EQ(Tracked::values(), 2); });
    EXPECT_EQ(Tracked::values(), 1);
  });
  EXPECT_EQ(Tracked::values(), 0);
}

// ------------------------------------------------------------------ lifetime

// spec: [FL-5.6]
TEST_F(FiberLocalLifetime, HeldSnapshotKeepsTheValueAliveUntilReleased) {
  std::optional<FiberContext> held;
  const Tracked* address_in_where = nullptr;
  tracked.where(Tracked(11), [&] {
    address_in_where = &tracked.get();
    held = FiberContext::capture();
  });
  EXPECT_FALSE(tracked.is_bound());
  EXPECT_EQ(Tracked::values(), 1) << "the snapshot still holds the frame";

  held->run([&] {
    EXPECT_EQ(&tracked.get(), address_in_where) << "the same, still-live object";
    EXPECT_EQ(tracked.get().id(), 11);
  });

  // A copy is another holder: dropping one of the two keeps the value.
  std::optional<FiberContext> copy = held;
  held.reset();
  EXPECT_EQ(Tracked::values(), 1);
  copy.reset();
  EXPECT_EQ(Tracked::values(), 0) << "the last holder frees the frame";
}

// spec: [FL-5.6]
TEST_F(FiberLocalLifetime, NewerFrameHoldsTheOlderOnes) {
  FiberContext held;
  tracked.where(Tracked(1), [&] {
    number.where(5, [&] { tracked.where(Tracked(2), [&] { held = FiberContext::capture(); }); });
  });
  EXPECT_EQ(Tracked::values(), 2) << "the newest frame holds its predecessors";
  held.run([] {
    EXPECT_EQ(tracked.get().id(), 2);  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
    EXPECT_EQ(number.get(), 5);  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
  });

  // A snapshot of an inner point holds only what it needs.
  FiberContext outer_only;
  tracked.where(Tracked(3), [&] {
    outer_only = FiberContext::capture();
    tracked.where(Tracked(4), [] {});
  });
  EXPECT_EQ(Tracked::values(), 3);

  held = FiberContext{};
  EXPECT_EQ(Tracked::values(), 1);
  outer_only = FiberContext{};
  EXPECT_EQ(Tracked::values(), 0);
}

// spec: [FL-5.6]
TEST_F(FiberLocalLifetime, SnapshotReleasedOnAnotherThreadFreesOnce) {
  std::optional<FiberContext> held;
  tracked.where(Tracked(1), [&] { held = FiberContext::capture(); });
  std::thread other([&] {
    held->run([] { EXPECT_EQ(tracked.get().id(), 1); });  // turnstile-lint: ignore[LINT-1.1] bound by the enclosing run/where
    held.reset();
  });
  other.join();
  EXPECT_EQ(Tracked::values(), 0);
}

// A value whose move constructor throws on a chosen move (counted from arming).
struct MoveBomb {
  static inline int moves_until_throw = -1;  // -1: never throws
  MoveBomb() = default;
  MoveBomb(MoveBomb&&) {
    if (moves_until_throw >= 0 && moves_until_throw-- == 0) throw Boom("move failed");
  }
  MoveBomb(const MoveBomb&) = delete;
  MoveBomb& operator=(const MoveBomb&) = delete;
  MoveBomb& operator=(MoveBomb&&) = delete;
};

// spec: [FL-5.6] [FL-6.2]
TEST_F(FiberLocalLifetime, ValueThatThrowsWhileBeingBoundLeaksNothing) {
  static const FiberLocal<MoveBomb> bomb("bomb");
  // Make each move of the value on its way into the frame throw in turn, until
  // one binding succeeds. Whichever move throws, where must leave the chain as
  // it was and hold no reference to it.
  bool bound = false;
  for (int k = 0; k < 16 && !bound; ++k) {
    tracked.where(Tracked(1), [&] {
      const FiberContext before = FiberContext::capture();
      MoveBomb::moves_until_throw = k;
      try {
        bomb.where(MoveBomb{}, [&] { bound = true; });
      } catch (const Boom&) {
        EXPECT_FALSE(bound);
      }
      MoveBomb::moves_until_throw = -1;
      EXPECT_EQ(FiberContext::capture(), before) << "move #" << k;
      EXPECT_FALSE(bomb.is_bound()) << "move #" << k;
      EXPECT_EQ(tracked.get().id(), 1) << "move #" << k;
    });
    EXPECT_EQ(Tracked::values(), 0)
        << "when move #" << k << " of the value throws, where leaks a reference to the chain "
        << "it was pushing onto (the outer binding is never freed)";
  }
  EXPECT_TRUE(bound);
}

// ------------------------------------------------------------------ decisions

// A key with set/remove/default would satisfy one of these.
template <class K>
concept has_imperative_binding = requires(const K& k, int v) {
  k.set(v);
}
|| requires(K& k, int v) { k.set(v); }
|| requires(const K& k) { k.remove(); }
|| requires(K& k) { k.remove(); }
|| requires(K& k) { k.reset(); }
|| requires(K& k) { k.clear(); }
|| requires(K& k, int v) { k.bind(v); }
|| requires(K& k, int v) { k.push(v); }
|| requires(K& k) { k.pop(); };

template <class K>
concept assignable_as_binding = requires(K& k, int v) {
  k = v;
};

template <class K>
concept scoped_binding = requires(const K& k) {
  k.where(1, [] {});
};

// spec: [FL-4.9] [FL-8.1]
TEST(FiberLocalDecisions, NoImperativeSetOrRemove) {
  static_assert(!has_imperative_binding<FiberLocal<int>>,
                "set/remove are deferred: where is the only way to bind");
  static_assert(!has_imperative_binding<FiberContext>);
  static_assert(!assignable_as_binding<FiberLocal<int>>, "no assignment as a binding either");
  static_assert(scoped_binding<FiberLocal<int>>,
                "where is the binding API, and it works on a const key");
  SUCCEED();
}

// spec: [FL-4.8]
TEST(FiberLocalDecisions, NoProcessWideDefaultValue) {
  static_assert(!std::is_constructible_v<FiberLocal<int>, int>,
                "FiberLocal(T initial) is deferred");
  static_assert(!std::is_constructible_v<FiberLocal<double>, double>);
  static_assert(!std::is_constructible_v<FiberLocal<Point>, Point>);
  // For FiberLocal<std::string> the string argument is the debug name, never a
  // default value: the key stays unbound.
  const FiberLocal<std::string> key(std::string("looks-like-a-default"));
  EXPECT_EQ(key.name(), "looks-like-a-default");
  EXPECT_FALSE(key.is_bound());
  EXPECT_EQ(key.or_else("fallback"), "fallback") << "or_else covers the default use";
  EXPECT_THROW((void)key.get(), UnboundFiberLocal);
}

template <class C>
concept has_token_registry = requires(const C& c) {
  c.to_token();
}
|| requires(const C& c) { c.token(); }
|| requires(const C& c) { c.id(); }
|| requires(std::string s) { C::from_token(s); }
|| requires(std::string s) { C::find(s); }
|| requires(std::string s) { C::lookup(s); }
|| requires(std::string s) { C::registry(); };

// spec: [FL-3.7]
TEST(FiberLocalDecisions, NoGlobalRegistryUsersKeepTheirOwnMap) {
  static_assert(!has_token_registry<FiberContext>,
                "the id -> context registry is a user-side pattern, not a core type");
  static_assert(!has_token_registry<FiberLocal<int>>);

  // The documented pattern: a user-owned map from a string id to a snapshot,
  // for a boundary that can only carry a string.
  std::map<std::string, FiberContext> user_registry;
  number.where(42, [&] { user_registry.emplace("corr-42", FiberContext::capture()); });
  const std::string token = "corr-42";  // all that crosses the boundary
  user_registry.at(token).run([] { EXPECT_EQ(number.get(), 42); });
  user_registry.erase(token);  // and the user decides when it ends
  EXPECT_FALSE(number.is_bound());
}

}  // namespace
