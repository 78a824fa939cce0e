// Child programs with timeouts, accel-worker capabilities and the Python probe, with real
// processes: shell scripts the test writes, /usr/bin/python3, a missing program.
#include "core/hardware/childprocess.h"
#include "core/hardware/softwareprobe.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::hardware;

static std::string writeScript(const QTemporaryDir &dir, const QString &name, const QByteArray &body)
{
    const QString path = dir.filePath(name);
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    file.write("#!/bin/sh\n" + body);
    file.close();
    file.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    return path.toStdString();
}

class tst_SoftwareProbe : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void runChildCapturesBothStreamsAndExitCode()
    {
        auto result = runChild("sh", {"-c", "echo out; echo err >&2; exit 3"}, 10000);
        QVERIFY2(result.has_value(), result ? "" : result.error().toString().c_str());
        QCOMPARE(result->out, std::string("out\n"));
        QCOMPARE(result->err, std::string("err\n"));
        QCOMPARE(result->exitCode, 3);
        QCOMPARE(result->signal, 0);
    }

    void runChildReportsSignals()
    {
        auto result = runChild("sh", {"-c", "kill -TERM $$"}, 10000);
        QVERIFY(result.has_value());
        QCOMPARE(result->signal, 15);
        QCOMPARE(result->exitCode, -1);
    }

    void runChildLargeOutputIsCapped()
    {
        auto result = runChild("sh", {"-c", "head -c 300000 /dev/zero"}, 10000, 100000);
        QVERIFY(result.has_value());
        QCOMPARE(result->out.size(), size_t(100000));
        QCOMPARE(result->exitCode, 0);
    }

    void runChildTimesOutAndKillsTheGroup()
    {
        QElapsedTimer timer;
        timer.start();
        // The shell's child (sleep) must die too: it holds the pipe open.
        auto result = runChild("sh", {"-c", "sleep 30; echo late"}, 300);
        QVERIFY(!result.has_value());
        QCOMPARE(result.error().code, ErrorCode::Timeout);
        QVERIFY(result.error().message.find("300 ms") != std::string::npos);
        QVERIFY(timer.elapsed() < 10000);
    }

    void runChildTimesOutWhenStreamsAreClosedEarly()
    {
        auto result = runChild("sh", {"-c", "exec >/dev/null 2>&1; sleep 30"}, 300);
        QVERIFY(!result.has_value());
        QCOMPARE(result.error().code, ErrorCode::Timeout);
    }

    void runChildMissingProgram()
    {
        auto onPath = runChild("accel-no-such-program", {}, 1000);
        QVERIFY(!onPath.has_value());
        QCOMPARE(onPath.error().code, ErrorCode::NotFound);
        QVERIFY(onPath.error().message.find("PATH") != std::string::npos);
        auto absolute = runChild("/nonexistent/accel-worker", {}, 1000);
        QVERIFY(!absolute.has_value());
        QCOMPARE(absolute.error().context, std::string("/nonexistent/accel-worker"));
        QVERIFY(findOnPath("sh").find("/sh") != std::string::npos);
        QVERIFY(findOnPath("accel-no-such-program").empty());
    }

    void workerCapabilitiesFromAFakeWorker()
    {
        QTemporaryDir dir;
        const std::string worker = writeScript(
            dir, QStringLiteral("accel-worker"),
            "[ \"$1 $2\" = \"--capabilities --json\" ] || exit 9\n"
            "echo '{\"schema\":\"accel.worker-capabilities\",\"version\":1,\"torch_version\":\"1.13.0\",\"cuda\":false,"
            "\"cuda_version\":null,\"cudnn\":null,\"nccl\":false,\"gloo\":true,\"mpi\":false,\"openmp_threads\":4,"
            "\"blas\":\"OpenBLAS\"}'\n");
        const WorkerCapabilities capabilities = probeWorker(worker);
        QVERIFY2(capabilities.available, capabilities.error.c_str());
        QCOMPARE(capabilities.torchVersion, std::string("1.13.0"));
        QVERIFY(capabilities.gloo);
        QVERIFY(!capabilities.cuda);
        QCOMPARE(capabilities.cudaVersion, std::string());
        QCOMPARE(capabilities.openmpThreads, 4);
        QCOMPARE(capabilities.blas, std::string("OpenBLAS"));
        QCOMPARE(capabilities.path, worker);
    }

    void workerFailuresAreReportedNotFatal()
    {
        QTemporaryDir dir;
        const std::string crashing =
            writeScript(dir, QStringLiteral("crashing"), "echo 'libtorch missing' >&2; exit 127\n");
        WorkerCapabilities capabilities = probeWorker(crashing);
        QVERIFY(!capabilities.available);
        QVERIFY2(capabilities.error.find("code 127: libtorch missing") != std::string::npos,
                 capabilities.error.c_str());

        const std::string garbage = writeScript(dir, QStringLiteral("garbage"), "echo not-json\n");
        capabilities = probeWorker(garbage);
        QVERIFY(!capabilities.available);
        QVERIFY(capabilities.error.find("not valid JSON") != std::string::npos);

        const std::string wrongSchema = writeScript(dir, QStringLiteral("wrong"), "echo '{\"schema\":\"other\"}'\n");
        capabilities = probeWorker(wrongSchema);
        QVERIFY(!capabilities.available);
        QVERIFY(capabilities.error.find("accel.worker-capabilities") != std::string::npos);

        capabilities = probeWorker(dir.filePath(QStringLiteral("absent")).toStdString());
        QVERIFY(!capabilities.available);
        QVERIFY(!capabilities.error.empty());
    }

    void realWorkerBesideAccel()
    {
        const QString worker = QDir(test::binDir()).filePath(QStringLiteral("accel-worker"));
        if (!QFile::exists(worker))
            QSKIP("accel-worker is not built in this build tree (needs libtorch and the worker target)");
        const WorkerCapabilities capabilities = probeWorker(worker.toStdString(), 60000);
        QVERIFY2(capabilities.available, capabilities.error.c_str());
        QVERIFY(!capabilities.torchVersion.empty());
        QVERIFY(capabilities.gloo); // the project's libtorch always has gloo
    }

    void pythonProbeOnSystemPython()
    {
        if (!QFile::exists(QStringLiteral("/usr/bin/python3")))
            QSKIP("needs /usr/bin/python3");
        const PythonInfo python = probePython("/usr/bin/python3");
        QVERIFY2(python.available, python.error.c_str());
        QVERIFY(python.version.rfind("3.", 0) == 0);
        QVERIFY(!python.executable.empty());
        // Each module is either a version or "not installed", never empty.
        for (const std::string *version : {&python.torchVersion, &python.accelerateVersion, &python.numpyVersion})
            QVERIFY(!version->empty());
        // Cross-check torch with Python itself.
        auto check = runChild("/usr/bin/python3",
                              {"-c", "import importlib.util as u; print(u.find_spec('torch') is not None)"}, 15000);
        QVERIFY(check.has_value());
        const bool hasTorch = check->out.find("True") != std::string::npos;
        QCOMPARE(python.torchVersion != notInstalled(), hasTorch);
    }

    void pythonProbeReportsMissingModulesAndPython()
    {
        QTemporaryDir dir;
        // A "python" that answers like the probe script with a module missing.
        const std::string fake = writeScript(dir, QStringLiteral("python3"),
                                             "echo 'site hook noise'\n"
                                             "echo '{\"python\": \"3.12.1\", \"executable\": \"/x/python3\", "
                                             "\"torch\": null, \"accelerate\": \"1.14.0\", \"numpy\": null}'\n");
        const PythonInfo python = probePython(fake);
        QVERIFY2(python.available, python.error.c_str());
        QCOMPARE(python.version, std::string("3.12.1"));
        QCOMPARE(python.torchVersion, std::string(notInstalled()));
        QCOMPARE(python.accelerateVersion, std::string("1.14.0"));

        const PythonInfo missing = probePython(dir.filePath(QStringLiteral("no-python")).toStdString());
        QVERIFY(!missing.available);
        QCOMPARE(missing.torchVersion, std::string(notInstalled()));
        QVERIFY(!missing.error.empty());

        const std::string slow = writeScript(dir, QStringLiteral("slow"), "sleep 30\n");
        const PythonInfo timedOut = probePython(slow, 200);
        QVERIFY(!timedOut.available);
        QVERIFY(timedOut.error.find("200 ms") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(tst_SoftwareProbe)
#include "tst_softwareprobe.moc"
