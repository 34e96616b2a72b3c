/* fail_writes: an LD_PRELOAD shim that makes the calls of a file save fail on purpose, so tests can
 * check that a failed save loses nothing (tests/faults/test_save_faults.py).
 *
 * It wraps what writeFileAtomically (core/formats/atomic_file.cpp) calls: open, fchmod,
 * write, fsync, close and rename (std::rename and std::filesystem::rename end in rename). Each
 * wrapper forwards to the next definition (dlsym(RTLD_NEXT, …): libc, or a sanitizer's interceptor)
 * unless a rule says that this call fails.
 *
 * Configuration, read once from the environment:
 *   ATTNSCOPE_FAULT      rules, comma-separated: OP:ERR:N  (the Nth matching call of OP fails)
 *                                               OP:ERR:N+ (the Nth and every later one)
 *                        OP   write | fsync | close | rename | create | open | fchmod
 *                             create: the temporary file's creation (an open with O_CREAT|O_EXCL
 *                             of a name starting ".attnscope-", or mkstemp); open: every other open
 *                        ERR  ENOSPC, EACCES, EIO, EINTR, EDQUOT, EROFS, EPERM, EFBIG, EBADF, or a
 *                             number; SHORT (write only): the call writes half of its bytes (at
 *                             least one) and returns that count, as a disk that fills up does
 *                             before it says ENOSPC.
 *                        e.g. ATTNSCOPE_FAULT=write:ENOSPC:1   ATTNSCOPE_FAULT=write:SHORT:1,write:ENOSPC:2
 *   ATTNSCOPE_FAULT_DIR  only paths under this prefix match (absolute; relative paths given to the
 *                        calls are taken from the current folder). Calls on a file descriptor
 *                        (write, fsync, close, fchmod) match when the descriptor came from a
 *                        matching create or open. Unset: nothing matches by path.
 *   ATTNSCOPE_FAULT_FD   a descriptor number whose write/fsync/close/fchmod calls match as well.
 *   ATTNSCOPE_FAULT_LOG  a file: one line per injected fault ("fail OP ERR call N: PATH|fd K"), and
 *                        with ATTNSCOPE_FAULT_TRACE=1 one per matching call ("call OP N: …").
 * Counts are per operation over matching calls only, from 1, for the whole process.
 *
 * A close that is made to fail still closes the descriptor (as Linux's close does even when it
 * reports an error), so a failing close leaks nothing. A failing create makes no file.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum { OP_WRITE, OP_FSYNC, OP_CLOSE, OP_RENAME, OP_CREATE, OP_OPEN, OP_FCHMOD, OP_COUNT };
static const char *const kOpNames[OP_COUNT] = {"write", "fsync", "close", "rename", "create", "open", "fchmod"};

#define ERR_SHORT (-1) /* a short write, not an error */
#define MAX_RULES 16
#define MAX_FD 65536

struct rule {
  int op;
  int err;
  long nth;
  int and_later;
};

static struct rule rules[MAX_RULES];
static int rule_count;
static char prefix[PATH_MAX];
static size_t prefix_len;
static int fault_fd = -1;
static char log_path[PATH_MAX];
static int trace_calls;
static atomic_long calls[OP_COUNT];
static atomic_uchar tracked[MAX_FD]; /* descriptors from a matching create or open */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_fsync)(int);
static int (*real_close)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_mkstemp)(char *);
static int (*real_mkstemp64)(char *);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_fchmod)(int, mode_t);

static const struct {
  const char *name;
  int value;
} kErrors[] = {{"ENOSPC", ENOSPC}, {"EACCES", EACCES}, {"EIO", EIO},     {"EINTR", EINTR},  {"EDQUOT", EDQUOT},
               {"EROFS", EROFS},   {"EPERM", EPERM},   {"EFBIG", EFBIG}, {"EBADF", EBADF}, {"SHORT", ERR_SHORT}};

static const char *errorName(int err) {
  for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
    if (kErrors[i].value == err) return kErrors[i].name;
  return "E?";
}

