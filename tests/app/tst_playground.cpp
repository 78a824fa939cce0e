// The inference Playground: WorkerClient, its link to `accel-worker serve` (a missing worker
// program fails the request instead of hanging; a killed worker fails the request in flight and a
// new request starts a fresh worker), and the PlaygroundPage on a tiny gpt2 checkpoint written
// here (no libtorch in the studio) with the hand-made byte-level BPE tokenizer.json of
// tests/data/tokenizers/gpt2-tiny.json: a typed text prompt streams in piece by piece and equals
// `accel-worker generate`'s text for the same seed, Stop returns promptly, a killed worker shows a
// banner and Load starts a fresh one, Unload ends the worker, bad folders and model types show
// the worker's message, and the Big Models page remembers the Playground's folder.
#include "app/studio/bigmodel/bigmodelspage.h"
#include "app/studio/bigmodel/devicelanesview.h"
#include "app/studio/bigmodel/playgroundloadoptions.h"
#include "app/studio/bigmodel/playgroundpage.h"
#include "app/studio/bigmodel/playgroundsampling.h"
#include "app/studio/bigmodel/workerclient.h"
#include "tests/helpers/testsupport.h"
#include "tests/helpers/tinygpt2.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSet>
#include <QSettings>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include <csignal>

using namespace accel::app;

namespace {

QString workerProgram()
{
    return QDir(accel::test::binDir()).filePath(QStringLiteral("accel-worker"));
}

} // namespace

class tst_Playground : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void missingWorkerFailsTheRequest();
    void killedWorkerFailsAndRecovers();
    void typedPromptStreamsLikeTheCli();
    void stopReturnsPromptly();
    void killedWorkerShowsBannerAndLoadsAgain();
    void unloadEndsTheWorker();
    void badFolderAndModelTypeShowBanner();
    void mistypedFolderIsSaidAtOnceAndTheModelStaysLoaded();
    void bigModelsPageRemembersTheFolder();
    void emptyMapNamesThePlaygroundsOwnStep();
    void quantizationChoiceShowsBytesPerTokenAndTheBound();
    void dtypeAutoAndPinnedThreadsThroughTheWorker();

private:
    bool needWorker();
    void loadModel(PlaygroundPage &page, int threads = 1);
    QTemporaryDir m_dir;
    QString m_model;
};

void tst_Playground::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_playground"));
    m_model = m_dir.filePath(QStringLiteral("tiny-gpt2"));
    QVERIFY(accel::test::writeTinyGpt2(m_model));
}

bool tst_Playground::needWorker()
{
    return QFileInfo(workerProgram()).isExecutable();
}

void tst_Playground::loadModel(PlaygroundPage &page, int threads)
{
    page.client()->setProgram(workerProgram());
    page.setThreads(threads);
    QSignalSpy planned(&page, &PlaygroundPage::planned);
    page.setModelPath(m_model);
    QVERIFY(planned.wait(30000));
    QSignalSpy loaded(&page, &PlaygroundPage::modelLoaded);
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("loadButton")), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return !loaded.isEmpty() || !page.errorText().isEmpty(); }, 60000),
             "no answer to Load");
    QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
    QCOMPARE(page.state(), PlaygroundPage::State::Ready);
}

void tst_Playground::missingWorkerFailsTheRequest()
{
    QTemporaryDir dir;
    WorkerClient client;
    client.setProgram(dir.filePath(QStringLiteral("no-such-worker")));
    QSignalSpy failed(&client, &WorkerClient::requestFailed);
    QSignalSpy crashed(&client, &WorkerClient::workerCrashed);
    client.load(dir.path());
    QVERIFY(QTest::qWaitFor([&] { return !crashed.isEmpty(); }, 10000));
    QCOMPARE(failed.size(), 1); // exactly one terminal signal for the load
    QVERIFY2(failed.first().at(1).toString().contains(QStringLiteral("cannot start")),
             qPrintable(failed.first().at(1).toString()));
    QVERIFY(!client.isRunning());
}

