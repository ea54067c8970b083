// turnstile/state_lane.hpp: StateLane, one turn at a time over a component's
// mutable state.
//
// A StateLane owns a component's C2 state (state whose invariant spans several
// fields or collections). Every read and write of that state runs as a *turn*:
// one plain (non-coroutine) callable submitted with run() or try_post(). The
// collections stay plain, unlocked structures; the lane's single execution is
// what makes them safe ([LANE-5.4]).
//
// Guarantees
//   - One turn at a time ([LANE-5.1]), in FIFO order of the submissions taking
//     effect: a submission that happens-before another runs before it, with no
//     front-of-queue insertion ([LANE-5.2]).
//   - Non-reentrant: run() or throw_if_reentrant() called on this lane's own
//     turn throws LaneReentrancyError at the call site, naming the lane; it
//     never hangs ([LANE-5.3], [LANE-5.5], [LANE-7.2]).
//   - run() takes effect at the call: the item is queued before run() returns,
//     even if the returned Task is awaited later or never ([LANE-5.8]).
//   - Nothing accepted is lost: work that throws fails its run() awaiter (or
//     goes to the lane's error handler, for try_post), and the lane goes on with
//     the next item ([LANE-7.5]).
//   - close() stops accepting, runs everything already accepted, then completes;
//     it is idempotent. run() on a closed lane throws LaneClosedError; try_post()
//     returns false ([LANE-7.4], [LANE-7.6]).
//
// Where a continuation resumes ([LANE-5.6]): the awaiter of run() (and of
// close()) resumes in a step posted to the awaiting fiber's own scheduler, after
// the turn's marker has been released; never inside the turn.
//
// Where a turn runs: in a step of the lane's scheduler, never inside run() or
// try_post(). The turn sees the submitter's bindings (captured at submission)
// plus the lane's marker, so StateLane::current() is this lane inside it. Work
// started from a turn with detach() does not inherit the marker: its start is
// posted and it carries no bindings, so even its synchronous prefix runs off
// the lane ([LANE-6.2]). The marker is a position key ([FL-3.8]): a
// FiberContext captured inside a turn does not carry it out of the turn, and
// one run inside a turn keeps it (a reentrant run() under it still throws).
//
// try_post() from inside this lane's own turn queues behind the current turn:
// nothing waits for it, so nothing can deadlock ([LANE-7.7]).
//
// Allocation: run() allocates its item and its Task frame (from this thread's
// block cache, [RT-1.7]). try_post() of a callable small enough for a slot
// (the whole item in detail::kMaxItemSlotBytes, 512 bytes: a callable of up to
// about 450) builds its item in this thread's slab, a 4 KiB page its items
// fill front to back in whole cache lines ([LANE-7.9], detail/item_slot.hpp,
// detail/item_slab.hpp). The carrier that runs the item releases its slot; a
// slab whose thread moved on and whose items have all run goes to the
// process's pool of free slabs (at most 2 MiB), and the next thread to fill
// its slab takes it from there. A thread that keeps posting allocates nothing
// once the pool holds the slabs its items in flight need. A larger callable's
// item is allocated on its own.
//
// Thread safety: every member may be called from any thread or fiber.
// Precondition: a lane is destroyed only when no turn is queued or running
// (co_await close() first); otherwise the process stops with a message.
// The queue and state word are detail::BasicLaneCore, model-checked in
// model/lane_model.cpp.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "turnstile/completion.hpp"
#include "turnstile/detail/block_cache.hpp"
#include "turnstile/detail/item_slot.hpp"
#include "turnstile/detail/lane_core.hpp"
#include "turnstile/fiber_local.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/sync.hpp"
#include "turnstile/task.hpp"
#include "turnstile/trace.hpp"

namespace turnstile {

class StateLane;

// A call entered a lane from that lane's own turn. [LANE-5.3]
class LaneReentrancyError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// run() on a closed lane. [LANE-7.4]
class LaneClosedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
using LaneCore = BasicLaneCore<StdSync>;

// [TRACE-4.3] a traced item's ids: its lane, item and turn-fiber names.
struct LaneTrace {
  std::string lane, item, fiber;
  bool failed = false;  // the turn threw
};
void trace_lane_event(const char* ev, const LaneTrace& t, const char* outcome) noexcept;

// One queued turn: the submitter's context, installed for the turn.
class LaneItem : public LaneCore::Item {
 public:
  FrameRef context;
  std::unique_ptr<LaneTrace> trace;  // [TRACE-4.3] null while the sink is off
};

// The ambient marker key: which lane's turn runs in this context.
const FiberLocal<const StateLane*>& lane_marker() noexcept;

template <class R, class F>
class LaneRun final : public LaneItem {
 public:
  explicit LaneRun(F work) : work_(std::move(work)) {}

