// The channel into a running app (state/channel_server.h, docs/DESIGN.md §3.8 "The channel").
#include "state/channel_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>

#include "editing/channel_message.h"
#include "engine/errors.h"
#include "state/ui_wake.h"

namespace attnscope {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::string errnoText() { return std::strerror(errno); }

// [SECTION] Sockets: whole reads and writes, each byte awaited at most `timeout_s`

// When a frame begun must be in whole (ChannelOptions::frame_timeout_s), and what to say after.
struct FrameDeadline {
  Clock::time_point at = Clock::time_point::max();
  std::string why;
};

// Reads exactly n bytes. False on a clean end of the stream before the first byte (when
// `at_start`); throws InputError on a timeout, the frame's deadline passed, an error or an end
// inside the frame.
bool readAll(int fd, void* into, std::size_t n, double timeout_s, bool at_start, const std::atomic<bool>* stop,
             const FrameDeadline& frame = {}) {
  auto* p = static_cast<char*>(into);
  std::size_t got = 0;
  while (got < n) {
    pollfd pfd{fd, POLLIN, 0};
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    int ready = 0;
    while ((ready = ::poll(&pfd, 1, 100)) == 0) {  // a tenth of a second at a time: the app may be closing
      if (stop && stop->load()) throw InputError("message: the app is closing");
      if (Clock::now() > deadline) throw InputError("message: nothing came for " + std::to_string(timeout_s) + " s");
      if (Clock::now() > frame.at) throw InputError(frame.why);
    }
    if (Clock::now() > frame.at) throw InputError(frame.why);
    if (ready < 0) {
      if (errno == EINTR) continue;
      throw InputError("message: " + errnoText());
    }
    const ssize_t r = ::recv(fd, p + got, n - got, 0);
    if (r == 0) {
      if (at_start && got == 0) return false;
      throw InputError("message: the sender stopped in the middle of a frame");
    }
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      throw InputError("message: " + errnoText());
    }
    got += static_cast<std::size_t>(r);
  }
  return true;
}

// Writes the bytes, each awaited at most `timeout_s` (a peer that never reads its replies fills the
// socket's buffer: its connection must not outlive the app). Gives up quietly: nobody to tell.
void writeAll(int fd, const std::string& bytes, double timeout_s = 30, const std::atomic<bool>* stop = nullptr) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {  // a reply the peer can take is sent even as the app closes (quit's)
    pollfd pfd{fd, POLLOUT, 0};
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    int ready = 0;
    while ((ready = ::poll(&pfd, 1, 100)) == 0)
      if ((stop && stop->load()) || Clock::now() > deadline) return;
    if (ready < 0 && errno != EINTR) return;
    const ssize_t w = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;  // the sender went away
    }
    sent += static_cast<std::size_t>(w);
  }
}

std::string reply(bool ok, const std::string& error, std::size_t commands = 0) {
  return channelFrame(ok ? json{{"ok", true}, {"commands", commands}} : json{{"ok", false}, {"error", error}});
}

bool addressOf(const std::string& path, sockaddr_un* a) {
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof a->sun_path) return false;
  std::memcpy(a->sun_path, path.c_str(), path.size() + 1);
  return true;
}

// A connected socket to `path`, or −1.
int connectTo(const std::string& path) {
  sockaddr_un a;
  if (!addressOf(path, &a)) return -1;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// [SECTION] One message's outcome, told by the UI thread, awaited by the channel's

class MessageListener : public CommandListener {
 public:
  explicit MessageListener(std::size_t commands) : expected_(commands) {}
  void applied() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++done_;
    changed_.notify_all();
  }
  void refused(const std::string& message) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.empty()) error_ = message.empty() ? "refused" : message;
    changed_.notify_all();
  }
  bool refusedAlready() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return !error_.empty();
  }
  // "" once every command is applied; the refusal; or why nobody answered.
  std::string wait(double timeout_s, const std::atomic<bool>& stop) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
    while (error_.empty() && done_ < expected_) {
      if (stop.load()) return "the app closed before the commands were applied";
      if (Clock::now() > deadline)
        return "the window did not apply the commands within " + std::to_string(static_cast<int>(timeout_s)) +
               " s (is it asking a question?)";
      changed_.wait_for(lock, std::chrono::milliseconds(100));
    }
    return error_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::size_t expected_, done_ = 0;
  std::string error_;
};

}  // namespace

