// impl/src/testing/explore_run.cpp: one run of a program under a Policy.
#include <exception>
#include <memory>
#include <sstream>
#include <string>
#include <utility>

#include "explore_run.hpp"
#include "turnstile/activation.hpp"
#include "turnstile/errors.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/state_lane.hpp"
#include "turnstile/trace.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define TURNSTILE_EXPLORE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TURNSTILE_EXPLORE_LSAN 1
#endif
#endif
#ifdef TURNSTILE_EXPLORE_LSAN
#include <sanitizer/lsan_interface.h>
#endif

namespace turnstile::testing::detail {
namespace {

// Thrown by the chooser; leaves the loop before anything else runs.
struct StepLimit {};
struct Divergence {
  std::string what;
};

// What failed first in one run.
struct Verdict {
  std::optional<FailureKind> kind;
  std::string message;
  void fail(FailureKind k, std::string m) {
    if (kind) return;  // the first failure seen is the run's
    kind = k;
    message = std::move(m);
  }
};

void classify(Verdict& v, const std::exception_ptr& e, const std::string& where, bool reentrancy) {
  try {
    std::rethrow_exception(e);
  } catch (const CheckFailure& c) {
    v.fail(FailureKind::check, c.what());  // [EXP-2.4]
  } catch (const LaneReentrancyError& r) {
    v.fail(reentrancy ? FailureKind::reentrancy : FailureKind::exception,  // [EXP-2.3]
           "LaneReentrancyError escaped " + where + ": " + r.what());
  } catch (const TurnReentrancyError& r) {
    v.fail(reentrancy ? FailureKind::reentrancy : FailureKind::exception,  // [EXP-2.3]
           "TurnReentrancyError escaped " + where + ": " + r.what());
  } catch (const std::exception& x) {
    v.fail(FailureKind::exception, "an exception escaped " + where + ": " + x.what());  // [EXP-2.1]
  } catch (...) {
    v.fail(FailureKind::exception, "an exception of unknown type escaped " + where);  // [EXP-2.1]
  }
}

// The explorer as the scheduler's chooser ([EXP-1.2]): keeps a chain per
// ready item (the queue only grows at the back and loses what run_next ran)
// and asks the policy at every step.
class RunChooser final : public ManualScheduler::Chooser {
 public:
  RunChooser(Policy& policy, std::size_t max_steps) : policy_(policy), max_steps_(max_steps) {}

  std::size_t choose(std::size_t ready) override {
    if (steps_ >= max_steps_) {
      stopped_ = true;  // remembered: a program that catches everything still fails
      throw StepLimit{};  // [EXP-2.5]
    }
    if (ready < chains_.size()) chains_.resize(ready);  // run_next called directly: resync
    while (chains_.size() < ready) {
      // The first item posted since the last step continues its poster's chain.
      chains_.push_back(inherit_ ? last_chain_ : next_chain_++);
      inherit_ = false;
    }
    const auto width = static_cast<std::uint32_t>(ready);
    const std::size_t point = schedule_.choices.size();
    const std::uint32_t i = policy_.pick(steps_, point, width, chains_);
    if (i >= width) {
      diverged_ = true;
      throw Divergence{"choice point " + std::to_string(point) + " of the schedule names item " +
                       std::to_string(i) + ", but only " + std::to_string(width) +
                       " are ready: the program is not deterministic given its schedule, or it "
                       "changed"};
    }
    if (width > 1) {  // [EXP-1.1] a choice point
      schedule_.choices.push_back(i);
      schedule_.widths.push_back(width);
    }
    last_chain_ = chains_[i];
    inherit_ = true;
    chains_.erase(chains_.begin() + static_cast<std::ptrdiff_t>(i));
    ++steps_;
    return i;
  }

  Schedule schedule_;
  std::size_t steps_ = 0;
  bool stopped_ = false;   // the step limit was hit
  bool diverged_ = false;  // the schedule could not be followed

 private:
  Policy& policy_;
  std::size_t max_steps_;
  std::vector<std::uint64_t> chains_;
  std::uint64_t next_chain_ = 1;
  std::uint64_t last_chain_ = 0;  // chain 0: the program itself
  bool inherit_ = true;
};

// The run's trace sink: records JSON lines when asked, and watches for
// refusals when reentrancy errors fail the run ([EXP-2.3], [EXP-4.4]).
class RunSink final : public TraceSink {
 public:
  RunSink(std::ostream* out, bool watch) : watch_(watch) {
    if (out != nullptr) json_ = std::make_unique<JsonLinesTraceSink>(*out);
  }
  void emit(const TraceEvent& e) noexcept override {
    if (json_) json_->emit(e);
    if (!watch_) return;
    const TraceValue* reason = e.find("reason");
    const bool lane = e.name() == "lane.refused" && reason != nullptr && reason->text == "reentrant";
    if ((lane || e.name() == "turn.await_refused") && refusal_.empty())  // [EXP-2.3]
      refusal_ = lane ? "a lane refused a reentrant run() (LaneReentrancyError)"
                      : "an await was refused as a wait cycle (TurnReentrancyError)";
  }
  void finish() {
    if (json_) json_->finish();
  }
  std::string refusal_;  // emit() runs on the driving thread: the runs are single-threaded

