// tests/malformed_test.cpp: unusable input is named, never crashes, never passes
// ([TRACE-4.1]); the line discipline ([TRACE-1.1]) and the vocabulary ([TRACE-1.2]).
#include <random>
#include <streambuf>

#include "corpus_support.hpp"

namespace turnstile::oracle::testing {
namespace {

const std::string kHeader = R"({"seq":1,"ev":"trace","format":1,"impl":"test"})";

std::string end_line(int seq) {
  return R"({"seq":)" + std::to_string(seq) + R"(,"ev":"end","status":"quiescent"})";
}

// A trace of header + `middle` + end, one line each, with `middle`'s seqs 2, 3, ...
std::string trace_of(const std::vector<std::string>& middle) {
  std::string out = kHeader + "\n";
  for (const auto& line : middle) out += line + "\n";
  return out + end_line(static_cast<int>(middle.size()) + 2) + "\n";
}

InputError expect_error(const std::string& text, std::size_t line, const std::string& field,
                        const std::string& fragment = "") {
  auto parsed = parse_trace_text(text, "input.jsonl");
  EXPECT_TRUE(std::holds_alternative<InputError>(parsed)) << "unusable input was accepted:\n" << text.substr(0, 400);
  if (!std::holds_alternative<InputError>(parsed)) return {};
  InputError e = std::get<InputError>(parsed);
  EXPECT_EQ(e.source, "input.jsonl");
  EXPECT_EQ(e.line, line) << e.to_string();
  EXPECT_EQ(e.field, field) << e.to_string();
  if (!fragment.empty()) {
    EXPECT_NE(e.message.find(fragment), std::string::npos) << e.to_string();
  }
  // The stream reader agrees with the text reader.
  std::istringstream in(text);
  auto streamed = parse_trace(in, "input.jsonl");
  EXPECT_TRUE(std::holds_alternative<InputError>(streamed));
  if (auto* s = std::get_if<InputError>(&streamed)) {
    EXPECT_EQ(s->to_string(), e.to_string());
  }
  return e;
}

const std::string kSubmit = R"({"seq":2,"ev":"lane.submit","fiber":"f","lane":"L","item":"a","op":"post"})";

// spec: [TRACE-4.1] [TRACE-1.1]
TEST(MalformedTrace, BadJsonNamesTheLine) {
  expect_error(trace_of({kSubmit, R"({"seq":3,"ev":"lane.accepted",)"}), 3, "", "not valid JSON");
}

// spec: [TRACE-4.1] [TRACE-1.2]
TEST(MalformedTrace, MissingFieldIsNamed) {
  expect_error(trace_of({R"({"seq":2,"ev":"lane.submit","fiber":"f","lane":"L","op":"run"})"}), 2, "item", "missing");
  expect_error(trace_of({R"({"seq":2,"ev":"lane.accepted","lane":"L","item":"a"})"}), 2, "fiber", "missing");
  expect_error(trace_of({R"({"seq":2,"fiber":"f"})"}), 2, "ev", "missing");
  expect_error(trace_of({R"({"ev":"fl.bind","fiber":"f","key":"k","value":1})"}), 2, "seq", "missing");
  expect_error(trace_of({R"({"seq":2,"ev":"fl.read","fiber":"f","key":"k"})"}), 2, "value");
  expect_error(R"({"seq":1,"ev":"trace","format":1})" "\n" + end_line(2), 1, "impl", "missing");
}

// spec: [TRACE-4.1] [TRACE-1.2]
TEST(MalformedTrace, WrongTypeIsNamed) {
  expect_error(trace_of({R"({"seq":"2","ev":"lane.drained","fiber":"f","lane":"L"})"}), 2, "seq", "integer");
  expect_error(trace_of({R"({"seq":2.0,"ev":"lane.drained","fiber":"f","lane":"L"})"}), 2, "seq", "integer");
  expect_error(trace_of({R"({"seq":2,"ev":"fiber.spawn","fiber":"f","child":"c","structured":"yes"})"}), 2,
               "structured", "boolean");
  expect_error(trace_of({R"({"seq":2,"ev":"lane.drained","fiber":"f","lane":""})"}), 2, "lane", "non-empty");
  expect_error(trace_of({R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":[1]})"}), 2, "value");
  expect_error(trace_of({R"({"seq":2,"ev":"lane.submit","fiber":"f","lane":"L","item":"a","op":"send"})"}), 2,
               "op", "unknown value");
  expect_error(trace_of({R"({"seq":2,"ev":"turn.refused","fiber":"f","act":"A","call":"c","reason":"busy"})"}),
               2, "reason", "unknown value");
  expect_error(trace_of({R"({"seq":2,"ev":"fl.read","fiber":"f","key":"k","value":1,"unbound":true})"}), 2,
               "unbound");
  expect_error(trace_of({R"([2,"lane.drained"])"}), 2, "", "not a JSON object");
}

// spec: [TRACE-4.1] [TRACE-1.2]
TEST(MalformedTrace, UnknownEventIsNamed) {
  expect_error(trace_of({R"({"seq":2,"ev":"lane.teleport","fiber":"f","lane":"L"})"}), 2, "ev", "unknown event");
}

// spec: [TRACE-4.1] [TRACE-1.1]
TEST(MalformedTrace, OutOfOrderAndDuplicateSeq) {
  expect_error(trace_of({R"({"seq":3,"ev":"lane.drained","fiber":"f","lane":"L"})"}), 2, "seq", "out of order");
  expect_error(trace_of({kSubmit, kSubmit}), 3, "seq", "duplicate");
  expect_error(R"({"seq":0,"ev":"trace","format":1,"impl":"x"})" "\n", 1, "seq", "out of order");
}

// spec: [TRACE-4.1] [TRACE-1.1]
TEST(MalformedTrace, HeaderFirstEndLast) {
  expect_error(R"({"seq":1,"ev":"lane.drained","fiber":"f","lane":"L"})" "\n" + end_line(2), 1, "ev",
               "`trace` header");
  expect_error(kHeader + "\n" + kSubmit + "\n", 2, "ev", "truncated");
  expect_error(kHeader + "\n" + end_line(2) + "\n" + R"({"seq":3,"ev":"lane.drained","fiber":"f","lane":"L"})",
               3, "ev", "follows the `end`");
  expect_error(kHeader + "\n" + R"({"seq":2,"ev":"trace","format":1,"impl":"x"})" "\n" + end_line(3), 2, "ev",
               "only be line 1");
  expect_error(R"({"seq":1,"ev":"trace","format":1,"impl":"x"})" "\n" R"({"seq":2,"ev":"end","status":"done"})",
               2, "status", "unknown value");
}

// spec: [TRACE-4.1]
TEST(MalformedTrace, HigherFormatIsRefused) {
  expect_error(R"({"seq":1,"ev":"trace","format":2,"impl":"x"})" "\n" + end_line(2), 1, "format", "unsupported");
  expect_error(R"({"seq":1,"ev":"trace","format":"1","impl":"x"})" "\n" + end_line(2), 1, "format", "integer");
}

// spec: [TRACE-4.1] [TRACE-1.1]
TEST(MalformedTrace, EmptyAndBlankLines) {
  expect_error("", 0, "", "empty");
  expect_error(kHeader + "\n\n" + end_line(3) + "\n", 2, "", "blank line");
}

// spec: [TRACE-4.1]
TEST(MalformedTrace, InvalidUtf8IsNamed) {
  std::string bad = R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":"caf)";
  bad += '\xC3';  // a lead byte with no continuation
  bad += R"("})";
  expect_error(trace_of({bad}), 2, "", "UTF-8");
  std::string surrogate = R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":")";
  surrogate += "\xED\xA0\x80\"}";  // an encoded UTF-16 surrogate
  expect_error(trace_of({surrogate}), 2, "", "UTF-8");
  std::string overlong = R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":")";
  overlong += "\xC0\xAF\"}";
  expect_error(trace_of({overlong}), 2, "", "UTF-8");
}

