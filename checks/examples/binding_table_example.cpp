// The example of impl/include/turnstile/binding_table.hpp, run.
// spec: [LANE-8.10] [LANE-5.8]
#include <optional>
#include <string>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_binding_table {
using namespace turnstile;

Task<std::optional<std::string>> session_after_rebind() {
  // doc: impl/include/turnstile/binding_table.hpp
  BindingTable table("bindings");
  co_await table.bind("actor-1", "session-a");
  co_await table.rebind("actor-1", "session-b");   // one turn, no window
  auto s = co_await table.session_of("actor-1");    // "session-b"
  co_await table.close();                           // before destroying it
  // end doc
  co_return s;
}

int run() { return sync_wait(session_after_rebind()) == "session-b" ? 0 : 1; }

}  // namespace ex_binding_table

TURNSTILE_EXAMPLE(binding_table, &ex_binding_table::run);
