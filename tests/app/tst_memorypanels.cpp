// Per-rank training memory in the studio, offscreen, with the real accel and
// accel-worker: the Launch page predicts a gpt recipe's bytes per rank under
// FULL_SHARD on 2 processes (beside DDP's) and follows the process count and
// the config; the Monitor's Memory tab shows what the ranks of a real 2-rank
// run measured next to the prediction for the run's job.
#include "app/studio/launch/launchpage.h"
#include "app/studio/launch/memoryestimatepanel.h"
#include "app/studio/launch/recipeform.h"
#include "app/studio/monitor/axisunits.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/rankmemorypanel.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;

namespace {

QString writeText(const QString &path, const QByteArray &text)
{
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size())
        qFatal("cannot write %s", qPrintable(path));
    return path;
}

QByteArray configText(const char *block, int processes)
{
    return QByteArray("compute_environment: LOCAL_MACHINE\n") + block +
           "machine_rank: 0\nmixed_precision: 'no'\nnum_machines: "
           "1\nnum_processes: " +
           QByteArray::number(processes) + "\nuse_cpu: true\n";
}

const char *kFullShard = "distributed_type: FSDP\nfsdp_config:\n  fsdp_sharding_strategy: "
                         "FULL_SHARD\n"
                         "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_version: 1\n";

// The last memory figures of one rank's metrics file: parameters, gradients,
// optimizer state.
QList<double> lastMemoryLine(const QString &path)
{
    QFile file(path);
    QList<double> figures;
    if (!file.open(QIODevice::ReadOnly))
        return figures;
    for (const QByteArray &line : file.readAll().split('\n')) {
        const QJsonObject o = QJsonDocument::fromJson(line).object();
        if (o.contains("mem_params_bytes"))
            figures = {o["mem_params_bytes"].toDouble(), o["mem_grads_bytes"].toDouble(),
                       o["mem_optim_bytes"].toDouble()};
    }
    return figures;
}

} // namespace

class tst_MemoryPanels : public QObject {
    Q_OBJECT

private:
    QString m_accel;
    QTemporaryDir m_dir;

private Q_SLOTS:
    void initTestCase()
    {
        m_accel = QDir(test::binDir()).filePath("accel");
        if (!QFileInfo(m_accel).isExecutable())
            QSKIP("accel is not built");
        QVERIFY(m_dir.isValid());
        QByteArray corpus;
        for (int i = 0; i < 200; ++i)
            corpus += "the cat sat on the mat. a dog ran in the fog. ";
        writeText(m_dir.filePath("corpus.txt"), corpus);
    }

