// property_tests/channel_scenario.hpp: N producers, M consumers, one Channel,
// run under a generated schedule on a ManualScheduler.
//
//   coordinator fiber:  Scope { spawn producer 0..N-1 }; join; close()
//   producer p:         send {p, seq, value} for each of its values, in order
//   consumer c:         receive until nullopt, recording every receipt
//
// Every receipt records two ticks of a logical clock (one shared counter, the
// scenario is single-threaded): `started`, just before the receive is awaited,
// and `received`, just after it returns. The channel dequeued the value at some
// moment in between. That is what lets a property check per-sender FIFO across
// several consumers soundly: if value j of a sender was already *received*
// before the receive that got its earlier value i had even *started*, the
// channel handed out j before i.
#pragma once

#include <cstddef>
#include <exception>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "generated_schedules.hpp"
#include "turnstile/channel.hpp"
#include "turnstile/fiber.hpp"
#include "turnstile/scheduler.hpp"
#include "turnstile/scope.hpp"
#include "turnstile/task.hpp"

namespace turnstile::prop {

struct ChannelConfig {
  std::size_t capacity = 0;
  std::vector<std::vector<int>> producers;  // values each producer sends, in order
  std::size_t consumers = 1;
};

struct Item {
  int producer = 0;
  int seq = 0;
  int value = 0;
};

struct Receipt {
  int consumer = 0;
  Item item;
  std::size_t started = 0;   // clock just before co_await receive()
  std::size_t received = 0;  // clock just after it returned
};

struct ChannelRun {
  DriveResult drive;
  std::vector<Receipt> receipts;    // in the order consumers recorded them
  std::vector<std::string> trace;   // every observable event, with its step
  std::vector<std::string> errors;  // exceptions or invariant breaks seen inside fibers
  bool closed = false;              // the coordinator joined the producers and closed
  std::size_t consumers_done = 0;
};

namespace channel_detail {

// What the fibers of one scenario share; Run is ChannelRun or CloseRun.
template <class Run>
struct World {
  ManualScheduler& sched;
  Channel<Item> ch;
  Run& run;
  std::size_t clock = 0;

