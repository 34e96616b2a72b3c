// The engine's threads: the parallel path of computeTrace runs its pass (runGraph) on one
// process-wide team of persistent worker threads, the calling thread taking part.
//
// Why not OpenMP (docs/DESIGN.md §2.3 "Why not OpenMP"): OpenMP keeps up with this team only
// while its threads spin, and libgomp takes its wait policy from the environment alone, read when
// it is loaded, before any code of ours runs. Passive, which a shared machine needs (a spinning
// thread holds the core another process wants), puts the other thread to sleep after every region
// and wakes it again, and medium's two-thread forward falls far behind; libgomp's default spins
// for milliseconds after every region, which in the desktop app competes with drawing
// (docs/engine-measurements.md). This team spins for a fixed, short time
// (ThreadTeamOptions::spin_microseconds) after a loop, long enough to bridge the gaps inside a
// forward pass and between passes run back to back, and then sleeps.
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
};

// Runs item(i) for every i in [0, count) on up to `threads` threads, the caller among them, and
// returns when every item has run. Items must not throw. A loop started while the team is busy
// (another thread's loop, or a loop inside an item) runs on the calling thread alone: the same
// items, so the same results. threads ≤ 1 runs the loop in order on the caller.
void parallelFor(int threads, int count, const std::function<void(int)>& item, Schedule schedule = Schedule::Dynamic);

// parallelFor whose items may throw (Eigen's products allocate their workspace: bad_alloc): the
// team's items must not, so the exception of the lowest item that threw (the one a loop in order
// would raise) is kept and rethrown once the loop is done.
void forEachItem(int threads, int count, const std::function<void(int)>& item);

// A loop whose items wait for earlier ones (runGraph).
struct TaskGraph {
  int count = 0;                   // items 0 … count − 1
  std::function<int(int)> home;    // the thread whose cache holds item i's inputs (0 … threads − 1)
  std::function<int(int)> stage;   // item i's stage, never lower than an earlier item's
  std::function<bool(int)> ready;  // whether item i may start: may depend only on earlier items
                                   // having finished (flags they set last with release order,
                                   // read here with acquire), never on later ones
  std::function<void(int)> run;    // runs item i; must not throw
};

// Runs every item of `graph` on up to `threads` threads, the caller among them (thread 0). The
// team's threads keep their numbers from loop to loop, so an item whose home is the thread that
// wrote its inputs finds them in that core's cache. Each thread looks at the first ready item of
// every thread's list (its items by home(i), in order) and takes the one of the earliest stage;
// on a tie its own, else the next thread's. One loop instead of one per stage, so no thread waits
// at a stage's end while an item of the next could run, yet a stage late on one thread is shared
// out before the next. A thread with nothing ready spins for ThreadTeamOptions::spin_microseconds,
// then naps; since the first item not yet started is ready once the running ones finish, every
// item runs. When the team is busy (a loop inside an item, or another thread's), the caller runs
// the items alone, in an order in which each is ready; threads ≤ 1 runs them in list order.
void runGraph(int threads, const TaskGraph& graph);

// Processors this process may run on (its affinity mask), at least 1.
int availableProcessors();

// Sets the team's options; takes effect from the next loop.
void setThreadTeamOptions(const ThreadTeamOptions& options);

}  // namespace attnscope
