// Multi-node runs seen as one run: the combined state of the nodes' states (the one place that
// decides it), the run's manifest made from the nodes' run.json, a catalogue row made from the
// nodes' rows, and an accel.tail stream of two nodes read by StreamRunSource: every rank's
// metrics under its global number, each node's events with their node, one combined manifest.
#include "monitor/eventsmodel.h"
#include "monitor/noderuns.h"
#include "monitor/tailstream.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QtTest>

using namespace accel::monitor;

namespace {

QList<NodeState> nodes(const QStringList &states)
{
    QList<NodeState> out;
    for (int i = 0; i < states.size(); ++i)
        out.append({QStringLiteral("node%1").arg(i), states.at(i)});
    return out;
}

QJsonObject manifest(const QString &state, const QList<int> &ranks, const QString &detail = {})
{
    QJsonArray rankArray;
    for (int rank : ranks)
        rankArray.append(QJsonObject{{QStringLiteral("rank"), rank}});
    QJsonObject last{{QStringLiteral("state"), state}, {QStringLiteral("time"), 100.0}};
    if (!detail.isEmpty())
        last.insert(QStringLiteral("detail"), detail);
    return {{QStringLiteral("state"), state},
            {QStringLiteral("host"), QStringLiteral("host-of-rank-%1").arg(ranks.value(0))},
            {QStringLiteral("ranks"), rankArray},
            {QStringLiteral("states"),
             QJsonArray{QJsonObject{{QStringLiteral("state"), QStringLiteral("running")}}, last}}};
}

QByteArray line(const QJsonObject &object)
{
    return QJsonDocument(object).toJson(QJsonDocument::Compact) + '\n';
}

QByteArray textLine(const QString &file, const QByteArray &text)
{
    return line({{QStringLiteral("file"), file}, {QStringLiteral("text"), QString::fromUtf8(text)}});
}

QByteArray manifestLine(const QString &file, const QJsonObject &m)
{
    return line({{QStringLiteral("file"), file}, {QStringLiteral("manifest"), m}});
}

QByteArray metrics(int rank, int steps)
{
    QByteArray out;
    for (int step = 1; step <= steps; ++step)
        out += QStringLiteral("{\"v\":1,\"time\":%1,\"rank\":%2,\"step\":%3,\"loss\":%4}\n")
                   .arg(1000 + step)
                   .arg(rank)
                   .arg(step)
                   .arg(1.0 / step)
                   .toUtf8();
    return out;
}

} // namespace

class tst_NodeRuns : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void combinedState_data();
    void combinedState();
    void streamPathsOfNodes();
    void manifestOfTheNodes();
    void catalogueRowOfTheNodes();
    void streamOfTwoNodesIsOneRun();
};

void tst_NodeRuns::combinedState_data()
{
    QTest::addColumn<QStringList>("states");
    QTest::addColumn<QString>("state");
    QTest::addColumn<QString>("node");
    QTest::newRow("none") << QStringList{} << QString() << QString();
    QTest::newRow("one running") << QStringList{"running"} << "running" << QString();
    QTest::newRow("all succeeded") << QStringList{"succeeded", "succeeded", "succeeded"} << "succeeded" << QString();
    QTest::newRow("one still running") << QStringList{"succeeded", "running"} << "running" << QString();
    QTest::newRow("starting and running") << QStringList{"starting", "running"} << "running" << QString();
    QTest::newRow("one starting") << QStringList{"succeeded", "starting"} << "starting" << QString();
    QTest::newRow("manifest without state") << QStringList{"succeeded", ""} << "starting" << QString();
    QTest::newRow("one failed, one running") << QStringList{"running", "failed"} << "failed"
                                             << "node1";
    QTest::newRow("failed beats stopped") << QStringList{"stopped", "succeeded", "failed"} << "failed"
                                          << "node2";
    QTest::newRow("first failed named") << QStringList{"failed", "failed"} << "failed"
                                        << "node0";
    QTest::newRow("lost") << QStringList{"succeeded", "lost"} << "lost"
                          << "node1";
    QTest::newRow("stopped, none failed") << QStringList{"succeeded", "stopped"} << "stopped"
                                          << "node1";
    QTest::newRow("stopped while another runs") << QStringList{"stopped", "running"} << "stopped"
                                                << "node0";
    QTest::newRow("restarting") << QStringList{"succeeded", "restarting"} << "restarting" << QString();
}

void tst_NodeRuns::combinedState()
{
    QFETCH(QStringList, states);
    QFETCH(QString, state);
    QFETCH(QString, node);
    const CombinedState combined = combineNodeStates(nodes(states));
    QCOMPARE(combined.state, state);
    QCOMPARE(combined.node, node);
}

