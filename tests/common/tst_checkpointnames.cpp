// checkpoint_<n> folder names: numbers read without exceptions or wrap-around, the latest found
// among other files, out-of-range numbers refused with the folder named.
#include "core/common/checkpointnames.h"
#include "core/common/checkpointstate.h"
#include "core/common/fileutil.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <sys/stat.h>

using namespace accel;
using namespace accel::checkpointnames;
using namespace accel::checkpointstate;

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

    // Regression (hardening round 3): "last_step": -5 in a checkpoint's scheduler.json was taken
    // ("resumed from step -2"); the files were parsed with nlohmann's throwing reader, outside the
    // input guard (no size or depth limit, a FIFO blocked).
    void stateFilesAreCheckedNumbers()
    {
        QTemporaryDir dir;
        const std::string file = dir.filePath("scheduler.json").toStdString();
        const auto lastStep = [&](const std::string &text) {
            if (!fileutil::writeFileAtomic(file, text))
                qFatal("cannot write %s", file.c_str());
            return readSchedulerLastStep(file);
        };
        QCOMPARE(*lastStep("{\"last_step\": 12}\n"), int64_t(12));
        QCOMPARE(*lastStep("{\"last_step\": 4294967297}"), int64_t(4294967297));
        const struct {
            const char *text;
            const char *message;
        } refused[] = {
            {"{\"last_step\": -5}", "last_step=-5: expected a whole number from 0 to 9223372036854775807"},
            {"{\"last_step\": 3.5}", "last_step=3.5: expected a whole number from 0 to 9223372036854775807"},
            {"{\"last_step\": 18446744073709551615}",
             "last_step=18446744073709551615: expected a whole number from 0 to 9223372036854775807"},
            {"{\"last_step\": \"7\"}", "last_step=\"7\": expected a whole number from 0 to 9223372036854775807"},
            {"{}", "last_step: missing"},
            {"[5]", "last_step: missing"},
            {"{\"last_step\": 1, \"last_step\": -1}", "duplicate key \"last_step\""},
        };
        for (const auto &c : refused) {
            auto step = lastStep(c.text);
            QVERIFY2(!step, c.text);
            QCOMPARE(step.error().code, ErrorCode::InvalidInput);
            QCOMPARE(step.error().toString(), file + ": " + c.message);
        }
        const std::string fifo = dir.filePath("fifo.json").toStdString();
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        QCOMPARE(readSchedulerLastStep(fifo).error().toString(),
                 fifo + ": is a FIFO (named pipe), expected a regular file");

        const std::string loaders = dir.filePath("dl_state_dict.json").toStdString();
        QVERIFY(fileutil::writeFileAtomic(loaders,
                                          R"([{"epoch": 1, "batches_done": 7}, {"epoch": 0, "batches_done": 0}])"));
        auto states = readLoaderStates(loaders);
        QVERIFY2(states, states ? "" : states.error().toString().c_str());
        QCOMPARE(states->size(), size_t(2));
        QCOMPARE((*states)[0].epoch, int64_t(1));
        QCOMPARE((*states)[0].batchesDone, int64_t(7));
        QVERIFY(fileutil::writeFileAtomic(loaders, R"([{"epoch": 1, "batches_done": -3}])"));
        QCOMPARE(readLoaderStates(loaders).error().message,
                 std::string("[0].batches_done=-3: expected a whole number from 0 to 9223372036854775807"));
    }

    // Regression (issue 33, item 3): with checkpoint_total_limit 1 the old checkpoint was deleted
    // before the new one was saved, and a kill inside the deletion left a half-deleted
    // checkpoint_<n>. Now the new one is published first, and each old one is renamed to a trash
    // name before it is removed.
    void rotationKeepsWholeCheckpointsOnly()
    {
        QTemporaryDir dir;
        const std::string folder = dir.filePath(QStringLiteral("checkpoints")).toStdString();
        const auto make = [&](const std::string &name) {
            std::filesystem::create_directories(folder + "/" + name);
            QVERIFY(fileutil::writeFileAtomic(folder + "/" + name + "/model.safetensors", "weights"));
        };
        for (const char *name : {"checkpoint_1", "checkpoint_2", "checkpoint_3.partial"})
            make(name);
        // A removal an earlier kill cut short: it is no checkpoint_<n> any more, and goes.
        make(trashName("checkpoint_0"));
        QCOMPARE(trashName("checkpoint_0"), std::string(".deleting-checkpoint_0"));
        QCOMPARE(numberedCheckpoints(folder)->size(), size_t(2));
        QVERIFY(publish(folder + "/checkpoint_3.partial", folder + "/checkpoint_3"));
        QVERIFY(syncTree(folder));
        auto removed = rotate(folder, 1);
        QVERIFY2(removed, removed ? "" : removed.error().toString().c_str());
        QCOMPARE(*removed, 2);
        QStringList left =
            QDir(QString::fromStdString(folder)).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden);
        QCOMPARE(left, QStringList{QStringLiteral("checkpoint_3")});
        QCOMPARE(QFile(QString::fromStdString(folder + "/checkpoint_3/model.safetensors")).size(), qint64(7));
        QCOMPARE(*rotate(folder, 0), 0); // no limit: nothing goes
        QCOMPARE(*rotate(folder, 3), 0);
        // Publishing over an existing folder (an explicit output folder) replaces it whole.
        make("checkpoint_4.partial");
        make("out");
        QVERIFY(publish(folder + "/checkpoint_4.partial", folder + "/out"));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(folder + "/out.old")));
        QVERIFY(!publish(folder + "/missing.partial", folder + "/checkpoint_9"));
    }
};

QTEST_GUILESS_MAIN(tst_CheckpointNames)
#include "tst_checkpointnames.moc"
