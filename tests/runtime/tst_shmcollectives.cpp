// The sharding engine's shared-memory collectives (core/runtime/shmcollectives.h) on 2 and 4 real
// ranks of accel-runtime-probe collectives: every collective equals the formula computed here, the
// shared-memory and process-group paths agree, a peer that never arrives fails with a timeout
// message instead of a hang, shared memory is refused when a rank is elsewhere or switched off,
// and no segment is left in /dev/shm.
#include "tests/runtime/shardingsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <vector>

using namespace accel::test::sharding;

namespace {

// The probe's inputs (collectivesprobe.cpp): a fixed value per (rank, index).
double value(int rank, int64_t index)
{
    uint64_t h = uint64_t(rank) * 1000003u + uint64_t(index) + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    h ^= h >> 31;
    return double(h >> 40) / 8388608.0 - 1.0;
}

constexpr int64_t kN = 40003; // elements per rank: several 64 KiB slots' worth

template <typename T>
std::vector<T> load(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bytes = file.readAll();
    std::vector<T> values(size_t(bytes.size()) / sizeof(T));
    std::memcpy(values.data(), bytes.constData(), values.size() * sizeof(T));
    return values;
}

// What rank `rank` must hold after each collective, summed in rank order in T.
template <typename T>
std::vector<T> expected(const QString &name, int rank, int world)
{
    std::vector<T> out;
    const auto sum = [&](int64_t index) {
        T total = T(value(0, index));
        for (int q = 1; q < world; ++q)
            total += T(value(q, index));
        return total;
    };
    if (name.startsWith("allreduce") || name == "async_allreduce_f32") {
        for (int64_t i = 0; i < kN; ++i)
            out.push_back(sum(i));
    } else if (name.startsWith("reducescatter")) {
        for (int64_t i = 0; i < kN; ++i)
            out.push_back(sum(rank * kN + i));
    } else {
        const int64_t offset = name == "async_second_f32" ? kN : 0;
        for (int q = 0; q < world; ++q) {
            for (int64_t i = 0; i < kN; ++i)
                out.push_back(T(value(q, offset + i)));
        }
    }
    return out;
}

const QStringList kFloatCases{"allreduce_f32",   "reducescatter_f32", "allgather_f32",
                              "async_first_f32", "async_second_f32",  "async_allreduce_f32"};
const QStringList kDoubleCases{"allreduce_f64", "reducescatter_f64", "allgather_f64"};

// Largest difference between a file and the formula; 0 means bit-identical. -1: wrong size.
template <typename T>
double differenceFromFormula(const QString &dir, const QString &name, int rank, int world)
{
    const auto got = load<T>(dir + "/" + name + ".rank" + QString::number(rank) + ".bin");
    const auto want = expected<T>(name, rank, world);
    if (got.size() != want.size())
        return -1;
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
        if (std::memcmp(&got[i], &want[i], sizeof(T)) != 0)
            worst = std::max(worst, std::abs(double(got[i]) - double(want[i])) + 1e-300);
    }
    return worst;
}

QStringList segmentsOf(const QString &dir, int world)
{
    QStringList left;
    for (int r = 0; r < world; ++r) {
        QFile file(dir + "/pid.rank" + QString::number(r));
        if (!file.open(QIODevice::ReadOnly))
            return {"(no pid file of rank " + QString::number(r) + ")"};
        const QString pid = QString::fromUtf8(file.readAll()).trimmed();
        left += QDir("/dev/shm").entryList({"accel-allreduce-" + pid + "-*"}, QDir::Files | QDir::System);
    }
    return left;
}

} // namespace

class tst_ShmCollectives : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

    QString run(int world, const QString &transport, const QStringList &env = {}, const QStringList &extra = {})
    {
        const QString out = m_dir.filePath(QString("%1_%2").arg(transport).arg(world) + extra.join('_'));
        QDir().mkpath(out);
        Job job = runJob(accel::test::binDir() + "/accel-runtime-probe", world,
                         QStringList{"collectives", "check", "transport=" + transport, "out=" + out, "slot_kb=64",
                                     "n=" + QString::number(kN)} +
                             extra,
                         env);
        if (!job.ok)
            qWarning("probe failed: %s", qPrintable(job.errors));
        m_lastOut = job.out;
        return job.ok ? out : QString();
    }
    QString m_lastOut;

