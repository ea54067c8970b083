// The TraceSink hook ([TRACE-4.3], spec/trace-format.md section 1): off by
// default and silent; on, the primitives emit the documented events.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "turnstile/trace.hpp"
#include "turnstile/turnstile.hpp"
#include "turnstile_test/manual_runs.hpp"

namespace {

using namespace turnstile;

struct Recorded {
  std::string ev, fiber;
  std::map<std::string, std::string> f;
};

class RecordingSink final : public TraceSink {
 public:
  void emit(const TraceEvent& e) noexcept override {
    Recorded r{std::string(e.name()), std::string(e.fiber()), {}};
    for (std::size_t i = 0; i < e.size(); ++i) {
      const TraceValue& v = e.field(i).value;
      std::string s;
      switch (v.kind) {
        case TraceValue::Kind::string: s = std::string(v.text); break;
        case TraceValue::Kind::integer: s = std::to_string(v.integer); break;
        case TraceValue::Kind::real: s = std::to_string(v.real); break;
        case TraceValue::Kind::boolean: s = v.boolean ? "true" : "false"; break;
        case TraceValue::Kind::null: s = "null"; break;
      }
      r.f[e.field(i).name] = s;
    }
    std::lock_guard lock(mu_);
    events_.push_back(std::move(r));
  }
  std::vector<Recorded> events() {
    std::lock_guard lock(mu_);
    return events_;
  }
  // "ev fiber k=v k=v" per event, for readable comparisons.
  std::vector<std::string> lines() {
    std::vector<std::string> out;
    for (const auto& r : events()) {
      std::string s = r.ev + " " + r.fiber;
      for (const auto& [k, v] : r.f) s += " " + k + "=" + v;
      out.push_back(s);
    }
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<Recorded> events_;
};

class Installed {
 public:
  explicit Installed(TraceSink* s) : previous_(set_trace_sink(s)) {}
  ~Installed() { set_trace_sink(previous_); }

