// Execution paths and trace requests: the parallel path ({true, 1|2|4} threads) gives the serial
// path's masks exactly and its numbers within 1e-6; a trace of only batch 1 keeps only batch 1's
// heads and the same outputs; the wrapper's heads are independent modules; dropout differs between
// the copies of a batch (docs/DESIGN.md §2.1, §2.3).
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/attention.h"
#include "engine/errors.h"
#include "engine/stages.h"
#include "engine/thread_team.h"
#include "reference.h"
#include "test_support.h"

namespace attnscope {
namespace {

double maxDiff(const Matrix& a, const Matrix& b) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) return INFINITY;
  double d = 0;
  for (int i = 0; i < a.rows(); ++i)
    for (int j = 0; j < a.cols(); ++j) {
      if (std::isinf(a(i, j)) || std::isinf(b(i, j))) {  // −∞ of the mask must match exactly
        if (a(i, j) != b(i, j)) return INFINITY;
        continue;
      }
      d = std::max(d, double(std::fabs(a(i, j) - b(i, j))));
    }
  return d;
}

// Worst difference between two traces' numbers; masks must be identical (else ∞).
double traceDiff(const Trace& a, const Trace& b) {
  if (a.batches.size() != b.batches.size()) return INFINITY;
  double d = 0;
  for (std::size_t bi = 0; bi < a.batches.size(); ++bi) {
    const BatchTrace &x = a.batches[bi], &y = b.batches[bi];
    d = std::max({d, maxDiff(x.context, y.context), maxDiff(x.output, y.output)});
    if (x.heads.size() != y.heads.size()) return INFINITY;
    for (std::size_t h = 0; h < x.heads.size(); ++h) {
      const HeadTrace &p = x.heads[h], &q = y.heads[h];
      for (const StageInfo& stage : stageTable()) {  // every stage, stored or derived
        const Matrix u = stageValues(a, p, stage.stage), v = stageValues(b, q, stage.stage);
        if (stage.flags && u != v) return INFINITY;
        d = std::max(d, maxDiff(u, v));
      }
    }
  }
  return d;
}

struct Case {
  ModelConfig m;
  int T, d_in;
};

// Configurations with several row blocks (T > 32) and dropout, where threads split the work.
std::vector<Case> parallelCases() {
  std::vector<Case> out;
  ModelConfig mh = defaultConfig(Variant::MultiHead);
  mh.d_out = 8, mh.num_heads = 4, mh.batch_size = 3, mh.dropout = 0.3, mh.qkv_bias = true;
  out.push_back({mh, 70, 8});
  ModelConfig wr = defaultConfig(Variant::MultiHeadWrapper);
  wr.d_out = 3, wr.num_heads = 3, wr.batch_size = 2, wr.dropout = 0.5;
  out.push_back({wr, 65, 5});
  ModelConfig ca = defaultConfig(Variant::Causal);
  ca.d_out = 4, ca.batch_size = 3, ca.dropout = 0.9, ca.causal = false;
  out.push_back({ca, 40, 6});
  ModelConfig v1 = defaultConfig(Variant::SelfAttentionV1);
  v1.d_out = 3, v1.batch_size = 2;
  out.push_back({v1, 33, 4});
  ModelConfig sim = defaultConfig(Variant::Simple);
  sim.batch_size = 2;
  out.push_back({sim, 40, 3});
  return out;
}

TEST(ExecutionPaths, ParallelMatchesSerial) {
  double worst = 0;
  for (const Case& c : parallelCases()) {
    SCOPED_TRACE(variantId(c.m.variant));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 7);
    const Trace serial = computeTrace(x, c.m, ExecutionOptions{false, 0});
    for (int threads : {1, 2, 4}) {
      const Trace par = computeTrace(x, c.m, ExecutionOptions{true, threads, 0});  // 0: parallel however small
      const double d = traceDiff(serial, par);
      EXPECT_LE(d, 1e-6) << threads << " threads (∞ = a mask differs)";
      worst = std::max(worst, d);
    }
  }
  std::printf("worst |serial − parallel| over 1, 2, 4 threads: %.3g\n", worst);
}

