// The two ends of the network pre-flight's reach check (cmd_hosts_preflight.cpp), run on the
// nodes over SSH; hidden actions of `accel hosts`:
//   net-listen --port P --expect N --seconds S   binds 0.0.0.0:P as rank 0's TCPStore would, prints
//        one JSON line when it listens (or why it cannot), greets every connection, and ends after
//        N connections or S seconds with a JSON line listing the peers.
//   net-connect --address A --port P --timeout_ms T   one TCP connection to A:P within T ms: prints
//        one JSON line with the outcome (refused, timed out, no route, ...), the local address it
//        left from and the listener's greeting.
//   net-selftest --num_machines N --machine_rank I --main_process_ip A --main_process_port P
//        this node's rank of the runtime's self-test (`recipe: selftest`: rendezvous, all-reduce,
//        broadcast, gather, one DDP step) with one rank per node, in a scratch run directory; prints
//        one JSON line with the run's end. `--probe` only says whether accel-worker is here.
// All print accel.net-probe, version 1. POSIX sockets: the accel CLI does not link Qt Network.
#include "app/cli/argparser.h"
#include "app/cli/cmd_launch_support.h"
#include "app/cli/command.h"

#include "core/rundir/runevents.h"
#include "core/rundir/runlayout.h"
#include "launcher/jsonoutput.h"
#include "launcher/ports.h"

#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace accel::cli {

namespace {

constexpr char Greeting[] = "accel-net-listen";

void emit(const QJsonObject &body)
{
    std::fputs(launcher::schemaJson(QLatin1String(launcher::NetProbeSchema), launcher::NetProbeVersion, body, true)
                   .trimmed()
                   .constData(),
               stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
}

QString addressText(const sockaddr_storage &address)
{
    char text[INET6_ADDRSTRLEN] = {};
    if (address.ss_family == AF_INET)
        ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in &>(address).sin_addr, text, sizeof(text));
    else if (address.ss_family == AF_INET6)
        ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 &>(address).sin6_addr, text, sizeof(text));
    return QString::fromLatin1(text);
}

bool parseArguments(ArgParser &parser, int argc, char **argv, int &exitCode)
{
    if (parser.parse(argc, argv, 1))
        return true;
    exitCode = parser.helpRequested() ? ExitOk : ExitBadInput;
    std::fputs(parser.helpRequested() ? parser.helpText().c_str() : (parser.error() + "\n").c_str(),
               parser.helpRequested() ? stdout : stderr);
    return false;
}

int number(const ArgParser &parser, const std::string &name, int low, int high, bool &ok)
{
    const std::string text = parser.valueOr(name, "");
    char *end = nullptr;
    const long value = std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end || value < low || value > high) {
        std::fprintf(stderr, "accel hosts: --%s: expected %d-%d, got '%s'\n", name.c_str(), low, high, text.c_str());
        ok = false;
    }
    return static_cast<int>(value);
}

// Why a connect() failed, as a word programs can switch on.
QString errorKind(int error)
{
    switch (error) {
    case ETIMEDOUT:
        return QStringLiteral("timeout");
    case ECONNREFUSED:
        return QStringLiteral("refused");
    case EHOSTUNREACH:
    case ENETUNREACH:
    case EINVAL: // a blackhole route
        return QStringLiteral("unreachable");
    case EACCES:
    case EPERM:
        return QStringLiteral("denied");
    default:
        return QStringLiteral("failed");
    }
}

} // namespace

