// Plan -> dispatch -> generate is one path: every device map `accel device-map` plans for a model
// that transformers saved loads in the inference engine and generates the tokens of the unsplit
// model. Tiny random GPT-2 (tied head), Llama, Mistral and Qwen2 (tied head) models are written by
// transformers' save_pretrained (tests/compat/transformers_oracle.py); for each, 10 budgets split
// the model across cpu and disk, or across GPU indices planned for a machine described by an
// `accel env --json` report (dispatched to this CPU with gpus_on_cpu), under the four strategies,
// with the family's block kept whole or no no-split class, merged and unmerged maps (so that maps
// name modules without tensors: dropouts, activations, rotary_emb), with and without an offload
// folder. Each map comes from the real `accel device-map --json`; each is loaded from the file it
// wrote, and greedy generation must give the unsplit model's tokens and first logits bit for bit.
// End to end, the real `accel generate` runs the issue's example (--device_map auto --max_memory
// cpu=...,disk=10GB --offload_folder) and a map planned for two GPUs from a file.
#include "tests/compat/oracle.h"

#include "core/inference/causallm.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"

#include <c10/core/InferenceMode.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <map>
#include <set>

using namespace accel;
using namespace accel::inference;

namespace {

constexpr int kNewTokens = 6;

struct Budget {
    QString strategy;
    QStringList args; // --max_memory ... or --env_json ...
    QStringList planOptions;
    bool gpus = false;          // the map has GPU indices: dispatched with gpus_on_cpu
    bool offloadFolder = false; // disk weights through an Accelerate offload folder
};

struct Unsplit {
    std::vector<int64_t> prompt; // the oracle's
    std::vector<int64_t> tokens;
    at::Tensor logits;
};

QString envReport(const QString &dir, const QString &name, const std::vector<qint64> &gpuFree, qint64 cpu)
{
    QJsonArray gpus;
    for (size_t i = 0; i < gpuFree.size(); ++i)
        gpus.append(QJsonObject{{QStringLiteral("index"), int(i)}, {QStringLiteral("memory_free_bytes"), gpuFree[i]}});
    const QJsonObject report{{QStringLiteral("gpu"), QJsonObject{{QStringLiteral("gpus"), gpus}}},
                             {QStringLiteral("memory"), QJsonObject{{QStringLiteral("available_bytes"), cpu}}}};
    const QString path = QDir(dir).filePath(name);
    QFile file(path);
    if (file.open(QIODevice::WriteOnly))
        file.write(QJsonDocument(report).toJson());
    return path;
}

} // namespace

