// turn_trace.cpp: the one writer of turn.* trace events [TRACE-4.3].
#include "turnstile/detail/turn_trace.hpp"

#include "turnstile/trace.hpp"

namespace turnstile::detail::turn_trace {

std::string call(const std::string& act, const std::string& method, bool serial,
                 std::string_view task) {
  std::string id = trace::take_label();
  const bool labelled = !id.empty();
  if (!labelled) id = trace::next_id();
  TraceEvent e(task.empty() ? "turn.call" : "turn.reentry");
  e.str("act", act).str("call", id);
  if (task.empty()) {
    e.str("method", method).str("mode", serial ? "serial" : "interleaved");
    if (labelled) e.str("op", id);
  } else {
    e.str("task", task);
  }
  trace::emit(e);
  return id;
}

std::string turn_fiber(const std::string& act, const std::string& call) {
  std::string fiber = act + ":" + call;
  TraceEvent e("fiber.spawn");
  e.str("child", fiber).flag("structured", true);
  trace::emit(e);
  return fiber;
}

void event(const char* ev, std::string_view act, std::string_view call, const char* field,
           std::string_view value) noexcept {
  TraceEvent e(ev);
  e.str("act", act);
  if (!call.empty()) e.str("call", call);
  if (field != nullptr) e.str(field, value);
  trace::emit(e);
}

}  // namespace turnstile::detail::turn_trace
