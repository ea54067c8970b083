// oracle/check/lane_context.cpp: [FL-3.9] for lane turns: a turn run inside
// the context the lane captured for another of its items, and where that
// context's bindings go from there (the spans of spec/trace-format.md section
// 4.1, A3). Part of the lane checker (oracle/check/lane.hpp; lane.cpp calls
// taint() for every event, lane_items.cpp foreign_context() at a turn start).
#include <cstdint>

#include "oracle/check/lane.hpp"

namespace turnstile::oracle::detail {

// [FL-3.9] a lane turn's user keys flow from its own submitter: a turn that
// runs inside the context the lane captured for another of its items (its
// fiber's innermost open install) reads that submission's bindings. Reported
// at the turn's start; every `expect` met on that fiber until the turn ends
// follows from it (Violation::span, set again at turn_end).
void LaneChecker::foreign_context(Lane& lane, const Event& e, const std::string& id, Item& item) {
  const auto in = installs_.find(e.fiber);
  if (in == installs_.end() || in->second.empty()) return;
  const Install& top = in->second.back();
  if (top.ctx == item.ctx) return;
  const auto other = ctx_item_.find(top.ctx);
  if (other == ctx_item_.end() || other->second.first == id) return;
  std::vector<std::size_t> lines{other->second.second, top.line, e.line};
  if (item.ctx_line != 0) lines.push_back(item.ctx_line);
  item.foreign_ctx = r_.violations.size();
  r_.add("FL-3.9", lines, "turn of item " + q(id) + " on lane " + q(lane.name) + " ran in context " + q(top.ctx) +
                              ", captured for item " + q(other->second.first) +
                              (item.ctx.empty() ? std::string() : ", not in " + q(item.ctx) + ", captured for it") +
                              ": a lane turn's bindings flow from its own submitter",
         std::nullopt, "lane");
  open_span(item.foreign_ctx, e.fiber, e.line, "");
}

void LaneChecker::open_span(std::size_t violation, const std::string& fiber, std::size_t line, std::string until_ctx) {
  auto& spans = r_.violations[violation].spans;
  spans.push_back(Violation::Span{fiber, line, SIZE_MAX});
  tainted_[fiber] = Taint{violation, spans.size() - 1, std::move(until_ctx)};
}

// [FL-3.9] follows the bindings of a turn run in a foreign context (A3): into
// the contexts captured there, the installs of those, and structured children.
void LaneChecker::taint(const Event& e) {
  const auto t = tainted_.find(e.fiber);
  switch (e.kind) {
    case EventKind::kFlCapture:
      if (t == tainted_.end()) return;
      if (tainted_ctx_.emplace(e.str("ctx"), t->second.violation).second) tainted_order_.push_back(e.str("ctx"));
      if (tainted_order_.size() > kSettledWindow) {
        tainted_ctx_.erase(tainted_order_.front());
        tainted_order_.pop_front();
      }
      return;
    case EventKind::kFlInstall: {
      const auto c = tainted_ctx_.find(e.str("ctx"));
      if (t == tainted_.end() && c != tainted_ctx_.end()) open_span(c->second, e.fiber, e.line, e.str("ctx"));
      return;
    }
    case EventKind::kFlUninstall:
      if (t != tainted_.end() && !t->second.until_ctx.empty() && t->second.until_ctx == e.str("ctx")) {
        r_.violations[t->second.violation].spans[t->second.span].last = e.line;
        tainted_.erase(t);
      }
      return;
    case EventKind::kFiberSpawn:
      if (t != tainted_.end() && e.flag("structured") && tainted_.count(e.str("child")) == 0)
        open_span(t->second.violation, e.str("child"), e.line, "<child>");
      return;
    default: return;
  }
}

}  // namespace turnstile::oracle::detail
