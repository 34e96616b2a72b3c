#include "engine/thread_team.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace attnscope {

namespace {

void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

using Clock = std::chrono::steady_clock;

// Spins until done() or until `spin` has passed; true if done() became true.
template <class Done>
bool spinUntil(const Done& done, std::chrono::microseconds spin) {
  const Clock::time_point end = Clock::now() + spin;
  for (int i = 0;; ++i) {
    if (done()) return true;
    cpuRelax();
    if ((i & 63) == 63 && Clock::now() >= end) return done();
  }
}

// Where the participants of a loop run. A thread woken by another lands on the waker's CPU when the
// scheduler takes the idle one for busy: in a KVM guest an idle vCPU the host has descheduled
// reads as preempted, so the wake-up goes to the waker's CPU (wake-affine) and stays there, the
// caller and a worker taking turns on one core while the other idles. On the 2-core build machine
// half the processes ran medium's two-thread forward at one thread's speed for their whole life,
// and the paired GEMM limit with it (docs/engine-measurements.md). So each worker,
// before its share of a loop, looks at the CPUs the caller and the workers numbered below it run
// on, and if its own is one of them, moves to another CPU its affinity mask allows: it narrows the
// mask to the free ones, which moves it at once, and widens it again. Two system calls, only on a
// collision; a thread with nowhere else to go stays.
class Placement {
 public:
  static constexpr int kTracked = 64;  // participants whose CPUs are compared (more run unchecked)

  Placement() {
    for (std::atomic<int>& cpu : cpu_) cpu.store(-1, std::memory_order_relaxed);  // none known yet
  }

  // Participant k's CPU, as it is now (the caller writes its own before it publishes a loop).
  void record(int k) {
    if (k < kTracked) cpu_[k].store(currentCpu(), std::memory_order_relaxed);
  }

  // Worker k (≥ 1) moves off the CPUs of participants 0 … k − 1 if it shares one, then records its own.
  void settle(int k) {
#if defined(__linux__)
    const int cpu = currentCpu();
    cpu_set_t taken;
    CPU_ZERO(&taken);
    bool collides = false;
    for (int j = 0; j < std::min(k, kTracked); ++j) {
      const int other = cpu_[j].load(std::memory_order_relaxed);
      if (other < 0 || other >= CPU_SETSIZE) continue;
      CPU_SET(other, &taken);
      collides = collides || other == cpu;
    }
    if (collides) moveOff(taken);
#endif
    record(k);
  }

 private:
  static int currentCpu() {
#if defined(__linux__)
    return sched_getcpu();
#else
    return -1;
#endif
  }

#if defined(__linux__)
  // Moves the calling thread to a CPU of its affinity mask outside `taken`, if there is one.
  static void moveOff(const cpu_set_t& taken) {
    cpu_set_t allowed, elsewhere;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    CPU_ZERO(&elsewhere);
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &allowed) && !CPU_ISSET(c, &taken)) CPU_SET(c, &elsewhere);
    if (CPU_COUNT(&elsewhere) == 0) return;
    if (sched_setaffinity(0, sizeof elsewhere, &elsewhere) == 0) sched_setaffinity(0, sizeof allowed, &allowed);
  }
#endif

  std::atomic<int> cpu_[kTracked];  // each participant's CPU when it last looked, −1 unknown
};

// One loop: what its participants share while it runs. Written by the caller before it
// publishes the loop (release), read by the participants after they see it (acquire), and not
// written again until every participant has finished.
struct Loop {
  const std::function<void(int)>* item = nullptr;
  int count = 0;
  int threads = 1;  // participants, the caller included (workers 1 … threads − 1)
  Schedule schedule = Schedule::Dynamic;
  std::atomic<int> next{0};     // the next item (dynamic)
  std::atomic<int> pending{0};  // participating workers not yet finished
};

// Items of `loop` for participant k (0 is the caller).
void runShare(Loop& loop, int k) {
  if (loop.schedule == Schedule::Static) {
    for (int i = k; i < loop.count; i += loop.threads) (*loop.item)(i);
    return;
  }
  for (int i = loop.next.fetch_add(1, std::memory_order_relaxed); i < loop.count;
       i = loop.next.fetch_add(1, std::memory_order_relaxed))
    (*loop.item)(i);
}

