// Process-wide memory policy for programs that compute traces again and again (the app, the CLI's
// benchmark): see tuneMalloc.
#pragma once

namespace attnscope {

// A GPT-2 trace holds ~100 MB of maps in 4 MB matrices. glibc hands such blocks back to the kernel
// when they are freed and page-faults them in again on the next trace, and a large share of a
// trace's time went to clearing fresh pages (docs/engine-measurements.md). This keeps freed blocks
// in the process for reuse (blocks up to 32 MB come from the heap; the heap is not trimmed below
// 1 GiB of free space), and holds glibc to two arenas: the maps are allocated on the engine's
// thread and freed on the UI thread, the colours the other way round, and every further arena kept
// its own peak of freed blocks, which raised the app's peak with GPT-2. Resident memory then stays
// at its peak instead of falling between traces. Call once, first thing in main.
void tuneMalloc();

}  // namespace attnscope