void tst_NodeRuns::streamPathsOfNodes()
{
    QString rest;
    QCOMPARE(nodeOfStreamPath(QStringLiteral("node1/run.json"), &rest), 1);
    QCOMPARE(rest, QStringLiteral("run.json"));
    QCOMPARE(nodeOfStreamPath(QStringLiteral("node12/metrics/system.jsonl"), &rest), 12);
    QCOMPARE(rest, QStringLiteral("metrics/system.jsonl"));
    QCOMPARE(nodeOfStreamPath(QStringLiteral("run.json")), -1);
    QCOMPARE(nodeOfStreamPath(QStringLiteral("metrics/rank3.jsonl")), -1);
    QCOMPARE(nodeOfStreamPath(QStringLiteral("nodes/run.json")), -1);
    QCOMPARE(nodeOfStreamPath(QStringLiteral("node/run.json")), -1);
    QCOMPARE(nodeNumber(QStringLiteral("node0")), 0);
    QCOMPARE(nodeNumber(QStringLiteral("accel-run-12")), -1);
}

void tst_NodeRuns::manifestOfTheNodes()
{
    QMap<int, QJsonObject> manifests;
    manifests.insert(1, manifest(QStringLiteral("failed"), {2, 3}, QStringLiteral("rank 3 failed (exit 3)")));
    manifests.insert(0, manifest(QStringLiteral("succeeded"), {0, 1}));
    const QJsonObject combined = combineNodeManifests(manifests);
    QCOMPARE(combined.value("state").toString(), QStringLiteral("failed"));
    QCOMPARE(combined.value("decided_by").toString(), QStringLiteral("node1"));
    QCOMPARE(combined.value("host").toString(), QStringLiteral("host-of-rank-0")); // the first node's
    QList<int> ranks;
    for (const QJsonValue &rank : combined.value("ranks").toArray())
        ranks.append(rank.toObject().value("rank").toInt());
    QCOMPARE(ranks, (QList<int>{0, 1, 2, 3}));
    const QJsonArray states = combined.value("states").toArray();
    QCOMPARE(states.last().toObject().value("detail").toString(), QStringLiteral("node1: rank 3 failed (exit 3)"));
    const QJsonArray listed = combined.value("nodes").toArray();
    QCOMPARE(listed.size(), 2);
    QCOMPARE(listed.at(1).toObject().value("node").toString(), QStringLiteral("node1"));
    QCOMPARE(listed.at(1).toObject().value("state").toString(), QStringLiteral("failed"));

    // Every node succeeded: no node decided it, the first node's history stays.
    manifests.insert(1, manifest(QStringLiteral("succeeded"), {2, 3}));
    const QJsonObject done = combineNodeManifests(manifests);
    QCOMPARE(done.value("state").toString(), QStringLiteral("succeeded"));
    QVERIFY(!done.contains("decided_by"));
    QVERIFY(!done.value("states").toArray().last().toObject().contains("detail"));
    QVERIFY(combineNodeManifests({}).isEmpty());
}

void tst_NodeRuns::catalogueRowOfTheNodes()
{
    RunInfo a, b;
    a.id = QStringLiteral("node0");
    a.path = QStringLiteral("/w/accel-run-7/node0");
    a.state = QStringLiteral("succeeded");
    a.location = QStringLiteral("login1");
    a.created = 50;
    a.ended = 80;
    a.configSummary = QStringLiteral("MULTI_CPU, 4 processes, 2 machines");
    b = a;
    b.id = QStringLiteral("node1");
    b.path = QStringLiteral("/w/accel-run-7/node1");
    b.state = QStringLiteral("running");
    b.created = 40;
    b.ended = 0;
    RunInfo row = combineNodeRuns(QStringLiteral("/w/accel-run-7"), QStringLiteral("train (job 7)"), {b, a});
    QCOMPARE(row.id, QStringLiteral("accel-run-7"));
    QCOMPARE(row.name, QStringLiteral("train (job 7)"));
    QCOMPARE(row.state, QStringLiteral("running"));
    QCOMPARE(row.location, QStringLiteral("login1"));
    QCOMPARE(row.address(), QStringLiteral("ssh://login1/w/accel-run-7"));
    QCOMPARE(row.created, 40.0);
    QCOMPARE(row.ended, 0.0); // still going
    QCOMPARE(row.configSummary, a.configSummary);
    b.state = QStringLiteral("failed");
    b.ended = 90;
    row = combineNodeRuns(QStringLiteral("/w/accel-run-7"), QStringLiteral("train (job 7)"), {a, b});
    QCOMPARE(row.state, QStringLiteral("failed"));
    QCOMPARE(row.ended, 90.0);
}

