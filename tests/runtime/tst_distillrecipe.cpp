// accel-worker's distill recipe on real ranks: a gpt run's model is the frozen teacher of a
// smaller student (two prepared models); DDP and ZeRO-3 reach the same student, the teacher is
// checkpointed unchanged as model_1.safetensors, the distillation term falls, bad settings are
// refused by key (exit 2).
#include "tests/helpers/metricsfile.h"
#include "tests/runtime/shardingsupport.h"

#include "core/bigmodel/safetensors.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>

using namespace accel::test::sharding;

class tst_DistillRecipe : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString m_worker;

    QString writeJob(const QString &name, const QString &text)
    {
        const QString path = m_dir.filePath(name + ".yaml");
        QFile file(path);
        if (!file.open(QIODevice::WriteOnly))
            return {};
        file.write(text.toUtf8());
        return path;
    }

    QString distillJob(const QString &name, const QString &extra = {})
    {
        return writeJob(name, "recipe: distill\noutput_dir: " + name +
                                  "\nmodel: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                                  "teacher:\n  model: {n_layer: 2, n_head: 2, n_embd: 32}\n"
                                  "  weights: teacher/model.safetensors\n"
                                  "distill: {alpha: 1.0, temperature: 2.0}\n"
                                  "data: {corpus: corpus.txt}\nsample: {length: 0}\n"
                                  "training: {max_steps: 30, batch_size: 4, log_every: 5, learning_rate: 1.0e-3, "
                                  "warmup_steps: 0, min_lr_ratio: 1.0, checkpoint_at_end: true}\n" +
                                  extra);
    }

    static QList<double> losses(const QString &metrics)
    {
        return accel::test::metricValues(metrics, QStringLiteral("loss"));
    }

