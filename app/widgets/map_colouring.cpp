#include "widgets/map_colouring.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <utility>

#include "state/ui_wake.h"

namespace attnscope {

bool colour(Colouring& c, const std::shared_ptr<const void>* held, const std::atomic<bool>* kept) {
  const StageMap& m = c.values;
  const TextureRegion& g = c.region;
  const int step = g.step;
  c.rows = (g.rows + step - 1) / step;
  c.cols = (g.cols + step - 1) / step;
  const auto& table = colormapTable(c.colormap);
  std::array<std::uint32_t, 256> texel;
  for (std::size_t k = 0; k < texel.size(); ++k) texel[k] = toImColor(table[k]);
  c.pixels.assign(static_cast<std::size_t>(c.rows) * static_cast<std::size_t>(c.cols), 0);
  // A row at a time: its values (derived stages computed here), their table indices, the colours;
  // with step > 1 the colours of a block's cells summed and averaged (the masked colour included).
  std::vector<float> row(static_cast<std::size_t>(m.cols()));
  std::vector<std::uint8_t> index(row.size());
  std::vector<std::uint32_t> sum(static_cast<std::size_t>(c.cols) * 3);
  std::vector<std::uint32_t> count(static_cast<std::size_t>(c.cols));
  for (int ti = 0; ti < c.rows; ++ti) {
    if (held && held->use_count() == 1 && !(kept && kept->load(std::memory_order_relaxed))) return false;
    std::fill(sum.begin(), sum.end(), 0u);
    std::fill(count.begin(), count.end(), 0u);
    for (int i = g.row0 + ti * step; i < std::min(g.row0 + (ti + 1) * step, g.row0 + g.rows); ++i) {
      m.readRow(i, row.data());
      rowIndices(row.data(), row.size(), c.range, c.scale, c.colormap == Colormap::Coolwarm, index.data());
      for (int j = g.col0; j < g.col0 + g.cols; ++j) {
        const float v = row[static_cast<std::size_t>(j)];
        const std::uint32_t rgba = isMasked(v) || zeroOffLogScale(v, c.range, c.scale)
                                       ? c.masked
                                       : texel[index[static_cast<std::size_t>(j)]];
        const std::size_t t = static_cast<std::size_t>((j - g.col0) / step);
        sum[3 * t] += rgba & 0xFF;
        sum[3 * t + 1] += (rgba >> 8) & 0xFF;
        sum[3 * t + 2] += (rgba >> 16) & 0xFF;
        ++count[t];
      }
    }
    std::uint32_t* out = c.pixels.data() + static_cast<std::size_t>(ti) * static_cast<std::size_t>(c.cols);
    for (int t = 0; t < c.cols; ++t) {
      const std::uint32_t n = std::max(count[static_cast<std::size_t>(t)], 1u);
      const std::size_t k = static_cast<std::size_t>(t);
      out[t] = IM_COL32((sum[3 * k] + n / 2) / n, (sum[3 * k + 1] + n / 2) / n, (sum[3 * k + 2] + n / 2) / n, 255);
    }
  }
  return true;
}

void MapColouringThread::submit(Colouring job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
  for (Colouring& queued : jobs_)
    if (queued.id == job.id) {
      queued = std::move(job);
      return;
    }
  jobs_.push_back(std::move(job));
  wake_.notify_one();
}

void MapColouringThread::adopt(Colouring job) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Colouring& queued : jobs_)
    if (queued.id == job.id && queued.key == job.key && queued.region == job.region) {
      queued.owner = std::move(job.owner), queued.values = job.values;
      return;
    }
  if (running_id_ == job.id && running_key_ == job.key && running_region_ == job.region)
    running_kept_.store(true, std::memory_order_relaxed);
}

std::vector<Colouring> MapColouringThread::finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(done_, {});
}

void MapColouringThread::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    jobs_.clear();
    wake_.notify_one();
  }
  if (thread_.joinable()) thread_.join();
  done_.clear();
}

void MapColouringThread::run() {
  // Below the engine: with two cores, the result the user waits for comes first; the colours of
  // a result already on its way out fill the gaps.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
    if (stop_) return;
    Colouring job = std::move(jobs_.front());
    jobs_.pop_front();
    running_id_ = job.id, running_key_ = job.key, running_region_ = job.region;
    running_kept_.store(false, std::memory_order_relaxed);
    lock.unlock();
    {
      const std::shared_ptr<const void> held = job.owner.lock();  // held while it is read
      job.dropped = !held || !colour(job, &held, &running_kept_);
      job.values = StageMap();  // the pixels are ours: the result may go once nothing else holds it
    }
    lock.lock();
    running_id_.clear(), running_key_ = 0;
    done_.push_back(std::move(job));
    // The window may be asleep: it uploads and draws the maps when the queue is empty (a frame
    // per map would cost more than the colouring; a software-rendered frame takes 25–45 ms).
    if (jobs_.empty()) wakeUi();
  }
}

}  // namespace attnscope
