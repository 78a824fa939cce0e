// screenshotfixture FOLDER: the real servers packaging/screenshots.sh pictures the studio against,
// started as the tests start them: an sshd on loopback (SshTestServer: client folder with the
// alias "accel-test") and a single-node SLURM cluster (SlurmTestCluster) in FOLDER. Prints one
// JSON line {"ssh_dir", "alias", "slurm_conf", "slurm_error"} ("slurm_error" says why there is no
// cluster; "ssh_dir" is empty, with "ssh_error", when sshd cannot run), then keeps them until its
// standard input closes, cancels the cluster's jobs and stops everything.
#include "tests/helpers/slurmtestcluster.h"
#include "tests/helpers/sshtestserver.h"

#include <QCoreApplication>
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdio>
#include <iostream>

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (argc != 2) {
        std::fprintf(stderr, "usage: screenshotfixture FOLDER\n");
        return 2;
    }
    const QString folder = QDir(QString::fromLocal8Bit(argv[1])).absolutePath();
    QDir().mkpath(folder);
    QJsonObject answer;
    accel::test::SshTestServer server;
    accel::test::SlurmTestCluster cluster;
    QString sshError = accel::test::SshTestServer::unavailableReason();
    if (sshError.isEmpty())
        sshError = server.start();
    if (sshError.isEmpty()) {
        answer[QStringLiteral("ssh_dir")] = server.clientDirectory();
        answer[QStringLiteral("alias")] = server.alias();
        const QString slurmError = cluster.start(QDir(folder).filePath(QStringLiteral("slurm")));
        answer[QStringLiteral("slurm_conf")] = slurmError.isEmpty() ? cluster.conf() : QString();
        answer[QStringLiteral("slurm_error")] = slurmError;
    } else {
        answer[QStringLiteral("ssh_dir")] = QString();
        answer[QStringLiteral("ssh_error")] = sshError;
    }
    std::printf("%s\n", QJsonDocument(answer).toJson(QJsonDocument::Compact).constData());
    std::fflush(stdout);
    // Blocking is fine: the servers are child processes and need no event loop here.
    for (std::string line; std::getline(std::cin, line);) {
    }
    if (!cluster.conf().isEmpty()) {
        cluster.cancelAll();
        cluster.stop();
    }
    server.stop();
    return sshError.isEmpty() ? 0 : 1;
}
