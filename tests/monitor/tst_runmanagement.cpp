// Run management: annotations (display name, notes, tags) in annotations.json, hyperparameters
// from hparams.json / job.yaml / cluster.yaml and their diff, a run exported as one .tar.gz that
// the real `tar` unpacks to the same files, deletion that refuses live runs and never follows a
// symlink, and every `accel runs` action through the real accel (--json schemas, exit codes).
#include "monitor/runannotations.h"
#include "monitor/runfolder.h"
#include "monitor/runhyperparameters.h"

#include "core/rundir/processidentity.h"
#include "core/rundir/runlayout.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

using namespace accel;
using namespace accel::monitor;

namespace {

void writeFile(const QString &path, const QByteArray &text)
{
    QDir().mkpath(QFileInfo(path).path());
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(text), text.size());
}

QByteArray readFile(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

// A finished run as the launcher leaves it (or a live one whose supervisor is this test process).
QString makeRun(const QString &root, const QString &id, const QString &state = QStringLiteral("succeeded"),
                const QString &name = QStringLiteral("train"))
{
    const QString run = root + QLatin1Char('/') + id;
    QJsonObject manifest{{QStringLiteral("schema"), QStringLiteral("accel.run")},
                         {QStringLiteral("version"), 1},
                         {QStringLiteral("id"), id},
                         {QStringLiteral("name"), name},
                         {QStringLiteral("created"), 1000.0},
                         {QStringLiteral("state"), state}};
    if (rundir::isLiveState(state.toStdString()))
        manifest.insert(QStringLiteral("supervisor"),
                        QJsonDocument::fromJson(
                            QByteArray::fromStdString(rundir::supervisorRecordJson(rundir::currentSupervisorRecord())))
                            .object());
    writeFile(run + QStringLiteral("/run.json"), QJsonDocument(manifest).toJson());
    writeFile(run + QStringLiteral("/metrics/rank0.jsonl"), "{\"v\":1,\"time\":1,\"rank\":0,\"step\":1,\"loss\":2}\n");
    writeFile(run + QStringLiteral("/logs/rank0.log"), "step 1 loss 2\n");
    return run;
}

QJsonObject json(const test::ProcessResult &result)
{
    return QJsonDocument::fromJson(result.out.toUtf8()).object();
}

} // namespace