 private:
  std::unique_ptr<JsonLinesTraceSink> json_;
  bool watch_;
};

struct RootState {
  std::exception_ptr error;
};

// Restores the process-wide hooks a run installs, however the run ends.
struct Hooks {
  TraceSink* sink = nullptr;
  bool sink_set = false;
  UnhandledExceptionHandler handler;
  ~Hooks() {
    set_unhandled_exception_handler(std::move(handler));
    if (sink_set) set_trace_sink(sink);
  }
};

Task<> program_root(Task<> body, RootState* st) {
  try {
    co_await std::move(body);
  } catch (...) {
    st->error = std::current_exception();
  }
}

}  // namespace

RunOutcome run_once(const ExploreOptions& o, const Program& program, Policy& policy,
                    std::string* trace) {
#ifdef TURNSTILE_EXPLORE_LSAN
  __lsan::ScopedDisabler no_leak_check;  // a hung run leaks its world on purpose
#endif
  Verdict v;
  RunChooser chooser(policy, o.max_steps);
  std::ostringstream trace_out;
  std::unique_ptr<RunSink> sink;
  Hooks hooks;
  if (trace != nullptr || o.fail_on_reentrancy) {
    sink = std::make_unique<RunSink>(trace != nullptr ? &trace_out : nullptr, o.fail_on_reentrancy);
    hooks.sink = set_trace_sink(sink.get());
    hooks.sink_set = true;
  }
  // [EXP-2.1] exceptions escaping detached fibers and timer callbacks.
  hooks.handler = set_unhandled_exception_handler(
      [&v, &o](std::exception_ptr e, const char* where) {
        classify(v, e, std::string(where), o.fail_on_reentrancy);
      });
  bool stuck_unwind = false;
  {
    ManualScheduler s;
    s.set_chooser(&chooser);  // [EXP-1.2]
    RootState root;
    try {
      if (program.task) {  // [EXP-1.3] the Task form: a fiber, run to quiescence here
        Task<> body = program.task(s);
        detach(s, program_root(std::move(body), &root));
        s.run_until_quiescent();
      } else {
        program.plain(s);
      }
    } catch (const StepLimit&) {
      v.fail(FailureKind::step_limit, "more than " + std::to_string(o.max_steps) +
                                          " items ran in one run (a livelock?)");  // [EXP-2.5]
    } catch (const Divergence& d) {
      v.fail(FailureKind::nondeterminism, d.what);  // [EXP-2.5]
    } catch (const FrameworkContextError&) {
      // sync_wait(s, task) found nothing ready: a hang if nothing else can run.
      if (s.ready() == 0 && !s.next_deadline() && s.fibers() > 0) stuck_unwind = true;
      else classify(v, std::current_exception(), "the program", o.fail_on_reentrancy);
    } catch (...) {
      classify(v, std::current_exception(), "the program", o.fail_on_reentrancy);
    }
    if (chooser.stopped_)  // [EXP-2.5] also when the program swallowed the exception
      v.fail(FailureKind::step_limit, "more than " + std::to_string(o.max_steps) +
                                          " items ran in one run (a livelock?)");
    if (chooser.diverged_)
      v.fail(FailureKind::nondeterminism, "the schedule could not be followed: the program is "
                                          "not deterministic given its schedule, or it changed");
    if (root.error) classify(v, root.error, "the program", o.fail_on_reentrancy);
    if (!v.kind && !policy.reached(chooser.schedule_.choices.size()))  // [EXP-2.5]
      v.fail(FailureKind::nondeterminism,
             "the run had " + std::to_string(chooser.schedule_.choices.size()) +
                 " choice point(s), fewer than the schedule it followed: the program is not "
                 "deterministic given its schedule, or it changed");
    if (sink && !sink->refusal_.empty()) v.fail(FailureKind::reentrancy, sink->refusal_);
    // [EXP-2.2] quiescent, yet a fiber homed here has not finished.
    if (!v.kind && (stuck_unwind || (s.ready() == 0 && !s.next_deadline() && s.fibers() > 0)))
      v.fail(FailureKind::hang, "nothing is ready and no timer is armed, but " +
                                    std::to_string(s.fibers()) + " fiber(s) have not finished");
    s.set_chooser(nullptr);
  }
  if (!v.kind && o.check) {  // [EXP-2.4] the user's check, after a run that did not fail
    try {
      o.check();
    } catch (...) {
      Verdict c;
      classify(c, std::current_exception(), "the check", o.fail_on_reentrancy);
      v.fail(FailureKind::check, c.message);
    }
  }
  if (sink) {
    set_trace_sink(hooks.sink);
    hooks.sink_set = false;
    sink->finish();
    if (trace != nullptr) *trace = trace_out.str();
  }
  RunOutcome out;
  out.schedule = std::move(chooser.schedule_);
  out.steps = chooser.steps_;
  out.kind = v.kind;
  out.message = std::move(v.message);
  return out;
}

}  // namespace turnstile::testing::detail
