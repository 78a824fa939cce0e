#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QProcess>
#include <QProcessEnvironment>

#include <csignal>
#include <sys/prctl.h>

namespace accel::test {

QString binDir()
{
    const QByteArray env = qgetenv("ACCEL_BIN_DIR");
    return env.isEmpty() ? QStringLiteral(ACCEL_TEST_BIN_DIR) : QString::fromLocal8Bit(env);
}

QString sourceDir()
{
    const QByteArray env = qgetenv("ACCEL_SOURCE_DIR");
    return env.isEmpty() ? QStringLiteral(ACCEL_TEST_SOURCE_DIR) : QString::fromLocal8Bit(env);
}

QString dataPath(const QString &relative)
{
    return QDir(sourceDir()).filePath(QStringLiteral("tests/data/") + relative);
}

void killWithTest(QProcess &process)
{
    process.setChildProcessModifier([] { ::prctl(PR_SET_PDEATHSIG, SIGKILL); });
}

ProcessResult runProgram(const QString &program, const QStringList &arguments, int timeoutMs,
                         const QByteArray &stdinData, const QStringList &extraEnv)
{
    QProcess process;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    for (const QString &entry : extraEnv) {
        const qsizetype eq = entry.indexOf(QLatin1Char('='));
        if (eq > 0)
            env.insert(entry.left(eq), entry.mid(eq + 1));
        else
            env.remove(entry);
    }
    process.setProcessEnvironment(env);
    process.start(program, arguments);
    ProcessResult result;
    if (!process.waitForStarted(10000)) {
        result.err = process.errorString();
        return result;
    }
    if (!stdinData.isEmpty())
        process.write(stdinData);
    process.closeWriteChannel();
    if (!process.waitForFinished(timeoutMs)) {
        process.kill();
        process.waitForFinished(5000);
        result.crashed = true;
        result.err = QStringLiteral("timed out after %1 ms\n").arg(timeoutMs);
    }
    result.exitCode = process.exitCode();
    result.crashed = result.crashed || process.exitStatus() == QProcess::CrashExit;
    result.out += QString::fromUtf8(process.readAllStandardOutput());
    result.err += QString::fromUtf8(process.readAllStandardError());
    return result;
}

ProcessResult runAccel(const QStringList &arguments, int timeoutMs, const QByteArray &stdinData,
                       const QStringList &extraEnv)
{
    return runProgram(QDir(binDir()).filePath(QStringLiteral("accel")), arguments, timeoutMs, stdinData, extraEnv);
}

QByteArray yamlAliasBomb(int levels, const QByteArray &head)
{
    QByteArray text = head + "x0: &x0 [a, a, a, a, a, a, a, a, a, a]\n";
    for (int i = 1; i < levels; ++i) {
        text += "x" + QByteArray::number(i) + ": &x" + QByteArray::number(i) + " [";
        for (int k = 0; k < 10; ++k)
            text += (k ? ", *x" : "*x") + QByteArray::number(i - 1);
        text += "]\n";
    }
    return text;
}

} // namespace accel::test
