// property_tests/generators.cpp: the generators of generators.hpp defined out of
// line. Compiled once (the turnstile_property_generators library) for every
// property binary; it includes no product header (see generators.hpp).
#include "generators.hpp"

namespace turnstile::prop {

rc::Gen<std::vector<std::size_t>> gen_schedule() {
  return rc::gen::scale(
      4.0, rc::gen::container<std::vector<std::size_t>>(rc::gen::inRange<std::size_t>(0, 64)));
}

}  // namespace turnstile::prop
