#include "core/runtime/shardeddataloader.h"

#include <random>
#include <string>

namespace accel::runtime {

Result<std::shared_ptr<ShardedDataLoader>> ShardedDataLoader::create(int64_t datasetSize, int64_t batchSize,
                                                                     bool shuffle, bool dropLast, int rank,
                                                                     int worldSize, const DataLoaderOptions &options)
{
    if (datasetSize < 0)
        return makeError(ErrorCode::InvalidInput,
                         "data loader: dataset size must not be negative, got " + std::to_string(datasetSize));
    if (batchSize < 1)
        return makeError(ErrorCode::InvalidInput,
                         "data loader: batch size must be at least 1, got " + std::to_string(batchSize));
    if (worldSize < 1 || rank < 0 || rank >= worldSize)
        return makeError(ErrorCode::InvalidInput, "data loader: rank " + std::to_string(rank) + " outside world size " +
                                                      std::to_string(worldSize));
    if (options.splitBatches && batchSize % worldSize != 0)
        return makeError(ErrorCode::InvalidInput,
                         "data loader: split_batches needs a batch size divisible by the number of processes (" +
                             std::to_string(worldSize) + "), got " + std::to_string(batchSize));
    std::shared_ptr<ShardedDataLoader> loader(new ShardedDataLoader);
    loader->m_datasetSize = datasetSize;
    loader->m_perRank = options.splitBatches ? batchSize / worldSize : batchSize;
    loader->m_shuffle = shuffle;
    loader->m_dropLast = dropLast;
    loader->m_rank = rank;
    loader->m_worldSize = worldSize;
    loader->m_options = options;
    return loader;
}

std::vector<int64_t> ShardedDataLoader::order(int64_t epoch) const
{
    std::vector<int64_t> indices(static_cast<size_t>(m_datasetSize));
    for (int64_t i = 0; i < m_datasetSize; ++i)
        indices[size_t(i)] = i;
    if (m_shuffle && m_datasetSize > 1) {
        // Fisher-Yates with plain modulo draws: the same permutation on every rank and platform.
        std::mt19937_64 generator(m_options.dataSeed + uint64_t(epoch));
        for (int64_t i = m_datasetSize - 1; i > 0; --i) {
            const int64_t j = int64_t(generator() % uint64_t(i + 1));
            std::swap(indices[size_t(i)], indices[size_t(j)]);
        }
    }
    return indices;
}

int64_t ShardedDataLoader::length() const
{
    const int64_t global = globalBatchSize();
    if (m_dropLast)
        return m_datasetSize / global;
    const int64_t rounds = (m_datasetSize + global - 1) / global;
    if (m_options.evenBatches || rounds == 0)
        return rounds;
    // Uneven: the last round only reaches the ranks that still have samples.
    const int64_t lastStart = (rounds - 1) * global + int64_t(m_rank) * m_perRank;
    return lastStart < m_datasetSize ? rounds : rounds - 1;
}

int64_t ShardedDataLoader::remainder() const
{
    if (m_dropLast || !m_options.evenBatches)
        return 0;
    return m_datasetSize % globalBatchSize();
}

std::vector<std::vector<int64_t>> ShardedDataLoader::batchesForEpoch(int64_t epoch) const
{
    std::vector<std::vector<int64_t>> batches;
    if (m_datasetSize == 0)
        return batches;
    const std::vector<int64_t> indices = order(epoch);
    const int64_t global = globalBatchSize();
    const int64_t rounds = m_dropLast ? m_datasetSize / global : (m_datasetSize + global - 1) / global;
    for (int64_t round = 0; round < rounds; ++round) {
        const int64_t start = round * global + int64_t(m_rank) * m_perRank;
        std::vector<int64_t> batch;
        batch.reserve(size_t(m_perRank));
        for (int64_t k = 0; k < m_perRank; ++k) {
            const int64_t position = start + k;
            if (position < m_datasetSize)
                batch.push_back(indices[size_t(position)]);
            else if (m_options.evenBatches)
                batch.push_back(indices[size_t(position % m_datasetSize)]); // wrap around
        }
        if (!batch.empty())
            batches.push_back(std::move(batch));
    }
    return batches;
}

void ShardedDataLoader::beginEpoch(int64_t epoch, int64_t skipBatches)
{
    m_epoch = epoch;
    m_current = batchesForEpoch(epoch);
    m_position = std::min<int64_t>(std::max<int64_t>(skipBatches, 0), int64_t(m_current.size()));
    m_active = true;
}

std::optional<std::vector<int64_t>> ShardedDataLoader::next()
{
    if (!m_active || m_position >= int64_t(m_current.size())) {
        m_active = false;
        return std::nullopt;
    }
    return m_current[size_t(m_position++)];
}

} // namespace accel::runtime
