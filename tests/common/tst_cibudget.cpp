// The CI budget guard: packaging/test.sh measures the split (install, build, tests) and writes it
// to the file named by ACCEL_CI_SPLIT_FILE; this test runs after every other test of that run and
// fails when the build or the tests grew by more than 10 % over docs/ci-budget.md while the suite
// itself changed (another number of build steps or tests) and the file was not updated. Times are
// compared in units of a fixed compile that test.sh times on the same machine, so a slower machine
// alone does not fail it; and timing noise with an unchanged suite never does.
#include "tests/helpers/testsupport.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTest>

namespace {

struct Split {
    double installSeconds = 0, buildSeconds = 0, testsSeconds = 0, calibrationSeconds = 0;
    qint64 buildSteps = 0, tests = 0;
};

// The `ci-split:` line of docs/ci-budget.md: key=value pairs.
bool parseBudgetLine(const QString &text, Split &split, QString &error)
{
    const QRegularExpression line(QStringLiteral("^ci-split:(.*)$"), QRegularExpression::MultilineOption);
    const auto match = line.match(text);
    if (!match.hasMatch()) {
        error = QStringLiteral("no line starting with `ci-split:`");
        return false;
    }
    QMap<QString, double> values;
    for (const QString &pair : match.captured(1).split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        const int eq = pair.indexOf(QLatin1Char('='));
        bool ok = false;
        const double value = eq > 0 ? pair.mid(eq + 1).toDouble(&ok) : 0;
        if (!ok) {
            error = QStringLiteral("`%1`: expected key=number").arg(pair);
            return false;
        }
        values.insert(pair.left(eq), value);
    }
    for (const char *key : {"install_s", "build_s", "tests_s", "calibration_s", "build_steps", "tests"}) {
        if (!values.contains(QLatin1String(key))) {
            error = QStringLiteral("`ci-split:` lacks %1").arg(QLatin1String(key));
            return false;
        }
    }
    split = {values["install_s"],           values["build_s"],      values["tests_s"], values["calibration_s"],
             qint64(values["build_steps"]), qint64(values["tests"])};
    if (split.calibrationSeconds <= 0) {
        error = QStringLiteral("calibration_s must be positive");
        return false;
    }
    return true;
}

// The rule. Empty: within budget, or the file describes this suite; else why it fails.
QString budgetVerdict(const Split &measured, const Split &documented)
{
    const bool sameSuite = measured.buildSteps == documented.buildSteps && measured.tests == documented.tests;
    if (sameSuite)
        return {};
    QStringList grown;
    const auto check = [&](const char *part, double now, double then) {
        const double nowUnits = now / measured.calibrationSeconds, thenUnits = then / documented.calibrationSeconds;
        if (nowUnits > 1.10 * thenUnits)
            grown << QStringLiteral("%1 %2 s (%3 units of the calibration compile) against %4 s (%5 units)")
                         .arg(QLatin1String(part))
                         .arg(now, 0, 'f', 0)
                         .arg(nowUnits, 0, 'f', 0)
                         .arg(then, 0, 'f', 0)
                         .arg(thenUnits, 0, 'f', 0);
    };
    check("build", measured.buildSeconds, documented.buildSeconds);
    check("tests", measured.testsSeconds, documented.testsSeconds);
    if (grown.isEmpty())
        return {};
    return QStringLiteral("docs/ci-budget.md is out of date: the suite changed (build steps %1 -> %2, tests %3 -> %4) "
                          "and it grew by more than 10 %: %5. Measure a clean clone again (packaging/test.sh prints "
                          "the split) and update the file.")
        .arg(documented.buildSteps)
        .arg(measured.buildSteps)
        .arg(documented.tests)
        .arg(measured.tests)
        .arg(grown.join(QStringLiteral("; ")));
}

} // namespace

class tst_CiBudget : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void ruleFailsOnlyWhenTheSuiteChangedAndGrew();
    void documentedSplitParses();
    void thisRunIsWithinTheDocumentedBudget();
};

