// accel-worker runs OpenBLAS's best kernels for this CPU: when OpenBLAS's own choice is below what
// the CPU runs, the worker restarts itself once with OPENBLAS_CORETYPE (core/worker/blasrestart.h).
// OPENBLAS_VERBOSE=2 makes OpenBLAS print "Core: <name>" each time it loads, which shows both the
// first choice and the one the job finally ran with.
#include "tests/helpers/testsupport.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

class tst_BlasKernels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void jobRunsTheRecommendedKernels();
    void usersChoiceIsKept();

private:
    QStringList coresOfRun(const QProcessEnvironment &env, QString *output);
    QString m_worker;
    QJsonObject m_capabilities;
    QTemporaryDir m_dir;
};

void tst_BlasKernels::initTestCase()
{
    m_worker = QDir(accel::test::binDir()).filePath("accel-worker");
    if (!QFileInfo(m_worker).isExecutable())
        QSKIP("accel-worker is not built");
    QProcess capabilities;
    capabilities.start(m_worker, {"--capabilities", "--json"});
    QVERIFY(capabilities.waitForFinished(60000));
    QCOMPARE(capabilities.exitCode(), 0);
    m_capabilities = QJsonDocument::fromJson(capabilities.readAllStandardOutput()).object();
    QCOMPARE(m_capabilities.value("schema").toString(), QStringLiteral("accel.worker-capabilities"));
    QVERIFY(m_capabilities.contains("blas_core"));
    QVERIFY(m_capabilities.contains("blas_core_recommended"));
    if (m_capabilities.value("blas_core").toString().isEmpty())
        QSKIP("libtorch does not call OpenBLAS here");
}

QStringList tst_BlasKernels::coresOfRun(const QProcessEnvironment &env, QString *output)
{
    QProcess worker;
    worker.setProcessEnvironment(env);
    worker.setProcessChannelMode(QProcess::MergedChannels);
    worker.start(m_worker, {accel::test::sourceDir() + "/resources/jobs/selftest.yaml"});
    if (!worker.waitForFinished(120000))
        return {};
    *output = QString::fromUtf8(worker.readAll());
    if (worker.exitCode() != 0)
        return {"exit " + QString::number(worker.exitCode())};
    QStringList cores;
    static const QRegularExpression core(QStringLiteral("^Core: (\\S+)"), QRegularExpression::MultilineOption);
    auto it = core.globalMatch(*output);
    while (it.hasNext())
        cores << it.next().captured(1);
    return cores;
}

void tst_BlasKernels::jobRunsTheRecommendedKernels()
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.remove("OPENBLAS_CORETYPE");
    env.remove("ACCEL_BLAS_CORETYPE");
    env.insert("OPENBLAS_VERBOSE", "2");
    env.insert("ACCEL_RUN_DIR", m_dir.filePath("run1"));
    QString output;
    const QStringList cores = coresOfRun(env, &output);
    QVERIFY2(!cores.isEmpty(), qPrintable(output));
    const QString chosen = m_capabilities.value("blas_core").toString();
    const QString recommended = m_capabilities.value("blas_core_recommended").toString();
    QCOMPARE(cores.first(), chosen);
    if (recommended.isEmpty()) {
        QCOMPARE(cores, QStringList{chosen}); // no restart
        return;
    }
    // Restarted once, and the job ran (successfully) with the better kernels.
    QCOMPARE(cores, (QStringList{chosen, recommended}));
    QVERIFY2(output.contains("restarting with it"), qPrintable(output));
    QVERIFY2(output.contains("Test is a success!"), qPrintable(output));
}

void tst_BlasKernels::usersChoiceIsKept()
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert("ACCEL_BLAS_CORETYPE", "keep");
    env.remove("OPENBLAS_CORETYPE");
    env.insert("OPENBLAS_VERBOSE", "2");
    env.insert("ACCEL_RUN_DIR", m_dir.filePath("run2"));
    QString output;
    const QStringList cores = coresOfRun(env, &output);
    QCOMPARE(cores, QStringList{m_capabilities.value("blas_core").toString()});
    QVERIFY(!output.contains("restarting with it"));
}

QTEST_GUILESS_MAIN(tst_BlasKernels)
#include "tst_blaskernels.moc"
