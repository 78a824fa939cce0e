// Data sharding (Accelerate's semantics) and the environment a rank reads; no libtorch needed.
#include "core/runtime/distributedenv.h"
#include "core/runtime/metricswriter.h"
#include "core/runtime/shardeddataloader.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace accel::runtime;

namespace {

std::vector<std::vector<int64_t>> batches(int64_t size, int64_t batch, int rank, int world, bool dropLast,
                                          bool even = true, bool split = false, bool shuffle = false)
{
    DataLoaderOptions options;
    options.evenBatches = even;
    options.splitBatches = split;
    auto loader = ShardedDataLoader::create(size, batch, shuffle, dropLast, rank, world, options);
    return loader ? (*loader)->batchesForEpoch(0) : std::vector<std::vector<int64_t>>{};
}

DistributedEnv::Lookup lookupFrom(std::map<std::string, std::string> vars)
{
    auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
    return [shared](const char *name) -> const char * {
        auto it = shared->find(name);
        return it == shared->end() ? nullptr : it->second.c_str();
    };
}

} // namespace

class tst_ShardedDataLoader : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundRobinWithWrapAround()
    {
        // 10 samples, batch 3, 2 ranks: rounds of 6; the last round wraps to the start.
        using B = std::vector<std::vector<int64_t>>;
        QCOMPARE(batches(10, 3, 0, 2, false), (B{{0, 1, 2}, {6, 7, 8}}));
        QCOMPARE(batches(10, 3, 1, 2, false), (B{{3, 4, 5}, {9, 0, 1}}));
        auto loader = ShardedDataLoader::create(10, 3, false, false, 0, 2, {});
        QCOMPARE((*loader)->remainder(), int64_t(4));
        QCOMPARE((*loader)->length(), int64_t(2));
    }

    void unevenAndDropLast()
    {
        using B = std::vector<std::vector<int64_t>>;
        QCOMPARE(batches(10, 3, 1, 2, false, false), (B{{3, 4, 5}, {9}}));
        QCOMPARE(batches(7, 3, 1, 2, false, false), (B{{3, 4, 5}}));
        QCOMPARE(batches(10, 3, 1, 2, true), (B{{3, 4, 5}}));
        auto loader = ShardedDataLoader::create(7, 3, false, false, 1, 2, DataLoaderOptions{false, false, 0});
        QCOMPARE((*loader)->length(), int64_t(1));
    }

    void splitBatches()
    {
        using B = std::vector<std::vector<int64_t>>;
        QCOMPARE(batches(8, 4, 1, 2, false, true, true), (B{{2, 3}, {6, 7}}));
        auto bad = ShardedDataLoader::create(8, 3, false, false, 0, 2, DataLoaderOptions{true, true, 0});
        QVERIFY(!bad);
        QVERIFY(QString::fromStdString(bad.error().message).contains("divisible"));
    }

    void tinyDatasetCycles()
    {
        using B = std::vector<std::vector<int64_t>>;
        QCOMPARE(batches(2, 3, 1, 2, false), (B{{1, 0, 1}}));
    }

    void shuffleIsSeededAndSharedByRanks()
    {
        auto a = batches(50, 5, 0, 2, false, true, false, true);
        auto b = batches(50, 5, 1, 2, false, true, false, true);
        std::set<int64_t> seen;
        for (const auto &batch : a)
            seen.insert(batch.begin(), batch.end());
        for (const auto &batch : b)
            seen.insert(batch.begin(), batch.end());
        QCOMPARE(seen.size(), size_t(50)); // the two ranks together cover the data once
        auto loader = ShardedDataLoader::create(50, 5, true, false, 0, 2, {});
        QVERIFY((*loader)->order(0) != (*loader)->order(1));
        QCOMPARE((*loader)->order(3), (*loader)->order(3));
    }

    void iterationTracksLastBatchAndResume()
    {
        auto loader = *ShardedDataLoader::create(10, 3, false, false, 0, 2, {});
        loader->beginEpoch(0);
        QVERIFY(loader->next());
        QVERIFY(!loader->endOfDataLoader());
        QVERIFY(loader->next());
        QVERIFY(loader->endOfDataLoader());
        QVERIFY(!loader->next());
        QVERIFY(!loader->active());
        loader->beginEpoch(1, 1);
        QCOMPARE(loader->position(), int64_t(1));
        QVERIFY(loader->next());
        QVERIFY(loader->endOfDataLoader());
    }

    void environmentLikeAccelerate()
    {
        auto env = DistributedEnv::fromEnvironment(lookupFrom({{"OMPI_COMM_WORLD_SIZE", "4"},
                                                               {"OMPI_COMM_WORLD_RANK", "2"},
                                                               {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                                                               {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                                               {"MASTER_ADDR", "10.0.0.1"},
                                                               {"ACCELERATE_MIXED_PRECISION", "bf16"},
                                                               {"ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"},
                                                               {"OMP_NUM_THREADS", "3"}}));
        QVERIFY(env);
        QCOMPARE(env->rank, 2);
        QCOMPARE(env->worldSize, 4);
        QCOMPARE(env->localRank, 0);
        QCOMPARE(env->localWorldSize, 2);
        QVERIFY(env->distributed);
        QCOMPARE(env->masterPort, 29500);
        QCOMPARE(env->masterAddr, std::string("10.0.0.1"));
        QCOMPARE(env->mixedPrecision, MixedPrecision::Bf16);
        QCOMPARE(env->gradientAccumulationSteps, 4);
        QCOMPARE(env->numThreads, 3);

        // RANK wins over the MPI spelling.
        auto canonical = DistributedEnv::fromEnvironment(lookupFrom({{"RANK", "1"},
                                                                     {"PMI_RANK", "0"},
                                                                     {"WORLD_SIZE", "2"},
                                                                     {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                                                     {"MASTER_PORT", "1234"}}));
        QVERIFY(canonical);
        QCOMPARE(canonical->rank, 1);
        QVERIFY(canonical->useAgentStore);
        QCOMPARE(canonical->masterPort, 1234);

        auto single = DistributedEnv::fromEnvironment(lookupFrom({}));
        QVERIFY(single);
        QVERIFY(!single->distributed);
        QVERIFY(single->numThreads >= 1);
    }

    void environmentErrorsNameTheVariable()
    {
        auto bad = DistributedEnv::fromEnvironment(lookupFrom({{"WORLD_SIZE", "2"}, {"RANK", "5"}}));
        QVERIFY(!bad);
        QVERIFY2(QString::fromStdString(bad.error().message).contains("RANK=5"), bad.error().message.c_str());
        auto multiNode = DistributedEnv::fromEnvironment(lookupFrom({{"WORLD_SIZE", "4"}, {"LOCAL_WORLD_SIZE", "2"}}));
        QVERIFY(!multiNode);
        QVERIFY(QString::fromStdString(multiNode.error().message).contains("MASTER_ADDR"));
        auto precision = DistributedEnv::fromEnvironment(lookupFrom({{"ACCELERATE_MIXED_PRECISION", "fp4"}}));
        QVERIFY(!precision);
        QVERIFY(QString::fromStdString(precision.error().message).contains("no, fp16, bf16, fp8"));
    }

    void metricsLines()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("metrics/rank1.jsonl");
        {
            MetricsWriter writer(path.toStdString(), 1);
            QVERIFY(writer.enabled());
            writer.log(5, {{"loss", 2.5}, {"lr", 0.001}, {"grad_norm", std::nan("")}});
            writer.log(6, {{"eval_loss", 2.0}}, "eval");
        }
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> lines = file.readAll().trimmed().split('\n');
        QCOMPARE(lines.size(), 2);
        QVERIFY(lines[0].startsWith("{\"v\":1,\"time\":"));
        QVERIFY(lines[0].contains("\"rank\":1,\"step\":5,\"loss\":2.5,\"lr\":0.001,\"grad_norm\":null}"));
        QVERIFY(lines[1].contains("\"kind\":\"eval\""));
        QVERIFY(MetricsWriter::residentBytes() > 0);
    }
};

QTEST_GUILESS_MAIN(tst_ShardedDataLoader)
#include "tst_shardeddataloader.moc"
