#include "monitor/eventsmodel.h"
#include "monitor/logmodel.h"
#include "monitor/metricsparser.h"
#include "monitor/ranksmodel.h"
#include "monitor/runcatalogue.h"
#include "monitor/runsmodel.h"

#include "core/rundir/processidentity.h"
#include "core/rundir/runlayout.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSignalSpy>
#include <QSysInfo>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel::monitor;

namespace {

void writeManifest(const QString &runDir, const QJsonObject &manifest)
{
    QDir().mkpath(runDir);
    // Atomically, as the launcher does.
    QFile file(runDir + QStringLiteral("/run.json.tmp"));
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(QJsonDocument(manifest).toJson());
    file.close();
    QFile::remove(runDir + QStringLiteral("/run.json"));
    QVERIFY(QFile::rename(runDir + QStringLiteral("/run.json.tmp"), runDir + QStringLiteral("/run.json")));
}

QJsonObject manifest(const QString &name, const QString &state, double created, double ended = 0)
{
    QJsonArray states{
        QJsonObject{{QStringLiteral("state"), QStringLiteral("starting")}, {QStringLiteral("time"), created}}};
    if (ended > 0)
        states.append(QJsonObject{{QStringLiteral("state"), state}, {QStringLiteral("time"), ended}});
    return QJsonObject{
        {QStringLiteral("schema"), QStringLiteral("accel.run")},
        {QStringLiteral("version"), 1},
        {QStringLiteral("name"), name},
        {QStringLiteral("created"), created},
        {QStringLiteral("state"), state},
        {QStringLiteral("states"), states},
        {QStringLiteral("settings"), QJsonObject{{QStringLiteral("distributed_type"), QStringLiteral("MULTI_CPU")},
                                                 {QStringLiteral("num_processes"), 2},
                                                 {QStringLiteral("num_machines"), 1},
                                                 {QStringLiteral("mixed_precision"), QStringLiteral("bf16")}}}};
}

void feed(MetricStore &store, const QByteArray &text)
{
    MetricsParser parser;
    MetricBatch batch;
    parser.feed(text, batch);
    store.append(batch);
}

RunEvent makeEvent(const QString &name, int rank, const QJsonObject &fields = {})
{
    RunEvent e;
    e.time = 1763771234.5;
    e.event = name;
    e.rank = rank;
    e.fields = fields;
    return e;
}

} // namespace