    void launchPageShowsThePredictionPerRank()
    {
        app::LaunchPage page;
        page.setAccelProgram(m_accel);
        auto *panel = page.memoryEstimate();
        QVERIFY(panel);
        page.setProgramKind(app::LaunchPage::ProgramKind::Recipe);
        app::RecipeForm *form = page.recipeForm();
        form->setRecipe("gpt");
        for (const auto &[key, value] : {std::pair<const char *, const char *>{"model.n_layer", "2"},
                                         {"model.n_head", "2"},
                                         {"model.n_embd", "32"},
                                         {"model.block_size", "32"}})
            form->setValue(key, value);
        form->setValue("data.corpus", m_dir.filePath("corpus.txt"));
        QVERIFY(panel->message().contains("config")); // no config yet: says what is missing
        QCOMPARE(panel->predictedTotal(), qint64(-1));

        page.setConfigFile(writeText(m_dir.filePath("fsdp.yaml"), configText(kFullShard, 2)));
        QTRY_VERIFY_WITH_TIMEOUT(panel->predictedTotal() > 0 && !panel->isEstimating(), 20000);
        QVERIFY2(panel->message().contains("FULL_SHARD") && panel->message().contains("2 processes"),
                 qPrintable(panel->message()));
        qInfo("%s", qPrintable(panel->message()));
        // The parameters the form's shape has, as accel estimate-memory counts them
        // for the job.
        const auto count = QRegularExpression("(\\d+) parameters").match(panel->message());
        QVERIFY(count.hasMatch());
        const qint64 parameters = count.captured(1).toLongLong();
        // float32 AdamW: DDP holds 4 x 4 bytes per parameter on every rank,
        // FULL_SHARD half of it on 2 ranks (the parameter count is even: no
        // padding).
        QCOMPARE(panel->ddpTotal(), 16 * parameters);
        QCOMPARE(panel->predictedTotal(), 8 * parameters);
        QTableWidget *table = panel->table();
        QVERIFY(table->isVisibleTo(&page));
        QVERIFY(!panel->modelField()->isVisibleTo(&page)); // the job names its model
        QCOMPARE(table->item(3, 0)->text(), app::formatBytes(double(8 * parameters)));
        QCOMPARE(table->item(3, 1)->text(), app::formatBytes(double(16 * parameters)));
        QCOMPARE(table->item(0, 0)->text(), app::formatBytes(double(2 * parameters)));

        // Four processes: a quarter of DDP's, which stays the same per rank.
        panel->setProcesses(4);
        QTRY_VERIFY_WITH_TIMEOUT(panel->message().contains("4 processes") && !panel->isEstimating(), 20000);
        QCOMPARE(panel->predictedTotal(), 4 * parameters);
        QCOMPARE(panel->ddpTotal(), 16 * parameters);

        // A wider model is counted again.
        form->setValue("model.n_embd", "64");
        QTRY_VERIFY_WITH_TIMEOUT(!panel->message().contains(QString::number(parameters) + " parameters") &&
                                     panel->predictedTotal() > 0 && !panel->isEstimating(),
                                 20000);
        QVERIFY(panel->ddpTotal() > 16 * parameters);

        // A config that cannot be read: accel's message, no figures.
        page.setConfigFile(m_dir.filePath("missing.yaml"));
        QTRY_VERIFY_WITH_TIMEOUT(panel->predictedTotal() < 0 && !panel->isEstimating(), 20000);
        QVERIFY2(panel->message().contains("missing.yaml"), qPrintable(panel->message()));
        QVERIFY(!table->isVisibleTo(&page));

        // A script's model: a config.json typed into the panel (float32, Adam).
        page.setConfigFile(m_dir.filePath("fsdp.yaml"));
        page.setScript(writeText(m_dir.filePath("train.py"), "print('hi')\n"));
        QVERIFY(panel->modelField()->isVisibleTo(&page));
        const QString model =
            writeText(m_dir.filePath("config.json"),
                      R"({"model_type":"llama","hidden_size":16,"intermediate_size":32,"num_attention_heads":2,
                "num_key_value_heads":1,"num_hidden_layers":2,"vocab_size":64,"max_position_embeddings":128})");
        panel->modelField()->setText(model);
        QTRY_VERIFY2_WITH_TIMEOUT(panel->message().contains(QFileInfo(m_dir.path()).fileName()) &&
                                      panel->predictedTotal() > 0 && !panel->isEstimating(),
                                  qPrintable(panel->message()), 20000);
        const auto direct = test::runAccel({"estimate-memory", model, "--dtypes", "float32", "--config_file",
                                            m_dir.filePath("fsdp.yaml"), "--num_processes", "4", "--json"});
        QCOMPARE(direct.exitCode, 0);
        const QJsonObject answer = QJsonDocument::fromJson(direct.out.toUtf8()).object();
        const QJsonObject row = answer["per_rank_training"]["rows"].toArray().first().toObject();
        QCOMPARE(panel->predictedTotal(), qint64(row["total_bytes"].toDouble()));
        QCOMPARE(panel->ddpTotal(), 16 * qint64(answer["parameters"].toDouble()));
    }

    // parallelism_config tp_size 2: the panel shows what one rank holds with q/k/v, o, gate, up and
    // down halved (the embeddings, norms and head whole) and names the mesh.
    void launchPageShowsTheTensorParallelFigure()
    {
        app::LaunchPage page;
        page.setAccelProgram(m_accel);
        auto *panel = page.memoryEstimate();
        page.setConfigFile(
            writeText(m_dir.filePath("tp.yaml"),
                      configText("distributed_type: FSDP\nfsdp_config:\n  fsdp_version: 2\nparallelism_config:\n"
                                 "  parallelism_config_tp_size: 2\n",
                                 2)));
        page.setScript(writeText(m_dir.filePath("train-tp.py"), "print('hi')\n"));
        // hidden 16, 2 heads and 2 key/value heads of 8, feed-forward 32, 2 layers: per layer q, k, v
        // and o 16 x 16, gate, up and down 32 x 16, 2560 parameters; half of them per tp rank.
        const QString model =
            writeText(m_dir.filePath("tp-config.json"),
                      R"({"model_type":"llama","hidden_size":16,"intermediate_size":32,"num_attention_heads":2,
                "num_key_value_heads":2,"num_hidden_layers":2,"vocab_size":64,"max_position_embeddings":128})");
        panel->modelField()->setText(model);
        QTRY_VERIFY2_WITH_TIMEOUT(panel->predictedTotal() > 0 && !panel->isEstimating(), qPrintable(panel->message()),
                                  20000);
        qInfo("%s", qPrintable(panel->message()));
        const auto direct = test::runAccel(
            {"estimate-memory", model, "--dtypes", "float32", "--config_file", m_dir.filePath("tp.yaml"), "--json"});
        QCOMPARE(direct.exitCode, 0);
        const qint64 parameters =
            qint64(QJsonDocument::fromJson(direct.out.toUtf8()).object()["parameters"].toDouble());
        const qint64 perRank = parameters - 2 * 2560 / 2;
        // float32 Adam, FSDP2 over dp_shard 1 (nothing sharded): 16 bytes per parameter a rank holds.
        QCOMPARE(panel->predictedTotal(), 16 * perRank);
        QCOMPARE(panel->ddpTotal(), 16 * parameters);
        QCOMPARE(panel->table()->item(0, 0)->text(), app::formatBytes(double(4 * perRank)));
        QVERIFY2(panel->message().contains("mesh tp 2") &&
                     panel->message().contains(QString::number(perRank) + " of the trained parameters on each tp rank"),
                 qPrintable(panel->message()));
    }

    // The prediction beside the measured figures of a ZeRO-3 run on 2 ranks, launched with a config
    // file or with command-line flags alone (no config: the Memory tab once said "No prediction").
    void monitorShowsMeasuredBesideThePrediction_data()
    {
        QTest::addColumn<bool>("withConfigFile");
        QTest::newRow("config file") << true;
        QTest::newRow("flags only") << false;
    }
    void monitorShowsMeasuredBesideThePrediction()
    {
        QFETCH(bool, withConfigFile);
        if (!QFileInfo(QDir(test::binDir()).filePath("accel-worker")).isExecutable())
            QSKIP("accel-worker is not built (it needs libtorch)");
        const QString job =
            writeText(m_dir.filePath("job.yaml"), "recipe: gpt\nmodel: {n_layer: 2, n_head: 2, n_embd: 32, "
                                                  "block_size: 32}\n"
                                                  "data: {corpus: corpus.txt}\nsample: {length: 0}\n"
                                                  "training: {max_steps: 3, batch_size: 4, log_every: 1}\n");
        const QString cfg =
            writeText(m_dir.filePath("zero3.yaml"),
                      configText("distributed_type: DEEPSPEED\ndeepspeed_config:\n  zero_stage: 3\n", 2));
        const QString run = m_dir.filePath(withConfigFile ? "run-config" : "run-flags");
        QStringList launch{"launch", "--run_dir", run, "--name", "memory"};
        if (withConfigFile)
            launch << "--config_file" << cfg;
        else
            launch << "--num_processes"
                   << "2"
                   << "--use_deepspeed"
                   << "--zero_stage"
                   << "3";
        const auto launched = test::runAccel(launch << "--job" << job, 300000);
        QVERIFY2(launched.exitCode == 0, qPrintable(launched.out + launched.err));
        QCOMPARE(QFileInfo::exists(run + "/cluster.yaml"), withConfigFile);

        app::MonitorPage page;
        app::RankMemoryPanel *panel = page.memoryPanel();
        QVERIFY(panel);
        panel->setAccelProgram(m_accel);
        page.setRuns({run});
        QTRY_VERIFY_WITH_TIMEOUT(panel->measured(0, app::RankMemoryPanel::Total) > 0 &&
                                     panel->measured(1, app::RankMemoryPanel::Total) > 0 &&
                                     panel->predicted(app::RankMemoryPanel::Total) > 0,
                                 20000);
        // The prediction is accel estimate-memory's for the run's job under the run's settings, and
        // the same as for the job under the config file on 2 processes.
        const char *keys[] = {"parameters_bytes", "gradients_bytes", "optimizer_state_bytes", "total_bytes"};
        for (const QStringList &how :
             {QStringList{"--run", run}, QStringList{"--config_file", cfg, "--num_processes", "2"}}) {
            const auto estimated = test::runAccel(QStringList{"estimate-memory", run + "/job.yaml", "--json"} + how);
            QVERIFY2(estimated.exitCode == 0, qPrintable(estimated.err));
            const QJsonObject answer = QJsonDocument::fromJson(estimated.out.toUtf8()).object();
            const QJsonObject row = answer["per_rank_training"]["rows"].toArray().first().toObject();
            for (int kind = 0; kind < app::RankMemoryPanel::KindCount; ++kind)
                QCOMPARE(panel->predicted(app::RankMemoryPanel::Kind(kind)), row[QLatin1String(keys[kind])].toDouble());
        }
        QVERIFY2(panel->predictionNote().contains("ZeRO-3"), qPrintable(panel->predictionNote()));
        // The measured figures are the ranks' last lines, and equal to the
        // prediction here.
        QTableWidget *table = panel->table();
        QCOMPARE(table->rowCount(), 2);
        for (int rank = 0; rank < 2; ++rank) {
            const QList<double> last = lastMemoryLine(QString("%1/metrics/rank%2.jsonl").arg(run).arg(rank));
            QCOMPARE(last.size(), 3);
            for (int kind = 0; kind < 3; ++kind) {
                QCOMPARE(panel->measured(rank, app::RankMemoryPanel::Kind(kind)), last[kind]);
                QCOMPARE(last[kind], panel->predicted(app::RankMemoryPanel::Kind(kind)));
            }
            QCOMPARE(table->verticalHeaderItem(rank)->text(), QString("rank %1").arg(rank));
            QCOMPARE(table->item(rank, 0)->text(),
                     app::formatBytes(last[0]) + " (predicted " +
                         app::formatBytes(panel->predicted(app::RankMemoryPanel::Parameters)) + ")");
        }
    }

    // estimate-memory --run: a folder without a launch plan is refused by name (exit 2), and
    // --run with --config_file is bad input.
    void estimateForARunNeedsItsPlan()
    {
        const QString run = m_dir.filePath("not-a-run");
        QVERIFY(QDir().mkpath(run));
        writeText(run + "/run.json", "{\"schema\": \"accel.run\", \"version\": 1, \"state\": \"done\"}");
        const QString job = writeText(m_dir.filePath("job2.yaml"),
                                      "recipe: gpt\nmodel: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                                      "data: {corpus: corpus.txt}\ntraining: {max_steps: 1}\n");
        const auto noPlan = test::runAccel({"estimate-memory", job, "--run", run});
        QCOMPARE(noPlan.exitCode, 2);
        QVERIFY2(noPlan.err.contains(run + "/run.json") && noPlan.err.contains("launch plan"), qPrintable(noPlan.err));
        const auto both = test::runAccel({"estimate-memory", job, "--run", run, "--config_file", "x.yaml"});
        QCOMPARE(both.exitCode, 2);
        QVERIFY2(both.err.contains("--run"), qPrintable(both.err));
    }
};

QTEST_MAIN(tst_MemoryPanels)
#include "tst_memorypanels.moc"
