// The fan-out of the project's multi-threaded loops (the oracles' batch and matmul paths, the
// model engines, the audit's judge, the sweeps' ParallelForEach): worker 0 runs on the calling
// thread, every other worker on a thread of its own, and the call returns once all have
// returned. What each worker computes is the caller's: the loops that use this write only what
// their worker owns (an element range, a per-worker tally merged afterwards in worker order), so
// their results do not depend on the thread count or the timing.
//
// Example:
//   std::vector<Tally> tallies(t);
//   RunWorkers(t, [&](int64_t w) { tallies[w] = CountRange(n * w / t, n * (w + 1) / t); });
//   RunRanges(n, t, [&](int64_t begin, int64_t end) { Fill(out, begin, end); });
//   std::vector<Tally> per(RangeWorkers(n, t));
//   RunRanges(n, t, [&](int64_t w, int64_t begin, int64_t end) { per[w] = CountRange(begin, end); });
//
// Worker 0 is the calling thread, so it sees the caller's thread-local state; the others start
// with their own.
#ifndef FPCONFORM_BASE_RUN_WORKERS_H_
#define FPCONFORM_BASE_RUN_WORKERS_H_

#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <type_traits>
#include <vector>

namespace fpconform {

// Calls work(w) once for each w in [0, workers): w = 0 on the calling thread, each other w on a
// thread started for it; returns when every call has returned. workers < 1 counts as 1 (no thread
// is started). The caller chooses the count (it clamps it to the work it has).
// An exception thrown by any work(w) reaches the caller once every call has returned: the one of
// the lowest such w, whatever the timing (the others are dropped). An exception from starting a
// thread reaches the caller after the threads already started have returned.
template <class Work>
void RunWorkers(int64_t workers, Work&& work) {
  const int64_t t = std::max<int64_t>(1, workers);
  std::vector<std::exception_ptr> errors(static_cast<size_t>(t));
  const auto run = [&work, &errors](int64_t w) {
    try {
      work(w);
    } catch (...) {
      errors[static_cast<size_t>(w)] = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<size_t>(t - 1));
    for (int64_t w = 1; w < t; ++w) pool.emplace_back(run, w);
    run(0);
  }  // Joins.
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// The number of ranges RunRanges(n, workers, ...) cuts [0, n) into: clamp(workers, 1, max(1, n)).
inline int64_t RangeWorkers(int64_t n, int64_t workers) {
  return std::clamp<int64_t>(workers, 1, std::max<int64_t>(1, n));
}

// RunWorkers over [0, n) cut into t = RangeWorkers(n, workers) contiguous ranges: worker w calls
// body(n * w / t, n * (w + 1) / t), or body(w, n * w / t, n * (w + 1) / t) when body takes the
// worker index too (for per-worker state sized RangeWorkers(n, workers)). The ranges cover [0, n)
// in order, none empty unless n is 0 (then one worker calls body with the range (0, 0)).
template <class Body>
void RunRanges(int64_t n, int64_t workers, Body&& body) {
  const int64_t t = RangeWorkers(n, workers);
  RunWorkers(t, [&body, n, t](int64_t w) {
    if constexpr (std::is_invocable_v<Body&, int64_t, int64_t, int64_t>) {
      body(w, n * w / t, n * (w + 1) / t);
    } else {
      body(n * w / t, n * (w + 1) / t);
    }
  });
}

}  // namespace fpconform

#endif  // FPCONFORM_BASE_RUN_WORKERS_H_