class tst_RunManagement : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void annotationsRoundTripAndRefuseWhatTheyCannotHold()
    {
        QTemporaryDir root;
        const QString run = makeRun(root.path(), QStringLiteral("r1"));
        QCOMPARE(readRunAnnotations(run).value(), RunAnnotations{}); // no file: nothing set
        RunAnnotations annotations{QStringLiteral("lr sweep 3"),
                                   QStringLiteral("note\nmore"),
                                   {QStringLiteral("sweep"), QStringLiteral("cpu")}};
        QVERIFY(writeRunAnnotations(run, annotations));
        QCOMPARE(readRunAnnotations(run).value(), annotations);
        const QString path = run + QLatin1Char('/') + QLatin1String(rundir::file::Annotations);
        QCOMPARE(QFileInfo(path).permissions() & (QFileDevice::ReadOther | QFileDevice::ReadGroup),
                 QFileDevice::Permissions());
        // A newer format is refused by name; a symlink in its place is never read.
        writeFile(path, R"({"schema":"accel.run-annotations","version":2,"display_name":"x"})");
        QVERIFY(!readRunAnnotations(run));
        QVERIFY(
            QString::fromStdString(readRunAnnotations(run).error().toString()).contains(QStringLiteral("version 2")));
        QFile::remove(path);
        writeFile(root.filePath(QStringLiteral("elsewhere.json")), R"({"display_name":"planted"})");
        QVERIFY(QFile::link(root.filePath(QStringLiteral("elsewhere.json")), path));
        QVERIFY(!readRunAnnotations(run));
        // Tags and names people cannot type back are refused with the reason.
        QVERIFY(!checkTag(QStringLiteral("a,b")));
        QVERIFY(!checkTag(QStringLiteral("  ")));
        QCOMPARE(checkTag(QStringLiteral(" ok ")).value(), QStringLiteral("ok"));
        QCOMPARE(parseTagList(QStringLiteral("a, b,, a")).value(),
                 (QStringList{QStringLiteral("a"), QStringLiteral("b")}));
        QVERIFY(!checkDisplayName(QStringLiteral("two\nlines")));
    }

    void hyperparametersFromTheThreeFilesAndTheirDiff()
    {
        QStringList problems;
        const Hyperparameters a = hyperparametersFromTexts(
            R"({"lr": 0.001, "optimizer": {"name": "adamw", "betas": [0.9, 0.95]}, "compile": false})",
            "recipe: gpt\ntraining:\n  max_steps: 100\n", "distributed_type: MULTI_CPU\nnum_processes: 2\n", &problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QCOMPARE(a.value(QStringLiteral("config/lr")), QStringLiteral("0.001"));
        QCOMPARE(a.value(QStringLiteral("config/optimizer.name")), QStringLiteral("adamw"));
        QCOMPARE(a.value(QStringLiteral("config/optimizer.betas")), QStringLiteral("[0.9, 0.95]"));
        QCOMPARE(a.value(QStringLiteral("config/compile")), QStringLiteral("false"));
        QCOMPARE(a.value(QStringLiteral("job/training.max_steps")), QStringLiteral("100"));
        QCOMPARE(a.value(QStringLiteral("cluster/num_processes")), QStringLiteral("2"));
        QCOMPARE(hyperparameterNumber(a.value(QStringLiteral("config/lr"))), 0.001);
        QVERIFY(std::isnan(hyperparameterNumber(a.value(QStringLiteral("config/compile")))));

        const Hyperparameters b = hyperparametersFromTexts(R"({"lr": 0.0003, "optimizer": {"name": "adamw"}})", {},
                                                           "distributed_type: MULTI_CPU\nnum_processes: 2\n");
        QCOMPARE(differingKeys({a, b}),
                 (QStringList{QStringLiteral("config/compile"), QStringLiteral("config/lr"),
                              QStringLiteral("config/optimizer.betas"), QStringLiteral("job/recipe"),
                              QStringLiteral("job/training.max_steps")}));
        QVERIFY(differingKeys({a, a}).isEmpty());
        // A broken file is named; the others are still read.
        problems.clear();
        const Hyperparameters broken =
            hyperparametersFromTexts("{not json", "recipe: [", "num_processes: 4\n", &problems);
        QCOMPARE(problems.size(), 2);
        QVERIFY2(problems.first().contains(QStringLiteral("hparams.json")), qPrintable(problems.first()));
        QVERIFY2(problems.last().contains(QStringLiteral("job.yaml")), qPrintable(problems.last()));
        QCOMPARE(broken.value(QStringLiteral("cluster/num_processes")), QStringLiteral("4"));
    }

    void exportedArchiveUnpacksToTheSameFiles()
    {
        QTemporaryDir scratch;
        const QString run = makeRun(scratch.path(), QStringLiteral("20261128-010203-train-ab12"));
        writeFile(run + QStringLiteral("/hparams.json"), R"({"lr": 0.001})");
        QByteArray big;
        for (int i = 0; i < 40000; ++i)
            big +=
                "{\"v\":1,\"time\":" + QByteArray::number(i) + ",\"rank\":1,\"step\":" + QByteArray::number(i) + "}\n";
        writeFile(run + QStringLiteral("/metrics/rank1.jsonl"), big);
        writeFile(run + QStringLiteral("/checkpoints/step_10/model.safetensors"), QByteArray(3000, 'w'));
        // A path longer than the tar name field (100 bytes): split into prefix and name.
        const QString deep = QStringLiteral("logs/") + QString(60, QLatin1Char('d')) + QStringLiteral("/") +
                             QString(70, QLatin1Char('f')) + QStringLiteral(".log");
        writeFile(run + QLatin1Char('/') + deep, "deep\n");
        writeFile(scratch.filePath(QStringLiteral("secret.txt")), "not the run's");
        QVERIFY(QFile::link(scratch.filePath(QStringLiteral("secret.txt")), run + QStringLiteral("/logs/planted.log")));

        const QString archive = scratch.filePath(QStringLiteral("out/run.tar.gz"));
        QDir().mkpath(QFileInfo(archive).path());
        const auto summary = exportRunArchive(run, archive);
        QVERIFY2(summary, summary ? "" : summary.error().toString().c_str());
        QCOMPARE(summary->leftOutFiles, 1);
        QCOMPARE(summary->leftOutBytes, qint64(3000));
        QCOMPARE(summary->skipped, QStringList{QStringLiteral("logs/planted.log")});
        QVERIFY(summary->archiveBytes < summary->bytes / 5); // compressed

        // The real tar is the oracle: every file of the run, byte for byte, and nothing else.
        const QString unpacked = scratch.filePath(QStringLiteral("unpacked"));
        QDir().mkpath(unpacked);
        const auto tar =
            test::runProgram(QStringLiteral("tar"), {QStringLiteral("xzf"), archive, QStringLiteral("-C"), unpacked});
        QVERIFY2(tar.exitCode == 0, qPrintable(tar.err));
        const QString copy = unpacked + QStringLiteral("/20261128-010203-train-ab12");
        QStringList files;
        QDirIterator it(copy, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
        while (it.hasNext())
            files.append(QDir(copy).relativeFilePath(it.next()));
        files.sort();
        QStringList expected{deep,
                             QStringLiteral("hparams.json"),
                             QStringLiteral("logs/rank0.log"),
                             QStringLiteral("metrics/rank0.jsonl"),
                             QStringLiteral("metrics/rank1.jsonl"),
                             QStringLiteral("run.json")};
        expected.sort();
        QCOMPARE(files, expected);
        for (const QString &file : std::as_const(files))
            QCOMPARE(readFile(copy + QLatin1Char('/') + file), readFile(run + QLatin1Char('/') + file));
        QVERIFY(QFileInfo(copy + QStringLiteral("/checkpoints")).isDir());
        // With checkpoints: they are in too.
        ExportOptions withCheckpoints;
        withCheckpoints.checkpoints = true;
        const auto full = exportRunArchive(run, archive, withCheckpoints);
        QVERIFY(full);
        QCOMPARE(full->leftOutFiles, 0);
        const auto list = test::runProgram(QStringLiteral("tar"), {QStringLiteral("tzf"), archive});
        QVERIFY(list.out.contains(QStringLiteral("checkpoints/step_10/model.safetensors")));
        // Never inside the run it holds.
        QVERIFY(!exportRunArchive(run, run + QStringLiteral("/self.tar.gz")));
    }

    void deleteRefusesLiveRunsAndNeverFollowsSymlinks()
    {
        QTemporaryDir scratch;
        const QString live = makeRun(scratch.path(), QStringLiteral("live"), QStringLiteral("running"));
        const auto refused = deleteRunFolder(live);
        QVERIFY(!refused);
        QVERIFY2(QString::fromStdString(refused.error().toString()).contains(QStringLiteral("stop it first")),
                 refused.error().toString().c_str());
        QVERIFY(QFileInfo::exists(live + QStringLiteral("/run.json")));
        QVERIFY(!deleteRunFolder(scratch.path())); // not a run directory

        const QString done = makeRun(scratch.path(), QStringLiteral("done"));
        const QString outside = scratch.filePath(QStringLiteral("keep"));
        writeFile(outside + QStringLiteral("/precious.txt"), "keep me");
        QVERIFY(QFile::link(outside, done + QStringLiteral("/checkpoints")));
        const auto removed = deleteRunFolder(done);
        QVERIFY2(removed, removed ? "" : removed.error().toString().c_str());
        QCOMPARE(removed->files, 3); // run.json, metrics, log
        QVERIFY(!QFileInfo::exists(done));
        QCOMPARE(readFile(outside + QStringLiteral("/precious.txt")), QByteArray("keep me"));
    }

    // Every action of `accel runs`, through the real program, as a person uses it.
    void accelRunsActions()
    {
        if (!QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel"))).isExecutable())
            QSKIP("accel is not built");
        QTemporaryDir scratch;
        const QString root = scratch.filePath(QStringLiteral("runs"));
        const QString a = makeRun(root, QStringLiteral("20261128-010000-train-aaaa"));
        const QString b = makeRun(root, QStringLiteral("20261128-020000-train-bbbb"));
        makeRun(root, QStringLiteral("20261128-030000-train-cccc"), QStringLiteral("running"));
        writeFile(a + QStringLiteral("/hparams.json"), R"({"lr": 0.001, "seed": 1})");
        writeFile(b + QStringLiteral("/hparams.json"), R"({"lr": 0.0003, "seed": 1})");
        const QStringList rootOption{QStringLiteral("--runs_root"), root};

        auto renamed =
            test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("rename"), QStringLiteral("aaaa"),
                                       QStringLiteral("baseline"), QStringLiteral("--json")} +
                           rootOption);
        QVERIFY2(renamed.exitCode == 0, qPrintable(renamed.err));
        QCOMPARE(json(renamed).value(QStringLiteral("schema")).toString(), QStringLiteral("accel.run-annotations"));
        QCOMPARE(json(renamed).value(QStringLiteral("version")).toInt(), 1);
        QCOMPARE(json(renamed).value(QStringLiteral("display_name")).toString(), QStringLiteral("baseline"));
        // Options may come after the tags.
        auto tagged = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("tag"), QStringLiteral("aaaa"),
                                                 QStringLiteral("sweep"), QStringLiteral("cpu")} +
                                     rootOption);
        QCOMPARE(tagged.exitCode, 0);
        auto badTag = test::runAccel(
            QStringList{QStringLiteral("runs"), QStringLiteral("tag"), QStringLiteral("aaaa"), QStringLiteral("a,b")} +
            rootOption);
        QCOMPARE(badTag.exitCode, 2);
        QVERIFY2(badTag.err.contains(QStringLiteral("comma")), qPrintable(badTag.err));
        auto noted = test::runAccel(
            QStringList{QStringLiteral("runs"), QStringLiteral("notes"), QStringLiteral("aaaa"), QStringLiteral("-")} +
                rootOption,
            30000, "from stdin\n");
        QCOMPARE(noted.exitCode, 0);
        QCOMPARE(readRunAnnotations(a)->notes, QStringLiteral("from stdin"));

        auto listed = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("--json"),
                                                 QStringLiteral("--tag"), QStringLiteral("sweep")} +
                                     rootOption);
        const QJsonArray runs = json(listed).value(QStringLiteral("runs")).toArray();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.at(0).toObject().value(QStringLiteral("display_name")).toString(), QStringLiteral("baseline"));
        QCOMPARE(runs.at(0).toObject().value(QStringLiteral("tags")).toArray().size(), 2);

        auto shown = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("show"), QStringLiteral("aaaa"),
                                                QStringLiteral("--json")} +
                                    rootOption);
        QCOMPARE(json(shown).value(QStringLiteral("schema")).toString(), QStringLiteral("accel.runs-show"));
        QCOMPARE(json(shown)
                     .value(QStringLiteral("hyperparameters"))
                     .toObject()
                     .value(QStringLiteral("config/lr"))
                     .toString(),
                 QStringLiteral("0.001"));
        auto diff = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("diff"), QStringLiteral("aaaa"),
                                               QStringLiteral("bbbb"), QStringLiteral("--json")} +
                                   rootOption);
        QCOMPARE(diff.exitCode, 0);
        const QJsonArray keys = json(diff).value(QStringLiteral("keys")).toArray();
        QCOMPARE(keys.size(), 1); // lr differs, seed does not
        QCOMPARE(keys.at(0).toObject().value(QStringLiteral("key")).toString(), QStringLiteral("config/lr"));
        QCOMPARE(keys.at(0).toObject().value(QStringLiteral("values")).toArray().at(1).toString(),
                 QStringLiteral("0.0003"));
        auto opened = test::runAccel(
            QStringList{QStringLiteral("runs"), QStringLiteral("open"), QStringLiteral("aaaa")} + rootOption, 30000, {},
            {QStringLiteral("DISPLAY="), QStringLiteral("WAYLAND_DISPLAY=")});
        QCOMPARE(opened.out.trimmed(), a);

        const QString archive = scratch.filePath(QStringLiteral("a.tar.gz"));
        auto exported =
            test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("export"), QStringLiteral("aaaa"),
                                       QStringLiteral("-o"), archive, QStringLiteral("--json")} +
                           rootOption);
        QVERIFY2(exported.exitCode == 0, qPrintable(exported.err));
        QCOMPARE(json(exported).value(QStringLiteral("schema")).toString(), QStringLiteral("accel.runs-export"));
        QCOMPARE(json(exported).value(QStringLiteral("files")).toInt(),
                 5); // run.json, metrics, log, hparams, annotations
        QVERIFY(QFileInfo(archive).size() > 0);

        // Delete: never without --yes when nothing can ask; a live run is refused (exit 2).
        auto unasked = test::runAccel(
            QStringList{QStringLiteral("runs"), QStringLiteral("delete"), QStringLiteral("bbbb")} + rootOption);
        QCOMPARE(unasked.exitCode, 2);
        QVERIFY(QFileInfo::exists(b));
        auto liveRun = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("delete"),
                                                  QStringLiteral("cccc"), QStringLiteral("--yes")} +
                                      rootOption);
        QCOMPARE(liveRun.exitCode, 2);
        QVERIFY2(liveRun.err.contains(QStringLiteral("stop it first")), qPrintable(liveRun.err));
        auto deleted =
            test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("delete"), QStringLiteral("bbbb"),
                                       QStringLiteral("--yes"), QStringLiteral("--json")} +
                           rootOption);
        QCOMPARE(deleted.exitCode, 0);
        QCOMPARE(json(deleted).value(QStringLiteral("schema")).toString(), QStringLiteral("accel.runs-delete"));
        QCOMPARE(json(deleted).value(QStringLiteral("deleted")).toArray().size(), 1);
        QVERIFY(!QFileInfo::exists(b));
        auto unknown = test::runAccel(QStringList{QStringLiteral("runs"), QStringLiteral("frobnicate")} + rootOption);
        QCOMPARE(unknown.exitCode, 2);
        auto missing = test::runAccel(
            QStringList{QStringLiteral("runs"), QStringLiteral("rename"), QStringLiteral("aaaa")} + rootOption);
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.startsWith(QStringLiteral("accel runs rename: ")), qPrintable(missing.err));
    }
};

QTEST_GUILESS_MAIN(tst_RunManagement)
#include "tst_runmanagement.moc"