void tst_NodeRuns::streamOfTwoNodesIsOneRun()
{
    StreamRunSource source;
    QList<MetricBatch> batches;
    QList<RunEvent> events;
    QList<QJsonObject> manifests;
    connect(&source, &RunSource::metricsReceived, this, [&](const MetricBatch &batch) { batches << batch; });
    connect(&source, &RunSource::eventsReceived, this, [&](const QList<RunEvent> &more) { events << more; });
    connect(&source, &RunSource::runInfoChanged, this, [&](const QJsonObject &m) { manifests << m; });
    QByteArray stream = "{\"schema\":\"accel.tail\",\"version\":1,\"run\":\"/w/accel-run-7\"}\n";
    stream += manifestLine(QStringLiteral("node0/run.json"), manifest(QStringLiteral("running"), {0, 1}));
    stream += textLine(QStringLiteral("node0/events.jsonl"),
                       "{\"event\":\"started\",\"time\":1}\n{\"event\":\"rank_started\",\"rank\":0,\"time\":2}\n");
    stream += manifestLine(QStringLiteral("node1/run.json"), manifest(QStringLiteral("running"), {2, 3}));
    stream += textLine(QStringLiteral("node1/events.jsonl"), "{\"event\":\"rank_started\",\"rank\":3,\"time\":3}\n");
    for (int rank = 0; rank < 4; ++rank)
        stream += textLine(QStringLiteral("metrics/rank%1.jsonl").arg(rank), metrics(rank, 5));
    // A node's own system samples are not a rank's: not taken as metrics.
    stream += textLine(QStringLiteral("node1/metrics/system.jsonl"), "{\"v\":1,\"time\":5,\"rank\":-1,\"cpu\":9}\n");
    stream += textLine(QStringLiteral("node1/events.jsonl"),
                       "{\"event\":\"rank_exited\",\"rank\":3,\"exit_code\":3,\"time\":4}\n"
                       "{\"event\":\"finished\",\"state\":\"failed\",\"exit_code\":3,\"time\":5}\n");
    stream += manifestLine(QStringLiteral("node1/run.json"),
                           manifest(QStringLiteral("failed"), {2, 3}, QStringLiteral("rank 3 exited with 3")));
    stream += manifestLine(QStringLiteral("node0/run.json"), manifest(QStringLiteral("running"), {0, 1}));
    source.feed(stream);

    QMap<int, QList<double>> steps;
    for (const MetricBatch &batch : std::as_const(batches)) {
        for (const MetricRow &row : batch.rows)
            steps[row.rank].append(row.step);
    }
    QCOMPARE(steps.keys(), (QList<int>{0, 1, 2, 3}));
    for (int rank = 0; rank < 4; ++rank)
        QCOMPARE(steps.value(rank), (QList<double>{1, 2, 3, 4, 5}));

    QCOMPARE(events.size(), 5);
    QCOMPARE(events.at(0).node, QStringLiteral("node0"));
    QCOMPARE(events.at(2).node, QStringLiteral("node1"));
    QCOMPARE(events.at(2).rank, 3);
    QCOMPARE(events.at(4).event, QStringLiteral("finished"));
    QCOMPARE(events.at(4).node, QStringLiteral("node1"));

    QCOMPARE(manifests.size(), 4);
    QCOMPARE(manifests.at(1).value("state").toString(), QStringLiteral("running"));
    // node1 failed: the run has failed, and stays so when node0 reports again.
    QCOMPARE(manifests.at(2).value("state").toString(), QStringLiteral("failed"));
    QCOMPARE(manifests.at(3).value("state").toString(), QStringLiteral("failed"));
    QCOMPARE(manifests.at(3).value("decided_by").toString(), QStringLiteral("node1"));
    QCOMPARE(source.junkLines(), 0);

    // The events table says each event's node, as `accel tail` prints them.
    EventsModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.appendEvents(events);
    QCOMPARE(model.index(4, EventsModel::EventColumn).data().toString(), QStringLiteral("[node1] finished"));
    QCOMPARE(model.index(4, EventsModel::EventColumn).data(EventsModel::EventNameRole).toString(),
             QStringLiteral("finished"));
    QCOMPARE(model.index(4, 0).data(EventsModel::SeverityRole).toString(), QStringLiteral("error"));

    // A single run's stream is as before: its manifest as it came, events without a node.
    StreamRunSource single;
    QJsonObject plain;
    QList<RunEvent> plainEvents;
    connect(&single, &RunSource::runInfoChanged, this, [&](const QJsonObject &m) { plain = m; });
    connect(&single, &RunSource::eventsReceived, this, [&](const QList<RunEvent> &more) { plainEvents << more; });
    single.feed("{\"schema\":\"accel.tail\",\"version\":1,\"run\":\"/r\"}\n" +
                manifestLine(QStringLiteral("run.json"), manifest(QStringLiteral("failed"), {0})) +
                textLine(QStringLiteral("events.jsonl"), "{\"event\":\"started\",\"time\":1}\n"));
    QCOMPARE(plain, manifest(QStringLiteral("failed"), {0}));
    QCOMPARE(plainEvents.size(), 1);
    QVERIFY(plainEvents.first().node.isEmpty());
}

QTEST_GUILESS_MAIN(tst_NodeRuns)
#include "tst_noderuns.moc"
