// tests/stream_test.cpp: the one-pass checker (oracle/pipeline.hpp): its state
// does not grow with the length of a trace, it reports what check_trace()
// reports, and its line reader reads every line as nlohmann::json does.
#include <nlohmann/json.hpp>

#include "corpus_support.hpp"
#include "oracle/pipeline.hpp"
#include "oracle/trace/fields.hpp"

namespace turnstile::oracle::testing {
namespace {

// The lines of a trace body: line(body) appends {"seq":N,body}, N counting up
// from first_seq.
class SeqLines {
 public:
  explicit SeqLines(std::size_t first_seq) : seq_(first_seq) {}
  void operator()(const std::string& body) {
    out_.push_back(R"({"seq":)" + std::to_string(seq_++) + "," + body + "}");
  }
  std::vector<std::string> take() { return std::move(out_); }

 private:
  std::vector<std::string> out_;
  std::size_t seq_;
};

// The header line of a test trace, then `body`'s lines.
std::string trace_head_and(const std::vector<std::string>& body) {
  std::string text = R"({"seq":1,"ev":"trace","format":1,"impl":"test"})" "\n";
  for (const auto& l : body) text += l + "\n";
  return text;
}
// The same, ended by a quiescent end line numbered `end_seq`.
std::string quiescent_trace(const std::vector<std::string>& body, std::size_t end_seq) {
  return trace_head_and(body) + R"({"seq":)" + std::to_string(end_seq) +
         R"(,"ev":"end","status":"quiescent"})" "\n";
}

// Checks `body` + `end` (seq `end_seq`) in one pass; the trace must be usable.
StreamResult check_quiescent(const std::vector<std::string>& body, std::size_t end_seq,
                             const char* name) {
  StreamResult r = check_stream_text(quiescent_trace(body, end_seq), name, nullptr);
  EXPECT_FALSE(r.error) << r.error->to_string();
  return r;
}

// all[i] reports a repeated end of one item or call, under `rule`.
void expect_ended_twice(const std::vector<Violation>& all, std::size_t i, const char* rule) {
  ASSERT_LT(i, all.size()) << describe(all);
  EXPECT_EQ(all[i].rule, rule);
  EXPECT_NE(all[i].message.find("ended twice"), std::string::npos) << describe(all);
}

// A clean lane trace body: `items` runs of lanes L0..L3, 4 in flight per lane.
std::vector<std::string> lane_items(std::size_t items, std::size_t first_seq) {
  SeqLines line(first_seq);
  for (std::size_t i = 0; i < items; i += 4) {
    const std::string lane = "\"lane\":\"L" + std::to_string(i / 4 % 4) + "\"";
    for (std::size_t k = i; k < i + 4; ++k) {
      const std::string f = "\"fiber\":\"f" + std::to_string(k % 4) + "\"";
      const std::string item = "\"item\":\"i" + std::to_string(k) + "\"";
      line(R"("ev":"lane.submit",)" + f + "," + lane + "," + item + R"(,"op":"run")");
      line(R"("ev":"lane.accepted",)" + f + "," + lane + "," + item);
    }
    for (std::size_t k = i; k < i + 4; ++k) {
      const std::string f = "\"fiber\":\"f" + std::to_string(k % 4) + "\"";
      const std::string item = "\"item\":\"i" + std::to_string(k) + "\"";
      line(R"("ev":"lane.turn_start","fiber":"w",)" + lane + "," + item);
      line(R"("ev":"lane.turn_end","fiber":"w",)" + lane + "," + item + R"(,"outcome":"ok")");
      line(R"("ev":"lane.resumed",)" + f + "," + lane + "," + item + R"(,"outcome":"ok")");
    }
  }
  return line.take();
}

// Fiber-local binds and restores of ever new values, with reads between.
std::vector<std::string> fl_binds(std::size_t binds, std::size_t first_seq) {
  SeqLines line(first_seq);
  for (std::size_t i = 0; i < binds; ++i) {
    const std::string v = std::to_string(i);
    line(R"("ev":"fl.bind","fiber":"g","key":"k","value":)" + v);
    line(R"("ev":"fl.read","fiber":"g","key":"k","value":)" + v);
    line(R"("ev":"fl.restore","fiber":"g","key":"k")");
    line(R"("ev":"fl.capture","fiber":"g","ctx":"c")");
    line(R"("ev":"fl.install","fiber":"h","ctx":"c")");
    line(R"("ev":"fl.uninstall","fiber":"h","ctx":"c")");
  }
  return line.take();
}

// Actor calls, each settled: a root fiber `m` calls and awaits a serial call
// of activation A, whose turn calls and awaits a serial call of B (a wait
// edge, held back until it is answered), and an interleaved call of A runs
// beside it.
std::vector<std::string> turn_calls(std::size_t calls, std::size_t first_seq) {
  SeqLines line(first_seq);
  for (std::size_t i = 0; i < calls; ++i) {
    const std::string n = std::to_string(i);
    const std::string a = R"("act":"A","call":"a)" + n + "\"";
    const std::string b = R"("act":"B","call":"b)" + n + "\"";
    const std::string c = R"("act":"A","call":"c)" + n + "\"";
    line(R"("ev":"turn.call","fiber":"m",)" + a + R"(,"method":"run","mode":"serial")");
    line(R"("ev":"turn.await","fiber":"m",)" + a);
    line(R"("ev":"turn.start","fiber":"w",)" + a);
    line(R"("ev":"turn.call","fiber":"n",)" + c + R"(,"method":"peek","mode":"interleaved")");
    line(R"("ev":"turn.start","fiber":"x",)" + c);
    line(R"("ev":"turn.call","fiber":"w",)" + b + R"(,"method":"get","mode":"serial")");
    line(R"("ev":"turn.await","fiber":"w",)" + b);
    line(R"("ev":"turn.start","fiber":"v",)" + b);
    line(R"("ev":"turn.end","fiber":"v",)" + b + R"(,"outcome":"ok")");
    line(R"("ev":"turn.end","fiber":"x",)" + c + R"(,"outcome":"ok")");
    line(R"("ev":"turn.end","fiber":"w",)" + a + R"(,"outcome":"ok")");
  }
  return line.take();
}

