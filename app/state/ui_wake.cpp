#include "state/ui_wake.h"

#include <atomic>

namespace attnscope {

namespace {
std::atomic<WakeHandler> handler{nullptr};  // a plain function: no lifetime to race with
std::atomic<unsigned> wakes{0};
}  // namespace

void setWakeHandler(WakeHandler h) { handler.store(h); }

void wakeUi() {
  wakes.fetch_add(1);
  if (WakeHandler h = handler.load()) h();
}

unsigned wakeCount() { return wakes.load(); }

}  // namespace attnscope