class tst_Models : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Regression (issue 33, item 13): a runs root of thousands of runs was read one row insertion
    // at a time, and the Runs page fitted its columns to every row on each, so the studio's start
    // grew with the square of the runs (3000 runs: 77.8 s). New runs come in one insertion.
    void manyRunsAreInsertedAtOnce()
    {
        QTemporaryDir root;
        const int runs = 300;
        for (int i = 0; i < runs; ++i)
            writeManifest(root.filePath(QStringLiteral("run-%1").arg(i, 4, 10, QLatin1Char('0'))),
                          manifest(QStringLiteral("r%1").arg(i % 7), QStringLiteral("succeeded"), 1000 + i, 1100 + i));
        RunsModel model;
        model.setRefreshInterval(0);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        model.setRunsRoot(root.path());
        QCOMPARE(model.rowCount(), runs);
        QCOMPARE(inserted.size(), 1);
        QCOMPARE(model.rowOf(QStringLiteral("run-0123")) >= 0, true);
        // Later refreshes insert only what is new, again at once.
        for (int i = runs; i < runs + 3; ++i)
            writeManifest(root.filePath(QStringLiteral("run-%1").arg(i)),
                          manifest(QStringLiteral("new"), QStringLiteral("succeeded"), 1000 + i, 1100 + i));
        model.refresh();
        QCOMPARE(model.rowCount(), runs + 3);
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(inserted.last().at(2).toInt() - inserted.last().at(1).toInt(), 2);
    }

    void runsModelScansAndUpdatesIncrementally()
    {
        QTemporaryDir root;
        writeManifest(root.filePath(QStringLiteral("run-a")),
                      manifest(QStringLiteral("alpha"), QStringLiteral("succeeded"), 1000, 1125));
        QDir(root.path()).mkpath(QStringLiteral("not-a-run"));
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRefreshInterval(0);
        model.setRunsRoot(root.path());
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, RunsModel::IdColumn).data().toString(), QStringLiteral("run-a"));
        QCOMPARE(model.index(0, RunsModel::NameColumn).data().toString(), QStringLiteral("alpha"));
        QCOMPARE(model.index(0, RunsModel::StateColumn).data().toString(), QStringLiteral("succeeded"));
        QCOMPARE(model.index(0, RunsModel::DurationColumn).data().toString(), QStringLiteral("2m 05s"));
        QCOMPARE(model.index(0, RunsModel::ConfigColumn).data().toString(),
                 QStringLiteral("MULTI_CPU, 2 processes, bf16"));
        QCOMPARE(model.index(0, RunsModel::StartedColumn).data(RunsModel::SortRole).toDouble(), 1000.0);

        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy removed(&model, &QAbstractItemModel::rowsRemoved);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        const double now = QDateTime::currentMSecsSinceEpoch() / 1000.0;
        writeManifest(root.filePath(QStringLiteral("run-b")),
                      manifest(QStringLiteral("beta"), QStringLiteral("running"), now - 3725));
        // The folder watcher picks the new run up without an explicit refresh.
        QTRY_COMPARE_WITH_TIMEOUT(model.rowCount(), 2, 5000);
        QCOMPARE(inserted.size(), 1);
        const int beta = model.rowOf(QStringLiteral("run-b"));
        QCOMPARE(model.index(beta, RunsModel::DurationColumn).data().toString(), QStringLiteral("1h 02m"));

        // State change: the row changes in place.
        QTest::qWait(20);
        writeManifest(root.filePath(QStringLiteral("run-b")),
                      manifest(QStringLiteral("beta"), QStringLiteral("failed"), now - 10, now));
        model.refresh();
        QCOMPARE(model.index(beta, RunsModel::StateColumn).data().toString(), QStringLiteral("failed"));
        QVERIFY(changed.size() >= 1);

        QVERIFY(QDir(root.filePath(QStringLiteral("run-a"))).removeRecursively());
        model.refresh();
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(removed.size(), 1);
        QCOMPARE(reset.size(), 0);
        QCOMPARE(model.run(0).id, QStringLiteral("run-b"));
    }

    // Hyperparameters are columns (one per key any run has, inserted and removed incrementally),
    // numbers sort as numbers, and the name, tags and notes are edited into annotations.json.
    void runsModelShowsHyperparametersAndEditsAnnotations()
    {
        QTemporaryDir root;
        const QString a = root.filePath(QStringLiteral("run-a"));
        const QString b = root.filePath(QStringLiteral("run-b"));
        writeManifest(a, manifest(QStringLiteral("alpha"), QStringLiteral("succeeded"), 1000, 1100));
        writeManifest(b, manifest(QStringLiteral("beta"), QStringLiteral("succeeded"), 2000, 2100));
        auto write = [](const QString &path, const QByteArray &text) {
            QFile file(path);
            QVERIFY(file.open(QIODevice::WriteOnly));
            file.write(text);
        };
        write(a + QStringLiteral("/hparams.json"), R"({"lr": 0.001, "model": {"layers": 12}})");
        write(a + QStringLiteral("/job.yaml"), "recipe: gpt\ntraining:\n  max_steps: 100\n");
        write(b + QStringLiteral("/hparams.json"), R"({"lr": 0.0003})");
        RunsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setRefreshInterval(0);
        model.setRunsRoot(root.path());
        QCOMPARE(model.hyperparameterKeys(),
                 (QStringList{QStringLiteral("config/lr"), QStringLiteral("config/model.layers"),
                              QStringLiteral("job/recipe"), QStringLiteral("job/training.max_steps")}));
        QCOMPARE(model.columnCount(), RunsModel::ColumnCount + 4);
        const int lr = model.hyperparameterColumn(QStringLiteral("config/lr"));
        QCOMPARE(model.headerData(lr, Qt::Horizontal).toString(), QStringLiteral("config/lr"));
        const int rowA = model.rowOf(QStringLiteral("run-a"));
        const int rowB = model.rowOf(QStringLiteral("run-b"));
        QCOMPARE(model.index(rowA, lr).data().toString(), QStringLiteral("0.001"));
        QCOMPARE(model.index(rowB, lr).data(RunsModel::SortRole).toDouble(), 0.0003);
        QVERIFY(!model.index(rowB, model.hyperparameterColumn(QStringLiteral("job/recipe"))).data().isValid());

        // A key a run brings later is a new column; the last run with a key gone takes it along.
        QTest::qWait(20);
        write(b + QStringLiteral("/hparams.json"), R"({"lr": 0.0003, "seed": 7})");
        QSignalSpy columnsInserted(&model, &QAbstractItemModel::columnsInserted);
        model.refresh();
        QCOMPARE(columnsInserted.size(), 1);
        QCOMPARE(model.index(rowB, model.hyperparameterColumn(QStringLiteral("config/seed"))).data().toString(),
                 QStringLiteral("7"));
        QSignalSpy columnsRemoved(&model, &QAbstractItemModel::columnsRemoved);
        QVERIFY(QDir(a).removeRecursively());
        model.refresh();
        QCOMPARE(columnsRemoved.size(), 3); // model.layers, job/recipe, job/training.max_steps
        QCOMPARE(model.hyperparameterKeys(), (QStringList{QStringLiteral("config/lr"), QStringLiteral("config/seed")}));

        // Editing the name, tags and notes writes annotations.json; run.json is left alone.
        const QModelIndex name = model.index(0, RunsModel::NameColumn);
        QVERIFY(model.flags(name).testFlag(Qt::ItemIsEditable));
        QVERIFY(model.setData(name, QStringLiteral("beta, lr 3e-4")));
        QVERIFY(model.setData(model.index(0, RunsModel::TagsColumn), QStringLiteral("baseline, cpu")));
        QVERIFY(model.setData(model.index(0, RunsModel::NotesColumn), QStringLiteral("first line\nsecond")));
        QCOMPARE(name.data().toString(), QStringLiteral("beta, lr 3e-4"));
        QCOMPARE(model.index(0, RunsModel::NotesColumn).data().toString(), QStringLiteral("first line …"));
        const auto stored = readRunAnnotations(b);
        QVERIFY(stored);
        QCOMPARE(stored->displayName, QStringLiteral("beta, lr 3e-4"));
        QCOMPARE(stored->tags, (QStringList{QStringLiteral("baseline"), QStringLiteral("cpu")}));
        QCOMPARE(stored->notes, QStringLiteral("first line\nsecond"));
        QFile manifestFile(b + QStringLiteral("/run.json"));
        QVERIFY(manifestFile.open(QIODevice::ReadOnly));
        QCOMPARE(QJsonDocument::fromJson(manifestFile.readAll()).object().value(QStringLiteral("name")).toString(),
                 QStringLiteral("beta"));
        // A bad tag is refused with a sentence naming it; nothing is written.
        QSignalSpy failed(&model, &RunsModel::editFailed);
        QVERIFY(!model.setData(model.index(0, RunsModel::TagsColumn), QString(65, QLatin1Char('x'))));
        QCOMPARE(failed.size(), 1);
        QVERIFY2(failed.at(0).at(0).toString().contains(QStringLiteral("longer than 64")),
                 qPrintable(failed.at(0).at(0).toString()));
        QCOMPARE(readRunAnnotations(b)->tags.size(), 2);
        // The original name again: the display name goes.
        QVERIFY(model.setData(name, QStringLiteral("beta")));
        QVERIFY(readRunAnnotations(b)->displayName.isEmpty());

        // Another host's listing carries display names and tags (accel runs --json, version 1).
        const auto listed = parseRunsListing(QStringLiteral("gpu1"), R"({"schema": "accel.runs", "version": 1, "runs": [
            {"id": "r", "path": "/runs/r", "name": "train", "state": "running", "display_name": "lr sweep 1",
             "tags": ["sweep"], "notes": ""}]})");
        QVERIFY(listed);
        QCOMPARE(listed->first().displayName(), QStringLiteral("lr sweep 1"));
        QCOMPARE(listed->first().annotations.tags, QStringList{QStringLiteral("sweep")});
        model.setRemoteRuns(QStringLiteral("gpu1"), *listed);
        const int remote = model.rowOfAddress(listed->first().address());
        QVERIFY(!model.flags(model.index(remote, RunsModel::NameColumn)).testFlag(Qt::ItemIsEditable));
    }

    void runWithDeadSupervisorIsLost()
    {
        QTemporaryDir root;
        // This test process is a live supervisor; a reaped child's pid is a dead one.
        QProcess child;
        child.start(QStringLiteral("true"), QStringList());
        QVERIFY(child.waitForStarted(5000));
        const qint64 deadPid = child.processId(); // 0 once finished: read it while it runs
        QVERIFY(child.waitForFinished(5000));
        const QString host = QString::fromStdString(accel::rundir::localHostName());
        QJsonObject live = manifest(QStringLiteral("live"), QStringLiteral("running"), 1000);
        live.insert(QStringLiteral("supervisor"),
                    QJsonObject{{QStringLiteral("pid"), QCoreApplication::applicationPid()},
                                {QStringLiteral("start_time"), static_cast<qint64>(accel::rundir::processStartTime(
                                                                   QCoreApplication::applicationPid()))},
                                {QStringLiteral("host"), host}});
        QJsonObject dead = manifest(QStringLiteral("dead"), QStringLiteral("running"), 1000);
        dead.insert(QStringLiteral("supervisor"), QJsonObject{{QStringLiteral("pid"), deadPid},
                                                              {QStringLiteral("start_time"), 12345},
                                                              {QStringLiteral("host"), host}});
        QJsonObject remote = dead;
        remote.insert(QStringLiteral("supervisor"),
                      QJsonObject{{QStringLiteral("pid"), 1}, {QStringLiteral("host"), QStringLiteral("elsewhere")}});
        writeManifest(root.filePath(QStringLiteral("a")), live);
        writeManifest(root.filePath(QStringLiteral("b")), dead);
        writeManifest(root.filePath(QStringLiteral("c")), remote);
        RunsModel model;
        model.setRefreshInterval(0);
        model.setRunsRoot(root.path());
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.run(model.rowOf(QStringLiteral("a"))).state, QStringLiteral("running"));
        QCOMPARE(model.run(model.rowOf(QStringLiteral("b"))).state, QStringLiteral("lost"));
        QCOMPARE(model.run(model.rowOf(QStringLiteral("c"))).state, QStringLiteral("running"));
    }

    void ranksModelFollowsStoreAndEvents()
    {
        MetricStore store;
        RanksModel model(&store);
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QCOMPARE(model.rowCount(), 0);
        feed(store, "{\"v\":1,\"time\":1,\"rank\":1,\"step\":1,\"loss\":2.5,\"samples_per_s\":64}\n"
                    "{\"v\":1,\"time\":1,\"rank\":-1,\"kind\":\"system\",\"cpu_percent\":5}\n");
        QCOMPARE(model.ranks(), QList<int>{1}); // host samples are not a rank
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        feed(store, "{\"v\":1,\"time\":1.5,\"rank\":0,\"step\":1,\"loss\":2.6}\n"
                    "{\"v\":1,\"time\":2,\"rank\":1,\"step\":2,\"loss\":2.25,\"samples_per_s\":128}\n");
        QCOMPARE(model.ranks(), (QList<int>{0, 1}));
        QVERIFY(changed.size() >= 1);
        QCOMPARE(model.index(1, RanksModel::StepColumn).data().toLongLong(), 2LL);
        QCOMPARE(model.index(1, RanksModel::LossColumn).data().toString(), QStringLiteral("2.25"));
        QCOMPARE(model.index(1, RanksModel::ThroughputColumn).data().toString(), QStringLiteral("128 samples/s"));
        QCOMPARE(model.index(1, RanksModel::StepTimeColumn).data().toString(), QStringLiteral("1.000 s"));
        QCOMPARE(model.index(1, RanksModel::LossColumn).data(RanksModel::SortRole).toDouble(), 2.25);
        QCOMPARE(model.stateOf(0), QStringLiteral("running"));

        // Events: a rank that never wrote metrics appears; exits and stragglers show as states.
        model.observeEvents({makeEvent(QStringLiteral("rank_started"), 3),
                             makeEvent(QStringLiteral("straggler_detected"), 1),
                             makeEvent(QStringLiteral("rank_exited"), 0, {{QStringLiteral("exit_code"), 0}}),
                             makeEvent(QStringLiteral("rank_exited"), 3,
                                       {{QStringLiteral("exit_code"), QJsonValue()}, {QStringLiteral("signal"), 9}})});
        QCOMPARE(model.ranks(), (QList<int>{0, 1, 3}));
        QCOMPARE(model.stateOf(0), QStringLiteral("exited 0"));
        QCOMPARE(model.stateOf(1), QStringLiteral("straggler"));
        QCOMPARE(model.stateOf(3), QStringLiteral("killed (signal 9)"));
        model.observeEvents(
            {makeEvent(QStringLiteral("rank_started"), 2), makeEvent(QStringLiteral("hang_suspected"), -1)});
        QCOMPARE(model.ranks(), (QList<int>{0, 1, 2, 3}));
        QCOMPARE(model.stateOf(2), QStringLiteral("no progress"));
        model.observeEvents(
            {makeEvent(QStringLiteral("hang_cleared"), -1), makeEvent(QStringLiteral("straggler_cleared"), 1)});
        QCOMPARE(model.stateOf(1), QStringLiteral("running"));
        QCOMPARE(model.stateOf(2), QStringLiteral("running"));
        model.observeEvents({makeEvent(QStringLiteral("rank_exited"), 2, {{QStringLiteral("exit_code"), 3}})});
        QCOMPARE(model.stateOf(2), QStringLiteral("failed (exit 3)"));
        store.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void eventsModelAppends()
    {
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        model.appendEvents({makeEvent(QStringLiteral("started"), -1, {{QStringLiteral("ranks"), 2}})});
        model.appendEvents({makeEvent(QStringLiteral("rank_exited"), 1, {{QStringLiteral("exit_code"), 3}}),
                            makeEvent(QStringLiteral("straggler_detected"), 0)});
        model.appendEvents({});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(inserted.size(), 2);
        QCOMPARE(model.index(0, EventsModel::DetailsColumn).data().toString(), QStringLiteral("{\"ranks\":2}"));
        QCOMPARE(model.index(1, EventsModel::RankColumn).data().toInt(), 1);
        QCOMPARE(model.index(1, EventsModel::EventColumn).data().toString(), QStringLiteral("rank_exited"));
        QCOMPARE(model.index(1, 0).data(EventsModel::SeverityRole).toString(), QStringLiteral("error"));
        QCOMPARE(model.index(2, 0).data(EventsModel::SeverityRole).toString(), QStringLiteral("warning"));
        QCOMPARE(model.index(0, EventsModel::RankColumn).data().toString(), QString());
        QVERIFY(!model.index(0, EventsModel::TimeColumn).data().toString().isEmpty());
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void logModelFiltersByRankAndSearch()
    {
        LogModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        LogFilterModel filter;
        filter.setSourceModel(&model);
        QAbstractItemModelTester filterTester(&filter, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.appendLines({QStringLiteral("logs/rank0.log"),
                           0,
                           {QStringLiteral("epoch 1 loss 2.0"), QStringLiteral("Warning: slow")}});
        model.appendLines({QStringLiteral("logs/rank1.log"),
                           1,
                           {QStringLiteral("epoch 1 loss 2.1"), QStringLiteral("Traceback: boom")}});
        QCOMPARE(filter.rowCount(), 4);
        filter.setRankFilter(1);
        QCOMPARE(filter.rowCount(), 2);
        filter.setSearchText(QStringLiteral("TRACEBACK"));
        QCOMPARE(filter.rowCount(), 1);
        QCOMPARE(filter.index(0, LogModel::TextColumn).data().toString(), QStringLiteral("Traceback: boom"));
        // New lines pass through the filter as they arrive.
        model.appendLines({QStringLiteral("logs/rank1.log"), 1, {QStringLiteral("another traceback")}});
        model.appendLines({QStringLiteral("logs/rank0.log"), 0, {QStringLiteral("traceback on rank 0")}});
        QCOMPARE(filter.rowCount(), 2);
        filter.setRankFilter(LogFilterModel::AllRanks);
        QCOMPARE(filter.rowCount(), 3);
        filter.setSearchText({});
        QCOMPARE(filter.rowCount(), 6);

        // The cap drops the oldest lines.
        model.setMaximumLines(4);
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.index(0, LogModel::TextColumn).data().toString(), QStringLiteral("epoch 1 loss 2.1"));
        QCOMPARE(filter.rowCount(), 4);
        model.appendLines({QString(), -1, {QStringLiteral("x"), QStringLiteral("y"), QStringLiteral("z")}});
        QCOMPARE(model.rowCount(), 4);
        QCOMPARE(model.index(3, LogModel::TextColumn).data().toString(), QStringLiteral("z"));
        filter.setRankFilter(-1);
        QCOMPARE(filter.rowCount(), 3);
    }
};

QTEST_GUILESS_MAIN(tst_Models)
#include "tst_models.moc"
