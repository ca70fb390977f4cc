// parallel_for (Note [Dynamic chunks], flambeau/parallel.h): the chunks cover
// [begin, end) exactly once for any size, grain and thread count, on the GEMM
// pool and on the OpenMP fallback; exceptions reach the caller; nested loops
// run serially; chunk boundaries depend only on (n, grain, threads).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "flambeau/parallel.h"

using namespace flambeau;

namespace {

/// Restores the thread count a test changes.
struct ThreadsScope {
  int saved = get_num_threads();
  explicit ThreadsScope(int n) { set_num_threads(n); }
  ~ThreadsScope() { set_num_threads(saved); }
};

using Chunks = std::vector<std::pair<int64_t, int64_t>>;

Chunks record(int64_t begin, int64_t end, int64_t grain) {
  Chunks out;
  std::mutex mu;
  parallel_for(begin, end, grain, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    out.emplace_back(b, e);
  });
  std::sort(out.begin(), out.end());
  return out;
}

/// Every index of [begin, end) once, in non-empty chunks.
void check_cover(const Chunks& c, int64_t begin, int64_t end) {
  if (begin >= end) {
    CHECK(c.empty());
    return;
  }
  REQUIRE(!c.empty());
  CHECK(c.front().first == begin);
  CHECK(c.back().second == end);
  for (size_t i = 0; i < c.size(); ++i) {
    CHECK(c[i].first < c[i].second);
    if (i) CHECK(c[i].first == c[i - 1].second);
  }
}

}  // namespace

TEST_CASE("parallel_for: chunks cover the range begin..end exactly once") {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadsScope scope(threads);
    for (int64_t n : {0, 1, 2, 3, 5, 17, 100, 1000, 4097, 65536, 100003, 1 << 20}) {
      for (int64_t grain : {0, 1, 2, 7, 64, 1000, 32768, 1 << 21}) {
        for (int64_t begin : {0, 5, -3}) {
          CAPTURE(threads);
          CAPTURE(n);
          CAPTURE(grain);
          CAPTURE(begin);
          const Chunks c = record(begin, begin + n, grain);
          check_cover(c, begin, begin + n);
          const detail::ChunkPlan plan = detail::plan_chunks(n, grain, threads);
          if (n > 0) {
            if (!detail::static_split()) CHECK(static_cast<int64_t>(c.size()) == plan.chunks);
            CHECK(plan.threads <= threads);
            // A second thread only when there is more than one grain of work.
            CHECK((plan.threads > 1) == (threads > 1 && n > std::max<int64_t>(grain, 1)));
            // Chunks of at least a grain unless there are fewer grains than threads.
            if (plan.chunks > plan.threads)
              for (auto [b, e] : c)
                if (e != begin + n) CHECK(e - b >= std::max<int64_t>(grain, 1));
            CHECK(plan.chunks <= plan.threads * detail::kChunksPerThread);
          }
        }
      }
    }
  }
}

TEST_CASE("parallel_for: chunk boundaries are the same on every run") {
  ThreadsScope scope(2);
  const Chunks first = record(0, 1 << 20, 4096);
  if (!detail::static_split()) CHECK(first.size() == 2 * detail::kChunksPerThread);
  for (int r = 0; r < 20; ++r) CHECK(record(0, 1 << 20, 4096) == first);
}

TEST_CASE("parallel_for: work is spread over several threads") {
  ThreadsScope scope(2);
  // Chunks long enough that the worker wakes before the caller has taken them all.
  std::mutex mu;
  std::vector<std::thread::id> ids;
  for (int attempt = 0; attempt < 50; ++attempt) {
    parallel_for(0, 8, 1, [&](int64_t, int64_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      std::lock_guard<std::mutex> lock(mu);
      ids.push_back(std::this_thread::get_id());
    });
    std::sort(ids.begin(), ids.end());
    if (std::unique(ids.begin(), ids.end()) - ids.begin() > 1) break;
  }
  std::sort(ids.begin(), ids.end());
  CHECK(std::unique(ids.begin(), ids.end()) - ids.begin() > 1);
}

