// Helpers shared by the Qt Test suites: where the built programs and the source tree are, and
// scratch folders that clean up after themselves.
#pragma once

#include <QString>
#include <QStringList>

class QProcess;

namespace accel::test {

// Folder with accel, accel-worker, accel-studio and the test helper programs.
QString binDir();
// The repository root (for tests/data and resources).
QString sourceDir();
// tests/data/<relative>
QString dataPath(const QString &relative);

struct ProcessResult {
    int exitCode = -1;
    bool crashed = false;
    QString out;
    QString err;
};

// Runs a program to completion (tests only; never on a GUI thread in the product).
ProcessResult runProgram(const QString &program, const QStringList &arguments, int timeoutMs = 60000,
                         const QByteArray &stdinData = {}, const QStringList &extraEnv = {});
// Runs bin/accel with the arguments.
ProcessResult runAccel(const QStringList &arguments, int timeoutMs = 60000, const QByteArray &stdinData = {},
                       const QStringList &extraEnv = {});

// A YAML "billion laughs" document after `head`: x0 is a list of ten scalars, x1 ten aliases of x0,
// and so on to x<levels-1>, which expands to 10^levels values in a few hundred bytes.
QByteArray yamlAliasBomb(int levels, const QByteArray &head = {});

// A server the test starts (sshd, munged, slurmctld, slurmd) is killed when the test process ends,
// however it ends: a test that crashes must not leave daemons behind, least of all ones holding its
// standard error, for which ctest then waits until the test's timeout.
void killWithTest(QProcess &process);

} // namespace accel::test