int runHostsNetListen(int argc, char **argv)
{
    ArgParser parser("accel hosts net-listen", "(internal) the main node's end of the pre-flight's reach check.");
    parser.addValue("port", "PORT", "TCP port to listen on (all addresses)");
    parser.addValue("expect", "N", "end after N connections", "0");
    parser.addValue("seconds", "S", "end after S seconds at the latest", "30");
    int exitCode = ExitOk;
    if (!parseArguments(parser, argc, argv, exitCode))
        return exitCode;
    bool ok = true;
    const int port = number(parser, "port", 1, 65535, ok);
    const int expect = parser.isSet("expect") ? number(parser, "expect", 0, 4096, ok) : 0;
    const int seconds = parser.isSet("seconds") ? number(parser, "seconds", 1, 3600, ok) : 30;
    if (!ok)
        return ExitBadInput;

    const int server = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(server, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)); // as c10d's TCPStore
    sockaddr_in any{};
    any.sin_family = AF_INET;
    any.sin_addr.s_addr = htonl(INADDR_ANY);
    any.sin_port = htons(static_cast<uint16_t>(port));
    if (server < 0 || ::bind(server, reinterpret_cast<sockaddr *>(&any), sizeof(any)) != 0 ||
        ::listen(server, 64) != 0) {
        const int error = errno;
        const std::string why = error == EADDRINUSE ? launcher::describeBusyPort(port)
                                                    : "port " + std::to_string(port) + ": " + std::strerror(error);
        emit({{QStringLiteral("event"), QStringLiteral("failed")},
              {QStringLiteral("port"), port},
              {QStringLiteral("in_use"), error == EADDRINUSE},
              {QStringLiteral("error"), QString::fromStdString(why)}});
        return ExitFailure;
    }
    char hostname[256] = {};
    ::gethostname(hostname, sizeof(hostname) - 1);
    emit({{QStringLiteral("event"), QStringLiteral("listening")}, {QStringLiteral("port"), port}});

    const QByteArray greeting = QByteArray(Greeting) + ' ' + hostname + '\n';
    std::vector<pollfd> open; // accepted connections, waiting for the peer to close
    QJsonArray peers;
    QElapsedTimer clock;
    clock.start();
    while (clock.elapsed() < seconds * 1000LL && (expect == 0 || peers.size() < expect || !open.empty())) {
        std::vector<pollfd> watched = {{server, POLLIN, 0}};
        watched.insert(watched.end(), open.begin(), open.end());
        const int wait = static_cast<int>(std::min<qint64>(200, seconds * 1000LL - clock.elapsed()));
        if (::poll(watched.data(), watched.size(), std::max(wait, 1)) <= 0)
            continue;
        if (watched[0].revents & POLLIN) {
            sockaddr_storage peer{};
            socklen_t length = sizeof(peer);
            const int connection = ::accept4(server, reinterpret_cast<sockaddr *>(&peer), &length, SOCK_CLOEXEC);
            if (connection >= 0) {
                (void)!::write(connection, greeting.constData(), static_cast<size_t>(greeting.size()));
                peers.append(addressText(peer));
                open.push_back({connection, POLLIN, 0});
            }
        }
        for (size_t i = 1; i < watched.size(); ++i) {
            char buffer[256];
            if (watched[i].revents && ::read(watched[i].fd, buffer, sizeof(buffer)) <= 0) { // the peer closed
                ::close(watched[i].fd);
                open.erase(
                    std::find_if(open.begin(), open.end(), [&](const pollfd &p) { return p.fd == watched[i].fd; }));
            }
        }
    }
    for (const pollfd &connection : open)
        ::close(connection.fd);
    ::close(server);
    emit({{QStringLiteral("event"), QStringLiteral("closed")},
          {QStringLiteral("port"), port},
          {QStringLiteral("peers"), peers}});
    return ExitOk;
}