TEST_CASE("parallel_for: the first exception reaches the caller") {
  for (int threads : {1, 2, 4}) {
    ThreadsScope scope(threads);
    CAPTURE(threads);
    std::atomic<int64_t> ran{0};
    CHECK_THROWS_WITH_AS(parallel_for(0, 1 << 16, 16,
                                      [&](int64_t b, int64_t e) {
                                        ran += e - b;
                                        if (b <= 1000 && 1000 < e)
                                          throw std::out_of_range("index 1000 is out of range");
                                      }),
                         "index 1000 is out of range", std::out_of_range);
    CHECK(ran.load() > 0);
    // Every chunk throws: still one exception, and the loop is usable afterwards.
    CHECK_THROWS_AS(parallel_for(0, 1 << 16, 16, [](int64_t, int64_t) { throw std::runtime_error("each"); }),
                    std::runtime_error);
    std::atomic<int64_t> total{0};
    parallel_for(0, 1 << 16, 16, [&](int64_t b, int64_t e) { total += e - b; });
    CHECK(total.load() == (1 << 16));
  }
}

TEST_CASE("parallel_for: nested loops run serially inside a chunk") {
  ThreadsScope scope(2);
  std::atomic<int64_t> total{0};
  std::atomic<int> inner_calls{0}, outer_chunks{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    outer_chunks++;
    CHECK(in_parallel_region());
    for (int64_t i = b; i < e; ++i) {
      parallel_for(0, 1000, 1, [&](int64_t ib, int64_t ie) {
        inner_calls++;
        CHECK(ib == 0);
        CHECK(ie == 1000);
        total += ie - ib;
      });
    }
  });
  CHECK(!in_parallel_region());
  CHECK(total.load() == 64 * 1000);
  CHECK(inner_calls.load() == 64);
  if (!detail::static_split())  // backends.cpu.parallel_for_schedule = "static": one chunk per thread
    CHECK(outer_chunks.load() == static_cast<int>(detail::plan_chunks(64, 1, 2).chunks));
}

TEST_CASE("parallel_for: concurrent callers (one on the pool, the others on OpenMP) each cover their range") {
  ThreadsScope scope(2);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    callers.emplace_back([&, t] {
      for (int r = 0; r < 50; ++r) {
        const int64_t n = 10000 + 37 * t + r;
        std::vector<int> hits(static_cast<size_t>(n), 0);
        parallel_for(0, n, 64, [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        if (std::any_of(hits.begin(), hits.end(), [](int h) { return h != 1; })) bad++;
      }
    });
  }
  for (auto& c : callers) c.join();
  CHECK(bad.load() == 0);
}

TEST_CASE("parallel_for: a sum combined in chunk order is bitwise reproducible") {
  std::vector<float> x(1 << 20);
  uint32_t s = 12345;
  for (float& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(s >> 8) / 16777216.0f - 0.5f;
  }
  for (int threads : {1, 2, 3}) {
    ThreadsScope scope(threads);
    auto sum = [&] {
      const detail::ChunkPlan plan = detail::plan_chunks(static_cast<int64_t>(x.size()), 1000, threads);
      std::vector<float> partial(static_cast<size_t>(plan.chunks), 0.0f);
      parallel_for(0, static_cast<int64_t>(x.size()), 1000, [&](int64_t b, int64_t e) {
        float acc = 0;
        for (int64_t i = b; i < e; ++i) acc += x[static_cast<size_t>(i)];
        partial[static_cast<size_t>(b / plan.per)] = acc;
      });
      float total = 0;
      for (float p : partial) total += p;
      return total;
    };
    const float first = sum();
    for (int r = 0; r < 20; ++r) CHECK(sum() == first);
  }
}
