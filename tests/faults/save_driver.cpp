// fault_save_driver: loads a workspace and saves a modified copy with saveWorkspace (the code path
// of the app's and the CLI's saves), for the fault tests (test_save_faults.py) to run under the
// fail_writes shim or to kill in the middle of a save.
//
//   fault_save_driver IN OUT [--seed S] [--alternate S2] [--times N] [--ready]
//   fault_save_driver IN OUT --verbatim OTHER [--times N] [--ready]
//
// The copy is IN with model.seed = S (default: IN's seed + 1). --times N saves N times (default 1;
// 0: until killed); with --alternate S2 the 2nd, 4th, … save uses seed S2, so OUT alternates between
// two distinct contents. --ready prints "ready" on stdout once IN is loaded, before the first save.
// --verbatim OTHER: the saves write the bytes of IN, OTHER, IN, … with writeFileAtomically — what
// saveWorkspace does once it has serialized the workspace (which takes most of a large workspace's
// save time), so that a kill at a random moment lands in the file operations. IN and OTHER are read
// before "ready" and not parsed (give files saved by attnscope).
// On the first failure: one line "error: MESSAGE" (the InputError's message) on stderr, exit 1.
// Bad arguments: exit 2.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/errors.h"
#include "formats/atomic_file.h"
#include "formats/workspace_file.h"

using namespace attnscope;

namespace {

int usage() {
  std::fputs(
      "usage: fault_save_driver IN OUT [--seed S] [--alternate S2] [--times N] [--ready]\n"
      "       fault_save_driver IN OUT --verbatim OTHER [--times N] [--ready]\n",
      stderr);
  return 2;
}

bool number(const char* text, long long lo, long long hi, long long* out) {
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi) return false;
  *out = v;
  return true;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the file");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return usage();
  const std::string in = argv[1], out = argv[2];
  long long seed = -1, alternate = -1, times = 1;
  bool ready = false;
  std::string verbatim;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--ready") {
      ready = true;
    } else if (i + 1 < argc && a == "--verbatim") {
      verbatim = argv[++i];
    } else if (i + 1 < argc && a == "--seed") {
      if (!number(argv[++i], 0, 4294967295LL, &seed)) return usage();
    } else if (i + 1 < argc && a == "--alternate") {
      if (!number(argv[++i], 0, 4294967295LL, &alternate)) return usage();
    } else if (i + 1 < argc && a == "--times") {
      if (!number(argv[++i], 0, 1000000000LL, &times)) return usage();
    } else {
      return usage();
    }
  }
  try {
    std::string texts[2];
    Workspace ws;
    std::uint32_t first = 0, second = 0;
    if (!verbatim.empty()) {
      texts[0] = readFile(in);
      texts[1] = readFile(verbatim);
    } else {
      ws = loadWorkspace(in);
      first = seed >= 0 ? static_cast<std::uint32_t>(seed) : ws.model.seed + 1u;
      second = alternate >= 0 ? static_cast<std::uint32_t>(alternate) : first;
    }
    if (ready) {
      std::fputs("ready\n", stdout);
      std::fflush(stdout);
    }
    for (long long k = 0; times == 0 || k < times; ++k) {
      if (!verbatim.empty()) {
        writeFileAtomically(out, texts[k % 2]);
      } else {
        ws.model.seed = k % 2 == 0 ? first : second;
        saveWorkspace(out, ws);
      }
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: unexpected %s\n", e.what());
    return 3;
  }
  return 0;
}
