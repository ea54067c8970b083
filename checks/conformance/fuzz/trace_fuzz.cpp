// fuzz/trace_fuzz.cpp: libFuzzer target over the trace reader and the checker
// (spec: [TRACE-4.1]). Whatever the bytes, parse_trace_text() and parse_trace()
// return a Trace or an InputError naming a line, agree with each other, and
// check_trace() on a usable trace returns without crashing, each violation
// naming a rule and lines inside the trace, and the one-pass check_stream_text()
// gives the same error or the same violations; every field of every usable
// line reads as nlohmann::json reads it (the fast line reader's differential).
// Any other outcome aborts.
// Built and run by fuzz/run-fuzz (clang, -fsanitize=fuzzer,address,undefined).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

#include "oracle/check/trace_checker.hpp"
#include "oracle/pipeline.hpp"
#include "oracle/trace/reader.hpp"

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
  const StreamResult once = check_stream_text(text, "fuzz", nullptr);
  if (const auto* e = std::get_if<InputError>(&parsed)) {
    require(e->to_string() == std::get<InputError>(streamed).to_string());
    require(once.error && once.error->to_string() == e->to_string());
    require(!e->message.empty());
    return 0;
  }
  const Trace& trace = std::get<Trace>(parsed);
  require(!trace.events.empty() && trace.events.front().ev == "trace" && trace.events.back().ev == "end");
  const std::vector<Violation> violations = check_trace(trace);
  require(!once.error && once.violations.size() == violations.size());
  for (std::size_t i = 0; i < violations.size(); ++i)
    require(to_string(once.violations[i]) == to_string(violations[i]));
  std::size_t at = 0;
  for (const Event& e : trace.events) {  // line e.line of the text
    const std::size_t nl = text.find('\n', at);
    std::string_view line = text.substr(at, nl == std::string_view::npos ? std::string_view::npos : nl - at);
    at = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const nlohmann::json doc = nlohmann::json::parse(line);
    for (const auto& [key, v] : doc.items()) {
      require(e.find(key) != nullptr);
      if (key.find('\0') != std::string::npos) continue;  // the accessors take C strings
      require(e.value(key.c_str()) == v && e.value(key.c_str()).type() == v.type());
      require(e.text(key.c_str()) == (v.is_string() ? v.get<std::string>() : std::string()));
    }
  }
  for (const Violation& v : violations) {
    require(!v.rule.empty() && !v.lines.empty() && !v.message.empty());
    for (const std::size_t line : v.lines) require(line >= 1 && line <= trace.events.size());
    (void)to_string(v);
    (void)to_json(v).dump();
  }
  return 0;
}
