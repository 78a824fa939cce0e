// OpenBLAS kernel advice: the ISA table, and the real libblas.so.3 of this machine.
#include "core/hardware/blasprobe.h"

#include <QtTest>

using namespace accel::hardware;

class tst_BlasProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void levels();
    void recommendation_data();
    void recommendation();
    void probesThisMachine();
    void respectsTheUsersChoice();
};

void tst_BlasProbe::levels()
{
    QCOMPARE(openBlasCoreLevel("Prescott"), 0);
    QCOMPARE(openBlasCoreLevel("SANDYBRIDGE"), 1);
    QCOMPARE(openBlasCoreLevel("Haswell"), 2);
    QCOMPARE(openBlasCoreLevel("Zen"), 2);
    QCOMPARE(openBlasCoreLevel("SkylakeX"), 3);
    QCOMPARE(openBlasCoreLevel("Cooperlake"), 3);
    QCOMPARE(openBlasCoreLevel("NeoverseN1"), -1);
    QCOMPARE(cpuIsaLevel({}), 0);
    QCOMPARE(cpuIsaLevel({"avx"}), 1);
    QCOMPARE(cpuIsaLevel({"avx", "avx2"}), 1); // AVX2 kernels also need FMA
    QCOMPARE(cpuIsaLevel({"avx", "avx2", "fma"}), 2);
    QCOMPARE(cpuIsaLevel({"avx", "avx2", "fma", "avx512f"}), 2); // SkylakeX needs BW, VL and DQ too
    QCOMPARE(cpuIsaLevel({"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"}), 3);
}

void tst_BlasProbe::recommendation_data()
{
    QTest::addColumn<QString>("core");
    QTest::addColumn<QStringList>("flags");
    QTest::addColumn<QString>("expected");
    const QStringList avx512{"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"};
    QTest::newRow("unknown new Xeon falls back to Prescott") << "Prescott" << avx512 << "SkylakeX";
    QTest::newRow("AVX2 machine on Prescott") << "Prescott" << QStringList{"avx", "avx2", "fma"} << "Haswell";
    QTest::newRow("Haswell kernels on an AVX-512 CPU") << "Haswell" << avx512 << "SkylakeX";
    QTest::newRow("right choice") << "SkylakeX" << avx512 << "";
    QTest::newRow("better than needed is left alone") << "Cooperlake" << avx512 << "";
    QTest::newRow("old CPU") << "Prescott" << QStringList{} << "";
    QTest::newRow("AMD Zen on an AVX2 CPU") << "Zen" << QStringList{"avx", "avx2", "fma"} << "";
    QTest::newRow("unknown family is left alone") << "ThunderX2T99" << avx512 << "";
}

void tst_BlasProbe::recommendation()
{
    QFETCH(QString, core);
    QFETCH(QStringList, flags);
    QFETCH(QString, expected);
    std::vector<std::string> list;
    for (const QString &flag : flags)
        list.push_back(flag.toStdString());
    QCOMPARE(QString::fromStdString(recommendedOpenBlasCore(core.toStdString(), list)), expected);
}

void tst_BlasProbe::probesThisMachine()
{
    qunsetenv("OPENBLAS_CORETYPE");
    const BlasReport report = probeBlas(runningCpuFlags());
    if (report.library.empty())
        QSKIP("no libblas.so.3 on this machine");
    QVERIFY2(QFileInfo(QString::fromStdString(report.library)).isFile(), report.library.c_str());
    if (report.vendor != "OpenBLAS") {
        QCOMPARE(QString::fromStdString(report.vendor), QStringLiteral("other"));
        QVERIFY(report.recommended.empty());
        return;
    }
    QVERIFY(openBlasCoreLevel(report.coreName) >= -1);
    QVERIFY(!report.coreName.empty());
    QVERIFY2(report.config.find("OpenBLAS") != std::string::npos, report.config.c_str());
    // Whatever OpenBLAS chose, the advice is consistent with the table and this CPU.
    QCOMPARE(report.recommended, recommendedOpenBlasCore(report.coreName, runningCpuFlags()));
    QCOMPARE(report.reason.empty(), report.recommended.empty());
}

void tst_BlasProbe::respectsTheUsersChoice()
{
    qputenv("OPENBLAS_CORETYPE", "Prescott");
    const BlasReport report = probeBlas({"avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq"});
    qunsetenv("OPENBLAS_CORETYPE");
    QCOMPARE(QString::fromStdString(report.coreTypeEnv), QStringLiteral("Prescott"));
    QVERIFY(report.recommended.empty());
}

QTEST_GUILESS_MAIN(tst_BlasProbe)
#include "tst_blasprobe.moc"