static void complain(const char *what, const char *text) {
  char line[512];
  const int n = snprintf(line, sizeof line, "fail_writes: ignoring %s '%s'\n", what, text);
  if (n > 0 && real_write) (void)real_write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static void parseRules(const char *spec) {
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec);
  char *save = NULL;
  for (char *item = strtok_r(buf, ",", &save); item && rule_count < MAX_RULES; item = strtok_r(NULL, ",", &save)) {
    char *f1 = strchr(item, ':');
    char *f2 = f1 ? strchr(f1 + 1, ':') : NULL;
    if (!f1 || !f2) {
      complain("rule", item);
      continue;
    }
    *f1++ = '\0';
    *f2++ = '\0';
    struct rule r = {-1, 0, 0, 0};
    for (int op = 0; op < OP_COUNT; ++op)
      if (strcmp(item, kOpNames[op]) == 0) r.op = op;
    int known = 0;
    for (size_t i = 0; i < sizeof kErrors / sizeof kErrors[0]; ++i)
      if (strcmp(f1, kErrors[i].name) == 0) {
        r.err = kErrors[i].value;
        known = 1;
      }
    if (!known) {
      char *end = NULL;
      const long v = strtol(f1, &end, 10);
      if (end != f1 && *end == '\0' && v > 0) {
        r.err = (int)v;
        known = 1;
      }
    }
    char *end = NULL;
    r.nth = strtol(f2, &end, 10);
    if (end && *end == '+') {
      r.and_later = 1;
      ++end;
    }
    if (r.op < 0 || !known || r.nth < 1 || !end || *end != '\0' || (r.err == ERR_SHORT && r.op != OP_WRITE)) {
      complain("rule", item);
      continue;
    }
    rules[rule_count++] = r;
  }
}

static void init(void) {
  real_write = (ssize_t(*)(int, const void *, size_t))dlsym(RTLD_NEXT, "write");
  real_fsync = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  real_close = (int (*)(int))dlsym(RTLD_NEXT, "close");
  real_rename = (int (*)(const char *, const char *))dlsym(RTLD_NEXT, "rename");
  real_mkstemp = (int (*)(char *))dlsym(RTLD_NEXT, "mkstemp");
  real_mkstemp64 = (int (*)(char *))dlsym(RTLD_NEXT, "mkstemp64");
  real_open = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
  real_open64 = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
  real_fchmod = (int (*)(int, mode_t))dlsym(RTLD_NEXT, "fchmod");
  const char *spec = getenv("ATTNSCOPE_FAULT");
  if (spec) parseRules(spec);
  const char *dir = getenv("ATTNSCOPE_FAULT_DIR");
  if (dir && *dir) {
    snprintf(prefix, sizeof prefix, "%s", dir);
    prefix_len = strlen(prefix);
    while (prefix_len > 1 && prefix[prefix_len - 1] == '/') prefix[--prefix_len] = '\0';
  }
  const char *fd = getenv("ATTNSCOPE_FAULT_FD");
  if (fd && *fd) fault_fd = atoi(fd);
  const char *log = getenv("ATTNSCOPE_FAULT_LOG");
  if (log && *log) snprintf(log_path, sizeof log_path, "%s", log);
  const char *trace = getenv("ATTNSCOPE_FAULT_TRACE");
  trace_calls = trace && strcmp(trace, "1") == 0;
}

static void setup(void) { pthread_once(&once, init); }

/* The path as an absolute one (relative to the current folder), for the prefix test. */
static int pathMatches(const char *path) {
  if (!prefix_len || !path) return 0;
  char full[2 * PATH_MAX + 2];
  if (path[0] != '/') {
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd)) return 0;
    const int n = snprintf(full, sizeof full, "%s/%s", cwd, path);
    if (n < 0 || (size_t)n >= sizeof full) return 0;
    path = full;
  }
  if (strncmp(path, prefix, prefix_len) != 0) return 0;
  return path[prefix_len] == '\0' || path[prefix_len] == '/' || prefix[prefix_len - 1] == '/';
}

static int fdMatches(int fd) {
  if (fd == fault_fd && fd >= 0) return 1;
  return fd >= 0 && fd < MAX_FD && atomic_load(&tracked[fd]);
}

static void track(int fd, int on) {
  if (fd >= 0 && fd < MAX_FD) atomic_store(&tracked[fd], (unsigned char)on);
}

