/* Linked into the app in the sanitizer build only (ATTNSCOPE_SANITIZE, top-level CMakeLists.txt).
 *
 * Mesa's GLX unloads its DRI driver (swrast_dri.so: llvmpipe under Xvfb) when glfwTerminate closes
 * the X display, before LeakSanitizer looks at the heap at exit. Memory the driver allocated once
 * and keeps in its own globals (e.g. util_cpu_detect's L3 affinity masks, allocated under
 * pthread_once) then looks leaked, and its allocation stack cannot be symbolized or suppressed:
 * the code that allocated it is gone ("<unknown module>"), gcc 12's LSan cannot match that, and
 * the slow unwinder that would record the callers (glfwCreateWindow → libGLX_mesa) makes the app
 * too slow to test. Loading the driver once more with RTLD_NODELETE keeps it mapped until exit, as
 * in any program that never closes its display: what it still points to is reachable, and a real
 * leak inside it is reported with its module name (and may be suppressed in lsan.supp). */
#include <dlfcn.h>

__attribute__((constructor)) static void attnscope_keep_gl_driver(void) {
  /* Mesa loads the same file (every gallium *_dri.so is one inode) with RTLD_GLOBAL later on. */
  (void)dlopen(ATTNSCOPE_MESA_DRIVER, RTLD_NOW | RTLD_NODELETE);
}