TEST(TraceRequests, OnlyBatchOneKeepsOnlyItsHeads) {
  for (const Case& c : parallelCases()) {
    SCOPED_TRACE(variantId(c.m.variant));
    const Matrix x = test::randomMatrix(c.T, c.d_in, 11);
    for (bool parallel : {false, true}) {
      const ExecutionOptions exec{parallel, 2, 0};
      const Trace full = computeTrace(x, c.m, exec);
      const Trace one = computeTrace(x, c.m, exec, TraceRequest::only({1}));
      const Trace none = computeTrace(x, c.m, exec, TraceRequest::only({}));
      ASSERT_EQ(one.batches.size(), full.batches.size());
      for (std::size_t b = 0; b < full.batches.size(); ++b) {
        const bool kept = b == 1;
        EXPECT_EQ(one.batches[b].heads.size(), kept ? full.batches[b].heads.size() : 0u) << "batch " << b;
        EXPECT_TRUE(none.batches[b].heads.empty()) << "batch " << b;
        EXPECT_LE(maxDiff(one.batches[b].output, full.batches[b].output), 1e-6) << "batch " << b;
        EXPECT_LE(maxDiff(none.batches[b].output, full.batches[b].output), 1e-6) << "batch " << b;
        EXPECT_LE(maxDiff(one.batches[b].context, full.batches[b].context), 1e-6);
      }
      // Batch 1's heads are the full trace's batch 1 heads (dropout masks included).
      Trace a = full, b = one;
      a.batches = {full.batches[1]};
      b.batches = {one.batches[1]};
      EXPECT_LE(traceDiff(a, b), 1e-6) << "(∞ = a mask differs)";
    }
  }
}

TEST(TraceRequests, UnknownBatchIsAnInputError) {
  ModelConfig m = defaultConfig(Variant::MultiHead);  // batch_size 2
  EXPECT_THROW(computeTrace(test::bookInputs(), m, {}, TraceRequest::only({2})), InputError);
  EXPECT_THROW(computeTrace(test::bookInputs(), m, {}, TraceRequest::only({-1})), InputError);
}

TEST(Wrapper, HeadsHaveIndependentParameters) {
  ModelConfig m = defaultConfig(Variant::MultiHeadWrapper);
  m.num_heads = 3;
  m.d_out = 2;
  m.qkv_bias = true;
  const Trace t = computeTrace(test::bookInputs(), m);
  ASSERT_EQ(t.parameters->query.size(), 3u);
  ASSERT_EQ(t.parameters->key.size(), 3u);
  ASSERT_EQ(t.parameters->value.size(), 3u);
  // Each head is its own CausalAttention: head h's layers are the draws after h heads' layers.
  ref::Stream s(m.seed);
  for (int h = 0; h < 3; ++h) {
    const Linear* ours[3] = {&t.parameters->query[h], &t.parameters->key[h], &t.parameters->value[h]};
    for (const Linear* l : ours) {
      const ref::Layer r = ref::linear(s, 3, 2, true);
      for (int o = 0; o < 2; ++o) {
        for (int i = 0; i < 3; ++i) EXPECT_EQ(l->weight(o, i), r.w(o, i)) << "head " << h;
        EXPECT_EQ(l->bias(o), r.bias[o]) << "head " << h;
      }
    }
  }
  for (int a = 0; a < 3; ++a)
    for (int b = a + 1; b < 3; ++b) {
      EXPECT_NE(t.parameters->query[a].weight, t.parameters->query[b].weight);
      EXPECT_GT(maxDiff(t.batches[0].heads[a].context, t.batches[0].heads[b].context), 1e-3)
          << "heads " << a << " and " << b << " compute the same thing";
    }
}

