// Which samples each rank reads, with Accelerate's sharding semantics (facts 7.2): batches are
// dealt round-robin to the ranks (or one global batch is cut into per-rank slices with
// split_batches); even_batches pads the last round by wrapping around to the start of the
// (shuffled) order so every rank gets the same number of full batches; drop_last keeps complete
// rounds only. The loader also tracks where the current epoch is, which the Accelerator needs for
// gradient accumulation (sync at the last batch) and gatherForMetrics (drop the padded tail).
// No libtorch: a recipe turns the index batches into tensors itself.
#pragma once

#include "core/common/result.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace accel::runtime {

struct DataLoaderOptions {
    bool splitBatches = false;
    bool evenBatches = true;
    // Sample order is a permutation seeded with dataSeed + epoch, identical on every rank (this is
    // what Accelerate's seedable sampler does; its default sampler reaches the same result by
    // synchronising the generator from rank 0 every epoch).
    uint64_t dataSeed = 0;
};

class ShardedDataLoader {
public:
    // batchSize is per rank, or global with splitBatches (then it must divide by worldSize).
    static Result<std::shared_ptr<ShardedDataLoader>> create(int64_t datasetSize, int64_t batchSize, bool shuffle,
                                                             bool dropLast, int rank, int worldSize,
                                                             const DataLoaderOptions &options);

    // The batches (sample indices) this rank reads in `epoch`, in order.
    std::vector<std::vector<int64_t>> batchesForEpoch(int64_t epoch) const;
    // The global sample order of an epoch (before padding).
    std::vector<int64_t> order(int64_t epoch) const;
    // Batches per epoch on this rank.
    int64_t length() const;
    // Real samples in the last global batch when it is padded (even_batches), else 0.
    int64_t remainder() const;
    int64_t datasetSize() const { return m_datasetSize; }
    int64_t perRankBatchSize() const { return m_perRank; }
    int64_t globalBatchSize() const { return m_perRank * m_worldSize; }

    // Iteration: beginEpoch() then next() until it returns nothing. skipBatches resumes mid-epoch.
    void beginEpoch(int64_t epoch, int64_t skipBatches = 0);
    std::optional<std::vector<int64_t>> next();
    // True while the batch returned last by next() is the epoch's last one.
    bool endOfDataLoader() const { return m_active && m_position == int64_t(m_current.size()); }
    bool active() const { return m_active; }
    int64_t epoch() const { return m_epoch; }
    // Batches of the current epoch already returned.
    int64_t position() const { return m_position; }

    // Where a restored checkpoint stopped: the recipe resumes with beginEpoch(resumeEpoch(),
    // resumeSkip()). Set by Accelerator::loadState.
    void setResumePoint(int64_t epoch, int64_t skipBatches)
    {
        m_resumeEpoch = epoch;
        m_resumeSkip = skipBatches;
    }
    int64_t resumeEpoch() const { return m_resumeEpoch; }
    int64_t resumeSkip() const { return m_resumeSkip; }

private:
    ShardedDataLoader() = default;

    int64_t m_datasetSize = 0;
    int64_t m_perRank = 1;
    bool m_shuffle = false;
    bool m_dropLast = false;
    int m_rank = 0;
    int m_worldSize = 1;
    DataLoaderOptions m_options;

    std::vector<std::vector<int64_t>> m_current;
    int64_t m_epoch = 0;
    int64_t m_position = 0;
    bool m_active = false;
    int64_t m_resumeEpoch = 0;
    int64_t m_resumeSkip = 0;
};

} // namespace accel::runtime
