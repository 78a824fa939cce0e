// The Launch page's Fine-tune flow, end to end with the real programs: a tiny Llama and its
// tokenizer saved by transformers and tokenizers (the project's Python environment, ACCEL_PYTHON) and
// a small text file; in the studio the model folder is picked (family and size read from its
// headers, the memory per rank predicted by `accel estimate-memory`), the data (read and tokenized
// by `accel preview-data`: the window count equals the tokenizers package's), LoRA chosen (the
// prediction then counts the adapters only for gradients and optimizer state), and the run
// launched through the real `accel launch` (detached), followed on the Runs page to its end with
// loss, tokens/s and eval perplexity charted, and its adapter opened in the Playground, where the
// real `accel-worker serve` applies it and generates. ACCEL_TEST_SCREENSHOTS=<folder> also writes
// the pictures of docs/screenshots (finetune-*.png); the run is then longer, so that its curves are
// pictured live.
#include "app/studio/bigmodel/bigmodelspage.h"
#include "app/studio/bigmodel/playgroundpage.h"
#include "app/studio/bigmodel/playgroundsampling.h"
#include "app/studio/launch/datapreviewpanel.h"
#include "app/studio/launch/finetuneform.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/launch/memoryestimatepanel.h"
#include "app/studio/mainwindow.h"
#include "app/studio/monitor/metricplot.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "monitor/metricstore.h"
#include "monitor/runmonitor.h"
#include "tests/helpers/testsupport.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QSettings>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

using namespace accel;
using accel::app::LaunchPage;
using accel::app::MainWindow;
using accel::app::Page;

namespace {

// A tiny random Llama saved by transformers, a byte-level BPE trained by tokenizers and the text
// files of tst_finetune (tests/runtime/finetune_oracle.py); prints the windows of 16 tokens the
// tokenizers package cuts from train.txt (documents without special tokens, EOS after each).
const char *kMakeModel = R"PY(import json, os, shutil, sys
sys.path.insert(0, os.path.join(os.environ["ACCEL_SOURCE_DIR"], "tests", "runtime"))
import finetune_oracle as o
root = sys.argv[1]
docs = o.write_data(root)
tok = o.train_tokenizer(docs, root)
eos = tok.token_to_id("<|endoftext|>")
folder = os.path.join(root, "tiny-llama")
o.make_model("llama", tok.get_vocab_size(), eos, folder)
for name in ("tokenizer.json", "tokenizer_config.json"):
    shutil.copy(os.path.join(root, name), os.path.join(folder, name))
print(json.dumps({"windows": o.packed_windows(tok, eos, os.path.join(root, "train.txt")).size(0)}))
)PY";

QString accelProgram()
{
    return QDir(test::binDir()).filePath(QStringLiteral("accel"));
}

// ACCEL_TEST_SCREENSHOTS=<folder>: the window as it is, as <folder>/<name>.png.
void picture(QWidget *window, const QString &name)
{
    const QString folder = qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS");
    if (folder.isEmpty())
        return;
    QDir().mkpath(folder);
    QTest::qWait(1200); // the charts' coalesced redraw and the status line's 1 s refresh
    QVERIFY(window->grab().save(QDir(folder).filePath(name + QStringLiteral(".png"))));
}

void type(QLineEdit *edit, const QString &text)
{
    QVERIFY(edit);
    edit->selectAll();
    edit->del();
    QTest::keyClicks(edit, text);
}

// Scrolls every scroll area around `widget` (the window's around the Launch page) so that it is
// in view, its top first.
void reveal(QWidget *widget)
{
    for (QWidget *parent = widget->parentWidget(); parent; parent = parent->parentWidget()) {
        if (auto *area = qobject_cast<QScrollArea *>(parent))
            area->ensureWidgetVisible(widget, 0, 40);
    }
}

// Whatever happens, a detached run does not outlive the test.
struct StopAtExit {
    QString runDir;
    ~StopAtExit()
    {
        if (!runDir.isEmpty())
            test::runAccel({QStringLiteral("stop"), runDir}, 60000);
    }
};

} // namespace

class tst_FineTuneFlow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void loraFromTheLaunchPageToThePlayground();