// spec: [TRACE-4.1]
TEST(MalformedTrace, BinaryGarbageNeverCrashes) {
  std::mt19937 random(20261130);
  for (int round = 0; round < 200; ++round) {
    std::string junk(1 + random() % 2000, '\0');
    for (auto& c : junk) c = static_cast<char>(random() & 0xFF);
    if (round % 2 == 0) junk.insert(0, kHeader + "\n");
    auto parsed = parse_trace_text(junk, "junk");
    ASSERT_TRUE(std::holds_alternative<InputError>(parsed)) << "garbage was accepted";
    EXPECT_GE(std::get<InputError>(parsed).line, round % 2 == 0 ? 2u : 1u);
  }
}

// spec: [TRACE-4.1]
TEST(MalformedTrace, DeepNestingIsRefused) {
  const std::string deep = R"({"seq":2,"ev":"lane.drained","fiber":"f","lane":"L","x":)" +
                           std::string(100000, '[') + std::string(100000, ']') + "}";
  expect_error(trace_of({deep}), 2, "", "nested deeper");
}

// A stream of a header line, then `size` bytes of one line, generated on demand.
class LongLineBuf : public std::streambuf {
 public:
  explicit LongLineBuf(std::size_t size) : remaining_(size) {
    head_ = kHeader + "\n" + R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":")";
    setg(head_.data(), head_.data(), head_.data() + head_.size());
  }
  std::size_t bytes_served() const { return served_; }

 protected:
  int_type underflow() override {
    if (remaining_ == 0) return traits_type::eof();
    const std::size_t n = std::min(remaining_, block_.size());
    std::fill_n(block_.data(), n, 'a');
    remaining_ -= n;
    served_ += n;
    setg(block_.data(), block_.data(), block_.data() + n);
    return traits_type::to_int_type(block_[0]);
  }

 private:
  std::string head_;
  std::array<char, 1 << 16> block_{};
  std::size_t remaining_;
  std::size_t served_ = 0;
};

