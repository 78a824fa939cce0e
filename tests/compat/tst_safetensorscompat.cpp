// Safetensors files against the real `safetensors` package: what our writer writes (every dtype,
// __metadata__, scalars, empty tensors, odd names, every header padding, a sharded checkpoint with
// its index) loads in safetensors.torch / safetensors.numpy with the same bytes, dtypes, shapes and
// metadata, and re-saving it with safetensors gives the same file; what safetensors.torch.save_file,
// safetensors.numpy.save_file and huggingface_hub.save_torch_state_dict write loads in ours with
// the same bytes, dtypes, shapes, metadata and header length.
#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "tests/compat/oracle.h"

#include <QCryptographicHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <set>

using namespace accel;
using namespace accel::bigmodel;

namespace {

// One file as we wrote it: the tensors own their bytes.
struct Written {
    std::string file;
    Metadata metadata;
    std::vector<TensorToWrite> tensors;
    std::vector<std::string> storage;
};

void addTensor(Written &written, const std::string &name, DType dtype, std::vector<int64_t> shape, uint32_t seed)
{
    uint64_t elements = 1;
    for (int64_t d : shape)
        elements *= static_cast<uint64_t>(d);
    uint64_t size = 0;
    QVERIFY(byteSizeFor(elements, dtype, &size));
    std::string bytes(size, '\0');
    uint32_t state = seed * 2654435761u + 1;
    for (char &b : bytes) {
        state = state * 1664525u + 1013904223u;
        b = static_cast<char>(dtype == DType::Bool ? (state >> 31) : (state >> 24));
    }
    written.storage.push_back(std::move(bytes));
    written.tensors.push_back({name, dtype, std::move(shape), nullptr, size});
}

// Points the tensors at their storage once it no longer moves.
void bind(Written &written)
{
    for (size_t i = 0; i < written.tensors.size(); ++i)
        written.tensors[i].data = written.storage[i].data();
}

QString sha256(const void *data, uint64_t size)
{
    return QString::fromLatin1(
        QCryptographicHash::hash(QByteArrayView(static_cast<const char *>(data), qsizetype(size)),
                                 QCryptographicHash::Sha256)
            .toHex());
}

QJsonArray shapeJson(const std::vector<int64_t> &shape)
{
    QJsonArray array;
    for (int64_t d : shape)
        array.append(qint64(d));
    return array;
}

QJsonValue metadataJson(bool present, const std::map<std::string, std::string> &metadata)
{
    if (!present)
        return QJsonValue::Null;
    QJsonObject object;
    for (const auto &[key, value] : metadata)
        object.insert(QString::fromStdString(key), QString::fromStdString(value));
    return object;
}

// Cases that agree out of cases tried, with the first disagreements spelled out.
struct Tally {
    int tried = 0;
    int agreed = 0;
    QStringList problems;
    void check(bool ok, const QString &what)
    {
        ++tried;
        agreed += ok ? 1 : 0;
        if (!ok && problems.size() < 20)
            problems << what;
    }
};

// F6 types are in safetensors' header format but neither its torch nor numpy binding loads them.
bool loadableInSafetensors(DType dtype)
{
    return dtype != DType::F6_E2M3 && dtype != DType::F6_E3M2;
}

// One tensor as we wrote it against the oracle's report of it.
void compareWritten(Tally &tally, const QString &where, const TensorToWrite &t, const QJsonObject &entry)
{
    const QString who = where + QLatin1String(": ") + QString::fromStdString(t.name);
    if (entry.isEmpty()) {
        tally.check(false, who + QLatin1String(": safetensors does not list it"));
        return;
    }
    tally.check(entry.value(QStringLiteral("dtype")).toString() == QLatin1String(dtypeCode(t.dtype)),
                who + QLatin1String(": dtype ") + entry.value(QStringLiteral("dtype")).toString());
    tally.check(entry.value(QStringLiteral("shape")).toArray() == shapeJson(t.shape),
                who + QLatin1String(": shape ") +
                    QString::fromUtf8(QJsonDocument(entry.value(QStringLiteral("shape")).toArray()).toJson()));
    if (!loadableInSafetensors(t.dtype)) {
        tally.check(entry.contains(QStringLiteral("error")), who + QLatin1String(": F6 loaded, expected refusal"));
        return;
    }
    const QString hash = sha256(t.data, t.size);
    tally.check(entry.value(QStringLiteral("sha256")).toString() == hash,
                who + QLatin1String(": torch bytes differ ") + entry.value(QStringLiteral("error")).toString());
    const QJsonValue numpy = entry.value(QStringLiteral("numpy_sha256"));
    if (!numpy.isNull())
        tally.check(numpy.toString() == hash, who + QLatin1String(": numpy bytes differ"));
}

// A tensor read by our reader against what the oracle wrote.
void compareRead(Tally &tally, const QString &where, const TensorInfo *t, const QJsonObject &expected)
{
    if (!t) {
        tally.check(false, where + QLatin1String(": missing in ours"));
        return;
    }
    tally.check(QLatin1String(dtypeCode(t->dtype)) == expected.value(QStringLiteral("dtype")).toString(),
                where + QLatin1String(": dtype ") + QLatin1String(dtypeCode(t->dtype)));
    tally.check(shapeJson(t->shape) == expected.value(QStringLiteral("shape")).toArray(),
                where + QLatin1String(": shape differs"));
    tally.check(sha256(t->data, t->byteSize()) == expected.value(QStringLiteral("sha256")).toString(),
                where + QLatin1String(": bytes differ"));
}

QJsonObject runOracle(const QString &python, const QStringList &arguments)
{
    const test::ProcessResult run = test::runProgram(
        python, QStringList{test::compatScript(QStringLiteral("safetensors_oracle.py"))} + arguments, 300000);
    if (run.exitCode != 0)
        qWarning().noquote() << "oracle" << arguments.value(0) << "failed:" << run.err.right(3000);
    return QJsonDocument::fromJson(run.out.toUtf8()).object();
}

void report(const char *what, const Tally &tally)
{
    qInfo("%s: %d / %d cases agree", what, tally.agreed, tally.tried);
    for (const QString &problem : tally.problems)
        qWarning().noquote() << problem;
}

} // namespace