void tst_Playground::killedWorkerFailsAndRecovers()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    QTemporaryDir dir;
    WorkerClient client;
    client.setProgram(workerProgram());
    QSignalSpy ready(&client, &WorkerClient::ready);
    QSignalSpy failed(&client, &WorkerClient::requestFailed);
    QSignalSpy crashed(&client, &WorkerClient::workerCrashed);
    client.load(dir.filePath(QStringLiteral("missing-model")));
    QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty(); }, 60000));
    QVERIFY(ready.size() == 1 && crashed.isEmpty()); // a bad model is an error event; the worker lives on
    QVERIFY(client.isRunning());

    ::kill(static_cast<pid_t>(client.processId()), SIGKILL);
    QVERIFY(QTest::qWaitFor([&] { return !crashed.isEmpty(); }, 10000));
    QVERIFY(!client.isRunning());

    failed.clear();
    client.load(dir.filePath(QStringLiteral("missing-model"))); // starts a fresh worker
    QVERIFY(QTest::qWaitFor([&] { return !failed.isEmpty(); }, 60000));
    QCOMPARE(ready.size(), 2);
    client.shutdown();
    QVERIFY(QTest::qWaitFor([&] { return !client.isRunning(); }, 10000));
    QCOMPARE(crashed.size(), 1);
}

void tst_Playground::typedPromptStreamsLikeTheCli()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    page.resize(900, 700);
    page.show();
    loadModel(page);
    // The planned device map and memory of the folder are shown, and the worker's placement.
    QVERIFY(!page.plan().isEmpty());
    QVERIFY(page.lanesView()->laneRect(QStringLiteral("cpu")).isValid());
    QVERIFY2(page.memoryText().contains(QStringLiteral("cpu:")), qPrintable(page.memoryText()));
    QVERIFY2(page.memoryText().contains(QStringLiteral("resident tensors")), qPrintable(page.memoryText()));
    QCOMPARE(page.loadedInfo().value(QStringLiteral("model_type")).toString(), QStringLiteral("gpt2"));
    QVERIFY(page.loadedInfo().value(QStringLiteral("tokenizer")).toBool());

    page.sampling()->setTemperature(0.8);
    page.sampling()->setTopK(20);
    page.sampling()->setSeed(11);
    page.sampling()->setMaxNewTokens(40);
    QTest::keyClicks(page.findChild<QPlainTextEdit *>(QStringLiteral("prompt")), QStringLiteral("the lower"));
    QCOMPARE(page.prompt(), QStringLiteral("the lower"));

    QStringList snapshots; // the output as each token event arrives
    connect(page.client(), &WorkerClient::token, &page,
            [&](const QString &, const QString &) { snapshots << page.outputText(); });
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("generateButton")), Qt::LeftButton);
    QCOMPARE(page.state(), PlaygroundPage::State::Generating);
    QVERIFY(finished.wait(60000));
    const QString text = page.outputText();
    QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
    QVERIFY(!text.isEmpty());
    QVERIFY2(page.streamUpdates() > 1, qPrintable(QString::number(page.streamUpdates())));
    snapshots.removeDuplicates();
    QVERIFY2(snapshots.size() > 2, qPrintable(snapshots.join(QStringLiteral(" | "))));
    for (const QString &s : std::as_const(snapshots))
        QVERIFY2(text.startsWith(s), qPrintable(s)); // the text grew at the end, piece by piece
    QCOMPARE(page.state(), PlaygroundPage::State::Ready);
    QVERIFY(page.lastStats().newTokens > 1);
    QVERIFY2(page.statsText().contains(QStringLiteral("tokens/s")), qPrintable(page.statsText()));
    QVERIFY2(page.statsText().contains(QStringLiteral("first token")), qPrintable(page.statsText()));

    const auto cli = accel::test::runProgram(
        workerProgram(),
        {QStringLiteral("generate"), m_model, QStringLiteral("--prompt"), QStringLiteral("the lower"),
         QStringLiteral("--max-new-tokens"), QStringLiteral("40"), QStringLiteral("--temperature"),
         QStringLiteral("0.8"), QStringLiteral("--top-k"), QStringLiteral("20"), QStringLiteral("--seed"),
         QStringLiteral("11"), QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--json")});
    QVERIFY2(cli.exitCode == 0, qPrintable(cli.err));
    const QJsonObject json = QJsonDocument::fromJson(cli.out.toUtf8()).object();
    QCOMPARE(json.value(QStringLiteral("prompt_ids")).toArray(), QJsonArray({116, 256, 263}));
    QCOMPARE(text, json.value(QStringLiteral("text")).toString());
    QCOMPARE(page.lastStopReason(), json.value(QStringLiteral("stop_reason")).toString());
}

void tst_Playground::stopReturnsPromptly()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    loadModel(page);
    page.sampling()->setMaxNewTokens(60000);
    page.sampling()->setGreedy(false);
    page.setPrompt(QStringLiteral("the"));
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.generate();
    QVERIFY(QTest::qWaitFor([&] { return page.lastStats().newTokens > 0 || page.streamUpdates() >= 3; }, 60000));
    QVERIFY(finished.isEmpty());
    QElapsedTimer timer;
    timer.start();
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("stopButton")), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return !finished.isEmpty(); }, 15000));
    QVERIFY2(timer.elapsed() < 15000, qPrintable(QString::number(timer.elapsed())));
    QCOMPARE(page.lastStopReason(), QStringLiteral("cancelled"));
    QVERIFY(page.lastStats().newTokens < 60000);
    QCOMPARE(page.state(), PlaygroundPage::State::Ready);
    QVERIFY(page.findChild<QPushButton *>(QStringLiteral("generateButton"))->isEnabled());
    QVERIFY(!page.findChild<QPushButton *>(QStringLiteral("stopButton"))->isEnabled());
}

