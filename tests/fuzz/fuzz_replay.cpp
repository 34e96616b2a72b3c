// fuzz_replay: runs the fuzz targets' checks on files, without libFuzzer — the ctest side of
// tests/fuzz (label `fuzz`). Each target's LLVMFuzzerTestOneInput is compiled into this program
// under another name (tests/fuzz/CMakeLists.txt renames it with a macro) and called once per file.
//
//   fuzz_replay TARGET PATH…      TARGET: one of tests/fuzz/CMakeLists.txt's ATTNSCOPE_FUZZ_TARGETS
//
// A PATH is a file or a folder (its files, not recursively; README* and dot files are skipped).
// Each file runs in a child process, so a finding (an abort, a sanitizer report) names its file
// and the other files still run. Exit status 0 when every file passed, 1 otherwise.
// FUZZ_REPLAY_NO_FORK=1 runs the files in this process instead (for a debugger).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// The targets (tests/fuzz/CMakeLists.txt's one list, generated as FUZZ_TARGET(name) lines).
#define FUZZ_TARGET(name) extern "C" int name##_one_input(const std::uint8_t* data, std::size_t size);
#include "fuzz_targets.inc"
#undef FUZZ_TARGET

namespace {

using Target = int (*)(const std::uint8_t*, std::size_t);

struct Entry {
  const char* name;
  Target run;
};
const Entry kTargets[] = {
#define FUZZ_TARGET(name) {#name, name##_one_input},
#include "fuzz_targets.inc"
#undef FUZZ_TARGET
};

bool skipped(const std::filesystem::path& p) {
  const std::string name = p.filename().string();
  return name.empty() || name[0] == '.' || name.rfind("README", 0) == 0;
}

int runOne(Target target, const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", file.c_str());
    return 1;
  }
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Exceptions that escape are findings too; libFuzzer would report them as a crash.
  target(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s TARGET PATH…\n", argv[0]);
    return 2;
  }
  Target target = nullptr;
  for (const Entry& e : kTargets)
    if (std::strcmp(argv[1], e.name) == 0) target = e.run;
  if (!target) {
    std::fprintf(stderr, "unknown target '%s' (", argv[1]);
    for (const Entry& e : kTargets) std::fprintf(stderr, "%s%s", &e == kTargets ? "" : ", ", e.name);
    std::fprintf(stderr, ")\n");
    return 2;
  }

  namespace fs = std::filesystem;
  std::vector<std::string> files;
  for (int i = 2; i < argc; ++i) {
    std::error_code ec;
    if (fs::is_directory(argv[i], ec)) {
      std::vector<std::string> here;
      for (const auto& entry : fs::directory_iterator(argv[i], ec))
        if (entry.is_regular_file() && !skipped(entry.path())) here.push_back(entry.path().string());
      std::sort(here.begin(), here.end());
      files.insert(files.end(), here.begin(), here.end());
    } else if (fs::is_regular_file(argv[i], ec)) {
      files.push_back(argv[i]);
    } else {
      std::fprintf(stderr, "no such file or folder: %s\n", argv[i]);
      return 2;
    }
  }

  if (files.empty()) {
    std::fprintf(stderr, "%s: no input files (wrong path?)\n", argv[1]);
    return 2;
  }

  const char* no_fork = std::getenv("FUZZ_REPLAY_NO_FORK");
  const bool fork_each = !(no_fork && *no_fork && std::strcmp(no_fork, "0") != 0);
  int failed = 0;
  for (const std::string& file : files) {
    std::fflush(stdout);
    std::fflush(stderr);
    int status = 0;
    if (!fork_each) {
      status = runOne(target, file);
    } else {
      const pid_t pid = fork();
      if (pid < 0) {
        std::perror("fork");
        return 2;
      }
      if (pid == 0) std::exit(runOne(target, file));  // exit, not _exit: LeakSanitizer checks at exit
      int ws = 0;
      while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
      }
      if (WIFSIGNALED(ws))
        status = 128 + WTERMSIG(ws);
      else
        status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
    }
    if (status != 0) {
      ++failed;
      std::printf("FAILED  %s %s (status %d)\n", argv[1], file.c_str(), status);
    } else {
      std::printf("ok      %s %s\n", argv[1], file.c_str());
    }
  }
  std::printf("%s: %zu files, %d failed\n", argv[1], files.size(), failed);
  return failed == 0 ? 0 : 1;
}