  // bugprone-exception-escape false positive: work_() runs inside the try, and the
  // handler's emplace of an exception_ptr (nothrow-constructible) cannot throw. The
  // check sees the bad_variant_access throw in libstdc++'s visit of a valueless
  // variant, which variant::_M_reset() never reaches (it returns first).
  // NOLINTNEXTLINE(bugprone-exception-escape)
  void run_turn() noexcept override {
    try {
      if constexpr (std::is_void_v<R>) {
        work_();
        result_.template emplace<1>();
      } else {
        result_.template emplace<1>(work_());
      }
    } catch (...) {
      result_.template emplace<2>(std::current_exception());  // [LANE-7.5] reaches the awaiter
      if (trace) trace->failed = true;
    }
  }
  LaneCore::Spare* complete() noexcept override {
    auto keep = std::move(self_);  // the lane's reference, dropped after set()
    done_.set();                   // [LANE-5.6] posts the awaiter; marker already released
    return nullptr;
  }

  std::shared_ptr<LaneRun> self_;
  Completion done_;

  R take() {
    // Moved out, so the awaiter holds the only reference to the exception (its
    // count lives in uninstrumented libstdc++, which ThreadSanitizer cannot see).
    if (result_.index() == 2) std::rethrow_exception(std::move(std::get<2>(result_)));
    if constexpr (!std::is_void_v<R>) return std::move(std::get<1>(result_));
  }

 private:
  F work_;
  std::variant<std::monostate, std::conditional_t<std::is_void_v<R>, std::monostate, R>,
               std::exception_ptr>
      result_;
};
}  // namespace detail

class StateLane {
 public:
  using ErrorHandler = std::function<void(const StateLane&, std::exception_ptr)>;

  // Turns run as items of `scheduler`; the default is the process-wide pool
  // described at default_scheduler() (scheduler.hpp: size, lifetime, when to
  // pass your own).
  explicit StateLane(std::string name, Scheduler& scheduler = default_scheduler());
  StateLane(const StateLane&) = delete;
  StateLane& operator=(const StateLane&) = delete;
  ~StateLane();

  const std::string& name() const noexcept { return name_; }

  // The lane whose turn runs in this context, or null.
  static const StateLane* current() noexcept;
  // True when the caller runs on this lane's turn.
  bool is_on_lane() const noexcept { return current() == this; }
  // Throws LaneReentrancyError naming this lane when called on its own turn.
  void throw_if_reentrant() const;

  // Queues `work` (a plain callable) as a turn; the returned Task yields its
  // result or rethrows its exception. Throws LaneReentrancyError when called on
  // this lane's turn, LaneClosedError when the lane is closed.
  template <class F>
  Task<std::invoke_result_t<F&>> run(F work) {
    using R = std::invoke_result_t<F&>;
    static_assert(!is_task_v<R>,
                  "a turn runs one plain callable: read state and settle the decision; do long "
                  "waits outside the turn [LANE-3.2]");
    std::unique_ptr<detail::LaneTrace> traced;
    if (trace::on()) [[unlikely]] traced = trace_submit("run");  // [TRACE-4.3]
    if (traced && is_on_lane()) trace_refused(*traced, "reentrant");
    throw_if_reentrant();  // [LANE-5.3] at the call site, before anything is queued
    // [RT-1.7] the record comes from this thread's block cache and goes back
    // to that of whichever thread drops it last.
    using Run = detail::LaneRun<R, F>;
    auto item = std::allocate_shared<Run>(detail::BlockAllocator<Run>{}, std::move(work));
    item->self_ = item;
    item->trace = std::move(traced);
    if (!submit(*item)) {
      item->self_.reset();
      throw closed_error();  // [LANE-7.4]
    }
    return await_run(std::move(item));  // [LANE-5.8] queued before we return
  }

  // Queues `work` without a result. Returns false when the lane is closed. An
  // exception from `work` goes to the error handler.
  template <class F>
  bool try_post(F work) {
    static_assert(!is_task_v<std::invoke_result_t<F&>>, "a turn runs one plain callable [LANE-3.2]");
    PostItem<F>* item = nullptr;
    if constexpr (PostItem<F>::pooled()) {  // [LANE-7.9] a slot of this thread's slab
      void* storage = detail::take_item_slot(sizeof(PostItem<F>));
      try {
        item = ::new (storage) PostItem<F>(this, std::move(work));
      } catch (...) {
        detail::release_item_slot(storage);
        throw;
      }
    } else {
      item = new PostItem<F>(this, std::move(work));
    }
    if (trace::on()) [[unlikely]] {  // [TRACE-4.3]
      try {
        item->trace = trace_submit("post");
      } catch (...) {
        item->discard();  // never queued: its slot (or allocation) goes back
        throw;
      }
    }
    if (submit(*item)) return true;
    item->discard();
    return false;  // [LANE-7.4]
  }