 private:
  TraceSink* previous_;
};

// A RecordingSink installed while the object lives.
struct Recording {
  RecordingSink sink;
  Installed installed{&sink};
};

// Expects line k of `l` to be `text` for every {k, text} of `want`.
void expect_lines(const std::vector<std::string>& l,
                  const std::vector<std::pair<std::size_t, std::string>>& want) {
  for (const auto& [k, text] : want) {
    ASSERT_LT(k, l.size()) << text;
    EXPECT_EQ(l[k], text) << "line " << k;
  }
}

// The trace has exactly `size` lines, and expect_lines(l, want) holds.
void expect_trace(const std::vector<std::string>& l, std::size_t size,
                  const std::vector<std::pair<std::size_t, std::string>>& want) {
  ASSERT_EQ(l.size(), size);
  expect_lines(l, want);
}

FiberLocal<std::string> request("request");

// Runs `t` as fiber "f0" on `s` until idle.
void run_fiber(ManualScheduler& s, Task<> t) {
  {
    trace::ScopedLabel label("f0");
    detach(s, std::move(t));
  }
  s.run_until_idle();
}

// Runs `t` as fiber "f0" on a ManualScheduler of its own until idle.
void run_fiber(Task<> t) {
  ManualScheduler s;
  run_fiber(s, std::move(t));
}

// The trace of run_fiber(body()), recorded from before the call.
template <class Body>
std::vector<std::string> trace_of(Body body) {
  Recording rec;
  run_fiber(body());
  return rec.sink.lines();
}

// A script touching every traced primitive; returns what it observed.
std::string script(ManualScheduler& s) {
  std::string seen;
  StateLane lane("L", s);
  Activation<int> act("A", 0, {}, s);
  auto body = [&]() -> Task<> {
    auto work = [&] { seen += request.or_else("none") + ";"; return 1; };
    seen += std::to_string(co_await lane.run(work)) + ";";
    auto inner = [&]() -> Task<> {
      seen += request.get() + ";";
      const FiberContext ctx = FiberContext::capture();
      co_await yield();
      auto in_ctx = [&] { seen += request.is_bound() ? "bound;" : "unbound;"; };
      ctx.run(in_ctx);
      auto call = [&](TurnContext<int>& tc) -> Task<> {
        tc.state() += 1;
        seen += (request.try_get() ? *request.try_get() : std::string("none")) + ";";
        co_return;
      };
      co_await act.call("m", call);
    };
    Task<> t = request.where("r1", inner);
    co_await std::move(t);
    Task<> closed = lane.close();
    co_await std::move(closed);
  };
  Task<> t = body();
  turnstile_test::run_detached(s, std::move(t));
  return seen;
}

// spec: [TRACE-4.3]
TEST(TraceSink, OffByDefaultEmitsNothingAndBehaviourIsTheSame) {
  RecordingSink never_installed;
  ManualScheduler a;
  const std::string off = script(a);
  EXPECT_TRUE(never_installed.events().empty());
  EXPECT_EQ(off, "none;1;r1;bound;r1;");

  RecordingSink sink;
  std::string on;
  ManualScheduler b;
  {
    Installed installed(&sink);
    on = script(b);
  }
  EXPECT_EQ(on, off);                 // the same observations
  EXPECT_EQ(a.steps(), b.steps());    // the same schedule, step for step
  EXPECT_FALSE(sink.events().empty());
  const std::size_t n = sink.events().size();
  ManualScheduler c;
  (void)script(c);                    // removed again: nothing more arrives
  EXPECT_EQ(sink.events().size(), n);
}

// spec: [TRACE-4.3]
TEST(TraceSink, LaneRunEmitsSubmitAcceptedTurnAndResumed) {
  Recording rec;
  ManualScheduler s;
  StateLane lane("L", s);
  auto body = [&]() -> Task<> {
    auto work = [] { return 7; };
    Task<int> t;
    {
      trace::ScopedLabel label("i1");
      t = lane.run(work);
    }
    EXPECT_EQ(co_await std::move(t), 7);
    auto refused = [&] {
      trace::ScopedLabel label("i2");
      EXPECT_THROW((void)lane.run([] {}), LaneReentrancyError);
    };
    Task<> t2;
    {
      trace::ScopedLabel label("i0");
      t2 = lane.run(refused);
    }
    co_await std::move(t2);
    Task<> c = lane.close();
    co_await std::move(c);
  };
  run_fiber(s, body());
  const auto l = rec.sink.lines();
  ASSERT_GE(l.size(), 8u);
  expect_lines(l, {{0, "fiber.spawn main child=f0 structured=false"},
                   {1, "lane.submit f0 item=i1 lane=L op=run"},
                   {2, "lane.accepted f0 item=i1 lane=L"},
                   {3, "fiber.spawn f0 child=L:i1 structured=true"},
                   {4, "lane.turn_start L:i1 item=i1 lane=L"},
                   {5, "lane.turn_end L:i1 item=i1 lane=L outcome=ok"},
                   {6, "lane.resumed f0 item=i1 lane=L outcome=ok"}});
  // The reentrant attempt inside turn i0: submitted and refused on the turn's fiber.
  auto has = [&](const std::string& s) { return std::find(l.begin(), l.end(), s) != l.end(); };
  EXPECT_TRUE(has("lane.submit L:i0 item=i2 lane=L op=run"));
  EXPECT_TRUE(has("lane.refused L:i0 item=i2 lane=L reason=reentrant"));
  EXPECT_TRUE(has("lane.close_requested f0 lane=L"));
  EXPECT_TRUE(has("lane.drained f0 lane=L"));
}

// spec: [TRACE-4.3]
TEST(TraceSink, WhereAndReadsEmitBindReadRestore) {
  const auto l = trace_of([]() -> Task<> {
    auto inner = [] {
      trace::ScopedLabel label("r1");
      (void)request.get();
    };
    request.where("v", inner);
    trace::ScopedLabel label("r2");
    (void)request.is_bound();
    co_return;
  });
  expect_trace(l, 5u, {{1, "fl.bind f0 key=request value=v"},
                       {2, "fl.read f0 key=request op=r1 value=v"},
                       {3, "fl.restore f0 key=request"},
                       {4, "fl.read f0 key=request op=r2 unbound=true"}});
}

// spec: [TRACE-4.3]
TEST(TraceSink, CaptureAndRunEmitCaptureInstallUninstall) {
  const auto l = trace_of([]() -> Task<> {
    FiberContext ctx;
    auto capture = [&] {
      trace::ScopedLabel label("c1");
      ctx = FiberContext::capture();
    };
    request.where("v", capture);
    auto read = []() -> Task<> {
      (void)request.try_get();
      co_return;
    };
    Task<> t;
    {
      trace::ScopedLabel label("c1");
      t = ctx.run(read);
    }
    co_await std::move(t);
  });
  expect_trace(l, 7u, {{2, "fl.capture f0 ctx=c1"},
                       {4, "fl.install f0 ctx=c1"},
                       {5, "fl.read f0 key=request value=v"},
                       {6, "fl.uninstall f0 ctx=c1"}});
}

// spec: [TRACE-4.3] [TURN-7.1]
TEST(TraceSink, ActivationCallEmitsCallTurnAwaitAndRefusedAwait) {
  Recording rec;
  ManualScheduler s;
  Activation<int> act("A", 0, {}, s);
  auto body = [&]() -> Task<> {
    auto turn = [&](TurnContext<int>&) -> Task<> {
      auto self = [](TurnContext<int>&) -> Task<> { co_return; };
      Task<> inner;
      {
        trace::ScopedLabel label("c2");
        inner = act.call("m", self);  // queues: never refused at the call [TURN-7.1]
      }
      bool refused = false;
      try {
        co_await std::move(inner);
      } catch (const TurnReentrancyError&) {
        refused = true;
      }
      EXPECT_TRUE(refused);
    };
    Task<> t;
    {
      trace::ScopedLabel label("c1");
      t = act.call("m", turn);
    }
    co_await std::move(t);
  };
  run_fiber(s, body());
  const auto l = rec.sink.lines();
  std::string all;
  for (const auto& x : l) all += x + "\n";
  ASSERT_EQ(l.size(), 12u) << all;
  expect_lines(l, {{1, "turn.call f0 act=A call=c1 method=m mode=serial op=c1"},
                   {2, "fiber.spawn f0 child=A:c1 structured=true"},
                   {3, "turn.await f0 act=A call=c1"},
                   {4, "turn.start A:c1 act=A call=c1"},
                   {5, "turn.call A:c1 act=A call=c2 method=m mode=serial op=c2"},
                   {6, "fiber.spawn A:c1 child=A:c2 structured=true"},
                   {7, "turn.await A:c1 act=A call=c2"},
                   {8, "turn.await_refused A:c1 act=A call=c2 reason=wait-cycle"},
                   {9, "turn.end A:c1 act=A call=c1 outcome=ok"},
                   {10, "turn.start A:c2 act=A call=c2"},  // the refused await's call still runs
                   {11, "turn.end A:c2 act=A call=c2 outcome=ok"}});
}

// spec: [TRACE-4.3] [TURN-4.2]
TEST(TraceSink, SlowTurnReportsEmitTurnSlowOnce) {
  Recording rec;
  ManualScheduler s;
  ActivationOptions o;
  o.slow_turn = std::chrono::milliseconds(10);
  o.on_slow_turn = [](const std::string&, const std::string&, std::chrono::nanoseconds) {};
  Activation<int> act("A", 0, o, s);
  Event hold;
  {
    trace::ScopedLabel label("c1");
    (void)act.call("m", [&hold](TurnContext<int>&) -> Task<> { co_await hold.wait(); });
  }
  s.run_until_idle();
  s.advance(std::chrono::milliseconds(11));
  s.run_until_idle();  // the watchdog reports the running turn
  hold.set();
  s.run_until_idle();  // settles: no second report
  std::vector<std::string> slow;
  for (const auto& l : rec.sink.lines())
    if (l.rfind("turn.", 0) == 0 && l.find("turn.call") != 0) slow.push_back(l.substr(0, l.find(' ')));
  EXPECT_EQ(slow, (std::vector<std::string>{"turn.start", "turn.slow", "turn.end"}));
  for (const auto& r : rec.sink.events())
    if (r.ev == "turn.slow") {
      EXPECT_EQ(r.f.at("by"), "watchdog");
      EXPECT_EQ(r.f.at("call"), "c1");
    }
}

// spec: [TRACE-4.3]
TEST(TraceSink, JsonLinesSinkWritesHeaderSeqAndEnd) {
  std::ostringstream out;
  JsonLinesTraceSink sink(out, "test \"impl\"", std::string("s1"), 5);
  TraceEvent e("fl.bind");
  e.str("key", "k\n").value("value", TraceValue{TraceValue::Kind::integer, {}, 42, 0, false});
  e.set_fiber("main");
  sink.emit(e);
  sink.finish();
  sink.emit(e);  // after the end: dropped
  EXPECT_EQ(out.str(),
            "{\"seq\":1,\"ev\":\"trace\",\"format\":1,\"impl\":\"test \\\"impl\\\"\",\"scenario\":\"s1\","
            "\"schedule_seed\":5}\n"
            "{\"seq\":2,\"ev\":\"fl.bind\",\"fiber\":\"main\",\"key\":\"k\\n\",\"value\":42}\n"
            "{\"seq\":3,\"ev\":\"end\",\"status\":\"quiescent\"}\n");
  EXPECT_EQ(sink.lines(), 3u);
}

}  // namespace
