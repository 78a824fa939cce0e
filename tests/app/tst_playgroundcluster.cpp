// Inference across hosts against the test sshd on loopback: two "hosts" (the server under the
// aliases accel-test and accel-test-2), this build's accel on both sides (ACCEL_REMOTE_BIN), a
// private SSH folder (ACCEL_SSH_DIR) and the sessions' runs under a folder of the test's own.
// - `accel launch --hosts accel-test,accel-test-2 --num_processes 2 --no_python accel generate
//   MODEL --device_map pipeline`: one pipeline stage per host, the tokens those of one process;
//   --dtype auto and --pin_threads refused by name with a pipeline.
// - The Playground with that cluster remembered offers "Split across the cluster's hosts" and runs
//   a prompt so, without loading a model locally: the text and tokens/s of the last stage shown,
//   equal to one process; without a cluster the choice is not offered.
// ACCEL_TEST_SCREENSHOTS=<folder> also writes the page as <folder>/playground-cluster.png.
#include "app/studio/bigmodel/playgroundcluster.h"
#include "app/studio/bigmodel/playgroundpage.h"
#include "app/studio/bigmodel/playgroundsampling.h"
#include "app/studio/cluster/hostlist.h"
#include "tests/helpers/sshtestserver.h"
#include "tests/helpers/testsupport.h"
#include "tests/helpers/tinygpt2.h"

#include <QCheckBox>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

namespace {

const QStringList kHosts = {QStringLiteral("accel-test"), QStringLiteral("accel-test-2")};
// Sampled (not greedy), so that the last stage's sampler and seed are checked too.
const QStringList kSampling = {
    QStringLiteral("--max_new_tokens"), QStringLiteral("24"), QStringLiteral("--temperature"), QStringLiteral("0.8"),
    QStringLiteral("--top_k"),          QStringLiteral("20"), QStringLiteral("--seed"),        QStringLiteral("5"),
    QStringLiteral("--threads"),        QStringLiteral("1")};
const QString kPrompt = QStringLiteral("the lower");

// The run.json state of `runDir` once it is final (or "" after 120 s).
QString finalState(const QString &runDir)
{
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < 120000) {
        QFile file(QDir(runDir).filePath(QStringLiteral("run.json")));
        const QString state = file.open(QIODevice::ReadOnly)
                                  ? QJsonDocument::fromJson(file.readAll()).object().value("state").toString()
                                  : QString();
        if (state == QLatin1String("succeeded") || state == QLatin1String("failed") ||
            state == QLatin1String("stopped") || state == QLatin1String("lost"))
            return state;
        QTest::qWait(100);
    }
    return {};
}

QString fileText(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? QString::fromUtf8(file.readAll()) : QStringLiteral("<no %1>").arg(path);
}

} // namespace

class tst_PlaygroundCluster : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void pipelineAcrossTwoHostsEqualsOneProcess();
    void playgroundSplitsThePromptAcrossTheClustersHosts();
    void stopEndsTheSplitRunOnEveryHost();
    void noClusterNoSplit();

private:
    QJsonObject oneProcess(); // accel generate in one process: the reference
    test::SshTestServer m_server;
    QTemporaryDir m_dir;
    QString m_model;
    QString m_accel;
};

void tst_PlaygroundCluster::initTestCase()
{
    if (const QString reason = test::SshTestServer::unavailableReason(); !reason.isEmpty())
        QSKIP(qPrintable(reason));
    QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_playgroundcluster"));
    m_accel = QDir(test::binDir()).filePath(QStringLiteral("accel"));
    QVERIFY2(QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel-worker"))).isExecutable(),
             "build the accel-worker target");
    qunsetenv("SSH_AUTH_SOCK");
    // The hosts' runs go under the test's folder, not the login's home.
    m_server.setSessionEnvironment({QStringLiteral("XDG_DATA_HOME=") + m_dir.filePath(QStringLiteral("hosts-data"))});
    const QString error = m_server.start();
    QVERIFY2(error.isEmpty(), qPrintable(error));
    m_server.addAlias(kHosts.at(1));
    qputenv("ACCEL_SSH_DIR", m_server.clientDirectory().toLocal8Bit());
    qputenv("ACCEL_REMOTE_BIN", m_accel.toLocal8Bit());
    m_model = m_dir.filePath(QStringLiteral("tiny-gpt2"));
    QVERIFY(test::writeTinyGpt2(m_model));
}