  // Stops accepting; the returned Task completes once every accepted item has
  // run. Takes effect at the call; idempotent.
  [[nodiscard]] Task<> close();
  bool is_closed();

  // Replaces the handler for exceptions thrown by try_post work (default: one
  // line on stderr naming the lane and the error). A handler that throws gets
  // that line instead, with "; its error handler threw: <message>" appended:
  // still one line ([LANE-7.5]).
  void set_error_handler(ErrorHandler h);

 private:
  template <class F>
  class PostItem final : public detail::LaneItem {
   public:
    // Small enough for a slot of a slab: built there, in whole cache lines
    // beside this thread's previous item, and released by complete() [LANE-7.9].
    static constexpr bool pooled() noexcept {
      return sizeof(PostItem) <= detail::kMaxItemSlotBytes && alignof(PostItem) <= detail::ItemSlabs::kLine;
    }
    PostItem(StateLane* lane, F work) : lane_(lane), work_(std::move(work)) {}
    void run_turn() noexcept override {
      try {
        work_();
      } catch (...) {
        if (trace) trace->failed = true;
        lane_->report_error(std::current_exception());  // [LANE-7.5] the lane goes on
      }
    }
    detail::LaneCore::Spare* complete() noexcept override {
      discard();
      return nullptr;  // never a spare: a slot goes back to its slab [LANE-7.9]
    }
    // Destroys the item and gives its storage back: a completed item's, or a
    // refused one's (never linked), alike.
    void discard() noexcept {
      if constexpr (pooled()) {
        void* storage = this;
        this->~PostItem();
        detail::release_item_slot(storage);  // [SLAB-I1] nothing touches it after this
      } else {
        delete this;
      }
    }

   private:
    StateLane* lane_;
    F work_;
  };

  template <class R, class F>
  static Task<R> await_run(std::shared_ptr<detail::LaneRun<R, F>> item) {
    co_await detail::CompletionAwaiter(item->done_);
    if (item->trace) [[unlikely]]  // [TRACE-4.3] on the awaiting fiber
      detail::trace_lane_event("lane.resumed", *item->trace, item->trace->failed ? "error" : "ok");
    co_return item->take();
  }

  static Task<> wait_drained(Event& drained) { co_await drained.wait(); }
  // Queues `item`; false when the lane is closed.
  bool submit(detail::LaneItem& item);
  std::unique_ptr<detail::LaneTrace> trace_submit(const char* op);  // [TRACE-4.3]
  void trace_refused(const detail::LaneTrace& t, const char* reason) noexcept;
  void start_drain();
  void report_error(const std::exception_ptr& e) noexcept;
  LaneClosedError closed_error() const;

  class Drainer final : public Runnable {
   public:
    explicit Drainer(StateLane* lane) : lane_(lane) {}
    void run() noexcept override;

   private:
    StateLane* lane_;
  };

  // Cache lines by writer. A lane is written by its submitters at every item
  // (the core's mutex, queue ends and state word: the core's first 58 bytes,
  // lane_core.hpp) and by its drain at every turn (the bare marker frame).
  // Where they fell by the lane's address, the two could share a cache line
  // and the core's fields could straddle two: in some processes every item
  // then paid for lines the other side had just written (impl/bench/README.md,
  // "The throughput rounds' false sharing"). So they live in a block of their
  // own, aligned to a line (allocated: a lane may live in a coroutine frame,
  // which is not over-aligned): the core's submitter-written fields on its
  // first line, the drain's frame on its third. The lane itself is read-only
  // on the hot paths.
  static constexpr std::size_t kLaneLine = 64;
  struct alignas(kLaneLine) Hot {
    detail::LaneCore core;
    // The marker frame of a turn whose submitter has no bindings, built by
    // the first such turn and shared by the next ones (state_lane.cpp,
    // LaneTurnMarker); touched only by the running drain [LANE-I1].
    alignas(kLaneLine) detail::FrameRef bare_marker;
  };
  std::string name_;
  Scheduler& scheduler_;
  std::unique_ptr<Hot> hot_;
  detail::LaneCore& core_;  // hot_->core
  Drainer drainer_{this};
  Event drained_;
  detail::Mutex handler_mu_;
  ErrorHandler handler_ TURNSTILE_GUARDED_BY(handler_mu_);
};

}  // namespace turnstile