class tst_PlannedMaps : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QJsonArray m_models;
    std::map<QString, Unsplit> m_unsplit;
    int m_loaded = 0, m_tried = 0, m_tensorlessKeys = 0, m_gpuMaps = 0, m_tiedHeads = 0;

    static Result<GenerationResult> greedy(InferenceModel &model, const std::vector<int64_t> &prompt)
    {
        SamplingOptions options;
        options.greedy = true;
        options.maxNewTokens = kNewTokens;
        options.stopTokenIds = {-1}; // never stop early: every case compares kNewTokens tokens
        return generate(model, {prompt}, options);
    }

    static at::Tensor firstLogits(InferenceModel &model, const std::vector<int64_t> &prompt)
    {
        c10::InferenceMode guard;
        return model.lm().forward(at::tensor(prompt, at::TensorOptions().dtype(at::kLong)).unsqueeze(0), nullptr);
    }

    // The 10 budgets of a model of `total` bytes whose largest layer is `largest` (the embedding
    // here, the first module too). A main device (the first GPU, cpu) keeps the largest layer in
    // reserve, and Accelerate's planner never comes back to a device it left: fit(share) holds the
    // reserve, the embedding and `share` of the rest, so that every plan starts on that device and
    // moves on before the end.
    std::vector<Budget> budgets(const QString &name, qint64 total, qint64 largest)
    {
        const double rest = double(total - 2 * largest);
        auto fit = [&](double share) { return qint64(2 * largest + share * rest); };
        auto n = [](qint64 bytes) { return QString::number(bytes); };
        auto cpuDisk = [&](qint64 cpu) {
            return QStringList{QStringLiteral("--max_memory"), QStringLiteral("cpu=%1,disk=10GB").arg(n(cpu))};
        };
        auto env = [&](const QString &file, const std::vector<qint64> &gpus, qint64 cpu) {
            return QStringList{QStringLiteral("--env_json"), envReport(m_dir.path(), name + file, gpus, cpu)};
        };
        const QStringList none{QStringLiteral("--no_split"), QStringLiteral("none")};
        const QString noClean = QStringLiteral("--no_clean");
        return {
            {QStringLiteral("auto"), cpuDisk(fit(0.4)), {}, false, false},
            {QStringLiteral("balanced"), cpuDisk(fit(0.2)), {}, false, true},
            {QStringLiteral("sequential"), cpuDisk(fit(0.6)), none, false, false},
            {QStringLiteral("balanced_low_0"), cpuDisk(fit(0.3)), {noClean}, false, false},
            {QStringLiteral("auto"), cpuDisk(fit(0.1)), none + QStringList{noClean}, false, true},
            // Sizes at bfloat16: half of everything.
            {QStringLiteral("sequential"),
             cpuDisk(fit(0.5) / 2),
             {QStringLiteral("--dtype"), QStringLiteral("bfloat16")},
             false,
             false},
            // GPUs and RAM as `accel env --json` reports them on another machine.
            {QStringLiteral("auto"),
             env(QStringLiteral("-env2.json"), {fit(0.3), qint64(0.25 * total)}, largest + qint64(0.1 * total)),
             {},
             true,
             false},
            {QStringLiteral("sequential"),
             env(QStringLiteral("-env1.json"), {fit(0.35)}, largest + qint64(0.2 * total)), none, true, true},
            // balanced_low_0 gives GPU 0 what GPU 1 leaves: GPU 1 gets less than the rest.
            {QStringLiteral("balanced_low_0"),
             {QStringLiteral("--max_memory"),
              QStringLiteral("0=%1,1=%2,cpu=%3,disk=10GB")
                  .arg(n(fit(0.1)), n(qint64(0.3 * rest)), n(largest + qint64(0.1 * total)))},
             {},
             true,
             false},
            {QStringLiteral("balanced"),
             {QStringLiteral("--max_memory"),
              QStringLiteral("0=%1,cpu=%2").arg(n(fit(0.25)), n(largest + qint64(0.2 * total)))},
             {noClean},
             true,
             false},
        };
    }