std::string channelPath(std::string* why) {
  if (const char* given = std::getenv("ATTNSCOPE_CHANNEL"); given && *given) return given;
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  const std::string folder = runtime && *runtime ? std::string(runtime) + "/attnscope"
                                                 : "/tmp/attnscope-" + std::to_string(::getuid());
  if (::mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    if (why) *why = "cannot make " + folder + ": " + errnoText();
    return "";
  }
  struct stat st;
  if (::lstat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() || (st.st_mode & 077) != 0) {
    if (why) *why = folder + " is not a folder of this user's alone (mode 0700): no channel, so nobody else can send";
    return "";
  }
  return folder + "/channel";
}

json sendToChannel(const std::string& path, const std::string& frame, double timeout_s) {
  const int fd = connectTo(path);
  if (fd < 0) throw InputError("no attnscope listens at " + path);
  std::atomic<bool> never{false};
  try {
    writeAll(fd, frame);
    unsigned char length[4];
    if (!readAll(fd, length, 4, timeout_s, true, &never))
      throw InputError("the app closed the channel without a reply");
    std::string text(channelHeaderLength(length), '\0');
    readAll(fd, text.data(), text.size(), timeout_s, false, &never);
    ::close(fd);
    const json r = json::parse(text);
    if (!r.value("ok", false)) throw InputError(r.value("error", std::string("refused")));
    return r;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

ChannelServer::ChannelServer(Limits limits, ChannelOptions options) : limits_(std::move(limits)), options_(options) {}

ChannelServer::~ChannelServer() {
  if (thread_.joinable()) {
    stopping_ = true;
    if (stop_pipe_[1] >= 0) (void)!::write(stop_pipe_[1], "x", 1);
    thread_.join();
  }
  if (listen_fd_ >= 0) {
    // The name first: once a client's connect is refused the socket is gone (closed first, a
    // refused connect could still find the file: gui_channel failed so once in a clean clone's run).
    ::unlink(path_.c_str());
    ::close(listen_fd_);
  }
  for (int& fd : stop_pipe_)
    if (fd >= 0) ::close(fd);
}

std::string ChannelServer::listen(const std::string& path) {
  sockaddr_un address;
  if (!addressOf(path, &address)) return "the channel's path is empty or longer than a socket's: " + path;
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) return path + " exists and is not a socket: no channel";
    if (const int other = connectTo(path); other >= 0) {
      ::close(other);
      return "another attnscope listens at " + path;
    }
    ::unlink(path.c_str());  // stale: its app is gone
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "socket: " + errnoText();
  const mode_t before = ::umask(0177);  // the socket is made 0600: only this user may connect
  const bool bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
  ::umask(before);
  if (!bound || ::listen(fd, 64) != 0) {  // senders at once wait here for one of the connections
    const std::string why = errnoText();
    ::close(fd);
    return "cannot listen at " + path + ": " + why;
  }
  if (::pipe2(stop_pipe_, O_CLOEXEC) != 0) {
    ::close(fd);
    ::unlink(path.c_str());
    return "pipe: " + errnoText();
  }
  listen_fd_ = fd;
  path_ = path;
  thread_ = std::thread([this] { serve(); });
  return "";
}

std::vector<Command> ChannelServer::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(inbox_, {});
}

void ChannelServer::serve() {
  const auto reap = [this](bool all) {  // joins the connections that ended (all: every one, closing)
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!all && !it->done->load()) {
        ++it;
        continue;
      }
      it->thread.join();
      it = connections_.erase(it);
    }
  };
  for (;;) {
    reap(false);
    // At the most connections, only the stop pipe, looked at again each tenth of a second.
    const bool full = connections_.size() >= static_cast<std::size_t>(kMaxConnections);
    pollfd fds[2] = {{stop_pipe_[0], POLLIN, 0}, {listen_fd_, POLLIN, 0}};
    if (::poll(fds, full ? 1 : 2, full ? 100 : 1000) < 0 && errno != EINTR) break;
    if (fds[0].revents != 0) break;
    if (full || (fds[1].revents & POLLIN) == 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    auto done = std::make_shared<std::atomic<bool>>(false);
    try {
      connections_.push_back({std::thread([this, fd, done] {
                                handle(fd);
                                ::close(fd);
                                done->store(true);
                              }),
                              done});
    } catch (const std::system_error&) {  // no thread to be had: the sender hears so
      writeAll(fd, reply(false, "message: the app cannot take it now (no thread): send it again"), 1);
      ::close(fd);
    }
  }
  stopping_ = true;  // (also when poll failed): the connections' reads, writes and waits end within
  reap(true);        // a tenth of a second
}