private:
    QTemporaryDir m_scratch;
    QString m_model;
    int m_windows = 0;
};

void tst_FineTuneFlow::initTestCase()
{
    QVERIFY(m_scratch.isValid());
    qputenv("XDG_DATA_HOME", m_scratch.filePath(QStringLiteral("data")).toLocal8Bit());
    qputenv("XDG_CONFIG_HOME", m_scratch.filePath(QStringLiteral("config")).toLocal8Bit());
    qputenv("XDG_CACHE_HOME", m_scratch.filePath(QStringLiteral("cache")).toLocal8Bit());
    // The Playground's `accel-worker serve` is the built one (the test runs from build/tests).
    qputenv("ACCEL_WORKER_PROGRAM", QDir(test::binDir()).filePath(QStringLiteral("accel-worker")).toLocal8Bit());
    QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QCoreApplication::setApplicationName(QStringLiteral("tst_finetuneflow"));
    QSettings().clear();
    if (!QFileInfo(accelProgram()).isExecutable() ||
        !QFileInfo(QDir(test::binDir()).filePath(QStringLiteral("accel-worker"))).isExecutable())
        QSKIP("accel and accel-worker are not built");
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty() || !QFileInfo(python).isExecutable())
        QSKIP("ACCEL_PYTHON (the project's Python environment with transformers and tokenizers) is missing");
    const QString script = m_scratch.filePath(QStringLiteral("make_model.py"));
    QFile file(script);
    QVERIFY(file.open(QIODevice::WriteOnly) && file.write(kMakeModel) > 0);
    file.close();
    const auto made = test::runProgram(python, {script, m_scratch.path()}, 120000);
    QVERIFY2(made.exitCode == 0, qPrintable(made.out + made.err));
    m_windows = QJsonDocument::fromJson(made.out.trimmed().split(QLatin1Char('\n')).last().toUtf8())
                    .object()
                    .value(QStringLiteral("windows"))
                    .toInt();
    QVERIFY(m_windows > 10);
    m_model = m_scratch.filePath(QStringLiteral("tiny-llama"));
}