// Feeds the header and `body` to a TraceChecker; its retained() afterwards.
std::size_t retained_after(const std::vector<std::string>& body, std::size_t& found) {
  TraceChecker checker;
  const std::string text = trace_head_and(body);
  const auto error = read_trace_text(text, "stream", [&](const Event& e) { checker.on_event(e); });
  EXPECT_TRUE(error.has_value() && error->message.find("truncated") != std::string::npos)
      << "the trace has no `end` on purpose";
  found = checker.found();
  return checker.retained();
}

// Checks a clean trace body of `n` and of `times` x `n` units made by `body`: no
// violation either way, and the checker retains the same state for both, less
// than 3000 entries: state that does not grow with the trace.
template <class Body>
void expect_state_does_not_grow(Body body, std::size_t n, std::size_t times) {
  std::size_t found = 0;
  const std::size_t small = retained_after(body(n, 2), found);
  EXPECT_EQ(found, 0u);
  const std::size_t large = retained_after(body(n * times, 2), found);
  EXPECT_EQ(found, 0u);
  EXPECT_EQ(small, large);
  EXPECT_LT(large, 3000u);
}

// Settled items are forgotten past a fixed window: four times the items, the same state.
// spec: [TRACE-4.1]
TEST(StreamingCheck, LaneStateDoesNotGrowWithTheTrace) {
  expect_state_does_not_grow(lane_items, 3000, 4);
}

// spec: [TRACE-4.1]
TEST(StreamingCheck, FiberLocalHistoryDoesNotGrowWithTheTrace) {
  expect_state_does_not_grow(fl_binds, 3000, 3);
}

// spec: [TRACE-4.1] [TURN-2.1]
TEST(StreamingCheck, TurnStateDoesNotGrowWithTheTrace) {
  std::size_t found = 0;
  const std::size_t small = retained_after(turn_calls(3000, 2), found);
  EXPECT_EQ(found, 0u);
  const std::size_t large = retained_after(turn_calls(12000, 2), found);
  EXPECT_EQ(found, 0u);
  // Settled calls are forgotten past a fixed window: four times the calls, the same state.
  EXPECT_EQ(small, large);
  EXPECT_LT(large, 3000u);
  // Past the window a call is forgotten; within it a repeated end is still named exactly.
  auto body = turn_calls(3000, 2);
  std::size_t seq = body.size() + 2;
  body.push_back(R"({"seq":)" + std::to_string(seq++) +
                 R"(,"ev":"turn.end","fiber":"w","act":"A","call":"a2999","outcome":"ok"})");
  const StreamResult r = check_quiescent(body, seq, "turns");
  ASSERT_EQ(r.violations.size(), 1u) << describe(r.violations);
  expect_ended_twice(r.violations, 0, "TURN-2.1");
}

