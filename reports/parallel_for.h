// The worker loop of the sweeps and the audits: fn(i) for every index of [0, n) on up to
// `threads` threads (the calling thread one of them), each thread taking the next index not yet
// taken, so that uneven items (a slow model, a long row) do not leave a thread idle. fn must write
// only what index i owns; then the results do not depend on the thread count or the timing.
//
// Example:
//   std::vector<double> out(rows);
//   ParallelForEach(rows, threads, [&](int64_t r) { out[r] = RowError(r); });
#ifndef FPCONFORM_REPORTS_PARALLEL_FOR_H_
#define FPCONFORM_REPORTS_PARALLEL_FOR_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "base/run_workers.h"

namespace fpconform::reports {

template <class Fn>
void ParallelForEach(int64_t n, int threads, Fn&& fn) {
  std::atomic<int64_t> next{0};
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) fn(i);
  };
  RunWorkers(std::clamp<int64_t>(threads, 1, std::max<int64_t>(1, n)), [&](int64_t) { work(); });
}

}  // namespace fpconform::reports

#endif  // FPCONFORM_REPORTS_PARALLEL_FOR_H_