std::size_t ChannelServer::receivingBytes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return receiving_bytes_;
}

bool ChannelServer::take(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (receiving_bytes_ + bytes > static_cast<std::size_t>(limits_.max_memory_bytes)) return false;
  receiving_bytes_ += bytes;
  return true;
}

void ChannelServer::give(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  receiving_bytes_ -= bytes;
}

void ChannelServer::handle(int fd) {
  // Only this user's programs: the kernel says who the peer is.
  ucred peer{};
  socklen_t size = sizeof peer;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || peer.uid != ::getuid()) {
    writeAll(fd, reply(false, "refused: this attnscope takes messages from its own user only"), options_.read_timeout_s,
             &stopping_);
    return;
  }
  while (!stopping_) {  // messages queued in the socket are not read once the app closes
    std::vector<Command> commands;
    std::size_t held = 0;  // of the memory budget, given back once the message is received
    try {
      unsigned char length[4];
      if (!readAll(fd, length, 1, options_.read_timeout_s, true, &stopping_)) return;  // the sender is done
      // The frame must be in whole within frame_timeout_s of its first byte, and a second more a
      // 64 MiB of its payload once its size is known (no deadline past a day: none asked for).
      const Clock::time_point begun = Clock::now();
      FrameDeadline frame;
      const auto wholeWithin = [&](std::size_t bytes) {
        const double s = options_.frame_timeout_s + static_cast<double>(bytes) / (64.0 * 1024 * 1024);
        if (!(s < 86400)) return;
        frame = {begun + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)),
                 "message: the frame did not come whole within " + std::to_string(static_cast<int>(s)) +
                     " s of its start"};
      };
      wholeWithin(0);
      readAll(fd, length + 1, 3, options_.read_timeout_s, false, &stopping_, frame);
      std::string header_text(channelHeaderLength(length), '\0');
      readAll(fd, header_text.data(), header_text.size(), options_.read_timeout_s, false, &stopping_, frame);
      const ChannelHeader header = parseChannelHeader(header_text, limits_);
      if (!take(header.memoryBytes()))
        throw InputError(
            "message: its tensors and those of the messages being received at once need more than "
            "the memory budget: send it again once they are in");
      held = header.memoryBytes();
      std::string payload(header.payload_bytes, '\0');
      wholeWithin(payload.size());
      readAll(fd, payload.data(), payload.size(), options_.read_timeout_s, false, &stopping_, frame);
      commands = channelCommands(header, reinterpret_cast<const std::uint8_t*>(payload.data()), payload.size(),
                                 limits_);
    } catch (const InputError& e) {
      give(held);
      // The frame cannot be trusted past what was wrong: one reply, and the connection ends.
      writeAll(fd, reply(false, e.what()), options_.read_timeout_s, &stopping_);
      return;
    } catch (const std::bad_alloc&) {
      give(held);
      writeAll(fd, reply(false, "message: out of memory"), options_.read_timeout_s, &stopping_);
      return;
    } catch (const std::exception& e) {  // nothing a sender sends may end the app
      give(held);
      writeAll(fd, reply(false, std::string("message: ") + e.what()), options_.read_timeout_s, &stopping_);
      return;
    }
    auto listener = std::make_shared<MessageListener>(commands.size());
    for (Command& c : commands) c.listener = listener;
    const std::size_t count = commands.size();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (Command& c : commands) inbox_.push_back(std::move(c));
      receiving_bytes_ -= held;  // received: its commands are the app's now (give, under the same lock)
    }
    wakeUi();
    const std::string error = listener->wait(options_.reply_timeout_s, stopping_);
    writeAll(fd, reply(error.empty(), error, count), options_.read_timeout_s, &stopping_);
  }
}

}  // namespace attnscope
