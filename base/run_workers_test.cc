#include "base/run_workers.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace fpconform {
namespace {

// Each worker index once, worker 0 on the calling thread and every other one on a thread of its
// own, all finished when RunWorkers returns.
TEST(RunWorkersTest, EachWorkerOnceWorkerZeroOnTheCaller) {
  for (int64_t workers : {1, 2, 3, 8}) {
    SCOPED_TRACE(workers);
    std::vector<int> calls(static_cast<size_t>(workers), 0);
    std::vector<std::thread::id> ids(static_cast<size_t>(workers));
    std::atomic<int> finished{0};
    RunWorkers(workers, [&](int64_t w) {
      ASSERT_GE(w, 0);
      ASSERT_LT(w, workers);
      ++calls[static_cast<size_t>(w)];
      ids[static_cast<size_t>(w)] = std::this_thread::get_id();
      ++finished;
    });
    EXPECT_EQ(finished.load(), workers);
    EXPECT_EQ(calls, std::vector<int>(static_cast<size_t>(workers), 1));
    EXPECT_EQ(ids[0], std::this_thread::get_id());
    EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(),
              static_cast<size_t>(workers));
  }
}

TEST(RunWorkersTest, FewerThanOneWorkerRunsOneOnTheCaller) {
  for (int64_t workers : {0, -3}) {
    std::vector<std::pair<int64_t, std::thread::id>> seen;
    RunWorkers(workers, [&](int64_t w) { seen.emplace_back(w, std::this_thread::get_id()); });
    ASSERT_EQ(seen.size(), 1u) << workers;
    EXPECT_EQ(seen[0].first, 0);
    EXPECT_EQ(seen[0].second, std::this_thread::get_id());
  }
}

// The ranges are n * w / t .. n * (w + 1) / t, t the worker count clamped to [1, max(1, n)]: in
// worker order they tile [0, n) with no gap or overlap, and none is empty unless n is 0.
TEST(RunWorkersTest, RangesTileTheWholeInterval) {
  for (int64_t n : {0, 1, 5, 64, 1000, 1001}) {
    for (int64_t workers : {-1, 1, 2, 3, 7, 16}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " workers " << workers);
      const int64_t t = std::clamp<int64_t>(workers, 1, std::max<int64_t>(1, n));
      EXPECT_EQ(RangeWorkers(n, workers), t);
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> ranges;
      std::vector<int> owner(static_cast<size_t>(n), 0);
      RunRanges(n, workers, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) ++owner[static_cast<size_t>(i)];
        std::lock_guard<std::mutex> lock(mu);
        ranges.emplace_back(begin, end);
      });
      ASSERT_EQ(ranges.size(), static_cast<size_t>(t));
      std::sort(ranges.begin(), ranges.end());
      int64_t at = 0;
      for (const auto& [begin, end] : ranges) {
        EXPECT_EQ(begin, at);
        if (n > 0) {
          EXPECT_LT(begin, end);
        } else {
          EXPECT_EQ(end, 0);
        }
        at = end;
      }
      EXPECT_EQ(at, n);
      EXPECT_EQ(owner, std::vector<int>(static_cast<size_t>(n), 1));
    }
  }
}

// With the worker index: worker w gets the w-th range, so per-worker state sized RangeWorkers
// lines up with the ranges in order.
TEST(RunWorkersTest, RangesWithTheWorkerIndexComeInWorkerOrder) {
  for (int64_t workers : {1, 3, 8}) {
    const int64_t n = 10;
    std::vector<std::pair<int64_t, int64_t>> by_worker(static_cast<size_t>(RangeWorkers(n, workers)));
    RunRanges(n, workers, [&](int64_t w, int64_t begin, int64_t end) {
      by_worker[static_cast<size_t>(w)] = {begin, end};
    });
    const int64_t t = RangeWorkers(n, workers);
    for (int64_t w = 0; w < t; ++w) {
      EXPECT_EQ(by_worker[static_cast<size_t>(w)], std::make_pair(n * w / t, n * (w + 1) / t)) << w;
    }
  }
}

// An exception from any worker reaches the caller after all have returned: the lowest worker's,
// whichever threw first.
TEST(RunWorkersTest, TheLowestWorkersExceptionReachesTheCaller) {
  for (int64_t thrower : {0, 1, 3}) {
    std::atomic<int> finished{0};
    try {
      RunWorkers(4, [&](int64_t w) {
        ++finished;
        if (w == thrower) throw std::runtime_error("worker " + std::to_string(w));
      });
      ADD_FAILURE() << "no exception from worker " << thrower;
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "worker " + std::to_string(thrower));
    }
    EXPECT_EQ(finished.load(), 4);
  }
  try {
    RunWorkers(4, [&](int64_t w) {
      if (w >= 2) throw std::runtime_error("worker " + std::to_string(w));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "worker 2");
  }
}

}  // namespace
}  // namespace fpconform