QJsonObject tst_PlaygroundCluster::oneProcess()
{
    const auto one =
        test::runAccel(QStringList{QStringLiteral("generate"), m_model, QStringLiteral("--prompt"), kPrompt} +
                       kSampling + QStringList{QStringLiteral("--json")});
    if (one.exitCode != 0)
        qWarning("%s", qPrintable(one.err));
    return QJsonDocument::fromJson(one.out.toUtf8()).object();
}

void tst_PlaygroundCluster::pipelineAcrossTwoHostsEqualsOneProcess()
{
    const QJsonObject reference = oneProcess();
    QVERIFY(reference.value(QStringLiteral("tokens")).toArray().size() > 4);

    const auto launched = test::runAccel(
        QStringList{QStringLiteral("launch"), QStringLiteral("--hosts"), kHosts.join(QLatin1Char(',')),
                    QStringLiteral("--json"), QStringLiteral("--main_process_port"),
                    QString::number(test::SshTestServer::freeLoopbackPort()), QStringLiteral("--num_processes"),
                    QStringLiteral("2"), QStringLiteral("--no_python"), m_accel, QStringLiteral("generate"), m_model,
                    QStringLiteral("--device_map"), QStringLiteral("pipeline"), QStringLiteral("--prompt"), kPrompt} +
            kSampling + QStringList{QStringLiteral("--json")},
        120000);
    QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
    const QJsonArray nodes = QJsonDocument::fromJson(launched.out.toUtf8()).object().value("nodes").toArray();
    QCOMPARE(nodes.size(), 2);
    QCOMPARE(nodes.at(0).toObject().value("host").toString(), kHosts.at(0));
    QCOMPARE(nodes.at(1).toObject().value("host").toString(), kHosts.at(1));
    const QString first = nodes.at(0).toObject().value("run_dir").toString();
    const QString last = nodes.at(1).toObject().value("run_dir").toString();
    QVERIFY(first != last); // a supervisor of its own on each host
    for (const QString &runDir : {first, last}) {
        const QString state = finalState(runDir);
        QVERIFY2(state == QLatin1String("succeeded"),
                 qPrintable(runDir + ": " + state + "\n" + fileText(runDir + "/logs/rank0.log") +
                            fileText(runDir + "/logs/rank1.log")));
    }
    // Rank 1, on the second host, drove the generation and printed the result.
    const QString log = fileText(QDir(last).filePath(QStringLiteral("logs/rank1.log")));
    const QJsonObject result = QJsonDocument::fromJson(log.mid(log.indexOf(QStringLiteral("{\n"))).toUtf8()).object();
    QVERIFY2(result.value("schema").toString() == QLatin1String("accel.generate"), qPrintable(log));
    QCOMPARE(result.value("tokens").toArray(), reference.value("tokens").toArray());
    QCOMPARE(result.value("text").toString(), reference.value("text").toString());
    const QJsonArray stages = result.value("pipeline").toObject().value("stages").toArray();
    QCOMPARE(stages.size(), 2);
    QCOMPARE(stages.at(0).toObject().value("layers").toArray(), QJsonArray({0, 1}));
    QCOMPARE(stages.at(1).toObject().value("layers").toArray(), QJsonArray({1, 2}));
    QVERIFY(!QFile::exists(QDir(first).filePath(QStringLiteral("logs/rank1.log")))); // each host ran its own rank

    // Refused by name before any process waits for another: each host would choose a dtype of its
    // own, and the processes of one host would pin their threads to the same CPUs.
    for (const auto &[flags, message] :
         {std::pair<QStringList, QString>{{"--dtype", "auto"}, "--dtype auto: not with a pipeline --device_map"},
          {{"--pin_threads"}, "--pin-threads: not with a pipeline --device_map"}}) {
        const auto refused =
            test::runAccel(QStringList{QStringLiteral("generate"), m_model, QStringLiteral("--prompt"), kPrompt,
                                       QStringLiteral("--device_map"), QStringLiteral("pipeline")} +
                           flags);
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains(message), qPrintable(refused.err));
    }
}

