// Device maps and memory estimates against real Accelerate on the meta models Transformers builds
// from the same config.json (tests/compat/devicemap_oracle.py):
//  - `accel device-map CONFIG --max_memory ... --json` against infer_auto_device_map (after
//    get_balanced_memory for auto / balanced / balanced_low_0) over seeded combinations of GPT-2,
//    Llama, Mistral, Qwen2 and Mixtral configs (and 5 cases each of Gemma, Gemma 2, Qwen2-MoE,
//    Qwen3 and Phi-3, on configs and on checkpoints), budgets, strategies, no-split classes, dtypes and
//    the clean / fallback / offload-buffers switches: the map key for key, the budgets after
//    balancing, total and largest layer, bytes per device, the no-split classes used and whether
//    the offloaded-buffers warning is given;
//  - the same on checkpoints Transformers writes (save_pretrained, one file or sharded):
//    `accel device-map DIR` plans from the safetensors headers and config.json, so its tree must
//    also hold the modules without tensors (dropouts, activations) that named_modules() has;
//  - budgets with an `mps` device (with and without GPU indices), and Accelerate's refusal of
//    backend-qualified names ("xpu:0", "cuda:0"...) mirrored by a refusal naming the device;
//  - `accel estimate-memory DIR --json` against `accelerate estimate-memory`'s own code on the same
//    folder: largest layer, total size and training-with-Adam figures per dtype, and the printed
//    table byte for byte.
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/modulesizes.h"
#include "core/common/fileutil.h"
#include "tests/compat/oracle.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>
#include <map>
#include <random>

using namespace accel;

