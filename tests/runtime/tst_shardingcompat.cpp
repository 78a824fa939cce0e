// The ShardingEngine against PyTorch's own FSDP (FSDP1 FullyShardedDataParallel and FSDP2
// fully_shard, the project's torch in Python, gloo on CPU): the same model written in Python
// (tests/runtime/sharding_reference.py), the probe's initial weights and data, the same ranks and
// steps reach the same parameters within 1e-5.
#include "tests/runtime/shardingsupport.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

using namespace accel::test::sharding;

class tst_ShardingCompat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesPyTorchFsdp_data()
    {
        QTest::addColumn<int>("world");
        QTest::addColumn<int>("local");
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("python");
        const QStringList fsdp1{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=1",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP"};
        const QStringList fsdp2{"ACCELERATE_USE_FSDP=true", "FSDP_VERSION=2",
                                "FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP"};
        QTest::newRow("FULL_SHARD x2") << 2 << 2 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=FULL_SHARD"}
                                       << "FULL_SHARD";
        QTest::newRow("SHARD_GRAD_OP x2")
            << 2 << 2 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=SHARD_GRAD_OP"} << "SHARD_GRAD_OP";
        QTest::newRow("NO_SHARD x2") << 2 << 2 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=NO_SHARD"} << "NO_SHARD";
        QTest::newRow("FULL_SHARD x4") << 4 << 4 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=FULL_SHARD"}
                                       << "FULL_SHARD";
        QTest::newRow("HYBRID_SHARD 2x2")
            << 4 << 2 << fsdp1 + QStringList{"FSDP_SHARDING_STRATEGY=HYBRID_SHARD", "GLOO_SOCKET_IFNAME=lo"}
            << "HYBRID_SHARD";
        QTest::newRow("fully_shard x2") << 2 << 2 << fsdp2 + QStringList{"FSDP_RESHARD_AFTER_FORWARD=true"}
                                        << "fully_shard:true";
        QTest::newRow("fully_shard no reshard x2")
            << 2 << 2 << fsdp2 + QStringList{"FSDP_RESHARD_AFTER_FORWARD=false"} << "fully_shard:false";
    }
    void matchesPyTorchFsdp()
    {
        QFETCH(int, world);
        QFETCH(int, local);
        QFETCH(QStringList, env);
        QFETCH(QString, python);
        const QString interpreter = qEnvironmentVariable("ACCEL_PYTHON");
        if (interpreter.isEmpty() || !QFile::exists(interpreter))
            QSKIP("ACCEL_PYTHON (the project's Python environment with torch) is not available");
        QTemporaryDir dir;
        const QString ours = dir.filePath("ours.txt"), theirs = dir.filePath("theirs.txt");
        const QString init = dir.filePath("init.safetensors"), data = dir.filePath("data.safetensors");
        // 8 steps: one epoch of the 256 samples on 4 ranks with batch 8.
        Job job = runRanks(world,
                           {"train", "model=stack", "blocks=4", "steps=8", "batch=8", "constant=1", "optimizer=adamw",
                            "clip=1", "max_norm=0.5", "wrap_root=1", "out=" + ours, "init=" + init, "data=" + data},
                           env, local);
        QVERIFY2(job.ok, qPrintable(job.errors));
        Job reference = runJob(interpreter, world,
                               {accel::test::sourceDir() + "/tests/runtime/sharding_reference.py", python, init, data,
                                theirs, "8", "8", "0.5"},
                               {}, local);
        QVERIFY2(reference.ok, qPrintable(reference.errors));
        const QStringList a = readLines(ours, "param "), b = readLines(theirs, "param ");
        QCOMPARE(a.size(), b.size());
        const double worst = worstDifference(a, b);
        qInfo("%s: largest difference from PyTorch %g over %lld values", QTest::currentDataTag(), worst,
              qlonglong(a.size()));
        QVERIFY2(worst <= 1e-5, qPrintable(QString("parameters differ from PyTorch's FSDP by %1").arg(worst)));
    }
};

QTEST_GUILESS_MAIN(tst_ShardingCompat)
#include "tst_shardingcompat.moc"
