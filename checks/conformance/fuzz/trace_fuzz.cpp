// fuzz/trace_fuzz.cpp: libFuzzer target over the trace reader and the checker
// (spec: [TRACE-4.1]). Whatever the bytes, parse_trace_text() and parse_trace()
// return a Trace or an InputError naming a line, agree with each other, and
// check_trace() on a usable trace returns without crashing, each violation
// naming a rule and lines inside the trace. Any other outcome aborts.
// Built and run by fuzz/run-fuzz (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string_view>
#include <variant>

#include "oracle/check.hpp"
#include "oracle/trace.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace turnstile::oracle;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ParseResult parsed = parse_trace_text(text, "fuzz");
  std::istringstream in{std::string(text)};
  const ParseResult streamed = parse_trace(in, "fuzz");
  require(parsed.index() == streamed.index());
  if (const auto* e = std::get_if<InputError>(&parsed)) {
    require(e->to_string() == std::get<InputError>(streamed).to_string());
    require(!e->message.empty());
    return 0;
  }
  const Trace& trace = std::get<Trace>(parsed);
  require(!trace.events.empty() && trace.events.front().ev == "trace" && trace.events.back().ev == "end");
  for (const Violation& v : check_trace(trace)) {
    require(!v.rule.empty() && !v.lines.empty() && !v.message.empty());
    for (const std::size_t line : v.lines) require(line >= 1 && line <= trace.events.size());
    (void)to_string(v);
    (void)to_json(v).dump();
  }
  return 0;
}
