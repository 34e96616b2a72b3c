// The channel into a running app (docs/DESIGN.md §3.8 "The channel"): a Unix-domain socket on which
// the same user's programs — `attnscope.show` in a notebook, a second `attnscope FILE` — send
// commands of the command table (core/editing/channel_message.h: frames of JSON and float32
// tensors). Nothing received is ever run: a message is checked whole, as `--commands` is, then its
// commands go into the app's queue; the sender hears one reply per message — applied, or the one
// line saying why not.
//
// The socket is $ATTNSCOPE_CHANNEL, else $XDG_RUNTIME_DIR/attnscope/channel, else
// /tmp/attnscope-UID/channel; its folder is made 0700 and refused when it is not the user's own
// folder with no access for others. A connection whose peer (SO_PEERCRED) is another user is
// answered with a refusal and closed. Up to kMaxConnections connections are served at once, each on
// a thread of its own with its reads and writes bounded by a timeout: a silent or stalled peer, or
// one that never reads its replies, holds its own connection only (one at a time, it held every
// other sender for 30 s), and never the app's closing; a frame begun must arrive whole within a
// deadline (a byte every 29 s would hold a connection for good). The messages being received at once share
// the memory budget.
#pragma once
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "editing/command.h"
#include "engine/model_config.h"

namespace attnscope {

struct ChannelOptions {
  double read_timeout_s = 30;    // a frame's bytes must keep coming: no more than this between them
  double frame_timeout_s = 120;  // a frame begun comes whole within this, a second more a 64 MiB of payload
  double reply_timeout_s = 600;  // the window may be asking a question (unsaved changes)
};

// Where the socket is (or would be), from the environment as above. Empty with *why set when there
// is no usable place (the folder is another user's, or open to others).
std::string channelPath(std::string* why = nullptr);

// A frame sent to the app listening at `path` and its reply (the client side: a second `attnscope
// FILE`, tests). Throws InputError when nothing listens there or the reply says no.
nlohmann::json sendToChannel(const std::string& path, const std::string& frame, double timeout_s = 30);

class ChannelServer {
 public:
  static constexpr int kMaxConnections = 8;  // more wait in the socket's backlog (64) until one ends

  explicit ChannelServer(Limits limits, ChannelOptions options = {});
  ~ChannelServer();  // stops listening, removes the socket, fails what is still waiting
  ChannelServer(const ChannelServer&) = delete;
  ChannelServer& operator=(const ChannelServer&) = delete;

  // Listens at `path`: "" when listening, else why not (another app listens there, the folder is
  // unsafe, a socket error). A stale socket file (nothing answers) is replaced.
  std::string listen(const std::string& path);
  bool listening() const { return listen_fd_ >= 0; }
  const std::string& path() const { return path_; }

  // The commands of messages received since the last call, on the UI thread at the start of a
  // frame; each carries the listener that answers its sender.
  std::vector<Command> take();
  // Of the memory budget, what the messages being received hold now (tests).
  std::size_t receivingBytes();

 private:
  void serve();
  void handle(int fd);
  // Takes `bytes` of the memory budget for a message being received; false when the messages
  // received at once would pass it. give() returns them (once its commands are queued, or refused).
  bool take(std::size_t bytes);
  void give(std::size_t bytes);

  struct Connection {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  Limits limits_;
  ChannelOptions options_;
  std::string path_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};  // set as the server closes: its connections' reads, writes and waits end
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Command> inbox_;           // under mutex_
  std::size_t receiving_bytes_ = 0;      // under mutex_: the memory the messages being received hold
  std::vector<Connection> connections_;  // the serving thread's own
};

}  // namespace attnscope