private Q_SLOTS:
    void everyCollectiveEqualsTheFormula_data()
    {
        QTest::addColumn<int>("world");
        QTest::addColumn<QString>("transport");
        QTest::newRow("shared memory x2") << 2 << "shm";
        QTest::newRow("shared memory x4") << 4 << "shm";
        QTest::newRow("process group x2") << 2 << "pg";
        QTest::newRow("process group x4") << 4 << "pg";
    }
    void everyCollectiveEqualsTheFormula()
    {
        QFETCH(int, world);
        QFETCH(QString, transport);
        QVERIFY(m_dir.isValid());
        const QString out = run(world, transport);
        QVERIFY(!out.isEmpty());
        QVERIFY2(m_lastOut.contains(transport == "shm" ? "transport shared-memory\n" : "transport process-group\n"),
                 qPrintable(m_lastOut));
        for (int rank = 0; rank < world; ++rank) {
            for (const QString &name : kFloatCases) {
                const double worst = differenceFromFormula<float>(out, name, rank, world);
                QVERIFY2(worst >= 0, qPrintable(name + ": wrong size"));
                // Shared memory sums in rank order: exactly the formula. Gloo's order may differ
                // from 4 ranks on (then within float rounding of a 4-term sum of values in [-1, 1)).
                if (transport == "shm" || world == 2)
                    QVERIFY2(worst == 0, qPrintable(QString("%1 rank %2: off by %3").arg(name).arg(rank).arg(worst)));
                else
                    QVERIFY2(worst <= 1e-6,
                             qPrintable(QString("%1 rank %2: off by %3").arg(name).arg(rank).arg(worst)));
                if (worst > 0)
                    qInfo("%s on %d ranks over gloo, rank %d: not bit-identical to the rank-order sum (off by %g)",
                          qPrintable(name), world, rank, worst);
            }
            for (const QString &name : kDoubleCases) {
                const double worst = differenceFromFormula<double>(out, name, rank, world);
                QVERIFY2(worst >= 0, qPrintable(name + ": wrong size"));
                QVERIFY2(transport == "shm" || world == 2 ? worst == 0 : worst <= 1e-12,
                         qPrintable(QString("%1 rank %2: off by %3").arg(name).arg(rank).arg(worst)));
            }
            const auto bytes = load<uint8_t>(out + "/allgather_u8.rank" + QString::number(rank) + ".bin");
            QCOMPARE(bytes.size(), size_t(1001 * world));
            for (int q = 0; q < world; ++q) {
                for (int i = 0; i < 1001; ++i)
                    QCOMPARE(int(bytes[size_t(q * 1001 + i)]), (q * 7 + i) % 251);
            }
            // Every rank holds the same sums, bit for bit.
            for (const QString name : {"allreduce_f32", "allreduce_f64", "async_allreduce_f32"}) {
                QCOMPARE(load<uint8_t>(out + "/" + name + ".rank" + QString::number(rank) + ".bin"),
                         load<uint8_t>(out + "/" + name + ".rank0.bin"));
            }
        }
        QCOMPARE(segmentsOf(out, world), QStringList());
    }

    void sharedMemoryAndProcessGroupAgree()
    {
        // Both paths of the previous test: all-gathers equal everywhere; sums equal bit for bit on
        // 2 ranks (a + b == b + a), and on 4 within float rounding.
        for (int world : {2, 4}) {
            const QString shm = m_dir.filePath(QString("shm_%1").arg(world));
            const QString pg = m_dir.filePath(QString("pg_%1").arg(world));
            for (int rank = 0; rank < world; ++rank) {
                for (const QString &name : kFloatCases + kDoubleCases) {
                    const QString file = "/" + name + ".rank" + QString::number(rank) + ".bin";
                    const bool isDouble = name.endsWith("_f64");
                    const auto a = load<uint8_t>(shm + file), b = load<uint8_t>(pg + file);
                    QVERIFY2(!a.empty() && a.size() == b.size(), qPrintable(name));
                    if (world == 2 || name.contains("gather") || name.startsWith("async_first") ||
                        name.startsWith("async_second")) {
                        QVERIFY2(a == b, qPrintable(QString("%1 on %2 ranks differs").arg(name).arg(world)));
                        continue;
                    }
                    double worst = 0;
                    size_t differing = 0;
                    if (isDouble) {
                        const auto x = load<double>(shm + file), y = load<double>(pg + file);
                        for (size_t i = 0; i < x.size(); ++i) {
                            worst = std::max(worst, std::abs(x[i] - y[i]));
                            differing += x[i] != y[i];
                        }
                    } else {
                        const auto x = load<float>(shm + file), y = load<float>(pg + file);
                        for (size_t i = 0; i < x.size(); ++i) {
                            worst = std::max(worst, double(std::abs(x[i] - y[i])));
                            differing += x[i] != y[i];
                        }
                    }
                    QVERIFY2(worst <= (isDouble ? 1e-12 : 1e-6), qPrintable(name));
                    if (rank == 0)
                        qInfo("%s, 4 ranks: shared memory and gloo differ in %zu of %zu values (at most %g)",
                              qPrintable(name), differing, a.size() / (isDouble ? 8 : 4), worst);
                }
            }
        }
    }

    void peerThatNeverArrivesFailsWithATimeout_data()
    {
        QTest::addColumn<QString>("transport");
        QTest::newRow("shared memory") << "shm";
        QTest::newRow("process group") << "pg";
    }
    void peerThatNeverArrivesFailsWithATimeout()
    {
        QFETCH(QString, transport);
        QElapsedTimer clock;
        clock.start();
        Job job = runJob(accel::test::binDir() + "/accel-runtime-probe", 2,
                         {"collectives", "stall", "transport=" + transport, "timeout=3"});
        const qint64 elapsed = clock.elapsed();
        QVERIFY(!job.ok);
        QVERIFY2(job.out.contains(transport == "shm" ? "transport shared-memory" : "transport process-group"),
                 qPrintable(job.out));
        QVERIFY2(job.errors.contains("accel-runtime-probe collectives: "), qPrintable(job.errors));
        if (transport == "shm")
            QVERIFY2(job.errors.contains("rank 1 did not reach step 1 within 3 s (a peer rank stopped or hangs)"),
                     qPrintable(job.errors));
        QVERIFY2(elapsed < 30000, qPrintable(QString("took %1 ms").arg(elapsed)));
        qInfo("%s: rank 0 failed after %lld ms: %s", qPrintable(transport), elapsed, qPrintable(job.errors.trimmed()));
    }

    void sharedMemoryIsRefusedWhenARankIsElsewhereOrSwitchedOff_data()
    {
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<QString>("reason");
        QTest::newRow("other host") << QStringList() << QStringList{"other_host=elsewhere.example"}
                                    << "rank 0: rank 1 runs on another host";
        QTest::newRow("ACCEL_SHM_COLLECTIVES=0")
            << QStringList{"ACCEL_SHM_COLLECTIVES=0"} << QStringList() << "rank 0: ACCEL_SHM_COLLECTIVES=0";
        QTest::newRow("ACCEL_SHM_ALLREDUCE=0")
            << QStringList{"ACCEL_SHM_ALLREDUCE=0"} << QStringList() << "rank 0: ACCEL_SHM_ALLREDUCE=0";
    }
    void sharedMemoryIsRefusedWhenARankIsElsewhereOrSwitchedOff()
    {
        QFETCH(QStringList, env);
        QFETCH(QStringList, extra);
        QFETCH(QString, reason);
        const QString out = run(2, "shm", env, extra);
        QVERIFY(!out.isEmpty());
        QVERIFY2(m_lastOut.contains("transport process-group: " + reason + "\n"), qPrintable(m_lastOut));
        QVERIFY2(m_lastOut.contains("transport process-group\n"), qPrintable(m_lastOut));
        // The process group still computes the same.
        QCOMPARE(differenceFromFormula<float>(out, "reducescatter_f32", 1, 2), 0.0);
        QCOMPARE(segmentsOf(out, 2), QStringList());
    }
};

QTEST_GUILESS_MAIN(tst_ShmCollectives)
#include "tst_shmcollectives.moc"
