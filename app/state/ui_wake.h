// Waking the main loop from another thread (docs/DESIGN.md §3.3). The window sleeps while nothing
// changes; the engine worker and the colouring thread call wakeUi() when a result is ready, so it
// is drawn at once instead of at the next poll. main.cpp installs glfwPostEmptyEvent (thread-safe);
// without a handler (tests, before the window exists, after it is gone) waking does nothing.
#pragma once

namespace attnscope {

using WakeHandler = void (*)();
void setWakeHandler(WakeHandler handler);  // nullptr: stop waking (before the window goes)
void wakeUi();
// How many times wakeUi was called: the loop tells a result's wake-up from input (a result needs
// one frame; input two, for ImGui to settle).
unsigned wakeCount();

}  // namespace attnscope
