// The GEMM block pool (Note [GEMM pool] in gemm_pool.h).
#include "cpu/linalg/gemm_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <thread>

#include "settings.h"

namespace flambeau::cpu {
namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// How long a worker stays awake after a job. Back-to-back GEMMs of a forward
// or backward pass are a few tens of microseconds apart (the Python and
// autograd code between two layers).
constexpr int64_t kSpinMicros = 100;
constexpr int kMaxWorkers = 255;
constexpr uint64_t kChunkMask = 0xffff;             // n and next: 16 bits each
constexpr uint64_t kAffineBit = uint64_t{1} << 63;  // the ticket's top bit: an affine job
constexpr uint64_t kGenMask = 0x7fffffff;           // the ticket's generation: 31 bits

// backends.cpu.gemm_pool = False (Note [Settings]; FLAMBEAU_GEMM_POOL=0) turns
// the pool off, every caller running its blocks on OpenMP: for comparisons and
// as an escape hatch. A job already running finishes on the pool.
bool pool_disabled() { return !settings::gemm_pool(); }

// Note [Affine chunks]: one participant's share of an affine job, on its own
// cache line: generation (32 bits) | next unclaimed block from the front (16) |
// end of the unclaimed blocks (16). The owner claims the front, others the back.
struct alignas(64) Share {
  std::atomic<uint64_t> word{0};
};

struct Pool {
  // The job: affine (1 bit) | generation (31) | block count n (16) | next unclaimed block (16).
  std::atomic<uint64_t> ticket{0};
  std::atomic<int64_t> done{0};  // blocks finished in this job
  void (*fn)(void*, int64_t) = nullptr;
  void* ctx = nullptr;
  std::atomic<uint32_t> wake{0};  // futex word: bumped for every job
  std::atomic<int> sleepers{0};
  std::atomic<int> workers{0};      // started
  std::atomic<int> job_workers{0};  // workers taking part in the current job
  std::atomic<bool> busy{false};    // a caller owns the pool
  std::atomic<int> parts{0};        // participants of an affine job (caller + job_workers)
  Share shares[kMaxWorkers + 1];    // an affine job's shares: the caller's is 0, worker i's is i + 1
};

Pool& pool();

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

thread_local bool t_in_job = false;

// Runs fn(ctx, i) for a claimed block i of the current job.
inline void run_one(Pool& p, uint64_t i) {
  // The job cannot finish (nor fn/ctx change) before the claimed block is done.
  p.fn(p.ctx, static_cast<int64_t>(i));
  p.done.fetch_add(1, std::memory_order_release);
}

// Note [Affine chunks]: participant `me` claims the blocks of its own share
// from the front, then the rest of each other share from its back. A share word
// of another generation (a job that ended, or one not yet set up) is empty.
void run_affine(Pool& p, uint64_t gen, int me) {
  const int parts = p.parts.load(std::memory_order_relaxed);
  for (int k = 0; k < parts; ++k) {
    const int o = (me + k) % parts;
    std::atomic<uint64_t>& word = p.shares[o].word;
    uint64_t w = word.load(std::memory_order_acquire);
    for (;;) {
      const uint64_t lo = (w >> 16) & kChunkMask, hi = w & kChunkMask;
      if ((w >> 32) != gen || lo >= hi) break;
      const bool own = o == me;
      if (word.compare_exchange_weak(w, own ? w + (uint64_t{1} << 16) : w - 1, std::memory_order_acq_rel,
                                     std::memory_order_acquire)) {
        run_one(p, own ? lo : hi - 1);
        w = word.load(std::memory_order_acquire);
      }
    }
  }
}

// Claims and runs blocks of the current job until none is left. `me`: the
// caller is 0, worker i is i + 1 (its share of an affine job).
void run_blocks(Pool& p, int me) {
  t_in_job = true;
  uint64_t t = p.ticket.load(std::memory_order_acquire);
  if (t & kAffineBit) {
    // p.parts and the shares were written before the ticket (release).
    if (me < p.parts.load(std::memory_order_relaxed)) run_affine(p, (t >> 32) & kGenMask, me);
    t_in_job = false;
    return;
  }
  for (;;) {
    const uint64_t n = (t >> 16) & kChunkMask, next = t & kChunkMask;
    if (next >= n) break;
    // The job cannot finish (nor fn/ctx change) before the claimed block is done.
    if (p.ticket.compare_exchange_weak(t, t + 1, std::memory_order_acq_rel, std::memory_order_acquire)) {
      run_one(p, next);
      t = p.ticket.load(std::memory_order_acquire);
    }
  }
  t_in_job = false;
}

void worker_main(int index, uint32_t seen) {
  Pool& p = pool();
  for (;;) {
    if (p.wake.load(std::memory_order_acquire) == seen) {
      // Spin a while (yielding now and then), then sleep.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
      for (int i = 1; p.wake.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if (i % 128 == 0) {
          if (std::chrono::steady_clock::now() >= deadline) break;
          sched_yield();
        }
      }
      while (p.wake.load(std::memory_order_acquire) == seen) {
        p.sleepers.fetch_add(1, std::memory_order_seq_cst);
        if (p.wake.load(std::memory_order_seq_cst) == seen) futex_wait(&p.wake, seen);
        p.sleepers.fetch_sub(1, std::memory_order_seq_cst);
      }
    }
    seen = p.wake.load(std::memory_order_acquire);
    if (index < p.job_workers.load(std::memory_order_relaxed)) run_blocks(p, index + 1);
  }
}

void after_fork_in_child() {
  // The workers do not exist in a forked child: start afresh (jobs still run
  // on the caller until new workers are started).
  Pool& p = pool();
  p.workers.store(0);
  p.sleepers.store(0);
  p.job_workers.store(0);
  p.ticket.store(0);
  p.busy.store(false);
}

Pool& pool() {
  // Leaked on purpose: detached workers may still read it at exit.
  static Pool* p = [] {
    auto* q = new Pool;
    pthread_atfork(nullptr, nullptr, after_fork_in_child);
    return q;
  }();
  return *p;
}

}  // namespace

