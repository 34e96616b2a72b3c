// The channel's server (app/state/channel_server.h) with real sockets and no window: this test
// plays the app, taking the commands received and saying they were applied. A sender that stalls
// in the middle of a frame holds only its own connection; the messages received at once share the
// memory budget; a frame trickled in is refused at its deadline; closing the server with a stalled
// sender connected ends at once. Run under
// ThreadSanitizer too (make test-tsan): the connections are threads of their own.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <thread>

#include "editing/channel_message.h"
#include "engine/errors.h"
#include "state/channel_server.h"

namespace attnscope {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string socketPath() {
  static int counter = 0;
  return (fs::temp_directory_path() /
          ("attnscope_channel_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++)))
      .string();
}

// A connected client socket, or −1.
int connectTo(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// The app's side: every command received is applied, until stopped.
class PlayTheApp {
 public:
  explicit PlayTheApp(ChannelServer& server)
      : thread_([this, &server] {
          while (!stop_) {
            for (Command& c : server.take()) {
              ++applied_;
              if (c.listener) c.listener->applied();
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
        }) {}
  ~PlayTheApp() {
    stop_ = true;
    thread_.join();
  }
  int applied() const { return applied_; }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int> applied_{0};
  std::thread thread_;
};

std::string oneCommand() { return channelFrame({{"commands", {{{"do", "select_head"}, {"index", 0}}}}}); }

TEST(ChannelServer, AStalledSenderHoldsOnlyItsOwnConnection) {
  ChannelOptions options;
  options.read_timeout_s = 30;
  ChannelServer server(Limits{}, options);
  const std::string path = socketPath();
  ASSERT_EQ(server.listen(path), "");
  PlayTheApp app(server);
  // Three senders stop in the middle of a frame: four bytes of length, then a part of the JSON.
  std::vector<int> stalled;
  for (int i = 0; i < ChannelServer::kMaxConnections - 1; ++i) {
    const int fd = connectTo(path);
    ASSERT_GE(fd, 0);
    const std::string frame = oneCommand();
    ASSERT_EQ(::send(fd, frame.data(), 10, MSG_NOSIGNAL), 10);
    stalled.push_back(fd);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  const nlohmann::json reply = sendToChannel(path, oneCommand(), 20);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(reply.value("ok", false)) << reply.dump();
  EXPECT_LT(waited, 5.0) << "the stalled senders held the channel";
  EXPECT_EQ(app.applied(), 1);
  for (int fd : stalled) ::close(fd);
}

// A sender that trickles its frame, a byte well within the read timeout each time, held its
// connection for as long as it went on; the frame has a deadline of its own.
TEST(ChannelServer, ATricklingSenderIsRefusedAtTheFramesDeadline) {
  ChannelOptions options;
  options.read_timeout_s = 5;
  options.frame_timeout_s = 1;
  ChannelServer server(Limits{}, options);
  const std::string path = socketPath();
  ASSERT_EQ(server.listen(path), "");
  PlayTheApp app(server);
  const int fd = connectTo(path);
  ASSERT_GE(fd, 0);
  const std::string frame = oneCommand();
  const auto start = Clock::now();
  std::size_t sent = 0;
  // A byte every 100 ms, until the server ends the connection (its reply then waits to be read).
  for (; sent < frame.size() && Clock::now() - start < std::chrono::seconds(20); ++sent) {
    if (::send(fd, frame.data() + sent, 1, MSG_NOSIGNAL) != 1) break;
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, 100) > 0) break;  // the reply came
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_LT(sent, frame.size()) << "the whole frame went by a byte at a time (" << frame.size() << " bytes)";
  EXPECT_LT(waited, 4.0);
  const timeval wait{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  unsigned char length[4];
  ASSERT_EQ(::recv(fd, length, 4, MSG_WAITALL), 4) << "no reply";
  std::string text(channelHeaderLength(length), '\0');
  ASSERT_EQ(::recv(fd, text.data(), text.size(), MSG_WAITALL), static_cast<ssize_t>(text.size()));
  const nlohmann::json reply = nlohmann::json::parse(text);
  EXPECT_FALSE(reply.value("ok", true)) << text;
  EXPECT_EQ(reply.value("error", ""), "message: the frame did not come whole within 1 s of its start");
  EXPECT_EQ(app.applied(), 0);
  ::close(fd);
  EXPECT_NO_THROW(sendToChannel(path, frame, 20));  // the next sender is served
}

TEST(ChannelServer, MessagesReceivedAtOnceShareTheMemoryBudget) {
  Limits limits;
  limits.max_memory_bytes = 36 * 1000;  // a thousand values of tensors at 36 bytes each
  ChannelServer server(limits);
  const std::string path = socketPath();
  ASSERT_EQ(server.listen(path), "");
  PlayTheApp app(server);
  // Messages of 600 values each (6 heads of maps over 10 tokens, as a notebook sends them).
  const nlohmann::json header = {{"commands", {{{"do", "attention"}, {"maps", {{"tensor", "x"}}}}}},
                                 {"tensors", {{{"name", "x"}, {"shape", {6, 10, 10}}}}}};
  const std::string message = channelFrame(header, std::string(600 * 4, '\0'));
  const std::size_t header_bytes = message.size() - 600 * 4;
  const int fd = connectTo(path);
  ASSERT_GE(fd, 0);
  const timeval wait{20, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
  // The first sends its header and not its payload: once the server has read the header, it holds
  // 600 values' room, and a second message of 600 passes the budget with it: refused in one line.
  ASSERT_EQ(::send(fd, message.data(), header_bytes, MSG_NOSIGNAL), static_cast<ssize_t>(header_bytes));
  const std::size_t room = 600 * 36;
  for (const auto until = Clock::now() + std::chrono::seconds(20);
       server.receivingBytes() < room && Clock::now() < until;)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  ASSERT_EQ(server.receivingBytes(), room) << "the first message's header was not read within 20 s";
  std::string refusal;
  try {
    sendToChannel(path, message, 20);
    ADD_FAILURE() << "two messages of 600 values were received at once within a budget of 1000";
  } catch (const InputError& e) {
    refusal = e.what();
  }
  EXPECT_NE(refusal.find("memory budget"), std::string::npos) << "refusal: " << refusal;
  // The first's payload: it is applied, and the room is given back for the next.
  ASSERT_EQ(::send(fd, message.data() + header_bytes, message.size() - header_bytes, MSG_NOSIGNAL),
            static_cast<ssize_t>(message.size() - header_bytes));
  unsigned char length[4];
  ASSERT_EQ(::recv(fd, length, 4, MSG_WAITALL), 4) << "no reply within 20 s";
  std::string text(channelHeaderLength(length), '\0');
  ASSERT_EQ(::recv(fd, text.data(), text.size(), MSG_WAITALL), static_cast<ssize_t>(text.size()));
  EXPECT_TRUE(nlohmann::json::parse(text).value("ok", false)) << text;
  ::close(fd);
  EXPECT_NO_THROW(sendToChannel(path, message, 20));
}

TEST(ChannelServer, ClosingWithAStalledSenderEndsAtOnce) {
  const std::string path = socketPath();
  std::vector<int> stalled;
  const auto start = Clock::now();
  {
    ChannelServer server(Limits{});
    ASSERT_EQ(server.listen(path), "");
    for (int i = 0; i < ChannelServer::kMaxConnections + 1; ++i) {  // one more waits in the backlog
      const int fd = connectTo(path);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::send(fd, "\x10\0\0\0{", 5, MSG_NOSIGNAL), 5);
      stalled.push_back(fd);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0);
  EXPECT_FALSE(fs::exists(path)) << "the socket was not removed";
  for (int fd : stalled) ::close(fd);
}

// A peer that sends message after message and never reads the replies fills the socket's buffer:
// the reply's write waited for ever, and the app's closing with it.
TEST(ChannelServer, APeerThatNeverReadsItsRepliesDoesNotHoldTheClosing) {
  const std::string path = socketPath();
  auto server = std::make_unique<ChannelServer>(Limits{});
  ASSERT_EQ(server->listen(path), "");
  const int peer = connectTo(path);
  ASSERT_GE(peer, 0);
  {
    PlayTheApp app(*server);
    // Until the server reads no more: its reply's write waits for a reader that never comes.
    const std::string frame = oneCommand();
    int refused_twice = 0;
    for (const auto until = Clock::now() + std::chrono::seconds(20); refused_twice < 2 && Clock::now() < until;) {
      if (::send(peer, frame.data(), frame.size(), MSG_DONTWAIT | MSG_NOSIGNAL) == static_cast<ssize_t>(frame.size())) {
        refused_twice = 0;
      } else {
        ++refused_twice;
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
      }
    }
    ASSERT_EQ(refused_twice, 2) << "the server never stopped reading";
    EXPECT_GT(app.applied(), 10);
  }
  const auto start = Clock::now();
  server.reset();
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 5.0) << "the closing waited on the write";
  ::close(peer);
}

}  // namespace
}  // namespace attnscope
