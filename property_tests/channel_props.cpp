// property_tests/channel_props.cpp: Channel under generated workloads and
// generated schedules (see channel_scenario.hpp, generated_schedules.hpp).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "channel_scenario.hpp"
#include "generated_schedules.hpp"

namespace turnstile::prop {
namespace {

// spec: [RT-7.1] [RT-7.3]
RC_GTEST_PROP(ChannelProperty, EveryValueIsReceivedExactlyOnce, ()) {
  const ChannelConfig cfg = *gen_channel_config().as("workload");
  const ChannelRun run = run_scheduled([&](const auto& c) { return run_channel_scenario(cfg, c); });
  RC_ASSERT(run.closed);                           // every producer finished, then close()
  RC_ASSERT(run.consumers_done == cfg.consumers);  // every consumer saw nullopt after the drain

  std::map<std::pair<int, int>, int> seen;  // (producer, seq) -> times received
  std::size_t sent = 0;
  for (const auto& values : cfg.producers) sent += values.size();
  for (const Receipt& r : run.receipts) {
    const auto& values = cfg.producers.at(static_cast<std::size_t>(r.item.producer));
    RC_ASSERT(static_cast<std::size_t>(r.item.seq) < values.size());
    RC_ASSERT(values[static_cast<std::size_t>(r.item.seq)] == r.item.value);
    ++seen[{r.item.producer, r.item.seq}];
  }
  RC_ASSERT(run.receipts.size() == sent);
  RC_ASSERT(seen.size() == sent);  // with the size check: each exactly once
  RC_TAG(cfg.capacity == 0 ? "rendezvous" : "buffered");
  RC_CLASSIFY(cfg.consumers > 1, "several consumers");
}

// spec: [RT-7.2]
RC_GTEST_PROP(ChannelProperty, ValuesOfOneSenderArriveInSendOrder, ()) {
  const ChannelConfig cfg = *gen_channel_config().as("workload");
  const ChannelRun run = run_scheduled([&](const auto& c) { return run_channel_scenario(cfg, c); });

  // Per consumer: the values it got from one sender have increasing seq.
  std::map<std::pair<int, int>, int> last_seq;  // (consumer, producer) -> last seq
  for (const Receipt& r : run.receipts) {
    const auto key = std::make_pair(r.consumer, r.item.producer);
    const auto it = last_seq.find(key);
    if (it != last_seq.end()) {
      RC_LOG() << "consumer " << r.consumer << " got " << r.item << " after seq " << it->second
               << "\n";
      RC_ASSERT(it->second < r.item.seq);
    }
    last_seq[key] = r.item.seq;
  }
  // Across consumers: a later value of a sender is never received before the
  // receive that got an earlier one began (see channel_scenario.hpp).
  for (const Receipt& a : run.receipts)
    for (const Receipt& b : run.receipts)
      if (a.item.producer == b.item.producer && a.item.seq < b.item.seq) {
        if (b.received < a.started)
          RC_LOG() << b.item << " (consumer " << b.consumer
                   << ") was received before the receive of " << a.item << " (consumer "
                   << a.consumer << ") began\n";
        RC_ASSERT(!(b.received < a.started));
      }
  RC_CLASSIFY(cfg.consumers > 1, "several consumers");
}

// spec: [RT-7.3] [RT-7.1]
RC_GTEST_PROP(ChannelProperty, CloseDrainsTheBufferAndRefusesSenders, ()) {
  const ChannelConfig cfg = *gen_channel_config().as("workload");
  const int closer_yields = *rc::gen::inRange(0, 12).as("closer yields");
  const CloseRun run =
      run_scheduled([&](const auto& c) { return run_channel_close_scenario(cfg, closer_yields, c); });
  RC_ASSERT(run.closed);
  RC_ASSERT(run.consumers_done == cfg.consumers);  // every receiver got nullopt after the drain

  // A producer's completed sends are a prefix of its values; a refused send
  // ends it (it stops at the first ChannelClosedError).
  std::size_t completed = 0;
  for (std::size_t p = 0; p < cfg.producers.size(); ++p) {
    completed += run.sent_ok[p];
    if (run.failed_at[p]) {
      RC_ASSERT(static_cast<std::size_t>(*run.failed_at[p]) == run.sent_ok[p]);
    } else {
      RC_ASSERT(run.sent_ok[p] == cfg.producers[p].size());
    }
  }
  // Exactly the completed sends are received, each once: values buffered at
  // close are drained, refused values never arrive.
  std::map<std::pair<int, int>, int> seen;
  for (const Receipt& r : run.receipts) {
    const auto p = static_cast<std::size_t>(r.item.producer);
    RC_ASSERT(static_cast<std::size_t>(r.item.seq) < run.sent_ok[p]);
    RC_ASSERT(cfg.producers[p][static_cast<std::size_t>(r.item.seq)] == r.item.value);
    ++seen[{r.item.producer, r.item.seq}];
  }
  RC_ASSERT(run.receipts.size() == completed);
  RC_ASSERT(seen.size() == completed);
  bool refused = false;
  for (const auto& f : run.failed_at) refused = refused || f.has_value();
  RC_CLASSIFY(refused, "some send refused");
  RC_CLASSIFY(cfg.capacity == 0, "rendezvous");
}

}  // namespace
}  // namespace turnstile::prop
