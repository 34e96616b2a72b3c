// The engine's threads: the parallel path of computeTrace runs its loops on one process-wide
// team of persistent worker threads, the calling thread taking part.
//
// Why not OpenMP: a forward pass is three loops (projections, attention, out_proj), a few hundred
// microseconds each for the medium config. With libgomp's passive wait policy, which a shared
// machine needs (a spinning thread holds the core another process wants), every loop put the
// other thread to sleep and woke it again: medium's two-thread forward took 2.2 ms, no faster than
// one thread, against 1.1 ms when the threads spun. With the default policy a worker spins for
// 300 000 iterations after every loop, and in the desktop app that spinning competes with drawing.
// This team spins for a fixed, short time (ThreadTeamOptions::spin_microseconds) after a loop,
// long enough to bridge the gaps inside a forward pass and between passes run back to back, and
// then sleeps.
#pragma once
#include <functional>

namespace attnscope {

struct ThreadTeamOptions {
  int spin_microseconds = 200;  // a worker waits this long for the next loop before it sleeps
};

// How the items of a loop go to the threads.
enum class Schedule {
  Dynamic,  // each thread takes the next item when it is free: uneven items, a late thread
  Static,   // thread k of n takes items k, k + n, …: one item per thread, all at once
  Affine,   // thread k first takes its own items k, k + n, … in order, then what is left of the
            // others': the data an item left in a core's cache is read by the same core next,
            // and a late thread's items still get done
};

// Runs item(i) for every i in [0, count) on up to `threads` threads, the caller among them, and
// returns when every item has run. Items must not throw. A loop started while the team is busy
// (another thread's loop, or a loop inside an item) runs on the calling thread alone: the same
// items, so the same results. threads ≤ 1 runs the loop in order on the caller.
void parallelFor(int threads, int count, const std::function<void(int)>& item,
                 Schedule schedule = Schedule::Dynamic);

// parallelFor on Schedule::Affine with each item's thread named: item i is first offered to
// thread home(i) (0 … threads − 1, 0 the caller), items of one home in increasing i, and taken over
// by another thread when that one is held up. The team's threads keep their numbers from loop to
// loop, so an item whose home is the thread that wrote its inputs finds them in that core's cache.
void parallelForAtHome(int threads, int count, const std::function<int(int)>& home,
                       const std::function<void(int)>& item);

// Processors this process may run on (its affinity mask), at least 1.
int availableProcessors();

// Sets the team's options; takes effect from the next loop.
void setThreadTeamOptions(const ThreadTeamOptions& options);

}  // namespace attnscope
