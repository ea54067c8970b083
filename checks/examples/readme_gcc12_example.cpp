// README.md, "Known compiler issue": the safe form, run (the string is longer
// than any small-string buffer, so the miscompiled form would free it twice).
// spec: [LANE-5.1]
#include <string>

#include "example_registry.hpp"
#include "turnstile/turnstile.hpp"

namespace ex_readme_gcc12 {
using namespace turnstile;

Task<std::size_t> size_on_lane(StateLane& lane, std::string s) {
  // doc: README.md
  auto work = [s] { return s.size(); };     // named local: safe on GCC 12
  auto n = co_await lane.run(std::move(work));
  // end doc
  co_await lane.close();
  co_return n;
}

int run() {
  StateLane lane("sizes");
  const std::string s = "a-string-well-beyond-the-small-string-buffer";
  return sync_wait(size_on_lane(lane, s)) == s.size() ? 0 : 1;
}

}  // namespace ex_readme_gcc12

TURNSTILE_EXAMPLE(readme_gcc12, &ex_readme_gcc12::run);