namespace {

constexpr unsigned kSeed = 20261126;
constexpr int kCasesPerFamily = 13;
constexpr int kCheckpointCasesPerFamily = 4;
constexpr int kMpsCases = 8;
const QStringList kRefusedDevices = {QStringLiteral("cuda:0"), QStringLiteral("xpu:0"),  QStringLiteral("npu:0"),
                                     QStringLiteral("mlu:0"),  QStringLiteral("musa:0"), QStringLiteral("hpu:0"),
                                     QStringLiteral("sdaa:1")};
const QStringList kFamilies = {QStringLiteral("gpt2"), QStringLiteral("llama"), QStringLiteral("mistral"),
                               QStringLiteral("qwen2"), QStringLiteral("mixtral")};
// Families planned but not run by the inference engine: 5 cases each, on config.json and on
// checkpoints transformers writes.
const QStringList kPlannedFamilies = {QStringLiteral("gemma"), QStringLiteral("gemma2"), QStringLiteral("qwen2_moe"),
                                      QStringLiteral("qwen3"), QStringLiteral("phi3")};
constexpr int kPlannedCasesPerFamily = 5;
// Quantized loads: families whose layers are nn.Linear (bitsandbytes' replace_with_bnb_layers converts
// those; GPT-2's Conv1D it leaves alone), each method in turn.
const QStringList kQuantizedFamilies = {QStringLiteral("llama"), QStringLiteral("mistral"), QStringLiteral("qwen2")};
const QStringList kQuantizationMethods = {QStringLiteral("int8"), QStringLiteral("nf4"), QStringLiteral("fp4")};
constexpr int kQuantizedCases = 9;

class Random {
public:
    explicit Random(unsigned seed) : m_engine(seed) {}
    int integer(int low, int high) { return std::uniform_int_distribution<int>(low, high)(m_engine); }
    double real(double low, double high) { return std::uniform_real_distribution<double>(low, high)(m_engine); }
    bool chance(double p) { return real(0, 1) < p; }
    template <typename T>
    T pick(const std::vector<T> &values)
    {
        return values[static_cast<size_t>(integer(0, int(values.size()) - 1))];
    }

private:
    std::mt19937 m_engine;
};

// A config.json of the family with varied sizes and options; head dims stay multiples of 8 so
// that sub-byte dtypes give whole bytes per tensor.
QJsonObject familyConfig(const QString &family, Random &r)
{
    QJsonObject c{{QStringLiteral("model_type"), family}};
    if (family == QLatin1String("gpt2")) {
        const int heads = r.pick<int>({2, 4, 8});
        const int embd = heads * r.pick<int>({8, 16, 32});
        c[QStringLiteral("n_embd")] = embd;
        c[QStringLiteral("n_head")] = heads;
        c[QStringLiteral("n_layer")] = r.integer(2, 6);
        c[QStringLiteral("n_positions")] = r.pick<int>({64, 128, 256});
        c[QStringLiteral("vocab_size")] = r.pick<int>({512, 1000, 4096});
        if (r.chance(0.4))
            c[QStringLiteral("n_inner")] = embd * r.pick<int>({2, 3});
        if (r.chance(0.3))
            c[QStringLiteral("tie_word_embeddings")] = false;
        return c;
    }
    const int heads = r.pick<int>({2, 4, 8});
    const int headDim = r.pick<int>({8, 16, 32});
    if (kPlannedFamilies.contains(family)) {
        c[QStringLiteral("hidden_size")] = heads * r.pick<int>({8, 16});
        c[QStringLiteral("num_attention_heads")] = heads;
        c[QStringLiteral("num_key_value_heads")] = heads / r.pick<int>({1, 2});
        // Gemma and Qwen3 default to 256 and 128 wide heads: keep them small, sometimes wider
        // than hidden / heads.
        if (family != QLatin1String("phi3") && family != QLatin1String("qwen2_moe"))
            c[QStringLiteral("head_dim")] = r.pick<int>({8, 16, 32});
        c[QStringLiteral("intermediate_size")] = 8 * r.integer(4, 16);
        c[QStringLiteral("num_hidden_layers")] = r.integer(2, 4);
        c[QStringLiteral("vocab_size")] = r.pick<int>({512, 1000});
        c[QStringLiteral("max_position_embeddings")] = 256;
        c[QStringLiteral("pad_token_id")] = 0;
        if (r.chance(0.4))
            c[QStringLiteral("tie_word_embeddings")] = r.chance(0.5);
        if (r.chance(0.5))
            c[QStringLiteral("torch_dtype")] = r.pick<QString>({QStringLiteral("float32"), QStringLiteral("bfloat16")});
        if (family != QLatin1String("phi3") && family != QLatin1String("qwen2_moe"))
            c[QStringLiteral("attention_bias")] = r.chance(0.3);
        if (family == QLatin1String("phi3") && r.chance(0.5))
            c[QStringLiteral("partial_rotary_factor")] = 0.5;
        if (family == QLatin1String("qwen2_moe")) {
            c[QStringLiteral("num_experts")] = r.pick<int>({2, 4});
            c[QStringLiteral("num_experts_per_tok")] = 2;
            c[QStringLiteral("moe_intermediate_size")] = 8 * r.integer(2, 6);
            c[QStringLiteral("shared_expert_intermediate_size")] = 8 * r.integer(2, 8);
            c[QStringLiteral("decoder_sparse_step")] = r.pick<int>({1, 2});
            if (r.chance(0.5))
                c[QStringLiteral("mlp_only_layers")] = QJsonArray{0};
            c[QStringLiteral("qkv_bias")] = r.chance(0.7);
        }
        return c;
    }
    c[QStringLiteral("hidden_size")] = heads * headDim;
    c[QStringLiteral("num_attention_heads")] = heads;
    if (family == QLatin1String("mistral") || family == QLatin1String("mixtral") || r.chance(0.6))
        c[QStringLiteral("num_key_value_heads")] = heads / r.pick<int>({1, 2});
    c[QStringLiteral("intermediate_size")] = 8 * r.integer(8, 64);
    c[QStringLiteral("num_hidden_layers")] = r.integer(2, 6);
    c[QStringLiteral("vocab_size")] = r.pick<int>({512, 1000, 4096});
    c[QStringLiteral("max_position_embeddings")] = 256;
    if (r.chance(0.4))
        c[QStringLiteral("tie_word_embeddings")] = r.chance(0.5);
    if (r.chance(0.25))
        c[QStringLiteral("head_dim")] = headDim * 2; // q/o projections wider than the hidden size
    if (r.chance(0.5))
        c[QStringLiteral("torch_dtype")] =
            r.pick<QString>({QStringLiteral("float32"), QStringLiteral("bfloat16"), QStringLiteral("float16")});
    if (family == QLatin1String("llama")) {
        c[QStringLiteral("attention_bias")] = r.chance(0.3);
        c[QStringLiteral("mlp_bias")] = r.chance(0.3);
    }
    if (family == QLatin1String("mixtral")) {
        c[QStringLiteral("num_local_experts")] = r.pick<int>({2, 4, 8});
        c[QStringLiteral("num_experts_per_tok")] = 2;
    }
    return c;
}

// Classes a user might keep whole besides the family's block.
std::vector<QStringList> otherNoSplit(const QString &family)
{
    if (family == QLatin1String("qwen2_moe"))
        return {{QStringLiteral("Qwen2MoeSparseMoeBlock")},
                {QStringLiteral("Qwen2MoeAttention"), QStringLiteral("Qwen2MoeExperts")}};
    if (family == QLatin1String("phi3"))
        return {{QStringLiteral("Phi3Attention"), QStringLiteral("Phi3MLP")}, {QStringLiteral("Phi3MLP")}};
    if (family.startsWith(QLatin1String("gemma")) || family == QLatin1String("qwen3")) {
        const QString k = family.left(1).toUpper() + family.mid(1);
        return {{k + QStringLiteral("Attention"), k + QStringLiteral("MLP")}, {k + QStringLiteral("RMSNorm")}};
    }
    if (family == QLatin1String("gpt2"))
        return {{QStringLiteral("GPT2Attention"), QStringLiteral("GPT2MLP")}, {QStringLiteral("GPT2MLP")}};
    const QString k =
        family == QLatin1String("qwen2") ? QStringLiteral("Qwen2") : family.left(1).toUpper() + family.mid(1);
    if (family == QLatin1String("mixtral"))
        return {{k + QStringLiteral("SparseMoeBlock")},
                {k + QStringLiteral("Attention"), k + QStringLiteral("Experts")}};
    return {{k + QStringLiteral("Attention"), k + QStringLiteral("MLP")}, {k + QStringLiteral("MLP")}};
}

// Bytes of the model under the dtype, from our own structure: only used to choose budgets that
// make the planner split, offload and balance (the answers come from Accelerate).
qint64 modelBytes(const QString &configPath, const QString &dtype)
{
    auto config = bigmodel::readModelConfig(configPath.toStdString());
    if (!config)
        return 0;
    std::optional<bigmodel::TargetDType> target;
    if (!dtype.isEmpty())
        target = *bigmodel::parseTargetDType(dtype.toStdString());
    const bigmodel::ModelStructure s = bigmodel::buildModelStructure(*config);
    return qint64(bigmodel::ModuleSizes(s, target).of(""));
}

QJsonValue deviceValue(const QJsonValue &v)
{
    return v.isDouble() ? QJsonValue(v.toInteger()) : v;
}

// [[key, value]...] (the oracle's ordered pairs) as a map for key-for-key comparison.
std::map<QString, QJsonValue> pairsToMap(const QJsonArray &pairs)
{
    std::map<QString, QJsonValue> m;
    for (const QJsonValue &p : pairs)
        m[p.toArray()[0].toString()] = deviceValue(p.toArray()[1]);
    return m;
}

QString describe(const std::map<QString, QJsonValue> &m)
{
    QStringList parts;
    for (const auto &[k, v] : m)
        parts << k + QLatin1Char('=') + (v.isString() ? v.toString() : QString::number(v.toInteger()));
    return parts.join(QLatin1Char(' '));
}

QString compact(const QJsonValue &v)
{
    return QString::fromUtf8(v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                                         : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
}

// Bytes of ours (whole bytes) against Accelerate's: equal, or Accelerate's fraction rounded up.
// Under int4 / int2 Accelerate counts a tensor with an odd element count in half bytes; ours
// rounds each tensor up to whole bytes (docs/compatibility.md). Gemma's 0-d embed_scale buffer is
// the one such tensor in these models.
bool sameBytes(const QJsonValue &ours, const QJsonValue &theirs)
{
    const double o = ours.toDouble(), t = theirs.toDouble();
    return o == t || (t != std::floor(t) && o == std::ceil(t));
}

// Our [{"device", "bytes"}...] against the oracle's [[device, bytes]...] under `key`, devices as text.
void compareDeviceBytes(const QJsonObject &ours, const QJsonObject &theirs, const QString &key,
                        QStringList *differences)
{
    QJsonArray mine, wanted;
    for (const QJsonValue &b : ours.value(key).toArray()) {
        const QJsonValue d = b.toObject().value(QStringLiteral("device"));
        mine.append(QJsonArray{d.isString() ? d.toString() : QString::number(d.toInteger()),
                               b.toObject().value(QStringLiteral("bytes"))});
    }
    for (const QJsonValue &b : theirs.value(key).toArray())
        wanted.append(QJsonArray{b.toArray()[0].toString(), b.toArray()[1]});
    bool same = mine.size() == wanted.size();
    for (qsizetype i = 0; same && i < mine.size(); ++i)
        same =
            mine[i].toArray()[0] == wanted[i].toArray()[0] && sameBytes(mine[i].toArray()[1], wanted[i].toArray()[1]);
    if (!same)
        *differences << QStringLiteral("%1 ours %2 theirs %3").arg(key, compact(mine), compact(wanted));
}

} // namespace

class tst_DeviceMapCompat : public QObject {
    Q_OBJECT
    QTemporaryDir m_dir;
    QJsonArray m_cases;   // what was asked
    QJsonObject m_oracle; // what Accelerate answered
    std::map<QString, QString> m_modelFamily;
    std::map<QString, QString> m_modelDir;
    std::map<QString, QString> m_modelArg; // what accel device-map is given: config.json or the folder