static void logLine(const char *kind, int op, int err, long n, const char *path, int fd) {
  if (!log_path[0]) return;
  char line[PATH_MAX + 128];
  int len;
  if (path)
    len = snprintf(line, sizeof line, "%s %s %s call %ld: %s\n", kind, kOpNames[op], err ? errorName(err) : "-", n, path);
  else
    len = snprintf(line, sizeof line, "%s %s %s call %ld: fd %d\n", kind, kOpNames[op], err ? errorName(err) : "-", n, fd);
  if (len <= 0) return;
  if ((size_t)len >= sizeof line) len = (int)sizeof line - 1;
  const int saved = errno;
  const int out = real_open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out >= 0) {
    (void)real_write(out, line, (size_t)len);
    real_close(out);
  }
  errno = saved;
}

/* A matching call of `op`: counts it and returns the error it must fail with (0: none). */
static int decide(int op, const char *path, int fd) {
  const long n = atomic_fetch_add(&calls[op], 1) + 1;
  int err = 0;
  for (int i = 0; i < rule_count && !err; ++i)
    if (rules[i].op == op && (n == rules[i].nth || (rules[i].and_later && n > rules[i].nth))) err = rules[i].err;
  if (trace_calls) logLine("call", op, 0, n, path, fd);
  if (err) logLine("fail", op, err, n, path, fd);
  return err;
}

ssize_t write(int fd, const void *buf, size_t count) {
  setup();
  if (fdMatches(fd)) {
    const int err = decide(OP_WRITE, NULL, fd);
    if (err == ERR_SHORT && count > 1) return real_write(fd, buf, count / 2);
    if (err > 0) {
      errno = err;
      return -1;
    }
  }
  return real_write(fd, buf, count);
}

int fsync(int fd) {
  setup();
  if (fdMatches(fd)) {
    const int err = decide(OP_FSYNC, NULL, fd);
    if (err > 0) {
      errno = err;
      return -1;
    }
  }
  return real_fsync(fd);
}

int close(int fd) {
  setup();
  if (fdMatches(fd)) {
    const int err = decide(OP_CLOSE, NULL, fd);
    track(fd, 0);
    const int r = real_close(fd);
    if (err > 0) {
      errno = err;
      return -1;
    }
    return r;
  }
  return real_close(fd);
}

int fchmod(int fd, mode_t mode) {
  setup();
  if (fdMatches(fd)) {
    const int err = decide(OP_FCHMOD, NULL, fd);
    if (err > 0) {
      errno = err;
      return -1;
    }
  }
  return real_fchmod(fd, mode);
}

int rename(const char *from, const char *to) {
  setup();
  if (pathMatches(from) || pathMatches(to)) {
    const int err = decide(OP_RENAME, to, -1);
    if (err > 0) {
      errno = err;
      return -1;
    }
  }
  return real_rename(from, to);
}

static int wrapMkstemp(int (*real)(char *), char *templ) {
  if (pathMatches(templ)) {
    const int err = decide(OP_CREATE, templ, -1);
    if (err > 0) {
      errno = err;
      return -1;
    }
    const int fd = real(templ);
    track(fd, 1);
    return fd;
  }
  return real(templ);
}

int mkstemp(char *templ) {
  setup();
  return wrapMkstemp(real_mkstemp, templ);
}

int mkstemp64(char *templ) {
  setup();
  return wrapMkstemp(real_mkstemp64 ? real_mkstemp64 : real_mkstemp, templ);
}

/* writeFileAtomically's temporary file: made new (O_EXCL) under the ".attnscope-" prefix. */
static int isTemporaryCreation(const char *path, int flags) {
  const char *slash = strrchr(path, '/');
  const char *name = slash ? slash + 1 : path;
  return (flags & O_CREAT) && (flags & O_EXCL) && strncmp(name, ".attnscope-", 11) == 0;
}

static int wrapOpen(int (*real)(const char *, int, ...), const char *path, int flags, mode_t mode) {
  if (pathMatches(path)) {
    const int err = decide(isTemporaryCreation(path, flags) ? OP_CREATE : OP_OPEN, path, -1);
    if (err > 0) {
      errno = err;
      return -1;
    }
    const int fd = real(path, flags, mode);
    track(fd, 1);
    return fd;
  }
  return real(path, flags, mode);
}

static mode_t modeArgument(int flags, va_list ap) {
  return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...) {
  setup();
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArgument(flags, ap);
  va_end(ap);
  return wrapOpen(real_open, path, flags, mode);
}

int open64(const char *path, int flags, ...) {
  setup();
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = modeArgument(flags, ap);
  va_end(ap);
  return wrapOpen(real_open64 ? real_open64 : real_open, path, flags, mode);
}