TEST(Dropout, DiffersBetweenBatchCopies) {
  // Identical copies of the input, p = 0.5 on 2 × 2 × 6 × 6 draws: torch's stream gives each copy
  // its own mask (checked against the reference draws, which must differ here).
  for (Variant v : {Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead}) {
    SCOPED_TRACE(variantId(v));
    ModelConfig m = defaultConfig(v);
    m.dropout = 0.5;
    m.batch_size = 2;
    const ref::Module r = ref::build(m, 6, 3);
    ASSERT_FALSE(r.keep.empty());
    const Trace t = computeTrace(test::bookInputs(), m);
    for (int h = 0; h < t.heads; ++h) {
      ASSERT_NE(r.keep[0][h], r.keep[1][h]) << "the reference stream gives equal masks";
      EXPECT_NE(t.batches[0].heads[h].dropout_mask, t.batches[1].heads[h].dropout_mask)
          << "head " << h << ": both batch copies got the same dropout mask";
      EXPECT_NE(t.batches[0].output, t.batches[1].output);
    }
  }
}

TEST(Dropout, NoneWithoutTrainingOrRateOrVariant) {
  // p = 0, eval mode, or a variant without dropout: every dropout_mask entry is 1 and
  // dropped_weights is weights.
  std::vector<ModelConfig> configs;
  for (Variant v : {Variant::Causal, Variant::MultiHeadWrapper, Variant::MultiHead}) {
    ModelConfig eval = defaultConfig(v);
    eval.dropout = 0.5;
    eval.training = false;
    configs.push_back(eval);
    ModelConfig zero = defaultConfig(v);
    zero.dropout = 0.0;
    configs.push_back(zero);
  }
  configs.push_back(defaultConfig(Variant::Simple));
  configs.push_back(defaultConfig(Variant::SelfAttentionV1));
  configs.push_back(defaultConfig(Variant::SelfAttentionV2));
  for (const ModelConfig& m : configs) {
    SCOPED_TRACE(variantId(m.variant));
    const Trace t = computeTrace(test::bookInputs(), m);
    EXPECT_FALSE(t.dropout_active);
    for (const BatchTrace& bt : t.batches)
      for (const HeadTrace& h : bt.heads) {
        EXPECT_EQ(h.dropout_mask.size(), 0) << "a keep mask stored without dropout";
        EXPECT_TRUE((stageValues(t, h, Stage::DropoutMask).array() == 1).all());
        EXPECT_TRUE(test::bitwiseEqual(stageValues(t, h, Stage::DroppedWeights), h.weights));
      }
  }
}

// The thread team (engine/thread_team.h) under the parallel path: every item runs exactly once,
// whatever the schedule, thread count, and whether the workers were spinning or asleep.
std::vector<int> runCounts(int threads, int count, Schedule schedule) {
  std::vector<std::atomic<int>> runs(static_cast<std::size_t>(count));
  parallelFor(
      threads, count, [&](int i) { runs[static_cast<std::size_t>(i)].fetch_add(1); }, schedule);
  std::vector<int> out;
  for (const std::atomic<int>& r : runs) out.push_back(r.load());
  return out;
}

TEST(ThreadTeam, EveryItemRunsOnce) {
  for (Schedule schedule : {Schedule::Dynamic, Schedule::Static})
    for (int threads : {1, 2, 3, 8})
      for (int count : {0, 1, 2, 7, 1000}) {
        const std::vector<int> runs = runCounts(threads, count, schedule);
        EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), count)
            << threads << " threads, " << count << " items, schedule " << static_cast<int>(schedule);
      }
}

TEST(ThreadTeam, StaticGivesEachThreadItsItem) {
  // Two items on two threads run at once, one per thread: each waits for the other to start.
  std::atomic<int> started{0};
  std::vector<std::thread::id> ids(2);
  parallelFor(
      2, 2,
      [&](int i) {
        ids[static_cast<std::size_t>(i)] = std::this_thread::get_id();
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 2 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
      },
      Schedule::Static);
  EXPECT_EQ(started.load(), 2);
  EXPECT_NE(ids[0], ids[1]) << "both items ran on one thread";
  EXPECT_EQ(ids[0], std::this_thread::get_id()) << "item 0 is the caller's";
}

