// c10d's gloo process group from the PyTorch 2.x wheel, compiled against Debian's gloo headers (the
// wheel ships ProcessGroupGloo.hpp but not gloo's own headers): two real processes on loopback run every
// collective the runtime uses and agree on the results. docs/platform.md, "gloo headers".
#include "tests/helpers/testsupport.h"

#include <QProcess>
#include <QTcpServer>
#include <QTest>

class tst_Gloo : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void twoProcessesRunTheCollectives();
};

namespace {

void runProbe(int rank, int world, int port, QProcess &process)
{
    process.setProcessChannelMode(QProcess::SeparateChannels);
    process.start(accel::test::binDir() + "/accel-runtime-probe",
                  {"gloo", QString::number(rank), QString::number(world), QString::number(port)});
}

} // namespace

void tst_Gloo::twoProcessesRunTheCollectives()
{
    QTcpServer reserve;
    QVERIFY(reserve.listen(QHostAddress::LocalHost, 0));
    const int port = reserve.serverPort();
    reserve.close();
    QProcess rank0, rank1;
    runProbe(0, 2, port, rank0);
    runProbe(1, 2, port, rank1);
    QVERIFY(rank0.waitForFinished(120000));
    QVERIFY(rank1.waitForFinished(120000));
    const QString err0 = QString::fromUtf8(rank0.readAllStandardError());
    QCOMPARE(rank0.exitCode(), 0);
    QCOMPARE(rank1.exitCode(), 0);
    const QStringList out0 = QString::fromUtf8(rank0.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    const QStringList out1 = QString::fromUtf8(rank1.readAllStandardOutput()).split('\n', Qt::SkipEmptyParts);
    qInfo().noquote() << "rank 0:\n" + out0.join('\n') + "\n" + err0;

    // The library's options object reads back through our headers.
    QVERIFY(out0.contains("options timeout_ms 12345 threads 2 devices 1"));
    QVERIFY(out0.contains("backend gloo rank 0 size 2"));
    QVERIFY(out1.contains("backend gloo rank 1 size 2"));
    // 1 + 2 on both ranks.
    for (const QStringList &out : {out0, out1}) {
        QVERIFY(out.contains("allreduce_sum_f32 3 3 3 3"));
        QVERIFY(out.contains("allreduce_sum_bf16 3 3 3 3"));
        QVERIFY(out.contains("allreduce_avg_f32 1.5 1.5 1.5 1.5")); // gloo 1.13 refused AVG
        QVERIFY(out.contains("allgather_into_tensor 0 0.5 1 1.5"));
        QVERIFY(out.contains("broadcast 7 8"));
        QVERIFY(out.contains("done"));
    }
    // Reduce-scatter of (rank*100 + index): element i sums to 100 + 2i; rank r keeps 2r, 2r+1.
    QVERIFY(out0.contains("reduce_scatter_tensor 100 102"));
    QVERIFY(out1.contains("reduce_scatter_tensor 104 106"));
}

QTEST_GUILESS_MAIN(tst_Gloo)
#include "tst_gloo.moc"