    QString configText(const QString &model)
    {
        auto text = fileutil::readFile(QDir(m_modelDir[model]).filePath(QStringLiteral("config.json")).toStdString());
        return text ? QString::fromStdString(*text).simplified() : QString();
    }

private Q_SLOTS:
    void initTestCase()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("accelerate"), QStringLiteral("transformers"),
                             QStringLiteral("torch"), QStringLiteral("bitsandbytes"));
        QVERIFY(m_dir.isValid());
        Random r(kSeed);
        QJsonArray models;
        // Three configs per family, each planned under several combinations.
        for (const QString &family : kFamilies) {
            for (int i = 0; i < 3; ++i) {
                const QString name = QStringLiteral("%1-%2").arg(family).arg(i);
                const QString dir = m_dir.filePath(name);
                QVERIFY(QDir().mkpath(dir));
                const QJsonObject config = familyConfig(family, r);
                QVERIFY(fileutil::writeFileAtomic(QDir(dir).filePath(QStringLiteral("config.json")).toStdString(),
                                                  QJsonDocument(config).toJson().toStdString()));
                models.append(QJsonObject{{QStringLiteral("name"), name}, {QStringLiteral("dir"), dir}});
                m_modelFamily[name] = family;
                m_modelDir[name] = dir;
                m_modelArg[name] = QDir(dir).filePath(QStringLiteral("config.json"));
            }
        }
        // One checkpoint per family, written by Transformers itself (the oracle runs save_pretrained
        // before planning), every other one sharded.
        Random checkpoints(kSeed + 1);
        for (int f = 0; f < kFamilies.size(); ++f) {
            const QString family = kFamilies[f];
            const QString name = QStringLiteral("%1-checkpoint").arg(family);
            const QString dir = m_dir.filePath(name);
            QVERIFY(QDir().mkpath(dir));
            QJsonObject config = familyConfig(family, checkpoints);
            QVERIFY(fileutil::writeFileAtomic(QDir(dir).filePath(QStringLiteral("config.json")).toStdString(),
                                              QJsonDocument(config).toJson().toStdString()));
            const QJsonValue shard = f % 2 ? QJsonValue(QStringLiteral("40KB")) : QJsonValue(QJsonValue::Null);
            // Mixtral is saved with transformers 5's own names (one MixtralExperts module per layer):
            // save_pretrained's default writes the Hub's per-expert names, which Accel Studio plans
            // with that layout (docs/compatibility.md), so their maps name other modules.
            const bool original = family != QLatin1String("mixtral");
            models.append(
                QJsonObject{{QStringLiteral("name"), name},
                            {QStringLiteral("dir"), dir},
                            {QStringLiteral("save"), QJsonObject{{QStringLiteral("max_shard_size"), shard},
                                                                 {QStringLiteral("original_format"), original}}}});
            m_modelFamily[name] = family;
            m_modelDir[name] = dir;
            m_modelArg[name] = dir;
        }
        const QStringList dtypes = {QString(),
                                    QString(),
                                    QStringLiteral("float16"),
                                    QStringLiteral("bfloat16"),
                                    QStringLiteral("float32"),
                                    QStringLiteral("int8"),
                                    QStringLiteral("fp8"),
                                    QStringLiteral("int4")};
        const QStringList strategies = {QStringLiteral("auto"), QStringLiteral("balanced"),
                                        QStringLiteral("balanced_low_0"), QStringLiteral("sequential")};
        for (const QString &family : kFamilies) {
            for (int i = 0; i < kCasesPerFamily; ++i) {
                const QString model = QStringLiteral("%1-%2").arg(family).arg(i % 3);
                const QString dtype = r.pick(std::vector<QString>(dtypes.begin(), dtypes.end()));
                const QString strategy = strategies[i % strategies.size()];
                const double total =
                    double(modelBytes(QDir(m_modelDir[model]).filePath(QStringLiteral("config.json")), dtype));
                QVERIFY(total > 0);
                QJsonObject budgets;
                const int gpus = strategy == QLatin1String("balanced_low_0") ? r.integer(2, 3) : r.integer(1, 3);
                for (int g = 0; g < gpus; ++g)
                    budgets[QString::number(g)] = qint64(total * r.real(0.08, 0.7));
                if (r.chance(0.8))
                    budgets[QStringLiteral("cpu")] = qint64(total * r.real(0.1, 0.9));
                QJsonValue noSplit = QJsonValue::Null; // the model's own
                const int choice = r.integer(0, 5);
                if (choice == 4)
                    noSplit = QJsonArray();
                else if (choice == 5)
                    noSplit = QJsonArray::fromStringList(r.pick(otherNoSplit(family)));
                m_cases.append(QJsonObject{
                    {QStringLiteral("name"), QStringLiteral("%1-%2").arg(family).arg(i, 2, 10, QLatin1Char('0'))},
                    {QStringLiteral("model"), model},
                    {QStringLiteral("strategy"), strategy},
                    {QStringLiteral("max_memory"), budgets},
                    {QStringLiteral("no_split"), noSplit},
                    {QStringLiteral("dtype"), dtype.isEmpty() ? QJsonValue::Null : QJsonValue(dtype)},
                    {QStringLiteral("clean"), !r.chance(0.15)},
                    {QStringLiteral("fallback"), r.chance(0.25)},
                    {QStringLiteral("offload_buffers"), r.chance(0.2)},
                });
            }
        }
        // Checkpoint cases: budgets that cut the model, often no no-split class or the unmerged map,
        // so that split parents show their modules without tensors.
        for (const QString &family : kFamilies) {
            const QString model = QStringLiteral("%1-checkpoint").arg(family);
            for (int i = 0; i < kCheckpointCasesPerFamily; ++i) {
                const QString dtype = checkpoints.pick(std::vector<QString>(dtypes.begin(), dtypes.end()));
                const double total =
                    double(modelBytes(QDir(m_modelDir[model]).filePath(QStringLiteral("config.json")), dtype));
                QVERIFY(total > 0);
                QJsonObject budgets;
                const int gpus = checkpoints.integer(1, 3);
                for (int g = 0; g < gpus; ++g)
                    budgets[QString::number(g)] = qint64(total * checkpoints.real(0.15, 0.6));
                budgets[QStringLiteral("cpu")] = qint64(total * checkpoints.real(0.1, 0.5));
                QJsonValue noSplit = QJsonValue::Null;
                if (i % 2 == 0)
                    noSplit = QJsonArray();
                else if (checkpoints.chance(0.5))
                    noSplit = QJsonArray::fromStringList(checkpoints.pick(otherNoSplit(family)));
                m_cases.append(QJsonObject{
                    {QStringLiteral("name"), QStringLiteral("%1-checkpoint-%2").arg(family).arg(i)},
                    {QStringLiteral("group"), QStringLiteral("checkpoints")},
                    {QStringLiteral("model"), model},
                    {QStringLiteral("strategy"), strategies[(i + 1) % strategies.size()]},
                    {QStringLiteral("max_memory"), budgets},
                    {QStringLiteral("no_split"), noSplit},
                    {QStringLiteral("dtype"), dtype.isEmpty() ? QJsonValue::Null : QJsonValue(dtype)},
                    {QStringLiteral("clean"), i != 1},
                    {QStringLiteral("fallback"), i == 3},
                    {QStringLiteral("offload_buffers"), false},
                });
            }
        }
        // The families the engine does not run: a config.json and a checkpoint transformers writes
        // each (Qwen2-MoE in transformers 5's own fused layout, as Mixtral), planned under budgets
        // that split them, with the model's, no or other no-split classes.
        Random planned(kSeed + 2);
        for (const QString &family : kPlannedFamilies) {
            for (const bool checkpoint : {false, true}) {
                const QString name = QStringLiteral("%1-%2").arg(family, checkpoint ? QStringLiteral("saved")
                                                                                    : QStringLiteral("config"));
                const QString dir = m_dir.filePath(name);
                QVERIFY(QDir().mkpath(dir));
                QVERIFY(fileutil::writeFileAtomic(QDir(dir).filePath(QStringLiteral("config.json")).toStdString(),
                                                  QJsonDocument(familyConfig(family, planned)).toJson().toStdString()));
                QJsonObject model{{QStringLiteral("name"), name}, {QStringLiteral("dir"), dir}};
                if (checkpoint)
                    model[QStringLiteral("save")] =
                        QJsonObject{{QStringLiteral("max_shard_size"), family == QLatin1String("qwen3")
                                                                           ? QJsonValue(QStringLiteral("40KB"))
                                                                           : QJsonValue(QJsonValue::Null)},
                                    {QStringLiteral("original_format"), family != QLatin1String("qwen2_moe")}};
                models.append(model);
                m_modelFamily[name] = family;
                m_modelDir[name] = dir;
                m_modelArg[name] = checkpoint ? dir : QDir(dir).filePath(QStringLiteral("config.json"));
            }
            for (int i = 0; i < kPlannedCasesPerFamily; ++i) {
                const QString model =
                    QStringLiteral("%1-%2").arg(family, i < 3 ? QStringLiteral("config") : QStringLiteral("saved"));
                const QString dtype = planned.pick(std::vector<QString>(dtypes.begin(), dtypes.end()));
                const double total =
                    double(modelBytes(QDir(m_modelDir[model]).filePath(QStringLiteral("config.json")), dtype));
                QVERIFY(total > 0);
                QJsonObject budgets;
                const QString strategy = strategies[i % strategies.size()];
                const int gpus = strategy == QLatin1String("balanced_low_0") ? 2 : planned.integer(1, 2);
                for (int g = 0; g < gpus; ++g)
                    budgets[QString::number(g)] = qint64(total * planned.real(0.15, 0.6));
                budgets[QStringLiteral("cpu")] = qint64(total * planned.real(0.1, 0.5));
                QJsonValue noSplit = QJsonValue::Null;
                if (i == 1)
                    noSplit = QJsonArray();
                else if (i == 2)
                    noSplit = QJsonArray::fromStringList(planned.pick(otherNoSplit(family)));
                m_cases.append(QJsonObject{
                    {QStringLiteral("name"), QStringLiteral("%1-planned-%2").arg(family).arg(i)},
                    {QStringLiteral("model"), model},
                    {QStringLiteral("strategy"), strategy},
                    {QStringLiteral("max_memory"), budgets},
                    {QStringLiteral("no_split"), noSplit},
                    {QStringLiteral("dtype"), dtype.isEmpty() ? QJsonValue::Null : QJsonValue(dtype)},
                    {QStringLiteral("clean"), i != 4},
                    {QStringLiteral("fallback"), false},
                    {QStringLiteral("offload_buffers"), i == 0},
                });
            }
        }
        // mps budgets: alone with cpu, and beside GPU indices (Accelerate keeps it after them and
        // makes it the only device that keeps a largest-layer reserve).
        for (int i = 0; i < kMpsCases; ++i) {
            const QString family = kFamilies[i % kFamilies.size()];
            const QString model = QStringLiteral("%1-%2").arg(family).arg(i % 3);
            const double total = double(modelBytes(m_modelArg[model], QString()));
            QJsonObject budgets;
            const int gpus = i % 2 ? checkpoints.integer(1, 2) : 0;
            for (int g = 0; g < gpus; ++g)
                budgets[QString::number(g)] = qint64(total * checkpoints.real(0.15, 0.5));
            budgets[QStringLiteral("mps")] = qint64(total * checkpoints.real(0.2, 0.7));
            if (i % 4 != 3)
                budgets[QStringLiteral("cpu")] = qint64(total * checkpoints.real(0.1, 0.5));
            m_cases.append(QJsonObject{
                {QStringLiteral("name"), QStringLiteral("mps-%1").arg(i)},
                {QStringLiteral("group"), QStringLiteral("mps")},
                {QStringLiteral("model"), model},
                {QStringLiteral("strategy"), strategies[i % strategies.size()]},
                {QStringLiteral("max_memory"), budgets},
                {QStringLiteral("no_split"), i % 3 == 2 ? QJsonValue(QJsonArray()) : QJsonValue(QJsonValue::Null)},
                {QStringLiteral("dtype"), QJsonValue::Null},
                {QStringLiteral("clean"), i % 4 != 1},
                {QStringLiteral("fallback"), false},
                {QStringLiteral("offload_buffers"), false},
            });
        }
        // Quantized on load (--quantization): planned at the bytes bitsandbytes' quantized tensors hold,
        // with Accelerate's skip_modules / keep_in_fp32_modules, for the families of Linear layers.
        Random quantized(kSeed + 3);
        for (int i = 0; i < kQuantizedCases; ++i) {
            const QString family = kQuantizedFamilies[i % kQuantizedFamilies.size()];
            const QString method = kQuantizationMethods[i % kQuantizationMethods.size()];
            const QString model = QStringLiteral("%1-%2").arg(family).arg(i % 3);
            // Budgets as a share of the float32 bytes: the quantized model holds about a quarter or less.
            const double total = double(modelBytes(m_modelArg[model], QString()));
            QJsonObject budgets;
            if (i % 3 != 2)
                budgets[QStringLiteral("0")] = qint64(total * quantized.real(0.04, 0.12));
            budgets[QStringLiteral("cpu")] = qint64(total * quantized.real(0.03, 0.1));
            QJsonObject load{{QStringLiteral("method"), method}};
            if (i % 4 == 1)
                load[QStringLiteral("keep_in_fp32_modules")] = QJsonArray{QStringLiteral("o_proj")};
            if (i % 4 == 2)
                load[QStringLiteral("skip_modules")] = QJsonArray{QStringLiteral("down_proj")};
            m_cases.append(QJsonObject{
                {QStringLiteral("name"), QStringLiteral("quantized-%1-%2").arg(method).arg(i)},
                {QStringLiteral("group"), QStringLiteral("quantized")},
                {QStringLiteral("model"), model},
                {QStringLiteral("strategy"), strategies[i % strategies.size()]},
                {QStringLiteral("max_memory"), budgets},
                {QStringLiteral("no_split"), i % 5 == 3 ? QJsonValue(QJsonArray()) : QJsonValue(QJsonValue::Null)},
                {QStringLiteral("dtype"), i % 3 == 1 ? QJsonValue(QStringLiteral("bfloat16")) : QJsonValue::Null},
                {QStringLiteral("clean"), true},
                {QStringLiteral("fallback"), false},
                {QStringLiteral("offload_buffers"), false},
                {QStringLiteral("quantization"), load},
            });
        }
        // Backend-qualified device names: Accelerate's get_max_memory refuses them.
        for (int i = 0; i < kRefusedDevices.size(); ++i) {
            m_cases.append(QJsonObject{
                {QStringLiteral("name"), QStringLiteral("refused-%1").arg(kRefusedDevices[i])},
                {QStringLiteral("group"), QStringLiteral("refused")},
                {QStringLiteral("model"), QStringLiteral("llama-0")},
                {QStringLiteral("strategy"), strategies[i % strategies.size()]},
                {QStringLiteral("max_memory"),
                 QJsonObject{{kRefusedDevices[i], 1000000}, {QStringLiteral("cpu"), 1000000}}},
                {QStringLiteral("no_split"), QJsonValue::Null},
                {QStringLiteral("dtype"), QJsonValue::Null},
                {QStringLiteral("clean"), true},
                {QStringLiteral("fallback"), false},
                {QStringLiteral("offload_buffers"), false},
            });
        }
        const QString spec = m_dir.filePath(QStringLiteral("cases.json"));
        QVERIFY(fileutil::writeFileAtomic(
            spec.toStdString(),
            QJsonDocument(QJsonObject{{QStringLiteral("models"), models}, {QStringLiteral("cases"), m_cases}})
                .toJson()
                .toStdString()));
        const test::ProcessResult run =
            test::runProgram(python, {test::compatScript(QStringLiteral("devicemap_oracle.py")), spec}, 600000);
        QVERIFY2(run.exitCode == 0, qPrintable(run.err.right(3000)));
        m_oracle = QJsonDocument::fromJson(run.out.toUtf8()).object();
        QCOMPARE(m_oracle.value(QStringLiteral("cases")).toArray().size(), m_cases.size());
        qInfo("oracle: accelerate %s, transformers %s, torch %s",
              qPrintable(m_oracle.value(QStringLiteral("accelerate")).toString()),
              qPrintable(m_oracle.value(QStringLiteral("transformers")).toString()),
              qPrintable(m_oracle.value(QStringLiteral("torch")).toString()));
    }

    void deviceMapEqualsAccelerate()
    {
        QVERIFY(m_cases.size() >= 50);
        std::map<QString, std::pair<int, int>> perFamily; // agree, tried
        QStringList failures;
        int raisedByAccelerate = 0;
        std::map<QString, int> withTensorlessKeys; // cases whose map names a module without tensors
        const QJsonArray answers = m_oracle.value(QStringLiteral("cases")).toArray();
        for (int i = 0; i < m_cases.size(); ++i) {
            const QJsonObject c = m_cases[i].toObject();
            const QJsonObject want = answers[i].toObject();
            const QString name = c.value(QStringLiteral("name")).toString();
            const QString family = c.value(QStringLiteral("group")).toString().isEmpty()
                                       ? m_modelFamily[c.value(QStringLiteral("model")).toString()]
                                       : c.value(QStringLiteral("group")).toString();
            ++perFamily[family].second;
            QStringList budgetSpec;
            const QJsonObject budgets = c.value(QStringLiteral("max_memory")).toObject();
            for (auto it = budgets.begin(); it != budgets.end(); ++it)
                budgetSpec << it.key() + QLatin1Char('=') + QString::number(it.value().toInteger());
            if (family == QLatin1String("refused")) {
                // Accelerate refuses the name in get_max_memory; accel refuses it too, naming it.
                QString device;
                for (auto it = budgets.begin(); it != budgets.end(); ++it)
                    device = it.key() == QLatin1String("cpu") ? device : it.key();
                const QString error = want.value(QStringLiteral("error")).toString();
                const test::ProcessResult run = test::runAccel(
                    {QStringLiteral("device-map"), m_modelArg[c.value(QStringLiteral("model")).toString()],
                     QStringLiteral("--max_memory"), budgetSpec.join(QLatin1Char(',')), QStringLiteral("--strategy"),
                     c.value(QStringLiteral("strategy")).toString()});
                const bool theyRefuse =
                    error.startsWith(QStringLiteral("ValueError: Device %1 is not recognized").arg(device));
                const bool weRefuse = run.exitCode == 2 &&
                                      run.err.contains(QStringLiteral("device \"%1\" is not recognized").arg(device)) &&
                                      run.err.contains(QStringLiteral("integers")) &&
                                      run.err.contains(QStringLiteral("mps, cpu and disk"));
                if (theyRefuse && weRefuse)
                    ++perFamily[family].first;
                else
                    failures << QStringLiteral("%1: Accelerate: %2; accel exit %3: %4")
                                    .arg(name, error.isEmpty() ? QStringLiteral("accepted") : error)
                                    .arg(run.exitCode)
                                    .arg(run.err.trimmed());
                continue;
            }
            if (want.contains(QStringLiteral("error"))) {
                // Deliberate difference (docs/compatibility.md): with a sub-byte dtype module sizes
                // are fractional, and fallback_allocation hands the float size limit to
                // convert_file_size_to_int, which calls .upper() on it; Accel Studio plans these.
                const QString error = want.value(QStringLiteral("error")).toString();
                const QString dtype = c.value(QStringLiteral("dtype")).toString();
                if ((dtype == QLatin1String("int4") || dtype == QLatin1String("int2")) &&
                    c.value(QStringLiteral("fallback")).toBool() &&
                    error == QLatin1String("AttributeError: 'float' object has no attribute 'upper'")) {
                    ++raisedByAccelerate;
                    --perFamily[family].second;
                    qInfo("%s: Accelerate raised %s (fallback_allocation with %s, docs/compatibility.md)",
                          qPrintable(name), qPrintable(error), qPrintable(dtype));
                    continue;
                }
                failures << name + QStringLiteral(": Accelerate raised ") + error;
                continue;
            }
            if (!want.value(QStringLiteral("tensorless_keys")).toArray().isEmpty())
                ++withTensorlessKeys[family];
            QStringList args{QStringLiteral("device-map"),   m_modelArg[c.value(QStringLiteral("model")).toString()],
                             QStringLiteral("--max_memory"), budgetSpec.join(QLatin1Char(',')),
                             QStringLiteral("--strategy"),   c.value(QStringLiteral("strategy")).toString(),
                             QStringLiteral("--json")};
            if (c.value(QStringLiteral("no_split")).isArray()) {
                const QJsonArray classes = c.value(QStringLiteral("no_split")).toArray();
                args << QStringLiteral("--no_split");
                if (classes.isEmpty())
                    args << QStringLiteral("none");
                for (const QJsonValue &k : classes)
                    args << k.toString();
            }
            if (c.value(QStringLiteral("dtype")).isString())
                args << QStringLiteral("--dtype") << c.value(QStringLiteral("dtype")).toString();
            if (!c.value(QStringLiteral("clean")).toBool())
                args << QStringLiteral("--no_clean");
            if (c.value(QStringLiteral("fallback")).toBool())
                args << QStringLiteral("--fallback_allocation");
            if (c.value(QStringLiteral("offload_buffers")).toBool())
                args << QStringLiteral("--offload_buffers");
            if (const QJsonObject load = c.value(QStringLiteral("quantization")).toObject(); !load.isEmpty()) {
                args << QStringLiteral("--quantization") << load.value(QStringLiteral("method")).toString();
                auto list = [](const QJsonValue &v) {
                    QStringList names;
                    for (const QJsonValue &n : v.toArray())
                        names << n.toString();
                    return names.join(QLatin1Char(','));
                };
                if (load.contains(QStringLiteral("skip_modules")))
                    args << QStringLiteral("--skip_modules") << list(load.value(QStringLiteral("skip_modules")));
                if (load.contains(QStringLiteral("keep_in_fp32_modules")))
                    args << QStringLiteral("--keep_in_fp32_modules")
                         << list(load.value(QStringLiteral("keep_in_fp32_modules")));
            }
            const test::ProcessResult run = test::runAccel(args);
            if (run.exitCode != 0) {
                failures << name + QStringLiteral(": accel device-map exit %1: %2").arg(run.exitCode).arg(run.err);
                continue;
            }
            const QJsonObject ours = QJsonDocument::fromJson(run.out.toUtf8()).object();
            QStringList differences;
            std::map<QString, QJsonValue> ourMap;
            const QJsonObject map = ours.value(QStringLiteral("device_map")).toObject();
            for (auto it = map.begin(); it != map.end(); ++it)
                ourMap[it.key()] = deviceValue(it.value());
            const auto theirMap = pairsToMap(want.value(QStringLiteral("device_map")).toArray());
            if (ourMap != theirMap)
                differences << QStringLiteral("device map\n    ours:   %1\n    theirs: %2")
                                   .arg(describe(ourMap), describe(theirMap));
            compareDeviceBytes(ours, want, QStringLiteral("budgets"), &differences);
            if (!sameBytes(ours.value(QStringLiteral("total_bytes")), want.value(QStringLiteral("total_bytes"))))
                differences << QStringLiteral("total ours %1 theirs %2")
                                   .arg(ours.value(QStringLiteral("total_bytes")).toDouble())
                                   .arg(want.value(QStringLiteral("total_bytes")).toDouble());
            const QJsonObject ourLargest = ours.value(QStringLiteral("largest_layer")).toObject();
            const QJsonObject theirLargest = want.value(QStringLiteral("largest_layer")).toObject();
            if (!sameBytes(ourLargest.value(QStringLiteral("bytes")), theirLargest.value(QStringLiteral("bytes"))) ||
                ourLargest.value(QStringLiteral("names")) != theirLargest.value(QStringLiteral("names")))
                differences << QStringLiteral("largest layer ours %1 theirs %2")
                                   .arg(compact(ourLargest), compact(theirLargest));
            compareDeviceBytes(ours, want, QStringLiteral("per_device"), &differences);
            if (ours.value(QStringLiteral("no_split")) != want.value(QStringLiteral("no_split")))
                differences << QStringLiteral("no-split classes differ");
            bool ourWarning = false;
            for (const QJsonValue &w : ours.value(QStringLiteral("warnings")).toArray())
                ourWarning = ourWarning || w.toString().contains(QStringLiteral("buffers of the offloaded modules"));
            if (ourWarning != want.value(QStringLiteral("buffer_warning")).toBool())
                differences << QStringLiteral("offloaded-buffers warning ours %1 theirs %2")
                                   .arg(ourWarning)
                                   .arg(want.value(QStringLiteral("buffer_warning")).toBool());
            if (const QJsonObject load = c.value(QStringLiteral("quantization")).toObject();
                !load.isEmpty() && !c.value(QStringLiteral("dtype")).isString()) {
                // estimate-memory's quantized row holds the same bytes (the rest in float32, as the
                // float32 models here store it).
                QStringList estimate{QStringLiteral("estimate-memory"), args[1], QStringLiteral("--json")};
                estimate << args.mid(args.indexOf(QStringLiteral("--quantization")));
                const test::ProcessResult e = test::runAccel(estimate);
                const QJsonArray rows = QJsonDocument::fromJson(e.out.toUtf8()).object().value("rows").toArray();
                const QJsonObject last = rows.isEmpty() ? QJsonObject() : rows.last().toObject();
                if (e.exitCode != 0 || last.value(QStringLiteral("dtype")) != load.value(QStringLiteral("method")) ||
                    !sameBytes(last.value(QStringLiteral("weights_bytes")), want.value(QStringLiteral("total_bytes"))))
                    differences << QStringLiteral("estimate-memory %1 (exit %2): %3 weights bytes, theirs %4")
                                       .arg(estimate.mid(3).join(QLatin1Char(' ')))
                                       .arg(e.exitCode)
                                       .arg(last.value(QStringLiteral("weights_bytes")).toDouble())
                                       .arg(want.value(QStringLiteral("total_bytes")).toDouble());
            }
            if (differences.isEmpty())
                ++perFamily[family].first;
            else
                failures << name + QStringLiteral(" (") + args.mid(1).join(QLatin1Char(' ')) + QStringLiteral("): ") +
                                differences.join(QStringLiteral("; ")) + QStringLiteral("\n    config.json: ") +
                                configText(c.value(QStringLiteral("model")).toString());
        }
        for (const QString &f : std::as_const(failures))
            qWarning("%s", qPrintable(f));
        int agreed = 0, tried = 0;
        for (const QString &family : kFamilies + kPlannedFamilies +
                                         QStringList{QStringLiteral("checkpoints"), QStringLiteral("mps"),
                                                     QStringLiteral("quantized"), QStringLiteral("refused")}) {
            const auto [a, t] = perFamily[family];
            qInfo("compat device-map %-11s %2d agree of %2d tried (%d maps name a module without tensors)",
                  qPrintable(family), a, t, withTensorlessKeys[family]);
            agreed += a;
            tried += t;
        }
        // The checkpoint cases exist for the modules without tensors: some of their maps must name one.
        QVERIFY(withTensorlessKeys[QStringLiteral("checkpoints")] >= kFamilies.size());
        QCOMPARE(perFamily[QStringLiteral("refused")].second, int(kRefusedDevices.size()));
        QCOMPARE(perFamily[QStringLiteral("quantized")].second, kQuantizedCases);
        for (const QString &family : kPlannedFamilies)
            QCOMPARE(perFamily[family].second, kPlannedCasesPerFamily);
        qInfo("compat device-map total    %2d agree of %2d tried (+%d that Accelerate cannot plan, "
              "docs/compatibility.md)",
              agreed, tried, raisedByAccelerate);
        QVERIFY2(failures.isEmpty(), "the differences are listed above");
        QCOMPARE(agreed, tried);
    }

    void estimateMemoryEqualsAccelerate()
    {
        const QJsonObject models = m_oracle.value(QStringLiteral("models")).toObject();
        QCOMPARE(int(models.size()), int(m_modelDir.size()));
        int agreed = 0;
        QStringList failures;
        for (const auto &[name, dir] : m_modelDir) {
            const QJsonObject want = models.value(name).toObject();
            if (want.contains(QStringLiteral("error"))) {
                failures << name + QStringLiteral(": Accelerate raised ") +
                                want.value(QStringLiteral("error")).toString();
                continue;
            }
            const test::ProcessResult json =
                test::runAccel({QStringLiteral("estimate-memory"), dir, QStringLiteral("--json")});
            const test::ProcessResult text = test::runAccel({QStringLiteral("estimate-memory"), dir});
            if (json.exitCode != 0 || text.exitCode != 0) {
                failures << name + QStringLiteral(": accel estimate-memory failed: ") + json.err + text.err;
                continue;
            }
            QStringList differences;
            const QJsonArray ourRows =
                QJsonDocument::fromJson(json.out.toUtf8()).object().value(QStringLiteral("rows")).toArray();
            const QJsonArray theirRows = want.value(QStringLiteral("rows")).toArray();
            if (ourRows.size() != theirRows.size())
                differences << QStringLiteral("%1 rows, Accelerate %2").arg(ourRows.size()).arg(theirRows.size());
            for (int i = 0; i < std::min(ourRows.size(), theirRows.size()); ++i) {
                const QJsonObject o = ourRows[i].toObject(), t = theirRows[i].toObject();
                if (o.value(QStringLiteral("dtype")) != t.value(QStringLiteral("dtype")))
                    differences << QStringLiteral("row %1 dtype").arg(i);
                // Accelerate divides in floating point (a half byte shows as .5); ours rounds to bytes.
                for (const char *key : {"largest_layer_bytes", "total_bytes", "training_adam_bytes"}) {
                    const QJsonValue ov = o.value(QLatin1String(key)), tv = t.value(QLatin1String(key));
                    if (ov.isNull() != tv.isNull() || std::abs(ov.toDouble() - tv.toDouble()) > 0.5)
                        differences << QStringLiteral("%1 %2: ours %3 theirs %4")
                                           .arg(t.value(QStringLiteral("dtype")).toString(), QLatin1String(key))
                                           .arg(ov.toDouble(), 0, 'f', 1)
                                           .arg(tv.toDouble(), 0, 'f', 1);
                }
            }
            const QString table = want.value(QStringLiteral("table")).toString();
            if (!text.out.startsWith(table))
                differences << QStringLiteral("table\nours:\n%1\nAccelerate's:\n%2")
                                   .arg(text.out.left(table.size() + 200), table);
            if (differences.isEmpty())
                ++agreed;
            else
                failures << name + QStringLiteral(": ") + differences.join(QStringLiteral("; ")) +
                                QStringLiteral("\n    config.json: ") + configText(name);
        }
        for (const QString &f : std::as_const(failures))
            qWarning("%s", qPrintable(f));
        qInfo("compat estimate-memory: %d agree of %d tried (figures per dtype and the printed table)", agreed,
              int(m_modelDir.size()));
        QVERIFY2(failures.isEmpty(), "the differences are listed above");
        QCOMPARE(agreed, int(m_modelDir.size()));
    }
};

QTEST_GUILESS_MAIN(tst_DeviceMapCompat)
#include "tst_devicemapcompat.moc"