int runHostsNetConnect(int argc, char **argv)
{
    ArgParser parser("accel hosts net-connect", "(internal) a node's end of the pre-flight's reach check.");
    parser.addValue("address", "ADDRESS", "the main node's address");
    parser.addValue("port", "PORT", "its port");
    parser.addValue("timeout_ms", "MS", "limit for connecting and the greeting", "5000");
    int exitCode = ExitOk;
    if (!parseArguments(parser, argc, argv, exitCode))
        return exitCode;
    bool ok = true;
    const int port = number(parser, "port", 1, 65535, ok);
    const int timeoutMs = parser.isSet("timeout_ms") ? number(parser, "timeout_ms", 1, 600000, ok) : 5000;
    const std::string address = parser.valueOr("address", "");
    if (address.empty()) {
        std::fputs("accel hosts net-connect: --address: expected the main node's address\n", stderr);
        ok = false;
    }
    if (!ok)
        return ExitBadInput;

    QElapsedTimer clock;
    clock.start();
    QJsonObject result{{QStringLiteral("event"), QStringLiteral("connect")},
                       {QStringLiteral("address"), QString::fromStdString(address)},
                       {QStringLiteral("port"), port}};
    auto finish = [&](const QString &kind, const QString &error) {
        result[QStringLiteral("ok")] = kind.isEmpty();
        result[QStringLiteral("error_kind")] = kind;
        result[QStringLiteral("error")] = error;
        result[QStringLiteral("elapsed_ms")] = static_cast<double>(clock.nsecsElapsed() / 100000) / 10.0;
        emit(result);
        return kind.isEmpty() ? ExitOk : ExitFailure;
    };
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    addrinfo *found = nullptr;
    if (const int error = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &found); error != 0)
        return finish(QStringLiteral("resolve"), QString::fromLocal8Bit(::gai_strerror(error)));
    const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int error = fd < 0 ? errno : 0;
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0 && errno != EINPROGRESS)
        error = errno;
    ::freeaddrinfo(found);
    auto remaining = [&] { return std::max<int>(0, timeoutMs - static_cast<int>(clock.elapsed())); };
    if (error == 0) {
        pollfd watched{fd, POLLOUT, 0};
        if (::poll(&watched, 1, remaining()) <= 0) {
            error = ETIMEDOUT;
        } else {
            socklen_t length = sizeof(error);
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
        }
    }
    if (error != 0) {
        if (fd >= 0)
            ::close(fd);
        return finish(errorKind(error), error == ETIMEDOUT ? QStringLiteral("no answer within %1 ms").arg(timeoutMs)
                                                           : QString::fromLocal8Bit(std::strerror(error)));
    }
    sockaddr_storage local{};
    socklen_t length = sizeof(local);
    ::getsockname(fd, reinterpret_cast<sockaddr *>(&local), &length);
    result[QStringLiteral("local_address")] = addressText(local);
    QByteArray greeting;
    while (!greeting.contains('\n') && remaining() > 0) {
        pollfd watched{fd, POLLIN, 0};
        char buffer[256];
        if (::poll(&watched, 1, remaining()) <= 0)
            break;
        const ssize_t got = ::read(fd, buffer, sizeof(buffer));
        if (got <= 0)
            break;
        greeting.append(buffer, static_cast<int>(got));
    }
    ::close(fd);
    greeting = greeting.left(greeting.indexOf('\n'));
    result[QStringLiteral("greeting")] = QString::fromUtf8(greeting.left(200));
    if (!greeting.startsWith(Greeting))
        return finish(QStringLiteral("not_accel"),
                      QStringLiteral("connected, but what answers on port %1 is not accel's listener").arg(port));
    return finish({}, {});
}