private Q_SLOTS:
    void initTestCase()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("transformers"), QStringLiteral("torch"),
                             QStringLiteral("safetensors"));
        QVERIFY(m_dir.isValid());
        const test::ProcessResult run = test::runProgram(python,
                                                         {test::compatScript(QStringLiteral("transformers_oracle.py")),
                                                          m_dir.path(), QStringLiteral("gpt2"), QStringLiteral("llama"),
                                                          QStringLiteral("mistral"), QStringLiteral("qwen2")},
                                                         300000);
        QVERIFY2(run.exitCode == 0, qPrintable(run.err.right(3000)));
        m_models = QJsonDocument::fromJson(run.out.toUtf8()).object().value(QStringLiteral("cases")).toArray();
        QCOMPARE(m_models.size(), 4);
        for (const QJsonValue &value : std::as_const(m_models)) {
            const QJsonObject m = value.toObject();
            auto model = InferenceModel::load(m.value(QStringLiteral("model_dir")).toString().toStdString());
            QVERIFY2(model, model ? "" : model.error().toString().c_str());
            Unsplit &u = m_unsplit[m.value(QStringLiteral("name")).toString()];
            for (const QJsonValue &id : m.value(QStringLiteral("input_ids")).toArray())
                u.prompt.push_back(id.toInteger());
            auto generated = greedy(**model, u.prompt);
            QVERIFY2(generated, generated ? "" : generated.error().toString().c_str());
            u.tokens = generated->sequences[0].tokens;
            u.logits = firstLogits(**model, u.prompt);
            QCOMPARE(int(u.tokens.size()), kNewTokens);
            // The unsplit engine is transformers' model: the same greedy tokens (transformers stops
            // at the config's eos token, this run does not).
            const QJsonArray theirs = m.value(QStringLiteral("generated")).toArray();
            QVERIFY(theirs.size() >= 1);
            for (qsizetype k = 0; k < std::min<qsizetype>(theirs.size(), kNewTokens); ++k)
                QCOMPARE(u.tokens[size_t(k)], theirs[k].toInteger());
        }
    }

    void plannedMapsLoadAndGenerate_data()
    {
        QTest::addColumn<int>("model");
        QTest::addColumn<int>("budget");
        for (int m = 0; m < m_models.size(); ++m)
            for (int b = 0; b < 10; ++b)
                QTest::newRow(qPrintable(QStringLiteral("%1-%2")
                                             .arg(m_models[m].toObject().value(QStringLiteral("name")).toString())
                                             .arg(b)))
                    << m << b;
    }

    void plannedMapsLoadAndGenerate()
    {
        QFETCH(int, model);
        QFETCH(int, budget);
        ++m_tried;
        const QJsonObject m = m_models[model].toObject();
        const QString name = m.value(QStringLiteral("name")).toString();
        const QString dir = m.value(QStringLiteral("model_dir")).toString();
        // The model's size and largest layer, from the planner itself.
        const test::ProcessResult whole =
            test::runAccel({QStringLiteral("device-map"), dir, QStringLiteral("--max_memory"),
                            QStringLiteral("cpu=100GB"), QStringLiteral("--json")});
        QVERIFY2(whole.exitCode == 0, qPrintable(whole.err));
        const QJsonObject wholePlan = QJsonDocument::fromJson(whole.out.toUtf8()).object();
        const qint64 total = wholePlan.value(QStringLiteral("total_bytes")).toInteger();
        const qint64 largest =
            wholePlan.value(QStringLiteral("largest_layer")).toObject().value(QStringLiteral("bytes")).toInteger();
        QVERIFY(total > 0 && largest > 0);

        const Budget b = budgets(name, total, largest)[size_t(budget)];
        const QString planFile = m_dir.filePath(QStringLiteral("%1-%2-plan.json").arg(name).arg(budget));
        QStringList args{QStringLiteral("device-map"), dir, QStringLiteral("--strategy"), b.strategy,
                         QStringLiteral("--json")};
        const test::ProcessResult plan = test::runAccel(args + b.args + b.planOptions);
        QVERIFY2(plan.exitCode == 0, qPrintable(plan.err));
        {
            QFile out(planFile);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(plan.out.toUtf8());
        }
        const QJsonObject planned = QJsonDocument::fromJson(plan.out.toUtf8()).object();
        const QJsonObject map = planned.value(QStringLiteral("device_map")).toObject();
        std::set<QString> devices;
        for (auto it = map.begin(); it != map.end(); ++it)
            devices.insert(it.value().isString() ? it.value().toString() : QString::number(it.value().toInteger()));
        QVERIFY2(devices.size() >= 2, qPrintable(QStringLiteral("the plan does not split the model: ") +
                                                 QString::fromUtf8(QJsonDocument(map).toJson(QJsonDocument::Compact))));
        const bool hasGpu =
            std::any_of(devices.begin(), devices.end(), [](const QString &d) { return d[0].isDigit(); });
        QCOMPARE(hasGpu, b.gpus);
        m_gpuMaps += hasGpu;

        // Loaded from the file accel device-map wrote, as `accel generate --device_map FILE` does.
        LoadOptions options;
        options.deviceMap = planFile.toStdString();
        options.dispatch.gpusOnCpu = b.gpus;
        if (b.offloadFolder)
            options.dispatch.offloadFolder =
                m_dir.filePath(QStringLiteral("%1-%2-offload").arg(name).arg(budget)).toStdString();
        auto loaded = InferenceModel::load(dir.toStdString(), options);
        QVERIFY2(loaded, loaded ? "" : loaded.error().toString().c_str());
        QVERIFY((*loaded)->report().offloadedTensors > 0 || hasGpu);
        for (auto it = map.begin(); it != map.end(); ++it) {
            const std::string key = it.key().toStdString();
            if (!key.empty() && !(*loaded)->lm().findModule(key) && key.rfind("lm_head", 0) != 0)
                ++m_tensorlessKeys; // a module the engine does not hold (dropout, activation, rotary_emb)
            if (key.rfind("lm_head", 0) == 0 && !(*loaded)->lm().findModule("lm_head"))
                ++m_tiedHeads;
        }

        const Unsplit &want = m_unsplit.at(name);
        auto generated = greedy(**loaded, want.prompt);
        QVERIFY2(generated, generated ? "" : generated.error().toString().c_str());
        QCOMPARE(generated->sequences[0].tokens, want.tokens);
        QVERIFY(at::equal(firstLogits(**loaded, want.prompt), want.logits));
        ++m_loaded;
    }

    // The matrix covered what it is for: GPU maps, tied heads, modules without tensors.
    void matrixCoversTheCases()
    {
        QCOMPARE(m_tried, 40);
        QVERIFY2(m_gpuMaps >= 16, qPrintable(QString::number(m_gpuMaps)));
        QVERIFY2(m_tiedHeads >= 4, qPrintable(QString::number(m_tiedHeads)));
        QVERIFY2(m_tensorlessKeys >= 8, qPrintable(QString::number(m_tensorlessKeys)));
    }

    // The issue's example with the real programs: a GPT-2 saved by transformers, --device_map auto
    // with cpu and disk budgets and an offload folder; and a map planned for two GPUs, from a file.
    void generateEndToEnd()
    {
        const QJsonObject m = m_models[0].toObject();
        QCOMPARE(m.value(QStringLiteral("family")).toString(), QStringLiteral("gpt2"));
        const QString dir = m.value(QStringLiteral("model_dir")).toString();
        const Unsplit &want = m_unsplit.at(m.value(QStringLiteral("name")).toString());
        QStringList ids;
        for (int64_t id : want.prompt)
            ids << QString::number(id);
        const QStringList common{QStringLiteral("--input_ids"), ids.join(QLatin1Char(',')),
                                 QStringLiteral("--greedy"),    QStringLiteral("--max_new_tokens"),
                                 QString::number(kNewTokens),   QStringLiteral("--stop_token_id"),
                                 QStringLiteral("-1"),          QStringLiteral("--json")};
        auto tokensOf = [](const QJsonObject &result) {
            std::vector<int64_t> tokens;
            for (const QJsonValue &t : result.value(QStringLiteral("tokens")).toArray())
                tokens.push_back(t.toInteger());
            return tokens;
        };

        const test::ProcessResult issue = test::runAccel(
            QStringList{QStringLiteral("generate"), dir, QStringLiteral("--device_map"), QStringLiteral("auto"),
                        QStringLiteral("--max_memory"), QStringLiteral("cpu=500KB,disk=10GB"),
                        QStringLiteral("--offload_folder"), m_dir.filePath(QStringLiteral("issue-offload"))} +
                common,
            120000);
        QVERIFY2(issue.exitCode == 0, qPrintable(issue.err));
        const QJsonObject issueResult = QJsonDocument::fromJson(issue.out.toUtf8()).object();
        QCOMPARE(tokensOf(issueResult), want.tokens);
        const QJsonObject issueMap = issueResult.value(QStringLiteral("device_map")).toObject();
        QVERIFY(issueMap.contains(QStringLiteral("lm_head"))); // the tied head, as the planner names it
        QVERIFY(issueResult.value(QStringLiteral("warnings")).isArray());
        QVERIFY(QFileInfo::exists(m_dir.filePath(QStringLiteral("issue-offload/index.json"))));

        const QString env = envReport(m_dir.path(), QStringLiteral("e2e-env.json"), {300000, 300000}, 200000);
        const test::ProcessResult plan = test::runAccel(
            {QStringLiteral("device-map"), dir, QStringLiteral("--env_json"), env, QStringLiteral("--json")});
        QVERIFY2(plan.exitCode == 0, qPrintable(plan.err));
        const QString planFile = m_dir.filePath(QStringLiteral("e2e-plan.json"));
        {
            QFile out(planFile);
            QVERIFY(out.open(QIODevice::WriteOnly));
            out.write(plan.out.toUtf8());
        }
        // Without gpus_on_cpu this CPU build refuses the GPU entries, naming the way out.
        const test::ProcessResult refused = test::runAccel(
            QStringList{QStringLiteral("generate"), dir, QStringLiteral("--device_map"), planFile} + common, 120000);
        QVERIFY(refused.exitCode != 0);
        QVERIFY2(refused.err.contains(QStringLiteral("gpus_on_cpu")), qPrintable(refused.err));
        const test::ProcessResult gpus =
            test::runAccel(QStringList{QStringLiteral("generate"), dir, QStringLiteral("--device_map"), planFile,
                                       QStringLiteral("--gpus_on_cpu")} +
                               common,
                           120000);
        QVERIFY2(gpus.exitCode == 0, qPrintable(gpus.err));
        const QJsonObject gpuResult = QJsonDocument::fromJson(gpus.out.toUtf8()).object();
        QCOMPARE(tokensOf(gpuResult), want.tokens);
        QCOMPARE(gpuResult.value(QStringLiteral("device_map")).toObject(),
                 QJsonDocument::fromJson(plan.out.toUtf8()).object().value(QStringLiteral("device_map")).toObject());
    }

    void cleanupTestCase()
    {
        qInfo("planned maps that load and generate the unsplit model's tokens: %d of %d (%d with GPU indices, %d "
              "tied-head "
              "keys, %d keys naming modules without tensors)",
              m_loaded, m_tried, m_gpuMaps, m_tiedHeads, m_tensorlessKeys);
    }
};

QTEST_GUILESS_MAIN(tst_PlannedMaps)
#include "tst_plannedmaps.moc"