// The window still names a repeated event exactly, and a wrong read among
// thousands of bindings is still reported (the model, not the window, decides).
// spec: [LANE-8.1] [FL-3.1] [TRACE-5.1]
TEST(StreamingCheck, BoundedStateStillReports) {
  auto body = lane_items(3000, 2);
  std::size_t seq = body.size() + 2;
  body.push_back(R"({"seq":)" + std::to_string(seq++) +
                 R"(,"ev":"lane.turn_end","fiber":"w","lane":"L1","item":"i2999","outcome":"ok"})");
  auto fl = fl_binds(3000, seq);
  seq += fl.size();
  body.insert(body.end(), fl.begin(), fl.end());
  body.push_back(R"({"seq":)" + std::to_string(seq++) + R"(,"ev":"fl.read","fiber":"g","key":"k","value":7})");
  const StreamResult r = check_quiescent(body, seq, "bounded");
  ASSERT_EQ(r.violations.size(), 2u) << describe(r.violations);
  expect_ended_twice(r.violations, 0, "LANE-8.1");
  EXPECT_EQ(r.violations[1].rule, "FL-3.1");
  EXPECT_EQ(r.violations[1].lines.back(), seq - 1);
}

// spec: [TRACE-4.1] [TRACE-4.2]
// spec: [TRACE-2.1]
TEST(StreamingCheck, SameViolationsAsTheWholeTraceCheckOnTheCorpus) {
  std::size_t files = 0, with_scenario = 0;
  for (const auto& kind : {"good", "bad"}) {
    for (const auto& file : corpus_files(kind)) {
      SCOPED_TRACE(file.filename().string());
      const std::string text = read_file(file);
      const StreamResult streamed = check_stream_text(text, "x", nullptr);
      ASSERT_FALSE(streamed.error);
      const auto whole = check_trace(parse_corpus_file(file));
      ASSERT_EQ(streamed.violations.size(), whole.size());
      for (std::size_t i = 0; i < whole.size(); ++i) EXPECT_EQ(to_string(streamed.violations[i]), to_string(whole[i]));
      std::istringstream in(text);
      EXPECT_EQ(check_stream(in, "x", nullptr).violations.size(), whole.size());
      ++files;
      // With its scenario: the whole-trace check_with_scenario(), consequences marked alike.
      auto sidecar = file;
      sidecar.replace_extension(".scenario.json");
      if (!std::filesystem::exists(sidecar)) continue;
      auto scenario = parse_scenario(nlohmann::json::parse(read_file(sidecar)), "s");
      ASSERT_TRUE(std::holds_alternative<Scenario>(scenario));
      const Scenario& s = std::get<Scenario>(scenario);
      const StreamResult both = check_stream_text(text, "x", &s);
      ASSERT_FALSE(both.error);
      const auto expected = check_with_scenario(parse_corpus_file(file), &s);
      ASSERT_EQ(both.violations.size(), expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_EQ(to_string(both.violations[i]), to_string(expected[i]));
      ++with_scenario;
    }
  }
  EXPECT_GT(files, 40u);
  EXPECT_GT(with_scenario, 0u);
}

// Lines the fast reader takes and lines it leaves to nlohmann::json: the same
// fields, types and values either way (and errors for what is not JSON).
// spec: [TRACE-1.2] [TRACE-4.1]
TEST(StreamingCheck, LineReaderReadsFieldsAsJsonDoes) {
  const std::vector<std::string> values = {
      R"("plain")", R"("tab\there \"q\" \\ \/ \b\f\n\r")", R"("\u00e9t\u00e9")", "\"caf\xC3\xA9\"",
      "0", "7", "-12", "123456789012345678", "1234567890123456789", "18446744073709551615",
      "18446744073709551616", "-0", "1.5", "1e3", "-2.5E-3", "true", "false", "null"};
  for (const auto& v : values) {
    SCOPED_TRACE(v);
    const std::string line = R"({ "seq" : 2 , "ev":"fl.bind","fiber":"f","key":"k","value":)" + v +
                             R"(,"extra":)" + v + " }";
    const std::string text = R"({"seq":1,"ev":"trace","format":1,"impl":"t"})" "\n" + line + "\n" +
                             R"({"seq":3,"ev":"end","status":"quiescent"})" "\n";
    auto parsed = parse_trace_text(text, "t");
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const Event& e = std::get<Trace>(parsed).events.at(1);
    const auto doc = nlohmann::json::parse(line);
    for (const char* f : {"value", "extra"}) {
      EXPECT_EQ(e.value(f), doc[f]) << f;
      EXPECT_EQ(show_value(e.value(f)), doc[f].dump()) << f;
      EXPECT_EQ(e.value(f).type(), doc[f].type()) << f;
      EXPECT_EQ(e.text(f), doc[f].is_string() ? doc[f].get<std::string>() : "") << f;
    }
    EXPECT_EQ(e.str("key"), "k");
    EXPECT_EQ(e.fiber, "f");
  }
  // A repeated member: nlohmann's reading decides which one counts.
  auto dup = parse_trace_text(R"({"seq":1,"ev":"trace","format":1,"impl":"a","impl":"b"})" "\n"
                              R"({"seq":2,"ev":"end","status":"quiescent"})", "t");
  ASSERT_TRUE(std::holds_alternative<Trace>(dup));
  EXPECT_EQ(std::get<Trace>(dup).impl,
            nlohmann::json::parse(R"({"impl":"a","impl":"b"})")["impl"].get<std::string>());
  // Near misses of the fast reader are errors, worded by nlohmann.
  for (const std::string bad : {R"({"seq":2,"ev":"x",})", R"({"seq":02,"ev":"x"})", R"({"seq":2 "ev":"x"})",
                                R"({"seq":2,"ev":"x"} x)", R"({"seq":2,"ev":tru})", "{\"seq\":2,\"ev\":\"a\tb\"}"}) {
    SCOPED_TRACE(bad);
    auto r = parse_trace_text(R"({"seq":1,"ev":"trace","format":1,"impl":"t"})" "\n" + bad + "\n", "t");
    ASSERT_TRUE(std::holds_alternative<InputError>(r));
    const auto& err = std::get<InputError>(r);
    EXPECT_EQ(err.line, 2u);
    std::string what;
    try {
      const auto doc = nlohmann::json::parse(bad);
      ADD_FAILURE() << "nlohmann read it: " << doc.dump();
    } catch (const nlohmann::json::exception& e) {
      what = e.what();
    }
    EXPECT_EQ(err.message, "not valid JSON: " + what);
  }
}

