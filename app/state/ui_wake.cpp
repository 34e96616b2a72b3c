#include "state/ui_wake.h"

#include <atomic>

namespace attnscope {

namespace {
std::atomic<WakeHandler> handler{nullptr};  // a plain function: no lifetime to race with
}  // namespace

void setWakeHandler(WakeHandler h) { handler.store(h); }

void wakeUi() {
  if (WakeHandler h = handler.load()) h();
}

}  // namespace attnscope
