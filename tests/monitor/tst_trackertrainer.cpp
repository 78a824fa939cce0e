// transformers' Trainer with report_to="tensorboard" (a tiny GPT-2, a few steps, 2 CPU ranks
// under the real `accel launch`, the project's Python environment): every scalar Trainer logged to
// TensorBoard is a metric of the run with its step, read from `accel tail --json` (docs/trackers.md).
// The oracle is what Trainer itself printed (its log history, printed by the script).
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <map>

using namespace accel;

namespace {

const char *kTrainerScript = R"PY(
import json, sys, torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_embd=16, n_layer=1, n_head=2, vocab_size=64, n_positions=32))
class Data(torch.utils.data.Dataset):
    def __len__(self): return 64
    def __getitem__(self, i):
        ids = torch.randint(0, 64, (16,), generator=torch.Generator().manual_seed(i))
        return {"input_ids": ids, "labels": ids}
args = TrainingArguments(output_dir=sys.argv[1], report_to="tensorboard", max_steps=6, logging_steps=2,
                         per_device_train_batch_size=4, use_cpu=True, save_strategy="no", disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Data())
trainer.train()
if trainer.is_world_process_zero():
    print("LOG_HISTORY " + json.dumps(trainer.state.log_history))
)PY";

} // namespace

class tst_TrackerTrainer : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void trainerTensorBoardScalarsAreTheRunsMetrics()
    {
        const QString python = qEnvironmentVariable("ACCEL_PYTHON");
        if (python.isEmpty() || !QFileInfo(python).isExecutable())
            QSKIP("ACCEL_PYTHON (the project's Python environment) is not there: run packaging/install-deps.sh");
        QTemporaryDir dir;
        const QString script = dir.filePath(QStringLiteral("finetune.py"));
        QFile file(script);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(kTrainerScript);
        file.close();
        const QString runDir = dir.filePath(QStringLiteral("run"));
        // Trainer writes under output_dir/runs/<date>_<host>: a folder nobody names at launch.
        const auto result = test::runAccel(
            {QStringLiteral("launch"), QStringLiteral("--cpu"), QStringLiteral("--num_processes"), QStringLiteral("2"),
             QStringLiteral("--main_process_port"), QStringLiteral("0"), QStringLiteral("--system_sample_hz"),
             QStringLiteral("0"), QStringLiteral("--run_dir"), runDir, script, dir.filePath(QStringLiteral("out"))},
            180000, {}, {QStringLiteral("PYTHON_EXEC=") + python});
        QVERIFY2(result.exitCode == 0, qPrintable(result.err));

        // What Trainer logged: its log history (printed by rank 0 into its log).
        QFile log(runDir + QStringLiteral("/logs/rank0.log"));
        QVERIFY(log.open(QIODevice::ReadOnly));
        QJsonArray history;
        for (const QByteArray &line : log.readAll().split('\n')) {
            if (line.startsWith("LOG_HISTORY "))
                history = QJsonDocument::fromJson(line.mid(12)).array();
        }
        QVERIFY(history.size() >= 3);

        // What the run's metrics hold: key -> step -> value.
        std::map<QString, std::map<qint64, double>> metrics;
        const auto tail = test::runAccel({QStringLiteral("tail"), runDir, QStringLiteral("--metrics"),
                                          QStringLiteral("--json"), QStringLiteral("--lines"), QStringLiteral("1000")});
        QCOMPARE(tail.exitCode, 0);
        for (const QJsonValue &entry :
             QJsonDocument::fromJson(tail.out.toUtf8()).object().value(QStringLiteral("lines")).toArray()) {
            const QJsonObject data = entry.toObject().value(QStringLiteral("data")).toObject();
            for (auto it = data.begin(); it != data.end(); ++it)
                metrics[it.key()][qint64(data.value(QStringLiteral("step")).toDouble())] = it.value().toDouble();
        }

        // Trainer's TensorBoard callback writes each logged number as train/<name> at the
        // global step (a float32 in the event file).
        int compared = 0;
        for (const QJsonValue &entry : history) {
            const QJsonObject logged = entry.toObject();
            const qint64 step = qint64(logged.value(QStringLiteral("step")).toDouble());
            for (auto it = logged.begin(); it != logged.end(); ++it) {
                if (it.key() == QLatin1String("step") || !it.value().isDouble())
                    continue;
                const QString key = QStringLiteral("train/") + it.key();
                QVERIFY2(metrics.count(key) && metrics.at(key).count(step),
                         qPrintable(QStringLiteral("%1 at step %2 is not among the run's metrics").arg(key).arg(step)));
                QCOMPARE(float(metrics.at(key).at(step)), float(it.value().toDouble()));
                ++compared;
            }
        }
        QVERIFY(compared >= 12); // loss, grad_norm, learning_rate, epoch at steps 2, 4, 6, and the summary
        QVERIFY(metrics.count(QStringLiteral("train/loss")));
        QCOMPARE(int(metrics.at(QStringLiteral("train/loss")).size()), 3);
    }
};

QTEST_GUILESS_MAIN(tst_TrackerTrainer)
#include "tst_trackertrainer.moc"