void tst_Playground::killedWorkerShowsBannerAndLoadsAgain()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    loadModel(page);
    const qint64 firstPid = page.client()->processId();
    page.sampling()->setMaxNewTokens(60000);
    page.setPrompt(QStringLiteral("the lower"));
    QSignalSpy errors(&page, &PlaygroundPage::errorShown);
    page.generate();
    QVERIFY(QTest::qWaitFor([&] { return page.streamUpdates() >= 2; }, 60000));
    ::kill(static_cast<pid_t>(firstPid), SIGKILL);
    QVERIFY(QTest::qWaitFor([&] { return !errors.isEmpty(); }, 15000));
    QVERIFY2(page.errorText().contains(QStringLiteral("worker")), qPrintable(page.errorText()));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);
    QVERIFY(page.findChild<QPushButton *>(QStringLiteral("loadButton"))->isEnabled());

    QSignalSpy loaded(&page, &PlaygroundPage::modelLoaded);
    page.load(); // a fresh worker
    QVERIFY(page.errorText().isEmpty());
    QVERIFY(loaded.wait(60000));
    QVERIFY(page.client()->processId() != firstPid);
    page.sampling()->setMaxNewTokens(5);
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.generate();
    QVERIFY(finished.wait(60000));
    QVERIFY(page.lastStats().newTokens >= 1);
}

void tst_Playground::unloadEndsTheWorker()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    loadModel(page);
    const qint64 pid = page.client()->processId();
    QVERIFY(pid > 0);
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("unloadButton")), Qt::LeftButton);
    QVERIFY(QTest::qWaitFor([&] { return !page.client()->isRunning(); }, 15000));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);
    QVERIFY(!QFileInfo::exists(QStringLiteral("/proc/%1").arg(pid))); // exited and reaped
    QVERIFY(page.errorText().isEmpty());
    QVERIFY(!page.findChild<QPushButton *>(QStringLiteral("generateButton"))->isEnabled());
}

// Regression: a mistyped folder left "Planning the device map…" on the page for good, with the
// model loaded before still loaded and nothing saying so.
void tst_Playground::mistypedFolderIsSaidAtOnceAndTheModelStaysLoaded()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    page.show();
    loadModel(page);
    const qint64 worker = page.client()->processId();
    auto *field = page.findChild<QLineEdit *>(QStringLiteral("playgroundModel"));
    QVERIFY(field);
    const QString typo = m_dir.filePath(QStringLiteral("tiny-gtp2"));
    field->selectAll();
    QTest::keyClicks(field, typo);
    QTest::keyClick(field, Qt::Key_Return); // editingFinished: the folder is planned
    // Said at once (no planning on a worker thread to wait for), naming the folder.
    QVERIFY2(page.errorText().contains(QStringLiteral("No folder ") + typo), qPrintable(page.errorText()));
    QVERIFY(!page.isPlanning());
    auto *status = page.findChild<QLabel *>(QStringLiteral("modelStatus"));
    QVERIFY2(!status->text().contains(QStringLiteral("Planning")) &&
                 status->text().contains(QStringLiteral("still loaded")) && status->text().contains(m_model),
             qPrintable(status->text()));
    // Load refuses it before anything is sent: the model loaded before is still the loaded one.
    QSignalSpy errors(&page, &PlaygroundPage::errorShown);
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("loadButton")), Qt::LeftButton);
    QCOMPARE(errors.size(), 1);
    QVERIFY(errors.first().first().toString().contains(typo));
    QCOMPARE(page.state(), PlaygroundPage::State::Ready);
    QCOMPARE(page.client()->processId(), worker);
    QCOMPARE(page.loadedInfo().value(QStringLiteral("model")).toString(), m_model);
    page.sampling()->setMaxNewTokens(5);
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.setPrompt(QStringLiteral("the"));
    page.generate();
    QVERIFY(finished.wait(60000)); // it still answers
    QVERIFY(page.lastStats().newTokens >= 1);
}

