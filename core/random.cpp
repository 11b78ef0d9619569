#include "core/random.h"

#include <sstream>

#include "base/error.h"

namespace strata {

std::string Generator::state() const {
  std::ostringstream o;
  o << seed_ << ' ' << engine_;
  return o.str();
}

void Generator::set_state(const std::string& s) {
  std::istringstream i(s);
  i >> seed_ >> engine_;
  if (!i) throw Error("Generator::set_state: malformed generator state");
}

Generator& default_generator() {
  static Generator g(0);
  return g;
}

void manual_seed(uint64_t seed) { default_generator().reseed(seed); }

}  // namespace strata