void tst_CiBudget::ruleFailsOnlyWhenTheSuiteChangedAndGrew()
{
    const Split documented{100, 1000, 500, 2.0, 900, 140};
    Split noise = documented;
    noise.buildSeconds = 1300; // 30 % slower, same suite: noise or a slower machine
    QVERIFY(budgetVerdict(noise, documented).isEmpty());
    Split slowerMachine = documented;
    slowerMachine.buildSteps = 910; // a new test program...
    slowerMachine.buildSeconds = 1300;
    slowerMachine.calibrationSeconds = 2.6; // ...on a machine 30 % slower: the same units
    QVERIFY(budgetVerdict(slowerMachine, documented).isEmpty());
    Split grownTests = documented;
    grownTests.tests = 150;
    grownTests.testsSeconds = 560; // +12 % on the same machine
    const QString verdict = budgetVerdict(grownTests, documented);
    QVERIFY2(verdict.contains(QStringLiteral("tests 560 s")) && verdict.contains(QStringLiteral("140 -> 150")),
             qPrintable(verdict));
    Split within = grownTests;
    within.testsSeconds = 545; // +9 %
    QVERIFY(budgetVerdict(within, documented).isEmpty());
}

void tst_CiBudget::documentedSplitParses()
{
    QFile file(accel::test::sourceDir() + QStringLiteral("/docs/ci-budget.md"));
    QVERIFY2(file.open(QIODevice::ReadOnly), "docs/ci-budget.md is missing");
    Split split;
    QString error;
    QVERIFY2(parseBudgetLine(QString::fromUtf8(file.readAll()), split, error), qPrintable(error));
    QVERIFY(split.buildSeconds > 0 && split.testsSeconds > 0 && split.buildSteps > 0 && split.tests > 0);
    QVERIFY2(split.installSeconds + split.buildSeconds + split.testsSeconds <= 2400,
             "the documented split is over the 2400 s budget");
    Split bad;
    QVERIFY(!parseBudgetLine(QStringLiteral("ci-split: build_s=1"), bad, error));
    QVERIFY(error.contains(QStringLiteral("install_s")));
}

void tst_CiBudget::thisRunIsWithinTheDocumentedBudget()
{
    const QString path = qEnvironmentVariable("ACCEL_CI_SPLIT_FILE");
    if (path.isEmpty())
        QSKIP("the split is measured by packaging/test.sh (ACCEL_CI_SPLIT_FILE is not set)");
    QFile file(path);
    QVERIFY2(file.open(QIODevice::ReadOnly), qPrintable(path));
    const QJsonObject json = QJsonDocument::fromJson(file.readAll()).object();
    QCOMPARE(json.value(QStringLiteral("schema")).toString(), QStringLiteral("accel.ci-split"));
    Split measured{json.value(QStringLiteral("install_s")).toDouble(),
                   json.value(QStringLiteral("build_s")).toDouble(),
                   double(QDateTime::currentSecsSinceEpoch()) - json.value(QStringLiteral("tests_started")).toDouble(),
                   json.value(QStringLiteral("calibration_s")).toDouble(),
                   qint64(json.value(QStringLiteral("build_steps")).toDouble()),
                   qint64(json.value(QStringLiteral("tests")).toDouble())};
    QVERIFY(measured.calibrationSeconds > 0 && measured.buildSteps > 0 && measured.tests > 0);
    QFile doc(accel::test::sourceDir() + QStringLiteral("/docs/ci-budget.md"));
    QVERIFY(doc.open(QIODevice::ReadOnly));
    Split documented;
    QString error;
    QVERIFY2(parseBudgetLine(QString::fromUtf8(doc.readAll()), documented, error), qPrintable(error));
    qInfo("this run: install %.0f s, build %.0f s, tests %.0f s so far; calibration %.2f s; %lld build steps, %lld "
          "tests",
          measured.installSeconds, measured.buildSeconds, measured.testsSeconds, measured.calibrationSeconds,
          measured.buildSteps, measured.tests);
    const QString verdict = budgetVerdict(measured, documented);
    QVERIFY2(verdict.isEmpty(), qPrintable(verdict));
}

QTEST_GUILESS_MAIN(tst_CiBudget)
#include "tst_cibudget.moc"