void tst_Playground::badFolderAndModelTypeShowBanner()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    page.client()->setProgram(workerProgram());
    QSignalSpy errors(&page, &PlaygroundPage::errorShown);
    const QString empty = m_dir.filePath(QStringLiteral("empty-folder")); // there, but no model in it
    QVERIFY(QDir().mkpath(empty));
    page.setModelPath(empty);
    page.load();
    QVERIFY(QTest::qWaitFor([&] { return !errors.isEmpty(); }, 60000));
    QVERIFY2(page.errorText().contains(QStringLiteral("config.json")), qPrintable(page.errorText()));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);

    const QString bert = m_dir.filePath(QStringLiteral("bert"));
    QDir().mkpath(bert);
    QFile config(bert + QStringLiteral("/config.json"));
    QVERIFY(config.open(QIODevice::WriteOnly));
    config.write(R"({"model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1})");
    config.close();
    errors.clear();
    page.setModelPath(bert);
    page.load();
    QVERIFY(QTest::qWaitFor([&] { return !errors.isEmpty(); }, 60000));
    QVERIFY2(page.errorText().contains(QStringLiteral("bert")), qPrintable(page.errorText()));
    QCOMPARE(page.state(), PlaygroundPage::State::NoModel);
    QVERIFY(page.client()->isRunning()); // an error event, not a crash

    QSignalSpy loaded(&page, &PlaygroundPage::modelLoaded);
    page.setModelPath(m_model);
    page.load(); // the page stays usable
    QVERIFY(loaded.wait(60000));
    QVERIFY(page.errorText().isEmpty());
}

void tst_Playground::bigModelsPageRemembersTheFolder()
{
    QSettings().remove(QStringLiteral("bigmodels"));
    {
        BigModelsPage page;
        QCOMPARE(page.count(), 2);
        QCOMPARE(page.tabText(1), QStringLiteral("Playground"));
        QSignalSpy planned(page.playgroundPage(), &PlaygroundPage::planned);
        page.playgroundPage()->setModelPath(m_model);
        QVERIFY(planned.wait(30000));
        QVERIFY(!page.playgroundPage()->plan().isEmpty());
    }
    BigModelsPage again;
    QCOMPARE(again.playgroundPage()->modelPath(), m_model);
    // The restored folder is planned again (the plan arrives with the watcher's finished signal).
    QVERIFY(QTest::qWaitFor([&] { return !again.playgroundPage()->plan().isEmpty(); }, 30000));
}

void tst_Playground::emptyMapNamesThePlaygroundsOwnStep()
{
    // Regression: the Playground showed the Device Map's "press Plan" text, and it has no Plan button.
    PlaygroundPage page;
    const QString text = page.lanesView()->emptyText();
    QVERIFY2(!text.contains(QStringLiteral("Plan")) && text.contains(QStringLiteral("model folder")), qPrintable(text));
}

