// Note [Random numbers] is in flambeau/random.h.
#include "flambeau/random.h"

namespace flambeau {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> g(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::reserve(uint64_t n) {
  std::lock_guard<std::mutex> g(mutex_);
  uint64_t base = offset_;
  offset_ += n;
  return base;
}

Generator::State Generator::state() {
  std::lock_guard<std::mutex> g(mutex_);
  return {seed_, offset_};
}

void Generator::set_state(State s) {
  std::lock_guard<std::mutex> g(mutex_);
  seed_ = s.seed;
  offset_ = s.offset;
}

Generator& default_generator() {
  static Generator gen;
  return gen;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace flambeau