class ThreadTeam {
 public:
  ~ThreadTeam() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
      publish(0);
    }
    wake_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  // False if the team is busy (the caller then runs the loop alone).
  bool run(int threads, int count, const std::function<void(int)>& item, Schedule schedule) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    grow(threads - 1);
    loop_.item = &item;
    loop_.count = count;
    loop_.threads = threads;
    loop_.schedule = schedule;
    loop_.next.store(0, std::memory_order_relaxed);
    loop_.pending.store(threads - 1, std::memory_order_relaxed);
    placement_.record(0);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      publish(threads);
    }
    if (sleeping_.load(std::memory_order_relaxed) > 0) wake_.notify_all();
    runShare(loop_, 0);
    const auto all_done = [this] { return loop_.pending.load(std::memory_order_acquire) == 0; };
    if (!spinUntil(all_done, spin())) {
      std::unique_lock<std::mutex> lock(mutex_);
      done_.wait(lock, all_done);
    }
    return true;
  }

  void setOptions(const ThreadTeamOptions& o) {
    spin_us_.store(std::max(o.spin_microseconds, 0), std::memory_order_relaxed);
  }

  std::chrono::microseconds spin() const { return std::chrono::microseconds(spin_us_.load(std::memory_order_relaxed)); }

 private:
  // A new loop for `threads` participants: the generation moves on, and the participant count
  // travels in the same word, so a worker that was left out of the last loop never reads the
  // count of the next one.
  void publish(int threads) {
    const std::uint64_t generation = (state_.load(std::memory_order_relaxed) >> 16) + 1;
    state_.store(generation << 16 | static_cast<std::uint64_t>(threads), std::memory_order_release);
  }

  void grow(int workers) {
    while (static_cast<int>(workers_.size()) < workers) {
      const int k = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, k, seen = state_.load()] { work(k, seen); });
    }
  }

  void work(int k, std::uint64_t seen) {
    for (;;) {
      const auto moved = [&] { return state_.load(std::memory_order_acquire) != seen; };
      if (!spinUntil(moved, spin())) {
        std::unique_lock<std::mutex> lock(mutex_);
        sleeping_.fetch_add(1, std::memory_order_relaxed);
        wake_.wait(lock, moved);
        sleeping_.fetch_sub(1, std::memory_order_relaxed);
      }
      seen = state_.load(std::memory_order_acquire);
      if (stop_) return;
      if (k >= static_cast<int>(seen & 0xffff)) continue;  // not needed in this loop
      placement_.settle(k);
      runShare(loop_, k);
      if (loop_.pending.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        std::lock_guard<std::mutex> lock(mutex_);  // the caller may be between its check and wait
        done_.notify_one();
      }
    }
  }

  std::mutex busy_;   // held by the loop that runs on the team
  std::mutex mutex_;  // guards sleeping on wake_ and done_
  std::condition_variable wake_, done_;
  std::atomic<std::uint64_t> state_{0};  // generation << 16 | participants (publish)
  std::atomic<int> sleeping_{0};
  std::atomic<int> spin_us_{ThreadTeamOptions{}.spin_microseconds};
  bool stop_ = false;  // written under mutex_ before the last publish
  Loop loop_;
  Placement placement_;
  std::vector<std::thread> workers_;
};

ThreadTeam& team() {
  static ThreadTeam instance;
  return instance;
}

}  // namespace

void parallelFor(int threads, int count, const std::function<void(int)>& item, Schedule schedule) {
  threads = std::min(threads, count);
  if (threads > 1 && team().run(threads, count, item, schedule)) return;
  for (int i = 0; i < count; ++i) item(i);
}

void runGraph(int threads, const TaskGraph& graph) {
  const int count = graph.count;
  if (count <= 0) return;
  threads = std::max(1, std::min(threads, count));
  if (threads == 1) {
    for (int i = 0; i < count; ++i) graph.run(i);
    return;
  }
  std::vector<std::vector<int>> lists(threads);  // each home's items, in order
  for (int i = 0; i < count; ++i) lists[graph.home(i) % threads].push_back(i);
  const std::unique_ptr<std::atomic<bool>[]> taken(new std::atomic<bool>[static_cast<std::size_t>(count)]);
  for (int i = 0; i < count; ++i) taken[i].store(false, std::memory_order_relaxed);
  std::atomic<int> left{count};  // items nobody has taken yet
  // One share per participant (Static: participant k runs share k). If the team is busy, the
  // caller runs the shares one after the other: share 0 then takes every item, each ready in turn.
  parallelFor(
      threads, threads,
      [&](int k) {
        std::vector<std::size_t> first(threads, 0);  // per list: every item before it is taken
        // The first ready item of list l that nobody has taken, or −1.
        const auto firstReady = [&](int l) {
          const std::vector<int>& list = lists[l];
          while (first[l] < list.size() && taken[list[first[l]]].load(std::memory_order_relaxed)) ++first[l];
          for (std::size_t x = first[l]; x < list.size(); ++x)
            if (!taken[list[x]].load(std::memory_order_relaxed) && graph.ready(list[x])) return list[x];
          return -1;
        };
        bool waiting = false;  // since `idle`, nothing this thread could take was ready
        Clock::time_point idle;
        while (left.load(std::memory_order_acquire) > 0) {
          int pick = -1, pick_stage = 0;
          for (int j = 0; j < threads; ++j) {  // its own list first: another wins only by an earlier stage
            const int i = firstReady((k + j) % threads);
            if (i < 0) continue;
            const int stage = graph.stage(i);
            if (pick < 0 || stage < pick_stage) pick = i, pick_stage = stage;
          }
          if (pick < 0 || taken[pick].exchange(true, std::memory_order_acq_rel)) {
            // Waiting for another thread's item: spin as the team does between loops, then sleep in
            // short naps, so that a waiting thread never holds a core the one it waits for needs.
            if (!waiting) {
              waiting = true;
              idle = Clock::now();
            } else if (Clock::now() - idle > team().spin()) {
              std::this_thread::sleep_for(std::chrono::microseconds(20));
            }
            cpuRelax();
            continue;
          }
          waiting = false;
          left.fetch_sub(1, std::memory_order_acq_rel);
          graph.run(pick);
        }
      },
      Schedule::Static);
}

int availableProcessors() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(CPU_COUNT(&set), 1);
  return std::max(static_cast<int>(std::thread::hardware_concurrency()), 1);
}

void setThreadTeamOptions(const ThreadTeamOptions& options) { team().setOptions(options); }

void forEachItem(int threads, int count, const std::function<void(int)>& item) {
  std::exception_ptr error;
  int failed = count;  // the lowest item that threw: the exception a loop in order would have raised
  std::mutex mutex;
  parallelFor(threads, count, [&](int k) {
    try {
      item(k);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (k < failed) failed = k, error = std::current_exception();
    }
  });
  if (error) std::rethrow_exception(error);
}

}  // namespace attnscope
