// The colouring thread of large maps (app/widgets/map_colouring): what it colours, and that it
// keeps no result alive that no view shows any more (docs/DESIGN.md §3.4 "Textures").
#include "widgets/map_colouring.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

namespace attnscope {
namespace {

// A map of rows × cols values 0 … 1 with a masked diagonal, as a result's owner holds it.
std::shared_ptr<const Matrix> mapOf(int rows, int cols) {
  auto m = std::make_shared<Matrix>(rows, cols);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j)
      (*m)(i, j) = i == j ? -std::numeric_limits<float>::infinity() : static_cast<float>((i * 7 + j * 3) % 101) / 100;
  return m;
}

Colouring colouringOf(const std::string& id, const std::shared_ptr<const Matrix>& map, int step = 1) {
  Colouring c;
  c.id = id, c.key = 1, c.owner = map, c.values = StageMap(*map);
  c.region = TextureRegion{0, 0, static_cast<int>(map->rows()), static_cast<int>(map->cols()), step};
  c.range = ValueRange{0.0f, 1.0f};
  c.masked = IM_COL32(1, 2, 3, 255);
  return c;
}

// Everything the thread finished, once `count` have: they come in the order they were queued.
std::vector<Colouring> waitFor(MapColouringThread& thread, std::size_t count) {
  std::vector<Colouring> all;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (all.size() < count && std::chrono::steady_clock::now() < until) {
    for (Colouring& c : thread.finished()) all.push_back(std::move(c));
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return all;
}

TEST(MapColouring, TheThreadColoursAsTheUiThreadDoes) {
  const auto map = mapOf(300, 260);
  for (int step : {1, 3}) {
    Colouring here = colouringOf("m", map, step);
    ASSERT_TRUE(colour(here));
    EXPECT_EQ(here.rows, (300 + step - 1) / step);
    EXPECT_EQ(here.cols, (260 + step - 1) / step);
    if (step == 1) {
      EXPECT_EQ(here.pixels[0], IM_COL32(1, 2, 3, 255));  // the masked diagonal
    }
    MapColouringThread thread;
    thread.submit(colouringOf("m", map, step));
    const std::vector<Colouring> done = waitFor(thread, 1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_FALSE(done[0].dropped);
    EXPECT_EQ(done[0].pixels, here.pixels) << "step " << step;
  }
}

// A result superseded while its maps wait to be coloured goes at once: the queue does not hold it,
// and its colouring is dropped, not done.
// (Queued behind a large map, so that it is still queued when its result goes.)
TEST(MapColouring, AResultNoViewHoldsIsNotKeptNorColoured) {
  MapColouringThread thread;
  const auto shown = mapOf(2000, 2000);
  auto superseded = mapOf(512, 512);
  const std::weak_ptr<const Matrix> gone = superseded;
  thread.submit(colouringOf("a", shown));
  thread.submit(colouringOf("b", superseded));
  superseded.reset();  // the views moved on to a newer result
  EXPECT_TRUE(gone.expired()) << "a queued colouring kept the result alive";
  const std::vector<Colouring> done = waitFor(thread, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].id, "a");
  EXPECT_FALSE(done[0].dropped);
  EXPECT_EQ(done[1].id, "b");
  EXPECT_TRUE(done[1].dropped);
  EXPECT_TRUE(done[1].pixels.empty());
}

// A newer result with the same colours of a map (a split result's rest copies its first part's
// heads) takes over the colouring queued for the older one: coloured, not dropped, when the older
// result goes. (Queued behind a large map, so that it is still queued when adopted.)
TEST(MapColouring, ANewerResultWithTheSameColoursTakesTheColouringOver) {
  MapColouringThread thread;
  const auto large = mapOf(2000, 2000);
  auto older = mapOf(256, 256);
  const auto newer = std::make_shared<const Matrix>(*older);  // the same values, another owner
  const std::weak_ptr<const Matrix> gone = older;
  thread.submit(colouringOf("large", large));
  thread.submit(colouringOf("a", older));
  thread.adopt(colouringOf("a", newer));
  older.reset();
  EXPECT_TRUE(gone.expired()) << "the older result kept alive";
  const std::vector<Colouring> done = waitFor(thread, 2);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[1].id, "a");
  EXPECT_FALSE(done[1].dropped) << "dropped: the newer result's colours were never made";
  Colouring here = colouringOf("a", newer);
  ASSERT_TRUE(colour(here));
  EXPECT_EQ(done[1].pixels, here.pixels);
}

// The colouring in progress lets its result go as soon as it is the result's last holder.
TEST(MapColouring, AColouringStopsWhenItAloneHoldsItsResult) {
  std::shared_ptr<const Matrix> map = mapOf(64, 64);
  Colouring c = colouringOf("m", map);
  std::shared_ptr<const void> held = c.owner.lock();
  EXPECT_TRUE(colour(c, &held)) << "a view still holds the result";
  map.reset();
  Colouring alone = colouringOf("m", std::static_pointer_cast<const Matrix>(held));
  EXPECT_FALSE(colour(alone, &held)) << "nothing but the colouring holds the result";
  const std::atomic<bool> adopted{true};  // … unless a newer result shares its colours
  EXPECT_TRUE(colour(alone, &held, &adopted));
}

}  // namespace
}  // namespace attnscope