private Q_SLOTS:
    void initTestCase()
    {
        m_worker = accel::test::binDir() + "/accel-worker";
        if (!QFile::exists(m_worker))
            QSKIP("accel-worker is not built");
        QVERIFY(m_dir.isValid());
        QFile corpus(m_dir.filePath("corpus.txt"));
        QVERIFY(corpus.open(QIODevice::WriteOnly));
        for (int i = 0; i < 300; ++i)
            corpus.write("the cat sat on the mat. a dog ran in the fog. ");
        corpus.close();
        // The teacher: a gpt run in one process.
        const QString teacher = writeJob("teacher", "recipe: gpt\noutput_dir: teacher\n"
                                                    "model: {n_layer: 2, n_head: 2, n_embd: 32, block_size: 32}\n"
                                                    "data: {corpus: corpus.txt}\nsample: {length: 0}\n"
                                                    "training: {max_steps: 40, batch_size: 8, log_every: 20, "
                                                    "learning_rate: 3.0e-3}\n");
        Job job = runJob(m_worker, 1, {teacher});
        QVERIFY2(job.ok, qPrintable(job.errors));
        QVERIFY(QFile::exists(m_dir.filePath("teacher/model.safetensors")));
    }

    void shardedMatchesDdpAndKeepsTheTeacher_data()
    {
        QTest::addColumn<QStringList>("env");
        QTest::addColumn<QString>("models");
        QTest::newRow("DDP") << QStringList{} << "models: 0 DDP; 1 DDP (frozen, whole on every rank)";
        QTest::newRow("ZeRO-3") << QStringList{"ACCELERATE_USE_DEEPSPEED=true", "ACCELERATE_DEEPSPEED_ZERO_STAGE=3"}
                                << "models: 0 ZeRO-3; 1 ZeRO-3 (frozen, sharded)";
    }
    void shardedMatchesDdpAndKeepsTheTeacher()
    {
        QFETCH(QStringList, env);
        QFETCH(QString, models);
        const QString tag = QString(QTest::currentDataTag()).replace('-', '_');
        Job job = runJob(m_worker, 2, {distillJob("distill_" + tag)}, env);
        QVERIFY2(job.ok, qPrintable(job.errors));
        QVERIFY2(job.out.contains("teacher: 2 layers, 2 heads, n_embd 32"), qPrintable(job.out));
        QVERIFY2(job.out.contains("process(es), " + QString(QTest::currentDataTag())), qPrintable(job.out));
        QVERIFY2(job.out.contains(models + "\n"), qPrintable(job.out));
        // The distillation term (alpha 1: the whole loss) falls as the student learns the teacher.
        const QList<double> values = losses(m_dir.filePath("distill_" + tag + "/metrics/rank0.jsonl"));
        QVERIFY2(values.size() >= 6, qPrintable(QString::number(values.size())));
        qInfo("%s: distillation loss %g at step 5, %g at step 30", QTest::currentDataTag(), values.first(),
              values.last());
        QVERIFY(values.last() < values.first() * 0.8);
        // The checkpoint holds the student (model.safetensors) and the teacher (model_1), unchanged.
        const QString checkpoint = m_dir.filePath("distill_" + tag + "/checkpoints/checkpoint_0");
        auto teacher =
            accel::bigmodel::SafetensorsFile::open(m_dir.filePath("teacher/model.safetensors").toStdString());
        auto saved = accel::bigmodel::SafetensorsFile::open((checkpoint + "/model_1.safetensors").toStdString());
        QVERIFY(teacher && saved);
        QCOMPARE((*saved)->tensors().size(), (*teacher)->tensors().size());
        for (const auto &tensor : (*teacher)->tensors()) {
            const auto *mine = (*saved)->find(tensor.name);
            QVERIFY2(mine && mine->byteSize() == tensor.byteSize(), tensor.name.c_str());
            QVERIFY2(std::memcmp(mine->data, tensor.data, tensor.byteSize()) == 0, tensor.name.c_str());
        }
        QVERIFY(QFile::exists(checkpoint + "/model.safetensors"));
        if (QTest::currentDataTag() == QString("DDP"))
            return;
        // ZeRO-3 (the teacher sharded for memory) trains the student DDP trains.
        auto a = accel::bigmodel::SafetensorsFile::open(m_dir.filePath("distill_DDP/model.safetensors").toStdString());
        auto b = accel::bigmodel::SafetensorsFile::open(
            m_dir.filePath("distill_" + tag + "/model.safetensors").toStdString());
        QVERIFY(a && b);
        double worst = 0;
        for (const auto &tensor : (*a)->tensors()) {
            const auto *other = (*b)->find(tensor.name);
            QVERIFY2(other && other->byteSize() == tensor.byteSize(), tensor.name.c_str());
            const auto *x = reinterpret_cast<const float *>(tensor.data);
            const auto *y = reinterpret_cast<const float *>(other->data);
            for (uint64_t i = 0; i < tensor.byteSize() / 4; ++i)
                worst = std::max(worst, double(std::abs(x[i] - y[i])));
        }
        qInfo("distill, ZeRO-3 on 2 ranks: largest student difference from DDP after 30 steps %g", worst);
        QVERIFY2(worst <= 1e-5, qPrintable(QString("student differs from DDP by %1").arg(worst)));
    }

    void badSettingsAreRefusedByKey_data()
    {
        QTest::addColumn<QString>("extra");
        QTest::addColumn<QString>("needle");
        QTest::newRow("alpha") << "distill: {alpha: 1.5}\n"
                               << "distill.alpha: expected a number from 0 to 1; got \"1.5\"";
        QTest::newRow("temperature")
            << "distill: {temperature: 0}\n"
            << "distill.temperature: expected a number greater than 0 and at most 1000000; got \"0\"";
        QTest::newRow("weights") << "teacher: {weights: nowhere.safetensors}\n"
                                 << "teacher.weights: " + m_dir.filePath("nowhere.safetensors") + " does not exist";
        QTest::newRow("shape") << "teacher: {weights: teacher/model.safetensors, model: {n_embd: 64}}\n"
                               << "teacher.model must describe the gpt that wrote it";
        QTest::newRow("context") << "teacher: {weights: teacher/model.safetensors, model: {block_size: 64}}\n"
                                 << "teacher.model.block_size (64) must equal model.block_size (32)";
    }
    void badSettingsAreRefusedByKey()
    {
        QFETCH(QString, extra);
        QFETCH(QString, needle);
        // A later mapping of the same key replaces the earlier one: write the whole job instead.
        const QString path =
            writeJob("bad", "recipe: distill\noutput_dir: bad\n"
                            "model: {n_layer: 1, n_head: 2, n_embd: 32, block_size: 32}\n"
                            "data: {corpus: corpus.txt}\n" +
                                (extra.startsWith("teacher") ? extra
                                                             : QString("teacher: {weights: teacher/model.safetensors, "
                                                                       "model: {n_layer: 2}}\n") +
                                                                   extra));
        Job job = runJob(m_worker, 1, {path});
        QVERIFY(!job.ok);
        QVERIFY2(job.errors.startsWith("exit 2:"), qPrintable(job.errors));
        QVERIFY2(job.errors.contains(needle), qPrintable(job.errors));
    }
};

QTEST_GUILESS_MAIN(tst_DistillRecipe)
#include "tst_distillrecipe.moc"