// runGraph on random graphs: each item depends on up to three earlier ones, homes are uneven (all
// on one thread, or past the thread count), stages rise along the list. Every item runs once, and
// never before an item it depends on has finished.
TEST(ThreadTeam, GraphRunsEveryItemOnceAfterItsInputs) {
  std::mt19937 g(17);
  for (int threads : {1, 2, 3, 8})
    for (int count : {0, 1, 7, 300})
      for (int spread : {1, 3, 9}) {
        std::vector<std::vector<int>> inputs(static_cast<std::size_t>(count));
        for (int i = 1; i < count; ++i)
          for (int d = static_cast<int>(g() % 4); d > 0; --d) inputs[i].push_back(static_cast<int>(g() % i));
        std::vector<std::atomic<int>> runs(static_cast<std::size_t>(count));
        std::vector<std::atomic<bool>> done(static_cast<std::size_t>(count));
        std::atomic<int> early{0};
        TaskGraph graph;
        graph.count = count;
        graph.home = [&](int i) { return i % spread; };
        graph.stage = [&](int i) { return 3 * i / std::max(count, 1); };
        graph.ready = [&](int i) {
          for (int d : inputs[i])
            if (!done[d].load(std::memory_order_acquire)) return false;
          return true;
        };
        graph.run = [&](int i) {
          for (int d : inputs[i])
            if (!done[d].load(std::memory_order_acquire)) early.fetch_add(1);
          volatile int spin = 0;
          for (int k = 0; k < i % 5 * 100; ++k) spin = spin + 1;
          runs[i].fetch_add(1);
          done[i].store(true, std::memory_order_release);
        };
        runGraph(threads, graph);
        EXPECT_EQ(early.load(), 0) << threads << " threads, " << count << " items, spread " << spread;
        for (int i = 0; i < count; ++i)
          ASSERT_EQ(runs[i].load(), 1) << threads << " threads, " << count << " items, spread " << spread << ", item "
                                       << i;
      }
}

TEST(ThreadTeam, GraphTakesAnotherThreadsEarlierStageBeforeItsOwnLaterOne) {
  // Items 0 and 2 are the caller's (home 0), 1 and 3 the worker's; 0, 1, 2 are stage 0, 3 stage 1.
  // Item 0 holds the caller until every other item has run; item 1 waits until item 0 has started
  // (so that the worker cannot take item 0 first). The worker then has its own item 3 ready and the
  // caller's 2, of an earlier stage: it runs 1, 2, 3 in that order, and the caller 0.
  std::vector<std::thread::id> ids(4);
  std::vector<int> order;
  std::mutex order_mutex;
  std::atomic<int> finished{0};
  std::atomic<bool> first_started{false};
  TaskGraph graph;
  graph.count = 4;
  graph.home = [](int i) { return i % 2; };
  graph.stage = [](int i) { return i == 3 ? 1 : 0; };
  graph.ready = [](int) { return true; };
  graph.run = [&](int i) {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    if (i == 0) {
      first_started = true;
      while (finished.load() < 3 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    }
    if (i == 1)
      while (!first_started.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    ids[static_cast<std::size_t>(i)] = std::this_thread::get_id();
    const std::lock_guard<std::mutex> lock(order_mutex);
    order.push_back(i);
    finished.fetch_add(1);
  };
  runGraph(2, graph);
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 0}));
  EXPECT_EQ(ids[0], std::this_thread::get_id()) << "item 0 is the caller's";
  for (int i = 1; i < 4; ++i) EXPECT_NE(ids[static_cast<std::size_t>(i)], ids[0]) << "item " << i;
}