class tst_SafetensorsCompat : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void oursLoadInSafetensors()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("safetensors"), QStringLiteral("torch"), QStringLiteral("numpy"));
        QTemporaryDir dir;
        const std::string folder = dir.path().toStdString();
        std::vector<Written> files(5 + 8);
        files[0] = {folder + "/dtypes.safetensors",
                    {{"format", "pt"}, {"note", "ünïcode ✓ \"quoted\"\nnew line"}, {"empty", ""}, {"z", "last"}},
                    {},
                    {}};
        uint32_t seed = 1;
        for (const std::string &code : allDTypeCodes()) {
            const DType dtype = *parseDTypeCode(code);
            if (loadableInSafetensors(dtype))
                addTensor(files[0], "w." + code, dtype, {3, 4}, seed++);
        }
        files[1] = {folder + "/f6.safetensors", {{"format", "pt"}}, {}, {}};
        addTensor(files[1], "w.f6_e2m3", DType::F6_E2M3, {4, 4}, seed++);
        addTensor(files[1], "w.f6_e3m2", DType::F6_E3M2, {2, 4}, seed++);
        files[2] = {folder + "/scalars_empty.safetensors", {}, {}, {}};
        for (DType dtype : {DType::F32, DType::BF16, DType::I64, DType::Bool, DType::F8_E4M3, DType::F64})
            addTensor(files[2], std::string("scalar.") + dtypeCode(dtype), dtype, {}, seed++);
        addTensor(files[2], "empty.f32", DType::F32, {0}, seed++);
        addTensor(files[2], "empty.f16", DType::F16, {3, 0, 2}, seed++);
        addTensor(files[2], "empty.bool", DType::Bool, {0, 4}, seed++);
        addTensor(files[2], "empty.i8", DType::I8, {0}, seed++);
        files[3] = {folder + "/names.safetensors", {{"format", "pt"}}, {}, {}};
        const std::string names[] = {"model.layers.0.self_attn.q_proj.weight",
                                     "ünïcode.名字",
                                     "with space",
                                     "quote\"and\\backslash",
                                     std::string(300, 'x'),
                                     "a"};
        for (const std::string &name : names)
            addTensor(files[3], name, DType::F16, {int64_t(seed % 3 + 1), 2}, seed++);
        files[4] = {folder + "/one_key.safetensors", {{"format", "pt"}}, {}, {}};
        addTensor(files[4], "bf16", DType::BF16, {5, 3}, seed++);
        addTensor(files[4], "i32", DType::I32, {7}, seed++);
        for (int pad = 0; pad < 8; ++pad) {
            Written &w = files[size_t(5 + pad)];
            w = {folder + "/padding" + std::to_string(pad) + ".safetensors", {{"format", "pt"}}, {}, {}};
            addTensor(w, std::string(size_t(pad + 1), 't'), DType::F32, {2}, seed++);
        }
        QStringList paths;
        for (Written &w : files) {
            bind(w);
            auto ok = writeSafetensors(w.file, w.tensors, w.metadata);
            QVERIFY2(ok, ok ? "" : ok.error().toString().c_str());
            paths << QString::fromStdString(w.file);
        }

        const QJsonObject oracle = runOracle(python, QStringList{QStringLiteral("read")} + paths);
        const QJsonArray read = oracle.value(QStringLiteral("files")).toArray();
        QCOMPARE(read.size(), qsizetype(files.size()));
        Tally tally;
        std::set<int> paddings;
        for (size_t i = 0; i < files.size(); ++i) {
            const Written &w = files[i];
            const QJsonObject result = read[qsizetype(i)].toObject();
            const QString where = QFileInfo(paths[qsizetype(i)]).fileName();
            const QJsonObject tensors = result.value(QStringLiteral("tensors")).toObject();
            tally.check(tensors.size() == qsizetype(w.tensors.size()), where + QLatin1String(": tensor count"));
            for (const TensorToWrite &t : w.tensors)
                compareWritten(tally, where, t, tensors.value(QString::fromStdString(t.name)).toObject());
            tally.check(result.value(QStringLiteral("metadata")) == metadataJson(!w.metadata.empty(), w.metadata),
                        where + QLatin1String(": metadata differs"));
            paddings.insert(result.value(QStringLiteral("padding")).toInt());
            // Re-saved by safetensors.torch.save: the same bytes; only the order of several metadata
            // keys may differ (the reference keeps them in a hash map, docs/compatibility.md).
            const QString resaved = result.value(QStringLiteral("resaved")).toString();
            if (i != 1)
                tally.check(resaved == QLatin1String("identical") ||
                                (w.metadata.size() > 1 && resaved == QLatin1String("metadata order")),
                            where + QLatin1String(": re-saved by safetensors: ") + resaved);
        }
        tally.check(paddings.size() == 8, QStringLiteral("header paddings seen: %1 of 0..7").arg(paddings.size()));

        // A sharded checkpoint as transformers loads it: the index, then every shard.
        Written sharded{folder + "/sharded", {{"format", "pt"}}, {}, {}};
        for (int layer = 0; layer < 7; ++layer)
            addTensor(sharded, "layers." + std::to_string(layer) + ".weight", layer % 2 ? DType::BF16 : DType::F32,
                      {16, 8}, seed++);
        addTensor(sharded, "embed.weight", DType::F16, {32, 8}, seed++);
        bind(sharded);
        QVERIFY(QDir().mkpath(QString::fromStdString(sharded.file)));
        auto write = writeShardedSafetensors(sharded.file, sharded.tensors, 1024);
        QVERIFY2(write, write ? "" : write.error().toString().c_str());
        QVERIFY(write->files.size() > 2);
        const QJsonObject index =
            runOracle(python, {QStringLiteral("index"), QString::fromStdString(sharded.file + "/" + write->indexFile)});
        tally.check(
            index.value(QStringLiteral("problems")).toArray().isEmpty() &&
                !index.value(QStringLiteral("tensors")).toObject().isEmpty(),
            QStringLiteral("sharded: index and shards disagree: %1")
                .arg(QString::fromUtf8(QJsonDocument(index.value(QStringLiteral("problems")).toArray()).toJson())));
        tally.check(index.value(QStringLiteral("metadata"))[QStringLiteral("total_size")].toInteger() ==
                        qint64(write->totalSize),
                    QStringLiteral("sharded: total_size"));
        const auto plan = planShards(sharded.tensors, 1024);
        for (size_t s = 0; s < plan.size(); ++s) {
            for (size_t t : plan[s]) {
                const QString name = QString::fromStdString(sharded.tensors[t].name);
                const QJsonObject entry = index.value(QStringLiteral("tensors"))[name].toObject();
                compareWritten(tally, QStringLiteral("sharded"), sharded.tensors[t], entry);
                tally.check(
                    entry.value(QStringLiteral("shard")).toString() == QString::fromStdString(write->files[s]),
                    QStringLiteral("sharded: %1 in %2").arg(name, entry.value(QStringLiteral("shard")).toString()));
            }
        }
        report("files we write, loaded by safetensors", tally);
        QCOMPARE(tally.agreed, tally.tried);
    }

    void safetensorsFilesLoadInOurs()
    {
        ACCEL_REQUIRE_ORACLE(python, QStringLiteral("safetensors"), QStringLiteral("torch"), QStringLiteral("numpy"),
                             QStringLiteral("huggingface_hub"));
        QTemporaryDir dir;
        const QJsonObject oracle = runOracle(python, {QStringLiteral("write"), dir.path()});
        const QJsonArray files = oracle.value(QStringLiteral("files")).toArray();
        QVERIFY(files.size() >= 12);
        Tally tally;
        std::set<int> paddings;
        std::set<QString> dtypes;
        for (const QJsonValue &value : files) {
            const QJsonObject file = value.toObject();
            const QString path = file.value(QStringLiteral("path")).toString();
            const QString where = QFileInfo(path).fileName();
            auto opened = SafetensorsFile::open(path.toStdString());
            tally.check(bool(opened),
                        where + QLatin1String(": ") + QString::fromStdString(opened ? "" : opened.error().toString()));
            if (!opened)
                continue;
            const SafetensorsFile &ours = **opened;
            tally.check(qint64(ours.header().headerSize) == file.value(QStringLiteral("header_size")).toInteger(),
                        where + QLatin1String(": header size"));
            tally.check(metadataJson(ours.header().hasMetadata, ours.metadata()) ==
                            file.value(QStringLiteral("metadata")),
                        where + QLatin1String(": metadata differs"));
            paddings.insert(file.value(QStringLiteral("padding")).toInt());
            const QJsonObject tensors = file.value(QStringLiteral("tensors")).toObject();
            tally.check(ours.tensors().size() == size_t(tensors.size()), where + QLatin1String(": tensor count"));
            for (auto it = tensors.begin(); it != tensors.end(); ++it) {
                compareRead(tally, where + QLatin1String(": ") + it.key(), ours.find(it.key().toStdString()),
                            it.value().toObject());
                dtypes.insert(it.value()[QStringLiteral("dtype")].toString());
            }
        }
        tally.check(paddings.size() == 8, QStringLiteral("header paddings seen: %1 of 0..7").arg(paddings.size()));

        const QJsonObject sharded = oracle.value(QStringLiteral("sharded")).toObject();
        auto checkpoint = Checkpoint::open(sharded.value(QStringLiteral("folder")).toString().toStdString());
        QVERIFY2(checkpoint, checkpoint ? "" : checkpoint.error().toString().c_str());
        tally.check(checkpoint->isSharded() && checkpoint->shards().size() > 2, QStringLiteral("sharded: shards"));
        const QJsonObject expected = sharded.value(QStringLiteral("tensors")).toObject();
        tally.check(checkpoint->tensors().size() == size_t(expected.size()), QStringLiteral("sharded: tensor count"));
        for (auto it = expected.begin(); it != expected.end(); ++it)
            compareRead(tally, QLatin1String("sharded: ") + it.key(), checkpoint->find(it.key().toStdString()),
                        it.value().toObject());
        QStringList seen(dtypes.begin(), dtypes.end());
        qInfo("dtypes written by safetensors: %s", qPrintable(seen.join(QLatin1Char(' '))));
        report("files safetensors writes, loaded by ours", tally);
        QCOMPARE(tally.agreed, tally.tried);
    }
};

QTEST_GUILESS_MAIN(tst_SafetensorsCompat)
#include "tst_safetensorscompat.moc"