// The reader interns each event name (Event::kind) and numbers each field
// name: every format-1 name has its own kind and number, both ways, and a
// name outside format 1 has none (it is still read, by a scan).
// spec: [TRACE-1.2]
TEST(StreamingCheck, EventKindsAndFieldNumbersCoverFormatOne) {
  std::set<std::uint8_t> numbers;
  std::size_t kinds = 0;
  for (auto k = static_cast<std::uint8_t>(EventKind::kTrace); k <= static_cast<std::uint8_t>(EventKind::kTurnCounters); ++k) {
    const EventSpec* spec = find_event_spec(static_cast<EventKind>(k));
    ASSERT_NE(spec, nullptr) << int(k);
    EXPECT_EQ(spec->kind, static_cast<EventKind>(k)) << spec->ev;
    EXPECT_EQ(event_kind(spec->ev), spec->kind) << spec->ev;
    EXPECT_EQ(find_event_spec(spec->ev), spec) << spec->ev;
    EXPECT_EQ(is_lane_event(spec->kind), spec->ev.rfind("lane.", 0) == 0) << spec->ev;
    EXPECT_EQ(is_fl_event(spec->kind), spec->ev.rfind("fl.", 0) == 0) << spec->ev;
    EXPECT_EQ(is_turn_event(spec->kind), spec->ev.rfind("turn.", 0) == 0) << spec->ev;
    for (const FieldSpec& f : spec->fields) {
      EXPECT_NE(f.known, 0) << spec->ev << " " << f.name;
      EXPECT_EQ(f.known, trace_names::known_field(f.name)) << f.name;
      numbers.insert(f.known);
    }
    ++kinds;
  }
  EXPECT_EQ(kinds, 30u);  // with the optional lane.dropped and turn.await_abandoned
  for (const char* name : {"seq", "ev", "fiber"}) numbers.insert(trace_names::known_field(name));
  EXPECT_EQ(numbers.size(), std::size_t{trace_names::kCount});  // one number per name, none unused
  for (const char* other : {"", "lane.", "lane.submitx", "turn", "trace ", "Lane.submit"})
    EXPECT_EQ(event_kind(other), EventKind::kUnknown) << other;
  for (const char* other : {"", "Seq", "seq ", "lanes", "x"}) EXPECT_EQ(trace_names::known_field(other), 0) << other;
  // A line with other fields and a repeated number-less name reads as JSON does.
  auto parsed = parse_trace_text(R"({"seq":1,"ev":"trace","format":1,"impl":"t","zz":1,"lanex":"a"})" "\n"
                                 R"({"seq":2,"ev":"end","status":"quiescent"})", "t");
  ASSERT_TRUE(std::holds_alternative<Trace>(parsed));
  const Event& header = std::get<Trace>(parsed).events.at(0);
  EXPECT_EQ(header.kind, EventKind::kTrace);
  EXPECT_EQ(header.value("zz"), 1);
  EXPECT_EQ(header.str("lanex"), "a");
  EXPECT_EQ(header.find("lane"), nullptr);
}

}  // namespace
}  // namespace turnstile::oracle::testing