int runHostsNetSelftest(int argc, char **argv)
{
    ArgParser parser("accel hosts net-selftest",
                     "(internal) this node's rank of the pre-flight's all-reduce (the runtime's self-test).");
    parser.addValue("num_machines", "N", "nodes in the cluster");
    parser.addValue("machine_rank", "I", "this node's place");
    parser.addValue("main_process_ip", "IP", "machine 0's address");
    parser.addValue("main_process_port", "PORT", "rank 0's TCPStore port");
    parser.addValue("timeout", "S", "rendezvous and collective limit", "60");
    parser.addFlag("probe", "only report whether accel-worker is here");
    int exitCode = ExitOk;
    if (!parseArguments(parser, argc, argv, exitCode))
        return exitCode;
    const QString worker = QString::fromStdString(workerProgramPath());
    if (!QFileInfo(worker).isExecutable()) {
        emit({{QStringLiteral("event"), QStringLiteral("selftest")},
              {QStringLiteral("worker"), false},
              {QStringLiteral("ok"), false},
              {QStringLiteral("error"), worker + QStringLiteral(" not found: this build has no libtorch runtime")}});
        return ExitFailure;
    }
    if (parser.isSet("probe")) {
        emit({{QStringLiteral("event"), QStringLiteral("selftest")},
              {QStringLiteral("worker"), true},
              {QStringLiteral("ok"), true}});
        return ExitOk;
    }
    bool ok = true;
    const int machines = number(parser, "num_machines", 1, 4096, ok);
    const int rank = number(parser, "machine_rank", 0, 4095, ok);
    const int port = number(parser, "main_process_port", 1, 65535, ok);
    const int timeout = parser.isSet("timeout") ? number(parser, "timeout", 1, 3600, ok) : 60;
    if (!ok)
        return ExitBadInput;

    int fakeArgc = 1;
    char *fakeArgv[] = {argv[0], nullptr};
    QCoreApplication app(fakeArgc, fakeArgv);
    QTemporaryDir scratch;
    const QString job = scratch.filePath(QStringLiteral("selftest.yaml"));
    QFile file(job);
    if (!file.open(QIODevice::WriteOnly) ||
        file.write(QStringLiteral("# accel hosts doctor: the runtime's self-test across the nodes (docs/remote.md)\n"
                                  "recipe: selftest\nname: doctor-selftest\nseed: 42\ntraining:\n  timeout_s: %1\n")
                       .arg(timeout)
                       .toUtf8()) < 0) {
        std::fprintf(stderr, "accel hosts net-selftest: cannot write %s\n", qPrintable(job));
        return ExitFailure;
    }
    file.close();
    const QString runDir = scratch.filePath(QStringLiteral("run"));
    QProcess launch;
    launch.setProcessChannelMode(QProcess::MergedChannels);
    launch.start(QFileInfo(QStringLiteral("/proc/self/exe")).canonicalFilePath(),
                 {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--quiet"),
                  QStringLiteral("--num_machines"), QString::number(machines), QStringLiteral("--machine_rank"),
                  QString::number(rank), QStringLiteral("--num_processes"), QString::number(machines),
                  QStringLiteral("--main_process_ip"), parser.valueOr("main_process_ip", "").c_str(),
                  QStringLiteral("--main_process_port"), QString::number(port), QStringLiteral("--run_dir"), runDir,
                  QStringLiteral("--job"), job});
    const bool ended = launch.waitForFinished((timeout + 30) * 1000);
    if (!ended)
        launch.kill();
    launch.waitForFinished(5000);
    QFile manifest(QDir(runDir).filePath(QString::fromLatin1(accel::rundir::file::Manifest)));
    const QString state =
        manifest.open(QIODevice::ReadOnly)
            ? QJsonDocument::fromJson(manifest.readAll()).object().value(QStringLiteral("state")).toString()
            : QString();
    QFile log(QDir(runDir).filePath(QString::fromStdString(accel::rundir::logFile(rank))));
    const QByteArray tail = log.open(QIODevice::ReadOnly) ? log.readAll().trimmed().right(600) : QByteArray();
    const bool passed = ended && launch.exitCode() == 0 &&
                        accel::rundir::runStateFromString(state.toStdString()) == accel::rundir::RunState::Succeeded;
    emit({{QStringLiteral("event"), QStringLiteral("selftest")},
          {QStringLiteral("worker"), true},
          {QStringLiteral("ok"), passed},
          {QStringLiteral("state"), state},
          {QStringLiteral("exit_code"), ended ? launch.exitCode() : -1},
          {QStringLiteral("error"),
           passed ? QString()
                  : QString::fromUtf8(tail.isEmpty() ? launch.readAll().trimmed().right(600) : tail)
                        .section(QLatin1Char('\n'), -3)}});
    return passed ? ExitOk : ExitFailure;
}

} // namespace accel::cli
