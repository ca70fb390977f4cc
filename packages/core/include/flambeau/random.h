#pragma once
// Note [Random numbers]
// A Generator is counter-based: draw i of a call is a pure function of
// (seed, offset + i), mixed with SplitMix64. A kernel reserves n draws (one
// lock), then fills any slice in any thread, so results do not depend on the
// thread count and manual_seed(s) reproduces a sequence exactly.
#include <cstdint>
#include <mutex>

#include "flambeau/macros.h"

namespace flambeau {

class FB_API Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void manual_seed(uint64_t seed);
  uint64_t initial_seed() const { return seed_; }
  /// Reserves n draws; returns the counter of the first.
  uint64_t reserve(uint64_t n);

  /// Everything that decides the next draws: set_state(state()) replays them.
  struct State {
    uint64_t seed;
    uint64_t offset;
  };
  /// The state, read under the lock (reading draws nothing).
  State state();
  void set_state(State s);

  /// The i-th 64-bit draw after counter `base`.
  static uint64_t draw(uint64_t seed, uint64_t counter) {
    uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (counter + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform double in [0, 1) from a draw (53 bits).
  static double to_unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
  std::mutex mutex_;
};

FB_API Generator& default_generator();
FB_API void manual_seed(uint64_t seed);

}  // namespace flambeau