// The quantization chosen on the page reaches the worker, and the figures beside it follow: the
// weight bytes a decode step reads, the machine's memory bandwidth, the bound they give and how
// near a generation came to it.
void tst_Playground::quantizationChoiceShowsBytesPerTokenAndTheBound()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    QVERIFY(!page.loadOptions()->setQuantization(QStringLiteral("q4_k"))); // not a method: the choice stays
    QCOMPARE(page.loadOptions()->quantization(), QString());
    loadModel(page);
    // Weights as stored (float32): the tied wte is read whole as the output head, wpe one row of its
    // 65536, and every block and ln_f whole: (269*32 + 32 + 2*12704 + 64) floats.
    const qint64 asStored = (269 * 32 + 32 + 2 * 12704 + 64) * 4;
    QJsonObject bound = page.loadedInfo().value(QStringLiteral("decode_bound")).toObject();
    QCOMPARE(bound.value(QStringLiteral("weight_bytes_per_token")).toInteger(), asStored);
    QCOMPARE(bound.value(QStringLiteral("offloaded_bytes_per_token")).toInteger(), 0);
    const double bandwidth = bound.value(QStringLiteral("memory_bandwidth_bytes_per_s")).toDouble();
    QVERIFY2(bandwidth > 1e8, qPrintable(QString::number(bandwidth)));
    QCOMPARE(bound.value(QStringLiteral("tokens_per_s")).toDouble(), bandwidth / asStored);
    const QString status = page.findChild<QLabel *>(QStringLiteral("modelStatus"))->text();
    QVERIFY2(status.contains(QStringLiteral("Decode reads 133.25 KiB of weights per token")) &&
                 status.contains(QStringLiteral("bounds it at")),
             qPrintable(status));

    // The lanes are planned again at the bytes the chosen quantization holds.
    const qint64 plannedAsStored = qint64(page.plan().totalBytes());
    QVERIFY(plannedAsStored > 65536 * 32 * 4); // wpe whole, float32
    QSignalSpy replanned(&page, &PlaygroundPage::planned);
    QVERIFY(page.loadOptions()->setQuantization(QStringLiteral("int8")));
    QVERIFY(replanned.wait(30000));
    QCOMPARE(page.plan().quantization, QStringLiteral("int8"));
    QSignalSpy loaded(&page, &PlaygroundPage::modelLoaded);
    QTest::mouseClick(page.findChild<QPushButton *>(QStringLiteral("loadButton")), Qt::LeftButton);
    QVERIFY2(QTest::qWaitFor([&] { return !loaded.isEmpty() || !page.errorText().isEmpty(); }, 60000),
             qPrintable(page.errorText()));
    const QJsonObject quantization = page.loadedInfo().value(QStringLiteral("quantization")).toObject();
    QCOMPARE(quantization.value(QStringLiteral("method")).toString(), QStringLiteral("int8"));
    QCOMPARE(quantization.value(QStringLiteral("quantized_layers")).toInt(), 8); // 4 Conv1D per block
    // The eight Conv1D weights, (32*96 + 32*32 + 32*128 + 128*32) floats per block, now int8 rows.
    QCOMPARE(quantization.value(QStringLiteral("float32_bytes")).toInteger(), 2 * 12288 * 4);
    bound = page.loadedInfo().value(QStringLiteral("decode_bound")).toObject();
    const qint64 quantized =
        asStored - 2 * 12288 * 4 + quantization.value(QStringLiteral("quantized_bytes")).toInteger();
    QVERIFY(quantized < asStored);
    QCOMPARE(bound.value(QStringLiteral("weight_bytes_per_token")).toInteger(), quantized);
    // What the plan counted for the quantized layers is what the worker holds for them.
    QCOMPARE(qint64(page.plan().totalBytes()),
             plannedAsStored - 2 * 12288 * 4 + quantization.value(QStringLiteral("quantized_bytes")).toInteger());
    QVERIFY2(page.findChild<QLabel *>(QStringLiteral("modelStatus"))->text().contains(QStringLiteral("int8: 8 Linear")),
             qPrintable(page.findChild<QLabel *>(QStringLiteral("modelStatus"))->text()));

    page.sampling()->setMaxNewTokens(8);
    page.sampling()->setSeed(3);
    page.setPrompt(QStringLiteral("the"));
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.generate();
    QVERIFY(finished.wait(60000));
    QVERIFY2(page.statsText().contains(QStringLiteral("% of the memory bound")), qPrintable(page.statsText()));
}

