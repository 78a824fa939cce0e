// checkpoint_<n> folder names: numbers read without exceptions or wrap-around, the latest found
// among other files, out-of-range numbers refused with the folder named.
#include "core/common/checkpointnames.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>

using namespace accel;
using namespace accel::checkpointnames;

class tst_CheckpointNames : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void namesAndNumbers()
    {
        QCOMPARE(*checkpointNumber("checkpoint_0"), std::optional<int>(0));
        QCOMPARE(*checkpointNumber("checkpoint_0012"), std::optional<int>(12));
        QCOMPARE(*checkpointNumber("checkpoint_2147483646"), std::optional<int>(2147483646));
        for (const char *other : {"checkpoint_", "checkpoint_-1", "checkpoint_1a", "checkpoint_ 1", "checkpoints",
                                  "Checkpoint_1", "best", "checkpoint_+3"})
            QCOMPARE(*checkpointNumber(other), std::optional<int>());
    }

    void hugeNumberIsAnErrorNotAnAbort()
    {
        // Regression: std::stoi threw out_of_range on checkpoint_99999999999 and the worker aborted.
        auto huge = checkpointNumber("checkpoint_99999999999");
        QVERIFY(!huge);
        QCOMPARE(huge.error().code, ErrorCode::InvalidInput);
        QCOMPARE(huge.error().toString(), std::string("checkpoint_99999999999: checkpoint number beyond 2147483646 "
                                                      "(the next checkpoint could not be named); rename or remove "
                                                      "the folder"));
        QVERIFY(!checkpointNumber("checkpoint_" + std::string(400, '9')));
    }

    void intMaxDoesNotWrapTheNextName()
    {
        // Regression: checkpoint_2147483647 made the next save checkpoint_-2147483648.
        QVERIFY(!checkpointNumber("checkpoint_2147483647"));
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        std::filesystem::create_directories(folder + "/checkpoint_2147483647");
        auto latest = latestCheckpointNumber(folder);
        QVERIFY(!latest);
        QCOMPARE(latest.error().context, folder + "/checkpoint_2147483647");
    }

    void latestAmongOtherEntries()
    {
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        QCOMPARE(*latestCheckpointNumber(folder + "/missing"), -1);
        QCOMPARE(*latestCheckpointNumber(folder), -1);
        for (const char *name : {"checkpoint_2", "checkpoint_10", "checkpoint_9", "checkpoint_x", "other"})
            std::filesystem::create_directories(folder + "/" + name);
        QFile file(QString::fromStdString(folder + "/checkpoint_50")); // a file, not a checkpoint folder
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        QCOMPARE(*latestCheckpointNumber(folder), 10);
        auto all = numberedCheckpoints(folder);
        QVERIFY(all);
        QCOMPARE(all->size(), size_t(3));
        QCOMPARE(all->front().number, 2);
        QCOMPARE(all->front().path, folder + "/checkpoint_2");
        QCOMPARE(all->back().number, 10);
    }
};

QTEST_GUILESS_MAIN(tst_CheckpointNames)
#include "tst_checkpointnames.moc"
