#include "engine/memory.h"

#include <cstdlib>  // defines __GLIBC__

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace attnscope {

void tuneMalloc() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's maximum on 64-bit systems
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_ARENA_MAX, 2);
#endif
}

}  // namespace attnscope
