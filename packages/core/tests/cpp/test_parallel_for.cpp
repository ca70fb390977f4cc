// parallel_for (Note [Dynamic chunks], flambeau/parallel.h): the chunks cover
// [begin, end) exactly once for any size, grain and thread count, on the GEMM
// pool and on the OpenMP fallback, under every backends.cpu.parallel_for_schedule;
// exceptions reach the caller; nested loops run serially; chunk boundaries depend
// only on (n, grain, threads). The affine pool's claim order (Note [Affine chunks]).
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "cpu/linalg/gemm_pool.h"
#include "flambeau/parallel.h"
#include "settings.h"

using namespace flambeau;

namespace {

/// Restores the thread count a test changes.
struct ThreadsScope {
  int saved = get_num_threads();
  explicit ThreadsScope(int n) { set_num_threads(n); }
  ~ThreadsScope() { set_num_threads(saved); }
};

/// Sets backends.cpu.parallel_for_schedule for a scope, restoring it after.
struct ScheduleScope {
  std::string saved = settings::get("parallel_for_schedule");
  explicit ScheduleScope(const char* name) { settings::set("parallel_for_schedule", name); }
  ~ScheduleScope() { settings::set("parallel_for_schedule", saved); }
};

constexpr const char* kSchedules[] = {"dynamic", "static", "affine"};

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
  for (const char* schedule : kSchedules)
    for (int threads : {1, 2, 3, 4, 7}) {
      ScheduleScope sched(schedule);
      CAPTURE(schedule);
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

TEST_CASE("parallel_for_chunks, the plain function generated kernels call, cuts as parallel_for does") {
  struct Sink {
    std::mutex mu;
    Chunks chunks;
  };
  auto plain = [](int64_t begin, int64_t end, int64_t grain) {
    Sink sink;
    detail::parallel_for_chunks(
        begin, end, grain,
        [](void* p, int64_t b, int64_t e) {
          Sink& s = *static_cast<Sink*>(p);
          std::lock_guard<std::mutex> lock(s.mu);
          s.chunks.emplace_back(b, e);
        },
        &sink);
    std::sort(sink.chunks.begin(), sink.chunks.end());
    return sink.chunks;
  };
  for (const char* schedule : kSchedules)
    for (int threads : {1, 2, 3}) {
      ScheduleScope sched(schedule);
      ThreadsScope scope(threads);
      for (int64_t n : {0, 1, 5, 4097, 100003})
        for (int64_t grain : {0, 1, 64, 32768}) {
          CAPTURE(schedule);
          CAPTURE(threads);
          CAPTURE(n);
          CAPTURE(grain);
          const Chunks c = plain(7, 7 + n, grain);
          check_cover(c, 7, 7 + n);
          CHECK(c == record(7, 7 + n, grain));
        }
    }
  // Inside a parallel region: one serial chunk, as parallel_for.
  ThreadsScope scope(2);
  std::atomic<int> inner_chunks{0};
  parallel_for(0, 2, 1, [&](int64_t, int64_t) {
    detail::parallel_for_chunks(
        0, 1 << 20, 1, [](void* p, int64_t, int64_t) { ++*static_cast<std::atomic<int>*>(p); },
        &inner_chunks);
  });
  CHECK(inner_chunks.load() == 2);
}

TEST_CASE("parallel_for: chunk boundaries are the same on every run") {
  ThreadsScope scope(2);
  const Chunks first = record(0, 1 << 20, 4096);
  if (!detail::static_split()) CHECK(first.size() == 2 * detail::kChunksPerThread);
  for (int r = 0; r < 20; ++r) CHECK(record(0, 1 << 20, 4096) == first);
  // "affine" claims the same chunks, only in another order.
  ScheduleScope sched("affine");
  for (int r = 0; r < 20; ++r) CHECK(record(0, 1 << 20, 4096) == first);
}

TEST_CASE("parallel_for: huge ranges and extreme offsets are cut exactly") {
  for (const char* schedule : kSchedules)
    for (int threads : {2, 3}) {
      ScheduleScope sched(schedule);
      ThreadsScope scope(threads);
      CAPTURE(schedule);
      CAPTURE(threads);
      const int64_t big = int64_t{1} << 40;
      for (int64_t begin : {int64_t{0}, -(int64_t{1} << 62), (int64_t{1} << 62) - big}) {
        CAPTURE(begin);
        for (int64_t grain : {int64_t{1} << 36, big / 3, big - 1}) {
          const Chunks c = record(begin, begin + big, grain);
          check_cover(c, begin, begin + big);
          if (!detail::static_split())
            CHECK(static_cast<int64_t>(c.size()) == detail::plan_chunks(big, grain, threads).chunks);
        }
      }
    }
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
  for (const char* schedule : kSchedules)
    for (int threads : {1, 2, 4}) {
      ScheduleScope sched(schedule);
      ThreadsScope scope(threads);
      CAPTURE(schedule);
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
      CHECK_THROWS_AS(
          parallel_for(0, 1 << 16, 16, [](int64_t, int64_t) { throw std::runtime_error("each"); }),
          std::runtime_error);
      std::atomic<int64_t> total{0};
      parallel_for(0, 1 << 16, 16, [&](int64_t b, int64_t e) { total += e - b; });
      CHECK(total.load() == (1 << 16));
    }
}

TEST_CASE("parallel_for: nested loops run serially inside a chunk") {
  for (const char* schedule : kSchedules) {
    ScheduleScope sched(schedule);
    CAPTURE(schedule);
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
}

TEST_CASE("parallel_for: concurrent callers (one on the pool, the others on OpenMP) each cover their range") {
  for (const char* schedule : kSchedules) {
    ScheduleScope sched(schedule);
    CAPTURE(schedule);
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
    CAPTURE(threads);
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
    // The same chunks under "affine": the same bits.
    ScheduleScope sched("affine");
    for (int r = 0; r < 20; ++r) CHECK(sum() == first);
  }
}

TEST_CASE("affine pool: every block runs once, whatever the block and thread counts") {
  ScheduleScope sched("affine");
  for (int threads : {2, 3, 4, 7}) {
    for (int64_t n : {1, 2, 3, 5, 7, 8, 13, 64, 1000, 65535}) {
      CAPTURE(threads);
      CAPTURE(n);
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      for (auto& h : hits) h.store(0);
      REQUIRE(cpu::gemm_pool_for(n, threads, [&](int64_t i) { hits[static_cast<size_t>(i)]++; }));
      CHECK(std::all_of(hits.begin(), hits.end(), [](const std::atomic<int>& h) { return h.load() == 1; }));
    }
  }
  // Out of the pool's range: nothing runs, the caller is told to run the blocks itself.
  CHECK(!cpu::gemm_pool_for(0, 2, [](int64_t) { FAIL("ran"); }));
  CHECK(!cpu::gemm_pool_for(65536, 2, [](int64_t) { FAIL("ran"); }));
}

TEST_CASE("affine pool: each thread takes its own share from the front, the other's from the back") {
  // Two threads, share 0 = blocks [0, n/2) is the caller's, share 1 = [n/2, n) the worker's. Whatever
  // the timing: the caller runs 0, 1, ..., m-1 then (if it gets there first) n-1, n-2, ...; the
  // worker runs n/2, n/2+1, ... then (if done first) the back of the caller's share.
  ScheduleScope sched("affine");
  ThreadsScope scope(2);
  const std::thread::id caller = std::this_thread::get_id();
  bool worker_took_part = false;
  for (int64_t n : {2, 3, 8, 9, 64}) {
    for (int r = 0; r < 40; ++r) {
      CAPTURE(n);
      std::mutex mu;
      std::vector<int64_t> mine, theirs;
      REQUIRE(cpu::gemm_pool_for(n, 2, [&](int64_t i) {
        if (r % 2) std::this_thread::sleep_for(std::chrono::microseconds(200));  // let the worker wake
        std::lock_guard<std::mutex> lock(mu);
        (std::this_thread::get_id() == caller ? mine : theirs).push_back(i);
      }));
      worker_took_part |= !theirs.empty();
      const int64_t half = n / 2;
      // own: an ascending run from the share's start; then a descending run down the other share's back.
      auto check_order = [&](const std::vector<int64_t>& got, int64_t lo, int64_t hi, int64_t olo,
                             int64_t ohi) {
        size_t k = 0;
        for (int64_t want = lo; k < got.size() && got[k] >= lo && got[k] < hi; ++k, ++want)
          CHECK(got[k] == want);
        for (int64_t want = ohi - 1; k < got.size(); ++k, --want) {
          CHECK(got[k] == want);
          CHECK(got[k] >= olo);
        }
      };
      check_order(mine, 0, half, half, n);
      check_order(theirs, half, n, 0, half);
      CHECK(static_cast<int64_t>(mine.size() + theirs.size()) == n);
    }
  }
  CHECK(worker_took_part);
}