  void note(const std::string& what) {
    run.trace.push_back("s" + std::to_string(sched.steps()) + " " + what);
  }
};

// A consumer's loop: receives until nullopt, recording every receipt. false when a
// receive threw (recorded as an error).
template <class Run>
Task<bool> receive_all(World<Run>& w, int id) {
  try {
    for (;;) {
      const std::size_t started = w.clock++;
      std::optional<Item> v = co_await w.ch.receive();
      const std::size_t received = w.clock++;
      if (!v) co_return true;
      w.run.receipts.push_back(Receipt{id, *v, started, received});
      w.note("c" + std::to_string(id) + " got p" + std::to_string(v->producer) + "#" +
             std::to_string(v->seq));
    }
  } catch (const std::exception& e) {
    w.run.errors.push_back("consumer " + std::to_string(id) + ": " + e.what());
  }
  co_return false;
}

inline Task<> producer(World<ChannelRun>& w, int id, const std::vector<int>& values) {
  for (std::size_t seq = 0; seq < values.size(); ++seq) {
    co_await w.ch.send(Item{id, static_cast<int>(seq), values[seq]});
    w.note("p" + std::to_string(id) + " sent #" + std::to_string(seq));
    if (w.ch.size() > w.ch.capacity())
      w.run.errors.push_back("buffer holds " + std::to_string(w.ch.size()) + " > capacity");
  }
}

inline Task<> coordinator(World<ChannelRun>& w, const ChannelConfig& cfg) {
  try {
    Scope scope;
    for (std::size_t p = 0; p < cfg.producers.size(); ++p)
      scope.spawn(producer(w, static_cast<int>(p), cfg.producers[p]));
    co_await scope.join();
    w.ch.close();
    w.run.closed = true;
    w.note("closed");
  } catch (const std::exception& e) {
    w.run.errors.push_back(std::string("coordinator: ") + e.what());
  }
}

inline Task<> consumer(World<ChannelRun>& w, int id) {
  Task<bool> receiving = receive_all(w, id);
  if (!co_await std::move(receiving)) co_return;
  ++w.run.consumers_done;
  w.note("c" + std::to_string(id) + " done");
}

}  // namespace channel_detail

// Runs the scenario under `choices` and returns what the fibers observed.
inline ChannelRun run_channel_scenario(const ChannelConfig& cfg,
                                       const std::vector<std::size_t>& choices) {
  ChannelRun run;
  ManualScheduler sched;
  channel_detail::World<ChannelRun> w{sched, Channel<Item>(cfg.capacity), run};
  detach(sched, channel_detail::coordinator(w, cfg));
  for (std::size_t c = 0; c < cfg.consumers; ++c)
    detach(sched, channel_detail::consumer(w, static_cast<int>(c)));
  run.drive = drive(sched, choices);
  return run;
}

// ---------------------------------------------------------------------------
// The close scenario: producers are detached (no join), and a closer fiber
// closes the channel at a generated moment, typically while some senders wait
// and values are buffered.
//
//   producer p:  send its values in order; on ChannelClosedError record which
//                send failed and stop
//   closer:      yield k times; close(); close() again (idempotent)
//   consumer c:  receive until nullopt

struct CloseRun {
  DriveResult drive;
  std::vector<Receipt> receipts;
  std::vector<std::size_t> sent_ok;           // per producer: sends that completed
  std::vector<std::optional<int>> failed_at;  // per producer: seq whose send threw
  std::vector<std::string> trace;
  std::vector<std::string> errors;
  bool closed = false;
  std::size_t consumers_done = 0;
};

namespace channel_detail {

using CloseWorld = World<CloseRun>;

inline Task<> closing_producer(CloseWorld& w, int id, const std::vector<int>& values) {
  const auto p = static_cast<std::size_t>(id);
  for (std::size_t seq = 0; seq < values.size(); ++seq) {
    try {
      co_await w.ch.send(Item{id, static_cast<int>(seq), values[seq]});
    } catch (const ChannelClosedError&) {
      w.run.failed_at[p] = static_cast<int>(seq);
      w.note("p" + std::to_string(id) + " refused #" + std::to_string(seq));
      co_return;
    }
    ++w.run.sent_ok[p];
    w.note("p" + std::to_string(id) + " sent #" + std::to_string(seq));
  }
}

inline Task<> closer(CloseWorld& w, int yields) {
  for (int i = 0; i < yields; ++i) co_await yield();
  w.ch.close();
  w.run.closed = true;
  w.note("closed");
  w.ch.close();  // idempotent
}

inline Task<> closing_consumer(CloseWorld& w, int id) {
  Task<bool> receiving = receive_all(w, id);
  if (!co_await std::move(receiving)) co_return;
  if (!w.ch.is_closed()) w.run.errors.push_back("receive returned nullopt on an open channel");
  ++w.run.consumers_done;
}

}  // namespace channel_detail

inline CloseRun run_channel_close_scenario(const ChannelConfig& cfg, int closer_yields,
                                           const std::vector<std::size_t>& choices) {
  CloseRun run;
  run.sent_ok.assign(cfg.producers.size(), 0);
  run.failed_at.assign(cfg.producers.size(), std::nullopt);
  ManualScheduler sched;
  channel_detail::CloseWorld w{sched, Channel<Item>(cfg.capacity), run};
  for (std::size_t p = 0; p < cfg.producers.size(); ++p)
    detach(sched, channel_detail::closing_producer(w, static_cast<int>(p), cfg.producers[p]));
  detach(sched, channel_detail::closer(w, closer_yields));
  for (std::size_t c = 0; c < cfg.consumers; ++c)
    detach(sched, channel_detail::closing_consumer(w, static_cast<int>(c)));
  run.drive = drive(sched, choices);
  return run;
}

inline std::ostream& operator<<(std::ostream& os, const Item& i) {
  return os << "p" << i.producer << "#" << i.seq << "=" << i.value;
}

// How RapidCheck prints a generated configuration in a counterexample.
inline void showValue(const ChannelConfig& c, std::ostream& os) {
  os << "{capacity " << c.capacity << ", consumers " << c.consumers << ", producers [";
  for (std::size_t p = 0; p < c.producers.size(); ++p) {
    os << (p ? ", " : "") << "[";
    for (std::size_t i = 0; i < c.producers[p].size(); ++i)
      os << (i ? " " : "") << c.producers[p][i];
    os << "]";
  }
  os << "]}";
}

// Capacity 0..4 and 1..max_consumers consumers, uniformly (gen::inRange favours
// the low end at small sizes); 1..max_producers producers of 0..max_values
// values each.
inline rc::Gen<ChannelConfig> gen_channel_config(std::size_t max_producers = 4,
                                                 std::size_t max_values = 8,
                                                 std::size_t max_consumers = 3) {
  return rc::gen::build<ChannelConfig>(
      rc::gen::set(&ChannelConfig::capacity, uniform_in(0, 4)),
      rc::gen::set(&ChannelConfig::producers,
                   vector_of<std::vector<int>>(
                       1, max_producers, vector_of<int>(0, max_values, rc::gen::inRange(0, 100)))),
      rc::gen::set(&ChannelConfig::consumers, uniform_in(1, max_consumers)));
}

}  // namespace turnstile::prop
