// impl/src/testing/explore_token.cpp: Schedule's tokens and description, the
// names of the enums, check_that.
#include <algorithm>
#include <charconv>
#include <sstream>

#include "explore_run.hpp"

namespace turnstile::testing {

const char* to_string(Strategy s) noexcept {
  switch (s) {
    case Strategy::exhaustive: return "exhaustive";
    case Strategy::pct: return "pct";
    case Strategy::random: return "random";
  }
  return "?";
}

const char* to_string(FailureKind k) noexcept {
  switch (k) {
    case FailureKind::check: return "check";
    case FailureKind::exception: return "exception";
    case FailureKind::hang: return "hang";
    case FailureKind::reentrancy: return "reentrancy";
    case FailureKind::step_limit: return "step_limit";
    case FailureKind::nondeterminism: return "nondeterminism";
  }
  return "?";
}

void check_that(bool ok, std::string_view what) {
  if (!ok) throw CheckFailure(std::string(what));  // [EXP-2.4]
}

std::size_t Schedule::deviations() const noexcept {
  std::size_t n = 0;
  for (const std::uint32_t c : choices) n += c != 0 ? 1 : 0;  // [EXP-1.1] not the oldest
  return n;
}

// [EXP-4.3] "ex1", then "-<point>.<index>" for each deviation; trailing
// FIFO choices are implied, so a token names exactly one schedule.
std::string Schedule::token() const {
  std::string t = "ex1";
  for (std::size_t p = 0; p < choices.size(); ++p) {
    if (choices[p] == 0) continue;
    // Appended piece by piece: GCC 12 at -O3 (the bench preset) reports a bogus
    // -Wrestrict on `"-" + std::to_string(p)` (a string inserted at its front).
    t += '-';
    t += std::to_string(p);
    t += '.';
    t += std::to_string(choices[p]);
  }
  return t;
}

std::optional<Schedule> Schedule::from_token(std::string_view t) {
  if (t.substr(0, 3) != "ex1") return std::nullopt;
  t.remove_prefix(3);
  Schedule s;
  while (!t.empty()) {
    if (t.front() != '-') return std::nullopt;
    t.remove_prefix(1);
    std::size_t point = 0;
    std::uint32_t index = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), point);
    if (r.ec != std::errc() || r.ptr == t.data() + t.size() || *r.ptr != '.') return std::nullopt;
    t.remove_prefix(static_cast<std::size_t>(r.ptr - t.data()) + 1);
    r = std::from_chars(t.data(), t.data() + t.size(), index);
    if (r.ec != std::errc() || index == 0) return std::nullopt;
    t.remove_prefix(static_cast<std::size_t>(r.ptr - t.data()));
    if (point < s.choices.size() || point > 1'000'000) return std::nullopt;  // increasing points
    s.choices.resize(point + 1, 0);
    s.choices[point] = index;
  }
  return s;
}

bool Schedule::operator==(const Schedule& o) const noexcept {
  const std::size_t n = std::max(choices.size(), o.choices.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t a = i < choices.size() ? choices[i] : 0;
    const std::uint32_t b = i < o.choices.size() ? o.choices[i] : 0;
    if (a != b) return false;
  }
  return true;
}

std::string Schedule::describe() const {
  std::ostringstream os;
  os << choices.size() << " choice point(s), " << deviations() << " deviation(s) from FIFO";
  for (std::size_t p = 0; p < choices.size(); ++p) {
    if (choices[p] == 0) continue;
    os << "\n  choice point " << p << ": item " << choices[p];
    if (p < widths.size()) os << " of " << widths[p] << " ready";
    os << " (not the oldest)";
  }
  return os.str();
}

}  // namespace turnstile::testing
