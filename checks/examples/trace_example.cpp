// The example of impl/include/turnstile/trace.hpp, run: a sink on around some
// work writes the header, the work's events and the end line.
// spec: [TRACE-4.3]
#include <sstream>
#include <string>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_trace {
using namespace turnstile;

Task<> run_app() {
  StateLane lane("traced");
  co_await lane.run([] { return 1; });
  co_await lane.close();
}

int run() {
  // doc: impl/include/turnstile/trace.hpp
  std::ostringstream out;
  JsonLinesTraceSink sink(out);            // writes the `trace` header
  TraceSink* prev = set_trace_sink(&sink); // on
  sync_wait(run_app());                    // fibers, lanes, activations
  set_trace_sink(prev);                    // off again, once quiescent
  sink.finish();                           // writes the `end` line
  // end doc
  const std::string text = out.str();
  return sink.lines() > 2 && text.find("\"traced\"") != std::string::npos ? 0 : 1;
}

}  // namespace ex_trace

TURNSTILE_EXAMPLE(trace, &ex_trace::run);