// accel generate's --dtype auto and --pin_threads, chosen on the page, through a real worker: the
// load reports the dtype chosen by measurement, with its reason, on the status line; the two
// intra-op threads sit on two distinct CPUs the process may use; and the tokens are those of
// accel-worker generate in the chosen dtype. ACCEL_TEST_SCREENSHOTS=<folder> also writes the page
// as <folder>/playground-dtype-auto.png.
void tst_Playground::dtypeAutoAndPinnedThreadsThroughTheWorker()
{
    if (!needWorker())
        QSKIP("accel-worker is not built in this build tree (needs libtorch)");
    PlaygroundPage page;
    page.resize(1200, 720);
    page.show();
    QVERIFY(!page.loadOptions()->setComputeDType(QStringLiteral("float64"))); // not offered: the choice stays
    QCOMPARE(page.loadOptions()->computeDType(), QString());
    QVERIFY(page.loadOptions()->setComputeDType(QStringLiteral("auto")));
    page.loadOptions()->setPinThreads(true);
    loadModel(page, 2);

    // Measured on every CPU; the reason names the CPU's bfloat16 flags, read here as the worker reads
    // them (/proc/cpuinfo), or says there are none.
    QFile cpuinfo(QStringLiteral("/proc/cpuinfo"));
    QVERIFY(cpuinfo.open(QIODevice::ReadOnly));
    const QString info = QString::fromLatin1(cpuinfo.readAll());
    const bool bf16Flags = info.contains(QStringLiteral(" amx_bf16")) || info.contains(QStringLiteral(" avx512_bf16"));
    const QJsonObject choice = page.loadedInfo().value(QStringLiteral("dtype_choice")).toObject();
    const QString dtype = choice.value(QStringLiteral("dtype")).toString();
    const QString reason = choice.value(QStringLiteral("reason")).toString();
    const double float32Ms = choice.value(QStringLiteral("float32_ms")).toDouble(),
                 bfloat16Ms = choice.value(QStringLiteral("bfloat16_ms")).toDouble();
    QVERIFY(float32Ms > 0 && bfloat16Ms > 0);
    QCOMPARE(dtype, float32Ms >= 1.2 * bfloat16Ms ? QStringLiteral("bfloat16") : QStringLiteral("float32"));
    QVERIFY2(reason.startsWith(bf16Flags ? QStringLiteral("CPU flags ") : QStringLiteral("no bfloat16 instructions")),
             qPrintable(reason));
    const QString status = page.findChild<QLabel *>(QStringLiteral("modelStatus"))->text();
    QVERIFY2(status.contains(QStringLiteral("dtype auto: %1 (%2).").arg(dtype, reason)), qPrintable(status));

    // Two threads on two distinct CPUs of the allowed set (the worker inherits this process's).
    QFile statusFile(QStringLiteral("/proc/self/status"));
    QVERIFY(statusFile.open(QIODevice::ReadOnly));
    QSet<int> allowed;
    for (const QString &line : QString::fromLatin1(statusFile.readAll()).split(QLatin1Char('\n')))
        if (line.startsWith(QStringLiteral("Cpus_allowed_list:")))
            for (const QString &range : line.section(QLatin1Char(':'), 1).trimmed().split(QLatin1Char(','))) {
                const int first = range.section(QLatin1Char('-'), 0, 0).toInt();
                const int last = range.contains(QLatin1Char('-')) ? range.section(QLatin1Char('-'), 1).toInt() : first;
                for (int cpu = first; cpu <= last; ++cpu)
                    allowed.insert(cpu);
            }
    QVERIFY(!allowed.isEmpty());
    const QJsonArray pinned = page.loadedInfo().value(QStringLiteral("pinned_cpus")).toArray();
    QCOMPARE(pinned.size(), 2);
    QSet<int> cpus;
    for (const QJsonValue &cpu : pinned) {
        QVERIFY2(allowed.contains(cpu.toInt()), qPrintable(QString::number(cpu.toInt())));
        cpus.insert(cpu.toInt());
    }
    if (allowed.size() >= 2)
        QCOMPARE(cpus.size(), 2);
    QVERIFY2(status.contains(QStringLiteral("2 intra-op thread(s) pinned to CPUs %1, %2.")
                                 .arg(pinned.at(0).toInt())
                                 .arg(pinned.at(1).toInt())),
             qPrintable(status));

    // The chosen dtype is the one the worker computes in: the tokens of accel-worker generate in it.
    page.sampling()->setGreedy(true);
    page.sampling()->setMaxNewTokens(8);
    page.setPrompt(QStringLiteral("the lower"));
    QSignalSpy finished(&page, &PlaygroundPage::generationFinished);
    page.generate();
    QVERIFY(finished.wait(60000));
    QVERIFY2(page.errorText().isEmpty(), qPrintable(page.errorText()));
    const auto cli = accel::test::runProgram(
        workerProgram(),
        {QStringLiteral("generate"), m_model, QStringLiteral("--prompt"), QStringLiteral("the lower"),
         QStringLiteral("--max-new-tokens"), QStringLiteral("8"), QStringLiteral("--greedy"), QStringLiteral("--dtype"),
         dtype, QStringLiteral("--threads"), QStringLiteral("2"), QStringLiteral("--json")});
    QVERIFY2(cli.exitCode == 0, qPrintable(cli.err));
    QCOMPARE(page.outputText(),
             QJsonDocument::fromJson(cli.out.toUtf8()).object().value(QStringLiteral("text")).toString());

    if (const QString folder = qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS"); !folder.isEmpty()) {
        QDir().mkpath(folder);
        QVERIFY(page.grab().save(QDir(folder).filePath(QStringLiteral("playground-dtype-auto.png"))));
    }
}

QTEST_MAIN(tst_Playground)
#include "tst_playground.moc"
