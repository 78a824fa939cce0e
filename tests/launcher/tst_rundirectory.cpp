// Run directories, file following and port probes on real files, processes and sockets.
#include "launcher/filefollower.h"
#include "launcher/jsonoutput.h"
#include "launcher/launchplan.h"
#include "launcher/ports.h"
#include "launcher/rundirectory.h"

#include "core/rundir/processidentity.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace accel::launcher;

class tst_RunDirectory : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void createOpenAndStates()
    {
        QTemporaryDir root;
        const QString id = RunDirectory::makeRunId(QStringLiteral("my train/job"));
        QVERIFY(QRegularExpression(QStringLiteral("^\\d{8}-\\d{6}-my_train_job-[0-9a-f]{4}$")).match(id).hasMatch());
        auto run = RunDirectory::create(root.filePath(id));
        QVERIFY(run);
        for (const char *sub : {"logs", "metrics", "checkpoints"})
            QVERIFY(QDir(run->path()).exists(QString::fromLatin1(sub)));
        QVERIFY(run->writeManifest({{QStringLiteral("schema"), QStringLiteral("accel.run")},
                                    {QStringLiteral("version"), 1},
                                    {QStringLiteral("id"), id}}));
        QVERIFY(run->setState(QStringLiteral("running")));
        QVERIFY(run->appendEvent(QStringLiteral("started"), {{QStringLiteral("ranks"), 2}}));
        QVERIFY(!RunDirectory::create(run->path())); // holds a run already

        auto byId = RunDirectory::open(id.right(4), root.path());
        QVERIFY(byId);
        QCOMPARE(byId->path(), run->path());
        QCOMPARE(byId->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("running"));
        QFile raw(run->filePath(QStringLiteral("run.json")));
        QVERIFY(raw.open(QIODevice::ReadOnly));
        QVERIFY(raw.readAll().startsWith("{\n    \"schema\": \"accel.run\",\n    \"version\": 1,"));
        auto missing = RunDirectory::open(QStringLiteral("zzzz"), root.path());
        QVERIFY(!missing);
        QCOMPARE(missing.error().code, accel::ErrorCode::NotFound);
    }

    void eventsHaveTheOneLineFormat()
    {
        // The supervisor's events.jsonl lines are the monitor's (core/rundir/runevents.h): "v", the
        // time, the event and the rank first.
        QTemporaryDir root;
        auto run = RunDirectory::create(root.filePath(QStringLiteral("r")));
        QVERIFY(run);
        QVERIFY(run->appendEvent(QStringLiteral("rank_exited"),
                                 {{QStringLiteral("rank"), 1}, {QStringLiteral("exit_code"), 0}}));
        QFile events(run->filePath(QStringLiteral("events.jsonl")));
        QVERIFY(events.open(QIODevice::ReadOnly));
        const QByteArray line = events.readAll();
        QVERIFY2(
            QRegularExpression(QStringLiteral("^\\{\"v\":1,\"time\":\\d+\\.\\d{3},\"event\":\"rank_exited\",\"rank\":1,"
                                              "\"exit_code\":0\\}\n$"))
                .match(QString::fromUtf8(line))
                .hasMatch(),
            line.constData());
    }

    void deadSupervisorIsLost()
    {
        QTemporaryDir root;
        auto run = RunDirectory::create(root.filePath(QStringLiteral("r")));
        QVERIFY(run);
        QProcess sleeper;
        sleeper.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(sleeper.waitForStarted());
        const qint64 pid = sleeper.processId();
        const quint64 start = accel::rundir::processStartTime(pid);
        QVERIFY(start > 0);
        QVERIFY(accel::rundir::processMatches(pid, start));
        QVERIFY(!accel::rundir::processMatches(pid, start + 1)); // same pid, different process
        QVERIFY(run->writeManifest(
            {{QStringLiteral("state"), QStringLiteral("running")},
             {QStringLiteral("supervisor"),
              QJsonObject{{QStringLiteral("pid"), pid},
                          {QStringLiteral("start_time"), static_cast<qint64>(start)},
                          {QStringLiteral("host"), QString::fromStdString(accel::rundir::localHostName())}}}}));
        QCOMPARE(run->effectiveState(true), QStringLiteral("running"));
        sleeper.kill();
        QVERIFY(sleeper.waitForFinished());
        QCOMPARE(run->effectiveState(true), QStringLiteral("lost"));
        auto reopened = RunDirectory::open(run->path());
        QVERIFY(reopened);
        QCOMPARE(reopened->manifest().value(QStringLiteral("state")).toString(), QStringLiteral("lost"));
    }

    void followerHandsOutCompleteLines()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank0.log"));
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Unbuffered));
        file.write("a\nb\nc\nd\n");
        FileFollower follower;
        follower.addFile(path);
        follower.seekToTail(2);
        auto lines = follower.poll();
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines.at(0).text, QStringLiteral("c"));
        file.write("partial");
        QVERIFY(follower.poll().isEmpty());
        file.write(" line\nnext\n");
        lines = follower.poll();
        QCOMPARE(lines.size(), 2);
        QCOMPARE(lines.at(0).text, QStringLiteral("partial line"));
        FileFollower all;
        all.addFile(path);
        all.seekToTail(-1);
        QCOMPARE(all.poll().size(), 6);
        QCOMPARE(lastLines(path, 2), (QStringList{QStringLiteral("partial line"), QStringLiteral("next")}));
    }

    void portsFreeBusyAndHolder()
    {
        auto port = pickFreePort();
        QVERIFY(port);
        QVERIFY(!isPortInUse(*port));
        const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr.s_addr = htonl(INADDR_ANY);
        address.sin_port = htons(static_cast<uint16_t>(*port));
        QCOMPARE(::bind(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)), 0);
        QCOMPARE(::listen(fd, 1), 0);
        QVERIFY(isPortInUse(*port));
        auto holder = findPortHolder(*port);
        QVERIFY(holder);
        QCOMPARE(holder->pid, static_cast<int>(QCoreApplication::applicationPid()));
        QVERIFY(QString::fromStdString(describeBusyPort(*port)).contains(QStringLiteral("tst_rundirectory")));
        ::close(fd);
    }

    void schemaComesFirst()
    {
        const QByteArray compact = schemaJson(QStringLiteral("accel.x"), 1, {{QStringLiteral("a"), 1}}, true);
        QCOMPARE(compact, QByteArray("{\"schema\":\"accel.x\",\"version\":1,\"a\":1}"));
        const QByteArray empty = schemaJson(QStringLiteral("accel.y"), 2, {});
        QCOMPARE(QJsonDocument::fromJson(empty).object().value(QStringLiteral("version")).toInt(), 2);
        const QByteArray indented = schemaJson(QStringLiteral("accel.z"), 1, {{QStringLiteral("b"), QJsonArray{1, 2}}});
        QVERIFY(QJsonDocument::fromJson(indented).isObject());
        QVERIFY(indented.startsWith("{\n    \"schema\": \"accel.z\",\n    \"version\": 1,\n    \"b\""));
    }
};

QTEST_GUILESS_MAIN(tst_RunDirectory)
#include "tst_rundirectory.moc"