// spec: [TRACE-4.1]
TEST(MalformedTrace, HundredMegabyteLineIsRefusedWithoutBufferingIt) {
  LongLineBuf buf(std::size_t{100} << 20);
  std::istream in(&buf);
  auto parsed = parse_trace(in, "huge.jsonl");
  ASSERT_TRUE(std::holds_alternative<InputError>(parsed));
  const auto& e = std::get<InputError>(parsed);
  EXPECT_EQ(e.line, 2u) << e.to_string();
  EXPECT_NE(e.message.find("1 MiB"), std::string::npos) << e.to_string();
  // It stopped reading soon after the cap instead of holding the whole line.
  EXPECT_LT(buf.bytes_served(), kMaxLineBytes + (std::size_t{1} << 18));
}

// spec: [TRACE-4.1]
TEST(MalformedTrace, LineAtTheCapIsAcceptedOneMoreIsNot) {
  auto line_of = [](std::size_t size) {
    std::string line = R"({"seq":2,"ev":"fl.bind","fiber":"f","key":"k","value":")";
    line += std::string(size - line.size() - 2, 'v') + "\"}";
    return line;
  };
  const std::string at_cap = line_of(kMaxLineBytes);
  ASSERT_EQ(at_cap.size(), kMaxLineBytes);
  EXPECT_TRUE(std::holds_alternative<Trace>(parse_trace_text(trace_of({at_cap}), "cap")));
  std::istringstream in(kHeader + "\r\n" + at_cap + "\r\n" + end_line(3) + "\r\n");
  EXPECT_TRUE(std::holds_alternative<Trace>(parse_trace(in, "cap")));
  expect_error(trace_of({line_of(kMaxLineBytes + 1)}), 2, "", "1 MiB");
}

// spec: [TRACE-1.1] [TRACE-1.2]
TEST(MalformedTrace, CrlfUnknownFieldsAndNoFinalNewlineAreAccepted) {
  const std::string text = kHeader + "\r\n" +
                           R"({"seq":2,"ev":"fl.read","fiber":"f","key":"k","unbound":true,"extra":{"a":[1]}})" +
                           "\r\n" + end_line(3);
  for (const bool stream : {false, true}) {
    std::istringstream in(text);
    auto parsed = stream ? parse_trace(in, "crlf") : parse_trace_text(text, "crlf");
    ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
    const Trace& t = std::get<Trace>(parsed);
    ASSERT_EQ(t.events.size(), 3u);
    EXPECT_EQ(t.impl, "test");
    EXPECT_EQ(t.end_status, "quiescent");
    EXPECT_EQ(t.events[1].fiber, "f");
    EXPECT_EQ(t.events[1].str("key"), "k");
    EXPECT_TRUE(t.events[1].flag("unbound"));
    EXPECT_EQ(t.events[1].line, 2u);
    EXPECT_TRUE(check_trace(t).empty());
  }
}

// spec: [TRACE-1.1] [TRACE-1.2]
TEST(MalformedTrace, StreamAndTextReadersAgreeOnTheCorpus) {
  for (const auto& kind : {"good", "bad"}) {
    for (const auto& file : corpus_files(kind)) {
      const std::string text = read_file(file);
      std::istringstream in(text);
      auto a = parse_trace_text(text, "x");
      auto b = parse_trace(in, "x");
      ASSERT_TRUE(std::holds_alternative<Trace>(a)) << file;
      ASSERT_TRUE(std::holds_alternative<Trace>(b)) << file;
      EXPECT_EQ(std::get<Trace>(a).events.size(), std::get<Trace>(b).events.size());
    }
  }
}

}  // namespace
}  // namespace turnstile::oracle::testing