void tst_PlaygroundCluster::playgroundSplitsThePromptAcrossTheClustersHosts()
{
    const QJsonObject reference = oneProcess();
    rememberHosts(kHosts); // what the Hardware page's Cluster tab keeps after a check
    PlaygroundPage page;
    page.resize(1200, 760);
    page.show();
    QCOMPARE(page.clusterHosts(), kHosts);
    auto *split = page.findChild<QCheckBox *>(QStringLiteral("playgroundSplitHosts"));
    QVERIFY(split && split->isEnabled());
    QVERIFY2(split->text().contains(QStringLiteral("accel-test, accel-test-2")), qPrintable(split->text()));
    page.cluster()->setAccelProgram(m_accel);
    page.cluster()->setMainProcessPort(test::SshTestServer::freeLoopbackPort());
    QSignalSpy planned(&page, &PlaygroundPage::planned);
    page.setModelPath(m_model);
    QVERIFY(planned.wait(30000));
    page.setThreads(1);
    page.sampling()->setGreedy(false);
    page.sampling()->setTemperature(0.8);
    page.sampling()->setTopK(20);
    page.sampling()->setSeed(5);
    page.sampling()->setMaxNewTokens(24);
    page.setPrompt(kPrompt);
    auto *generateButton = page.findChild<QPushButton *>(QStringLiteral("generateButton"));
    QVERIFY(!generateButton->isEnabled()); // nothing loaded, no split: nothing to generate with
    QTest::mouseClick(split, Qt::LeftButton, {}, QPoint(8, split->height() / 2)); // on its box
    QVERIFY(page.splitAcrossHosts());
    QVERIFY(generateButton->isEnabled()); // the hosts load their stages themselves

    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    QTest::mouseClick(generateButton, Qt::LeftButton);
    QCOMPARE(page.state(), PlaygroundPage::State::Generating);
    QVERIFY2(QTest::qWaitFor([&] { return !finished.isEmpty() || !page.errorText().isEmpty(); }, 180000),
             "no answer from the cluster");
    QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);
    QCOMPARE(page.outputText(), reference.value("text").toString());
    QCOMPARE(page.lastStats().newTokens, reference.value("tokens").toArray().size());
    QVERIFY(page.lastStats().decodeTokensPerSecond > 0);
    QVERIFY2(page.statsText().contains(QStringLiteral("tokens/s")), qPrintable(page.statsText()));
    const QString status = page.findChild<QLabel *>(QStringLiteral("modelStatus"))->text();
    QVERIFY2(status.contains(QStringLiteral("Generated across 2 hosts")) &&
                 status.contains(QStringLiteral("accel-test: layers 0-0")) &&
                 status.contains(QStringLiteral("accel-test-2: layers 1-1")) &&
                 status.contains(QStringLiteral("tokens/s")),
             qPrintable(status));
    // Both nodes' runs of the launch ended.
    for (const QJsonValue &node : page.cluster()->launchReport().value("nodes").toArray())
        QCOMPARE(finalState(node.toObject().value("run_dir").toString()), QStringLiteral("succeeded"));

    if (const QString folder = qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS"); !folder.isEmpty()) {
        QDir().mkpath(folder);
        QVERIFY(page.grab().save(QDir(folder).filePath(QStringLiteral("playground-cluster.png"))));
    }
}