TEST(ThreadTeam, GraphWaitsForAnItemThatIsNotReady) {
  // Item 1 (the worker's) is ready only once item 0 (the caller's, slow) has finished: the worker
  // waits for it rather than running it early, whatever else it could do.
  for (int round = 0; round < 20; ++round) {
    std::atomic<bool> zero_done{false}, one_early{false};
    TaskGraph graph;
    graph.count = 3;
    graph.home = [](int i) { return i == 1 ? 1 : 0; };
    graph.stage = [](int i) { return i; };
    graph.ready = [&](int i) { return i != 1 || zero_done.load(std::memory_order_acquire); };
    graph.run = [&](int i) {
      if (i == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(round * 50));
        zero_done.store(true, std::memory_order_release);
      }
      if (i == 1 && !zero_done.load()) one_early = true;
    };
    runGraph(2, graph);
    ASSERT_FALSE(one_early.load()) << "round " << round;
  }
}

TEST(ThreadTeam, SleepingWorkersWakeForTheNextLoop) {
  // No spinning: every loop after a pause finds the worker asleep and must wake it.
  setThreadTeamOptions(ThreadTeamOptions{0});
  for (int round = 0; round < 50; ++round) {
    std::this_thread::sleep_for(std::chrono::microseconds(round % 5 * 200));
    const Schedule schedule = round % 2 == 0 ? Schedule::Static : Schedule::Dynamic;
    const std::vector<int> runs = runCounts(2, 16, schedule);
    ASSERT_EQ(std::count(runs.begin(), runs.end(), 1), 16) << "round " << round;
  }
  setThreadTeamOptions(ThreadTeamOptions{});
}

#if defined(__linux__)
// A worker that shares the caller's CPU moves off it before its share of the next loop (a KVM
// guest's scheduler wakes a worker on its waker's CPU and left it there: two threads on one core).
// The caller is pinned to one CPU, and the worker put on that CPU from its own item (its mask
// narrowed to that CPU, which moves it there, then widened again); the next loop's item of the
// worker must run elsewhere. (A worker started while its creator was pinned inherits the pin, and
// stays: the team then has nowhere else to go.)
TEST(ThreadTeam, AWorkerOnTheCallersCpuMovesOff) {
  cpu_set_t mine;
  ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
  if (CPU_COUNT(&mine) < 2) GTEST_SKIP() << "one CPU: nowhere to move";
  parallelFor(2, 2, [](int) {});  // the worker starts before the pin, with the caller's whole mask
  int home = 0;
  while (!CPU_ISSET(home, &mine)) ++home;
  cpu_set_t only_home;
  CPU_ZERO(&only_home);
  CPU_SET(home, &only_home);
  ASSERT_EQ(sched_setaffinity(0, sizeof only_home, &only_home), 0);
  // The worker's mask is whole again once it has moved, so the kernel may put it back before its
  // item reads its CPU: a round in a while, on a loaded machine (1 of 20 once, in a TSan run beside
  // other tests). All but two of the rounds must find it elsewhere.
  std::string stayed;
  int stays = 0;
  for (int round = 0; round < 20; ++round) {
    std::atomic<int> moved_to{-1}, worker_cpu{-1};
    parallelFor(
        2, 2,
        [&](int i) {
          if (i != 1) return;
          cpu_set_t own;
          sched_getaffinity(0, sizeof own, &own);
          sched_setaffinity(0, sizeof only_home, &only_home);
          moved_to = sched_getcpu();
          sched_setaffinity(0, sizeof own, &own);
        },
        Schedule::Static);
    ASSERT_EQ(moved_to.load(), home) << "round " << round << ": the test could not put the worker there";
    parallelFor(
        2, 2,
        [&](int i) {
          if (i == 1) worker_cpu = sched_getcpu();
        },
        Schedule::Static);
    if (worker_cpu.load() == home) ++stays, stayed += " " + std::to_string(round);
  }
  sched_setaffinity(0, sizeof mine, &mine);
  EXPECT_LE(stays, 2) << "the worker stayed on the caller's CPU in rounds" << stayed;
}
#endif

