// Map colouring: a map's cells to RGBA texels, and the thread that colours large maps off the UI
// thread (docs/DESIGN.md §3.4 "Textures"). No GL here: HeatmapTextures uploads what it finishes.
#pragma once
#include <imgui.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "display/colormap.h"
#include "engine/stages.h"
#include "widgets/heatmap_textures.h"

namespace attnscope {

// A map's colours over a region: one RGBA texel per `step` × `step` cells.
struct Colouring {
  std::string id;  // the map's (HeatmapSpec::id)
  std::uint64_t key = 0;
  TextureRegion region;
  // What owns `values`' sources. A queued colouring does not keep them alive: a result that no
  // view holds any more (superseded while its maps waited) is dropped, not coloured.
  std::weak_ptr<const void> owner;
  StageMap values;  // read only while `owner` is locked
  ValueRange range;
  Colormap colormap = Colormap::Viridis;
  ColourScale scale = ColourScale::Linear;
  ImU32 masked = 0;
  std::vector<std::uint32_t> pixels;  // the result, rows × cols texels
  int rows = 0, cols = 0;
  bool dropped = false;  // finished without colours: nothing but the colouring held its owner
};

// Colours c.region of c.values into c.pixels (each texel the mean colour of its cells). `held`: the
// owner, locked by the caller; the colouring stops and returns false as soon as nothing else holds
// it (checked each texel row), so that a result no view shows (a GPT-2 layer's maps: ~100 MB) goes
// at once instead of living on beside the next pass's.
// `kept`: set while a newer result shares these colours (MapColouringThread::adopt): then it goes on.
bool colour(Colouring& c, const std::shared_ptr<const void>* held = nullptr, const std::atomic<bool>* kept = nullptr);

// The thread that colours large maps, one at a time, newest per map id: a new GPT-2 snapshot is 72
// maps of a million cells, a third of a second of colouring that would otherwise freeze one frame.
// It runs below the engine's priority and wakes the UI (wakeUi) when its queue is empty.
class MapColouringThread {
 public:
  MapColouringThread() = default;
  MapColouringThread(const MapColouringThread&) = delete;
  MapColouringThread& operator=(const MapColouringThread&) = delete;
  ~MapColouringThread() { stop(); }
  // Queues a colouring; one of the same map id still queued is replaced (it would be coloured for
  // nothing). The thread starts with the first.
  void submit(Colouring job);
  // A newer result has the same colours of the same map (a split result's rest, which copies its
  // first part's heads): the colouring queued or under way for it serves that one — it takes the
  // newer owner if queued, and is not dropped when the older result goes if under way.
  void adopt(Colouring job);
  // What finished since the last call, coloured or dropped.
  std::vector<Colouring> finished();
  void stop();  // drops what waits, joins the thread

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Colouring> jobs_;
  std::vector<Colouring> done_;
  std::string running_id_;  // the colouring under way: its map, colours and region
  std::uint64_t running_key_ = 0;
  TextureRegion running_region_;
  std::atomic<bool> running_kept_{false};  // … adopted: not dropped
  std::thread thread_;
  bool stop_ = false;
};

}  // namespace attnscope
