// Process-wide memory policy for programs that compute traces again and again (the app, the CLI's
// benchmark): see keepFreedMemory.
#pragma once

namespace attnscope {

// A GPT-2 trace holds ~260 MB of maps in 4 MB matrices. glibc hands such blocks back to the
// kernel when they are freed and page-faults them in again on the next trace: 30 % of a trace's
// time went to clearing fresh pages. This keeps freed blocks in the process for reuse (blocks up
// to 32 MB come from the heap; the heap is not trimmed below 1 GiB of free space). Resident
// memory then stays at its peak instead of falling between traces. Call once, first thing in main.
void keepFreedMemory();

}  // namespace attnscope
