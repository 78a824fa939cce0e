// The Llama-like families and RoPE variants against Hugging Face `transformers`, in one program:
// tiny random models built by transformers and saved with save_pretrained
// (tests/compat/families_oracle.py: Llama with linear, dynamic NTK, YaRN and llama3 RoPE scaling,
// Phi-3 with LongRoPE and half-rotated heads, Mistral / Qwen2 / Phi-3 / Gemma 2 with sliding windows
// shorter than the context, Qwen3, Gemma, Gemma 2, Mixtral, Qwen2-MoE) are loaded by the inference
// engine in this process. Their float32 logits must equal transformers' forward pass within 1e-5 of
// the largest logit (the metric of tst_logitscompat) and greedy generation with the KV cache must
// give transformers' generate() tokens. Each model also loads under a device map planned by the
// same planner as `accel device-map` with a cpu budget that leaves most blocks on disk, and
// generates the same tokens. End to end, the real `accel generate` runs two of the models, one of
// them under the map `accel device-map --json` wrote.
#include "tests/compat/oracle.h"

#include "core/bigmodel/safetensors.h"
#include "core/inference/causallm.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"

#include <c10/core/InferenceMode.h>

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cstring>

using namespace accel;
using namespace accel::inference;

namespace {

constexpr double kTolerance = 1e-5;

std::vector<int64_t> ids(const QJsonArray &array)
{
    std::vector<int64_t> out;
    for (const QJsonValue &v : array)
        out.push_back(v.toInteger());
    return out;
}

QString joined(const std::vector<int64_t> &tokens)
{
    QStringList parts;
    for (int64_t t : tokens)
        parts << QString::number(t);
    return parts.join(QLatin1Char(','));
}

// "logits" of the oracle's file as a float32 tensor (copied out of the mapping).
at::Tensor expectedLogits(const QString &path, QString *error)
{
    auto file = bigmodel::SafetensorsFile::open(path.toStdString());
    if (!file) {
        *error = QString::fromStdString(file.error().toString());
        return {};
    }
    const bigmodel::TensorInfo *info = (*file)->find("logits");
    if (!info || info->dtype != bigmodel::DType::F32 || !info->data) {
        *error = path + QStringLiteral(": no float32 tensor \"logits\"");
        return {};
    }
    auto out = at::empty(info->shape, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(out.data_ptr(), info->data, out.nbytes());
    return out;
}

} // namespace

class tst_FamilyCompat : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QJsonArray m_cases;
    int m_logitsAgreed = 0, m_tokensAgreed = 0, m_mapsAgreed = 0;

    QJsonObject currentCase() { return test::currentOracleCase(m_cases); }
    void addCaseRows() { test::addOracleCaseRows(m_cases); }

    static std::unique_ptr<InferenceModel> load(const QJsonObject &c, const LoadOptions &options = {})
    {
        auto model = InferenceModel::load(c.value(QStringLiteral("model_dir")).toString().toStdString(), options);
        if (!model) {
            qWarning("%s", model.error().toString().c_str());
            return nullptr;
        }
        return std::move(*model);
    }

    // Twice the largest layer (the embedding) and 40 % of the rest of the checkpoint.
    static qint64 cpuBudget(const QJsonObject &c)
    {
        const QString dir = c.value(QStringLiteral("model_dir")).toString();
        const qint64 weights = QFileInfo(QDir(dir).filePath(QStringLiteral("model.safetensors"))).size();
        const qint64 largest = c.value(QStringLiteral("embedding_bytes")).toInteger();
        return 2 * largest + (weights - 2 * largest) * 2 / 5;
    }

