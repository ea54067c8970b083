// tests/mutation_test.cpp: conforming traces mutated to break a rule are always
// rejected ([TRACE-5.1]). The mutants are made from every good corpus trace:
// an end dropped, two turns of one lane or activation swapped, two turns
// overlapped. Each mutant must be usable (it parses) and fail some check.
#include <functional>

#include "corpus_support.hpp"

namespace turnstile::oracle::testing {
namespace {

using Lines = std::vector<nlohmann::json>;

Lines load(const std::filesystem::path& path) {
  Lines out;
  std::istringstream in(read_file(path));
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

std::string render(Lines lines) {
  std::string out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    lines[i]["seq"] = i + 1;
    out += lines[i].dump() + '\n';
  }
  return out;
}

bool is_turn_end(const nlohmann::json& e) { return e["ev"] == "lane.turn_end" || e["ev"] == "turn.end"; }
bool is_turn_start(const nlohmann::json& e) { return e["ev"] == "lane.turn_start" || e["ev"] == "turn.start"; }
// The lane or activation a turn event belongs to, and the item or call it is.
std::string scope(const nlohmann::json& e) { return e.contains("lane") ? e.value("lane", "") : e.value("act", ""); }
std::string unit(const nlohmann::json& e) { return e.contains("item") ? e.value("item", "") : e.value("call", ""); }
const char* unit_field(const nlohmann::json& e) { return e.contains("item") ? "item" : "call"; }

// Serial turns only: interleaved turns may legally overlap and reorder.
bool serial_start(const Lines& lines, std::size_t i) {
  if (!is_turn_start(lines[i])) return false;
  if (lines[i]["ev"] == "lane.turn_start") return true;
  for (const auto& e : lines) {
    if (e["ev"] == "turn.call" && e["act"] == lines[i]["act"] && e["call"] == lines[i]["call"]) {
      return e["mode"] == "serial";
    }
  }
  return true;  // a re-entry
}

std::size_t find_end(const Lines& lines, std::size_t start) {
  for (std::size_t j = start + 1; j < lines.size(); ++j) {
    if (is_turn_end(lines[j]) && scope(lines[j]) == scope(lines[start]) && unit(lines[j]) == unit(lines[start])) return j;
  }
  return lines.size();
}

// Every mutant of `lines` made by one operator.
using Mutator = std::function<std::vector<Lines>(const Lines&)>;

std::vector<Lines> drop_an_end(const Lines& lines) {
  std::vector<Lines> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!is_turn_end(lines[i])) continue;
    Lines m = lines;
    m.erase(m.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back(std::move(m));
  }
  return out;
}

// The first two serial turns of one lane/activation run in the other order:
// their start and end events exchange items (or calls).
std::vector<Lines> swap_two_starts(const Lines& lines) {
  std::vector<Lines> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!serial_start(lines, i)) continue;
    for (std::size_t j = i + 1; j < lines.size(); ++j) {
      if (!serial_start(lines, j) || scope(lines[j]) != scope(lines[i]) || lines[j]["ev"] != lines[i]["ev"]) continue;
      const std::size_t ei = find_end(lines, i), ej = find_end(lines, j);
      if (ei >= lines.size() || ej >= lines.size()) break;
      Lines m = lines;
      const auto a = lines[i][unit_field(lines[i])], b = lines[j][unit_field(lines[j])];
      m[i][unit_field(lines[i])] = b;
      m[ei][unit_field(lines[i])] = b;
      m[j][unit_field(lines[j])] = a;
      m[ej][unit_field(lines[j])] = a;
      out.push_back(std::move(m));
      break;
    }
  }
  return out;
}

// A serial turn's end moves after the next serial turn of the same lane/activation starts.
std::vector<Lines> overlap_two_turns(const Lines& lines) {
  std::vector<Lines> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!serial_start(lines, i)) continue;
    const std::size_t ei = find_end(lines, i);
    for (std::size_t j = ei + 1; j < lines.size(); ++j) {
      if (!serial_start(lines, j) || scope(lines[j]) != scope(lines[i]) || lines[j]["ev"] != lines[i]["ev"]) continue;
      Lines m = lines;
      const auto end = m[ei];
      m.insert(m.begin() + static_cast<std::ptrdiff_t>(j) + 1, end);
      m.erase(m.begin() + static_cast<std::ptrdiff_t>(ei));
      out.push_back(std::move(m));
      break;
    }
  }
  return out;
}

void expect_mutants_rejected(const Mutator& mutate, std::size_t minimum) {
  std::size_t mutants = 0;
  for (const auto& file : corpus_files("good")) {
    const auto mutated = mutate(load(file));
    for (std::size_t k = 0; k < mutated.size(); ++k) {
      SCOPED_TRACE(file.filename().string() + " mutant " + std::to_string(k));
      const std::string text = render(mutated[k]);
      auto parsed = parse_trace_text(text, "mutant");
      ASSERT_TRUE(std::holds_alternative<Trace>(parsed)) << std::get<InputError>(parsed).to_string();
      EXPECT_FALSE(check_trace(std::get<Trace>(parsed)).empty()) << "mutant passed:\n" << text;
      ++mutants;
    }
  }
  EXPECT_GE(mutants, minimum);
}

// spec: [TRACE-5.1] [LANE-8.1] [TURN-2.1]
TEST(MutatedTraceCorpus, DroppedEndIsRejected) { expect_mutants_rejected(drop_an_end, 20); }

// spec: [TRACE-5.1] [LANE-5.2] [TURN-2.2]
TEST(MutatedTraceCorpus, SwappedStartsAreRejected) { expect_mutants_rejected(swap_two_starts, 10); }

// spec: [TRACE-5.1] [LANE-5.1] [TURN-3.1]
TEST(MutatedTraceCorpus, OverlappedTurnsAreRejected) { expect_mutants_rejected(overlap_two_turns, 10); }

}  // namespace
}  // namespace turnstile::oracle::testing