TEST(ThreadTeam, NestedAndConcurrentLoopsRunEveryItem) {
  // A loop inside an item, and loops from several threads at once, find the team busy and run on
  // their own thread: still every item once.
  std::atomic<int> inner{0};
  parallelFor(2, 4, [&](int) { parallelFor(2, 10, [&](int) { inner.fetch_add(1); }); });
  EXPECT_EQ(inner.load(), 40);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int r = 0; r < 100; ++r) parallelFor(2, 10, [&](int) { total.fetch_add(1); });
    });
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 100 * 10);
}

// An attention task must wait for every projection block it reads: all T keys for traced heads and
// without a causal mask, the causal triangle's for the fused kernel. One element (its projection
// blocks shared out over three threads) and two inputs in turn, so that a block read before it is
// written still holds the other input's keys: every parallel pass must equal the serial one. Wide
// inputs and narrow heads make a projection block take far longer than a task's walk over the keys.
TEST(Execution, AttentionWaitsForTheProjectionsItReads) {
  const Matrix xa = test::randomMatrix(1024, 1024, 21), xb = test::randomMatrix(1024, 1024, 22);
  for (bool causal : {false, true})
    for (bool traced : {false, true}) {
      ModelConfig m = defaultConfig(Variant::MultiHead);
      m.d_out = 64;
      m.num_heads = 2;
      m.batch_size = 1;
      m.causal = causal;
      const TraceRequest request = traced ? TraceRequest::only({0}) : TraceRequest::only({});
      ExecutionOptions serial, parallel;
      parallel.parallel = true;
      parallel.threads = 3;
      const Trace want_a = computeTrace(xa, m, serial, request), want_b = computeTrace(xb, m, serial, request);
      for (int round = 0; round < 6; ++round) {
        const Trace got_a = computeTrace(xa, m, parallel, request), got_b = computeTrace(xb, m, parallel, request);
        ASSERT_TRUE(test::bitwiseEqual(got_a.batches[0].output, want_a.batches[0].output))
            << (causal ? "causal" : "full") << (traced ? " traced" : " fused") << ", round " << round;
        ASSERT_TRUE(test::bitwiseEqual(got_b.batches[0].output, want_b.batches[0].output))
            << (causal ? "causal" : "full") << (traced ? " traced" : " fused") << ", round " << round;
      }
    }
}

// A pass cancelled before it starts, or by another thread while it runs, throws Cancelled (or
// finishes, when the flag came too late) and never waits for an item that was skipped.
TEST(Execution, CancelledPassesThrowAndNeverHang) {
  ModelConfig m = defaultConfig(Variant::MultiHead);
  m.d_out = 64;
  m.num_heads = 4;
  m.dropout = 0.1;
  const Matrix x = test::randomMatrix(256, 32, 5);
  for (int threads : {1, 2, 3}) {
    ExecutionOptions e;
    e.parallel = true;
    e.threads = threads;
    std::atomic<bool> cancel{true};
    e.cancel = &cancel;
    EXPECT_THROW(computeTrace(x, m, e, TraceRequest::only({0})), Cancelled) << threads << " threads";
    int thrown = 0;
    for (int delay_us : {0, 20, 50, 100, 200, 400}) {
      cancel = false;
      std::thread canceller([&] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        cancel = true;
      });
      try {
        computeTrace(x, m, e, TraceRequest::only({0}));
      } catch (const Cancelled&) {
        ++thrown;
      }
      canceller.join();
    }
    std::printf("%d threads: %d of 6 passes cancelled midway\n", threads, thrown);
  }
}

TEST(ThreadTeam, AvailableProcessorsIsAtLeastOne) {
  EXPECT_GE(availableProcessors(), 1);
  EXPECT_EQ(resolveThreads(0), availableProcessors());
  EXPECT_EQ(resolveThreads(3), 3);
}

}  // namespace
}  // namespace attnscope