    static std::vector<int64_t> greedy(InferenceModel &model, const QJsonObject &c)
    {
        SamplingOptions options;
        options.greedy = true;
        options.maxNewTokens = c.value(QStringLiteral("max_new_tokens")).toInt();
        options.stopTokenIds = {c.value(QStringLiteral("eos_token_id")).toInteger()};
        auto result = generate(model, {ids(c.value(QStringLiteral("input_ids")).toArray())}, options);
        if (!result) {
            qWarning("%s", result.error().toString().c_str());
            return {};
        }
        return result->sequences.front().tokens;
    }

private Q_SLOTS:
    void initTestCase()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("transformers"), QStringLiteral("torch"),
                             QStringLiteral("safetensors"));
        QVERIFY(m_dir.isValid());
        const test::ProcessResult run =
            test::runProgram(python, {test::compatScript(QStringLiteral("families_oracle.py")), m_dir.path()}, 300000);
        QVERIFY2(run.exitCode == 0, qPrintable(run.err.right(3000)));
        const QJsonObject oracle = QJsonDocument::fromJson(run.out.toUtf8()).object();
        m_cases = oracle.value(QStringLiteral("cases")).toArray();
        QCOMPARE(m_cases.size(), 13);
        qInfo("oracle: transformers %s", qPrintable(oracle.value(QStringLiteral("transformers")).toString()));
    }

    void logitsEqualTransformers_data() { addCaseRows(); }
    void logitsEqualTransformers()
    {
        const QJsonObject c = currentCase();
        auto model = load(c);
        QVERIFY(model);
        QString error;
        const at::Tensor theirs = expectedLogits(c.value(QStringLiteral("logits_file")).toString(), &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        c10::InferenceMode guard;
        const auto input =
            at::tensor(ids(c.value(QStringLiteral("input_ids")).toArray()), at::TensorOptions().dtype(at::kLong))
                .unsqueeze(0);
        const at::Tensor ours = model->lm().forward(input, nullptr);
        QCOMPARE(ours.sizes().vec(), theirs.sizes().vec());
        const double maxAbs = (ours - theirs).abs().max().item<double>();
        const double scale = theirs.abs().max().item<double>();
        qInfo("%s: max |diff| %.3g, max |logit| %.3g, relative %.3g", QTest::currentDataTag(), maxAbs, scale,
              maxAbs / scale);
        QVERIFY2(maxAbs / scale <= kTolerance, qPrintable(QStringLiteral("relative %1").arg(maxAbs / scale)));
        ++m_logitsAgreed;
    }

    void greedyTokensEqualTransformers_data() { addCaseRows(); }
    void greedyTokensEqualTransformers()
    {
        const QJsonObject c = currentCase();
        auto model = load(c);
        QVERIFY(model);
        const std::vector<int64_t> want = ids(c.value(QStringLiteral("generated")).toArray());
        const std::vector<int64_t> tokens = greedy(*model, c);
        QVERIFY2(tokens == want,
                 qPrintable(QStringLiteral("accel [%1] / transformers [%2]").arg(joined(tokens), joined(want))));
        ++m_tokensAgreed;
    }

    // The sliding windows were exercised: every window case's context runs well past its window,
    // and the longrope and dynamic cases past their lengths (so the other branch was taken too).
    void contextsRunPastTheWindowsAndLengths()
    {
        int windows = 0;
        for (const QJsonValue &value : std::as_const(m_cases)) {
            const QJsonObject c = value.toObject();
            const int window = c.value(QStringLiteral("window")).toInt();
            if (window > 0) {
                ++windows;
                QVERIFY2(c.value(QStringLiteral("context")).toInt() >= 4 * window,
                         qPrintable(c.value(QStringLiteral("name")).toString()));
            }
        }
        QCOMPARE(windows, 4);
    }

    // Plan -> dispatch -> generate for the new families: a sequential map whose cpu budget holds the
    // embedding, the planner's reserve of the largest layer and 40 % of the rest leaves the other
    // blocks on disk (modules without tensors, the MoE experts and routers, Gemma's embed_scale
    // buffer and the rotary buffers named as the planner names them); the tokens equal
    // transformers'.
    void plannedMapsGenerateTheSameTokens_data() { addCaseRows(); }
    void plannedMapsGenerateTheSameTokens()
    {
        const QJsonObject c = currentCase();
        LoadOptions options;
        options.deviceMap = "sequential";
        options.maxMemory = "cpu=" + std::to_string(cpuBudget(c)) + ",disk=1GB";
        auto model = load(c, options);
        QVERIFY(model);
        QVERIFY2(model->report().offloadedTensors > 0, "nothing was offloaded");
        QVERIFY2(model->report().residentTensors > 0, "everything was offloaded");
        const std::vector<int64_t> want = ids(c.value(QStringLiteral("generated")).toArray());
        QCOMPARE(greedy(*model, c), want);
        ++m_mapsAgreed;
    }

    // The programs a user runs: accel generate on Gemma 2, and on Qwen2-MoE under the map accel
    // device-map --json planned (from its file).
    void realProgramsGenerateTheSameTokens()
    {
        for (const QJsonValue &value : std::as_const(m_cases)) {
            const QJsonObject c = value.toObject();
            const QString name = c.value(QStringLiteral("name")).toString();
            if (name != QStringLiteral("gemma2") && name != QStringLiteral("qwen2_moe"))
                continue;
            const QString dir = c.value(QStringLiteral("model_dir")).toString();
            QStringList args{QStringLiteral("generate"),
                             dir,
                             QStringLiteral("--input_ids"),
                             joined(ids(c.value(QStringLiteral("input_ids")).toArray())),
                             QStringLiteral("--greedy"),
                             QStringLiteral("--max_new_tokens"),
                             QString::number(c.value(QStringLiteral("max_new_tokens")).toInt()),
                             QStringLiteral("--json")};
            if (name == QStringLiteral("qwen2_moe")) {
                const test::ProcessResult plan =
                    test::runAccel({QStringLiteral("device-map"), dir, QStringLiteral("--max_memory"),
                                    QStringLiteral("cpu=%1,disk=1GB").arg(cpuBudget(c)), QStringLiteral("--json")});
                QVERIFY2(plan.exitCode == 0, qPrintable(plan.err));
                const QString mapFile = m_dir.filePath(QStringLiteral("qwen2_moe-map.json"));
                QFile file(mapFile);
                QVERIFY(file.open(QIODevice::WriteOnly));
                file.write(plan.out.toUtf8());
                file.close();
                args << QStringLiteral("--device_map") << mapFile;
            }
            const test::ProcessResult run = test::runAccel(args, 120000);
            QVERIFY2(run.exitCode == 0, qPrintable(run.err.right(3000)));
            const QJsonObject result = QJsonDocument::fromJson(run.out.toUtf8()).object();
            QCOMPARE(joined(ids(result.value(QStringLiteral("tokens")).toArray())),
                     joined(ids(c.value(QStringLiteral("generated")).toArray())));
            if (name == QStringLiteral("qwen2_moe"))
                QVERIFY2(QJsonDocument(result.value(QStringLiteral("device_map")).toObject()).toJson().contains("disk"),
                         qPrintable(run.out));
        }
    }

    void cleanupTestCase()
    {
        qInfo("agree/tried: logits %d/%lld, greedy tokens %d/%lld, planned maps %d/%lld", m_logitsAgreed,
              qlonglong(m_cases.size()), m_tokensAgreed, qlonglong(m_cases.size()), m_mapsAgreed,
              qlonglong(m_cases.size()));
    }
};

QTEST_GUILESS_MAIN(tst_FamilyCompat)
#include "tst_familycompat.moc"