void tst_FineTuneFlow::loraFromTheLaunchPageToThePlayground()
{
    const bool pictures = !qEnvironmentVariable("ACCEL_TEST_SCREENSHOTS").isEmpty();
    const QString config = m_scratch.filePath(QStringLiteral("cpu.yaml"));
    {
        QFile file(config);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("compute_environment: LOCAL_MACHINE\ndistributed_type: 'NO'\nmixed_precision: 'no'\n"
                   "num_machines: 1\nnum_processes: 1\nuse_cpu: true\n");
    }
    auto window = std::make_unique<MainWindow>();
    window->resize(1600, 1000);
    window->show();
    QVERIFY(QTest::qWaitForWindowExposed(window.get()));
    window->showPage(Page::Launch);
    LaunchPage *launch = window->launchPage();
    launch->setAccelProgram(accelProgram());
    auto *kind = launch->findChild<QComboBox *>(QStringLiteral("programKind"));
    kind->setCurrentIndex(static_cast<int>(LaunchPage::ProgramKind::FineTune));
    app::FineTuneForm *form = launch->fineTuneForm();
    QVERIFY(form->isVisible());
    type(launch->findChild<QLineEdit *>(QStringLiteral("configFile")), config);

    // 1. The model: its family and size from the headers; the memory of full fine-tuning predicted.
    type(form->field(QStringLiteral("model.path")), m_model);
    QVERIFY2(form->modelSummary().startsWith(QStringLiteral("llama: 37")), qPrintable(form->modelSummary()));
    type(form->field(QStringLiteral("data.block_size")), QStringLiteral("16"));
    app::MemoryEstimatePanel *memory = launch->memoryEstimate();
    // Full fine-tuning: every parameter's gradient and two AdamW moments (37,792 float32 parameters).
    QTRY_VERIFY2_WITH_TIMEOUT(!memory->isEstimating() && memory->predictedTotal() == 37792 * 4 * 4,
                              qPrintable(memory->message()), 30000);
    QVERIFY2(memory->message().contains(QStringLiteral("causal_lm (llama, 2 layers, hidden 32)")),
             qPrintable(memory->message()));
    reveal(form);
    picture(window.get(), QStringLiteral("finetune-model"));

    // 2. The data, as accel-worker will read it: the tokenizers package's window count.
    type(form->field(QStringLiteral("data.train")), m_scratch.filePath(QStringLiteral("train.txt")));
    type(form->field(QStringLiteral("data.eval")), m_scratch.filePath(QStringLiteral("eval.txt")));
    type(form->field(QStringLiteral("training.batch_size")), QStringLiteral("4"));
    app::DataPreviewPanel *preview = form->dataPreview();
    QTRY_VERIFY_WITH_TIMEOUT(!preview->isReading() && !preview->answer().isEmpty(), 30000);
    const QJsonObject answer = preview->answer();
    QCOMPARE(answer.value(QStringLiteral("train")).toObject().value(QStringLiteral("samples")).toInt(), m_windows);
    QCOMPARE(answer.value(QStringLiteral("steps_per_epoch")).toInt(), (m_windows + 3) / 4);
    QVERIFY2(preview->summary().contains(QStringLiteral("windows of 16 tokens")), qPrintable(preview->summary()));
    // The decoded windows, the documents' separator marked.
    QVERIFY2(preview->samplesHtml().contains(QStringLiteral("&lt;|endoftext|&gt;")),
             qPrintable(preview->samplesHtml()));
    reveal(preview);
    picture(window.get(), QStringLiteral("finetune-data"));

    // 3. LoRA: peft's targets for the family; only the adapters' gradients and moments predicted
    // (q_proj 8 x (32 + 32) and v_proj 8 x (32 + 16) in 2 blocks: 1,792 trained).
    auto *lora = form->findChild<QRadioButton *>(QStringLiteral("ftLora"));
    QTest::mouseClick(lora, Qt::LeftButton, {}, QPoint(8, lora->height() / 2)); // on its indicator
    QVERIFY(form->isLora());
    QCOMPARE(form->field(QStringLiteral("lora.target_modules"))->text(), QStringLiteral("q_proj, v_proj"));
    QCOMPARE(form->value(QStringLiteral("lora.r")), QStringLiteral("8"));
    QTRY_VERIFY2_WITH_TIMEOUT(!memory->isEstimating() && memory->predictedTotal() == (37792 + 1792) * 4 + 1792 * 4 * 3,
                              qPrintable(memory->message()), 30000);
    QVERIFY2(memory->message().contains(QStringLiteral("39584 (1792 trained)")), qPrintable(memory->message()));
    const int steps = pictures ? 1500 : 40;
    type(form->field(QStringLiteral("training.max_steps")), QString::number(steps));
    type(form->field(QStringLiteral("training.learning_rate")),
         pictures ? QStringLiteral("1e-2") : QStringLiteral("2e-3"));
    type(form->field(QStringLiteral("training.eval_every")), QString::number(steps / 4));
    type(form->field(QStringLiteral("training.log_every")), QStringLiteral("2"));
    type(form->field(QStringLiteral("name")), QStringLiteral("tiny-llama-lora"));
    QVERIFY2(form->issues().isEmpty(), qPrintable(form->issues()));
    reveal(form->findChild<QRadioButton *>(QStringLiteral("ftLora")));
    picture(window.get(), QStringLiteral("finetune-lora"));

    // 4. Launch: the real accel launch, detached; the run selected and followed at once.
    QTRY_VERIFY_WITH_TIMEOUT(launch->launchButton()->isEnabled(), 5000);
    QVERIFY2(launch->commandText().contains(QStringLiteral("--job")), qPrintable(launch->commandText()));
    reveal(launch->launchButton());
    picture(window.get(), QStringLiteral("finetune-launch"));
    QSignalSpy launched(launch, &LaunchPage::launched);
    QSignalSpy failed(launch, &LaunchPage::launchFailed);
    QTest::mouseClick(launch->launchButton(), Qt::LeftButton);
    QTRY_VERIFY_WITH_TIMEOUT(launched.size() + failed.size() > 0, 60000);
    QVERIFY2(failed.isEmpty(), failed.isEmpty() ? "" : qPrintable(failed.first().first().toString()));
    const QString runDir = launched.first().at(1).toString();
    const StopAtExit stopAtExit{runDir};
    QTRY_COMPARE_WITH_TIMEOUT(window->currentPage(), Page::Runs, 5000);
    app::RunsPage *runs = window->runsPage();
    QTRY_COMPARE_WITH_TIMEOUT(runs->selectedRuns(), QStringList{runDir}, 10000);
    app::MonitorPage *monitor = runs->monitorPage();
    app::RunStatusPanel *status = monitor->statusPanel();
    if (pictures) { // the curves while it trains, past the second evaluation, every panel in a tall window
        QTRY_VERIFY_WITH_TIMEOUT(
            monitor->runMonitor(0) && monitor->runMonitor(0)->store()->rankStatus(0).lastStep >= steps / 2, 300000);
        window->resize(1600, 1500);
        picture(window.get(), QStringLiteral("finetune-live"));
        window->resize(1600, 1000);
    }
    QTRY_COMPARE_WITH_TIMEOUT(status->state(), QStringLiteral("succeeded"), 180000);
    // Loss, tokens/s and the evaluation's perplexity charted from the run's metrics.
    QTRY_VERIFY_WITH_TIMEOUT(monitor->chart(app::MonitorPage::LossChart)->rawPoints() >= steps / 2, 10000);
    QTRY_VERIFY_WITH_TIMEOUT(monitor->panel(QStringLiteral("tokens_per_s")) &&
                                 monitor->panel(QStringLiteral("tokens_per_s"))->rawPoints() >= steps / 2,
                             10000);
    QTRY_VERIFY_WITH_TIMEOUT(monitor->panel(QStringLiteral("eval_perplexity")) &&
                                 monitor->panel(QStringLiteral("eval_perplexity"))->rawPoints() == 4,
                             10000);
    QVERIFY(monitor->chart(app::MonitorPage::EvalLossChart)->rawPoints() == 4);
    QVERIFY(QFileInfo::exists(runDir + QStringLiteral("/adapter/adapter_model.safetensors")));

    // 5. Open in Playground: the base model with the run's adapter, applied by the worker.
    QTRY_VERIFY_WITH_TIMEOUT(status->playgroundButton()->isVisible(), 10000);
    QCOMPARE(status->output().adapter, runDir + QStringLiteral("/adapter"));
    QTest::mouseClick(status->playgroundButton(), Qt::LeftButton);
    QCOMPARE(window->currentPage(), Page::BigModels);
    app::PlaygroundPage *playground = window->bigModelsPage()->playgroundPage();
    QVERIFY(playground->isVisible());
    QCOMPARE(QFileInfo(playground->modelPath()).canonicalFilePath(), QFileInfo(m_model).canonicalFilePath());
    QCOMPARE(playground->adapterPath(), runDir + QStringLiteral("/adapter"));
    playground->setThreads(1);
    playground->sampling()->setGreedy(true);
    QSignalSpy loaded(playground, &app::PlaygroundPage::modelLoaded);
    QTest::mouseClick(playground->findChild<QPushButton *>(QStringLiteral("loadButton")), Qt::LeftButton);
    QVERIFY2(loaded.wait(60000) || loaded.size() == 1, qPrintable(playground->errorText()));
    QCOMPARE(playground->loadedInfo().value(QStringLiteral("adapted_layers")).toInt(), 4); // q_proj, v_proj x 2
    QSignalSpy generated(playground, &app::PlaygroundPage::generationFinished);
    playground->setPrompt(QStringLiteral("Silver river"));
    playground->generate();
    QVERIFY2(generated.wait(60000) || generated.size() == 1, qPrintable(playground->errorText()));
    QVERIFY2(playground->outputText().size() > QStringLiteral("Silver river").size(),
             qPrintable(playground->outputText()));
    picture(window.get(), QStringLiteral("finetune-playground"));
    playground->unload();
}

QTEST_MAIN(tst_FineTuneFlow)
#include "tst_finetuneflow.moc"