void tst_PlaygroundCluster::stopEndsTheSplitRunOnEveryHost()
{
    rememberHosts(kHosts);
    PlaygroundPage page;
    page.cluster()->setAccelProgram(m_accel);
    page.cluster()->setMainProcessPort(test::SshTestServer::freeLoopbackPort());
    // The tiny model without its end-of-text token: sampled, it would end a generation after a few
    // hundred tokens, well within the test's wait on an idle machine (both runs then succeed before
    // the stop reaches them).
    const QString endless = m_dir.filePath(QStringLiteral("tiny-gpt2-no-eos"));
    QVERIFY(QDir().mkpath(endless));
    for (const QString &name : {QStringLiteral("model.safetensors"), QStringLiteral("tokenizer.json")})
        QVERIFY(QFile::copy(QDir(m_model).filePath(name), QDir(endless).filePath(name)));
    QFile config(QDir(m_model).filePath(QStringLiteral("config.json")));
    QVERIFY(config.open(QIODevice::ReadOnly));
    QJsonObject settings = QJsonDocument::fromJson(config.readAll()).object();
    settings.remove(QStringLiteral("eos_token_id"));
    QFile written(QDir(endless).filePath(QStringLiteral("config.json")));
    QVERIFY(written.open(QIODevice::WriteOnly));
    written.write(QJsonDocument(settings).toJson());
    written.close();
    page.setModelPath(endless);
    page.setThreads(1);
    page.sampling()->setMaxNewTokens(60000); // far longer than the test waits
    page.setPrompt(kPrompt);
    QVERIFY(page.setSplitAcrossHosts(true));
    QSignalSpy launched(page.cluster(), &PlaygroundCluster::launched);
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.generate();
    QVERIFY2(QTest::qWaitFor([&] { return !launched.isEmpty() || !page.errorText().isEmpty(); }, 60000),
             "the launch did not answer");
    QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
    QTest::qWait(500); // the stages are generating
    page.stop();
    QCOMPARE(page.state(), PlaygroundPage::State::Stopping);
    QVERIFY2(QTest::qWaitFor([&] { return !finished.isEmpty(); }, 60000), qPrintable(page.errorText()));
    QCOMPARE(finished.first().at(0).toString(), QStringLiteral("cancelled"));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);
    QVERIFY(page.errorText().isEmpty());
    // Every node's run records the user's stop: accel hosts stop asks every node before it signals
    // any, so the stage that loses its pipeline peer (stopped first) ends after its own node holds
    // the request, and its supervisor records "stopped" too (before, the second node ended "failed"
    // on an idle machine, 3 of 3).
    QStringList states;
    QString detail;
    for (const QJsonValue &node : page.cluster()->launchReport().value("nodes").toArray()) {
        const QString runDir = node.toObject().value("run_dir").toString();
        states << finalState(runDir);
        detail +=
            QStringLiteral("\n%1:\n%2").arg(runDir, fileText(QDir(runDir).filePath(QStringLiteral("events.jsonl"))));
    }
    QVERIFY2(states == QStringList({QStringLiteral("stopped"), QStringLiteral("stopped")}),
             qPrintable(states.join(QStringLiteral(", ")) + detail));
}

void tst_PlaygroundCluster::noClusterNoSplit()
{
    rememberHosts({});
    PlaygroundPage page;
    QVERIFY(page.clusterHosts().isEmpty());
    QVERIFY(!page.setSplitAcrossHosts(true));
    auto *split = page.findChild<QCheckBox *>(QStringLiteral("playgroundSplitHosts"));
    QVERIFY(!split->isEnabled() && !split->isChecked());
    QVERIFY2(split->text().contains(QStringLiteral("Cluster tab")), qPrintable(split->text()));
}

QTEST_MAIN(tst_PlaygroundCluster)
#include "tst_playgroundcluster.moc"