bool in_gemm_pool_job() { return t_in_job; }

bool gemm_pool_run(int64_t n, int threads, void (*fn)(void*, int64_t), void* ctx) {
  if (n <= 0 || static_cast<uint64_t>(n) > kChunkMask || threads < 2 || pool_disabled()) return false;
  Pool& p = pool();
  bool expected = false;
  if (!p.busy.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
  const int want = std::min(threads - 1, kMaxWorkers);
  const uint32_t before = p.wake.load(std::memory_order_relaxed);
  while (p.workers.load(std::memory_order_relaxed) < want) {
    const int index = p.workers.load(std::memory_order_relaxed);
    try {
      std::thread(worker_main, index, before).detach();
    } catch (...) {
      break;  // no more threads: the caller runs what no worker claims
    }
    p.workers.store(index + 1, std::memory_order_relaxed);
  }
  p.job_workers.store(want, std::memory_order_relaxed);
  p.fn = fn;
  p.ctx = ctx;
  p.done.store(0, std::memory_order_relaxed);
  const uint64_t gen = (((p.ticket.load(std::memory_order_relaxed) >> 32) & kGenMask) + 1) & kGenMask;
  uint64_t ticket = (gen << 32) | (static_cast<uint64_t>(n) << 16);
  if (settings::parallel_for_schedule() == settings::Schedule::Affine) {
    // Note [Affine chunks]: share k of `parts` is blocks [k n / parts, (k + 1) n / parts).
    // The dynamic counter starts exhausted (next = n): every claim goes through a share.
    const int parts = want + 1;
    p.parts.store(parts, std::memory_order_relaxed);
    for (int k = 0; k < parts; ++k) {
      const uint64_t lo = static_cast<uint64_t>(n) * k / parts,
                     hi = static_cast<uint64_t>(n) * (k + 1) / parts;
      p.shares[k].word.store((gen << 32) | (lo << 16) | hi, std::memory_order_relaxed);
    }
    ticket |= kAffineBit | static_cast<uint64_t>(n);
  }
  p.ticket.store(ticket, std::memory_order_release);
  p.wake.fetch_add(1, std::memory_order_seq_cst);
  if (p.sleepers.load(std::memory_order_seq_cst) > 0) futex_wake_all(&p.wake);
  run_blocks(p, 0);
  // The blocks still running run on other cores: wait for them awake.
  for (int i = 1; p.done.load(std::memory_order_acquire) < n; ++i) {
    cpu_relax();
    if (i % 128 == 0) sched_yield();
  }
  p.busy.store(false, std::memory_order_release);
  return true;
}

}  // namespace flambeau::cpu
