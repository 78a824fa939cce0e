// The compat tests' oracle: the project's Python environment (ACCEL_PYTHON, set by the CMake test
// helper) with the real Hugging Face packages, run as a child process. Tests call
// requireOracle() first; it QSKIPs with the reason when the environment or a package is missing.
#pragma once

#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <QtTest>

namespace accel::test {

// The interpreter, or "" with the reason in `why`.
inline QString oraclePython(const QStringList &packages, QString *why)
{
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFileInfo(python).isExecutable()) {
        *why = QStringLiteral("the project's Python environment is missing (ACCEL_PYTHON=%1; run "
                              "packaging/install-deps.sh)")
                   .arg(python);
        return {};
    }
    QString imports;
    for (const QString &package : packages)
        imports += QStringLiteral("import importlib.util, sys\nif importlib.util.find_spec('%1') is None: "
                                  "sys.exit('%1')\n")
                       .arg(package);
    const ProcessResult probe = runProgram(python, {QStringLiteral("-c"), imports}, 60000);
    if (probe.exitCode != 0) {
        *why = QStringLiteral("%1 lacks the package %2").arg(python, probe.err.trimmed());
        return {};
    }
    return python;
}

// Skips the calling test function when the oracle cannot run.
#define ACCEL_REQUIRE_ORACLE(python, ...)                                                                              \
    QString python;                                                                                                    \
    {                                                                                                                  \
        QString why;                                                                                                   \
        python = accel::test::oraclePython({__VA_ARGS__}, &why);                                                       \
        if (python.isEmpty())                                                                                          \
            QSKIP(qPrintable(why));                                                                                    \
    }

// tests/compat/<name>
inline QString compatScript(const QString &name)
{
    return QDir(sourceDir()).filePath(QStringLiteral("tests/compat/") + name);
}

// Data rows of a test function, one per case of an oracle's "cases" (named by its "name"), with the
// case's index in column "index"; currentOracleCase() is the row's case.
inline void addOracleCaseRows(const QJsonArray &cases)
{
    QTest::addColumn<int>("index");
    for (int i = 0; i < cases.size(); ++i)
        QTest::newRow(qPrintable(cases[i].toObject().value(QStringLiteral("name")).toString())) << i;
}

inline QJsonObject currentOracleCase(const QJsonArray &cases)
{
    QFETCH(int, index);
    return cases[index].toObject();
}

// Runs tests/compat/accelerate_oracle.py and parses its JSON output ("" error on success).
inline QJsonDocument runAccelerateOracle(const QString &python, const QStringList &arguments, QString *error,
                                         int timeoutMs = 240000)
{
    const ProcessResult result =
        runProgram(python, QStringList{compatScript(QStringLiteral("accelerate_oracle.py"))} + arguments, timeoutMs);
    QJsonParseError parse{};
    const QJsonDocument document = QJsonDocument::fromJson(result.out.toUtf8(), &parse);
    if (result.exitCode != 0 || parse.error != QJsonParseError::NoError)
        *error = QStringLiteral("oracle %1 failed (exit %2): %3")
                     .arg(arguments.value(0))
                     .arg(result.exitCode)
                     .arg(result.err.right(3000));
    return document;
}

} // namespace accel::test
