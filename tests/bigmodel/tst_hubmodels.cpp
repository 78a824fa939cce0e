// Hub model ids in the planning commands (core/bigmodel/hubmodel.h, docs/device-map.md), through the
// real accel binary against a Hub served on loopback by this test (tests/bigmodel/hub_server.py, the
// Hub's URL layout: /ORG/NAME/resolve/REVISION/FILE, range requests, X-Repo-Commit, the Hub's error
// codes, a gated model that wants a bearer token and whose shards redirect to a storage host that
// must not see it). `accel estimate-memory ORG/NAME` and
// `accel device-map ORG/NAME` give the figures of the same model's local folder: from the Hub
// (config.json, the index and the shards' headers, through range requests only), and from a cache
// the real huggingface_hub populated (HF_HUB_CACHE, HF_HOME, refs/main, a commit revision) with
// HF_HUB_OFFLINE set. A header longer than the first range is read with a second one. Offline, a
// model the cache lacks is an error naming the cache folder.
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "tests/helpers/testsupport.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <filesystem>

using namespace accel;
using namespace accel::bigmodel;

namespace {

const char *kTinyLlama = R"({"model_type":"llama","hidden_size":16,"intermediate_size":32,"num_attention_heads":2,
  "num_key_value_heads":1,"num_hidden_layers":4,"vocab_size":64,"max_position_embeddings":128,"torch_dtype":"float32"})";

const char *kCommit = "0123456789abcdef0123456789abcdef01234567";

nlohmann::json parseJson(const QString &text)
{
    return nlohmann::json::parse(text.toStdString(), nullptr, false);
}

// The command's JSON without the model's name (the folder's, or the id).
nlohmann::json withoutName(nlohmann::json j)
{
    if (j.is_object())
        j.erase("model");
    return j;
}

} // namespace

class tst_HubModels : public QObject {
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_folder; // the model's local folder
    QProcess m_hub;
    QString m_endpoint;
    QString m_log;
    nlohmann::json m_estimate; // of the local folder
    nlohmann::json m_deviceMap;

    QStringList hubEnvironment(const QString &cache) const
    {
        // No token from the user's own Hugging Face home, no proxy between accel and loopback.
        return {QStringLiteral("HF_ENDPOINT=") + m_endpoint,
                QStringLiteral("HF_HUB_CACHE=") + cache,
                QStringLiteral("HF_HOME=") + m_dir.filePath(QStringLiteral("no-home")),
                QStringLiteral("HF_TOKEN="),
                QStringLiteral("HF_TOKEN_PATH="),
                QStringLiteral("HF_HUB_OFFLINE="),
                QStringLiteral("NO_PROXY=127.0.0.1,localhost"),
                QStringLiteral("no_proxy=127.0.0.1,localhost")};
    }

    QList<nlohmann::json> requests() const
    {
        QList<nlohmann::json> list;
        QFile file(m_log);
        if (file.open(QIODevice::ReadOnly)) {
            for (const QByteArray &line : file.readAll().split('\n')) {
                if (!line.isEmpty())
                    list << nlohmann::json::parse(line.toStdString());
            }
        }
        return list;
    }

    static QStringList deviceMapArguments(const QString &model)
    {
        return {QStringLiteral("device-map"), model, QStringLiteral("--max_memory"), QStringLiteral("0=20KB,cpu=1GB"),
                QStringLiteral("--json")};
    }

private Q_SLOTS:
    void initTestCase()
    {
        if (QStandardPaths::findExecutable(QStringLiteral("python3")).isEmpty())
            QSKIP("python3 is not installed (the test's Hub server)");
        // A tiny Llama in two shards, plus a tensor config.json does not know: planned from the
        // config alone it would have fewer parameters, so equal figures mean the headers were read.
        m_folder = m_dir.filePath(QStringLiteral("hub/org/tiny"));
        const std::string folder = m_folder.toStdString();
        std::filesystem::create_directories(folder);
        auto config = parseModelConfig(kTinyLlama, "config.json");
        QVERIFY(config);
        static std::string zeros(1 << 16, '\0');
        std::vector<TensorToWrite> tensors;
        const ModelStructure structure = buildModelStructure(*config);
        for (const ModelTensor &t : structure.tensors()) {
            if (!t.buffer)
                tensors.push_back({t.name, t.dtype, t.shape, zeros.data(), t.elements * 4});
        }
        tensors.push_back({"model.extra.weight", DType::F32, {100}, zeros.data(), 400});
        QVERIFY(writeShardedSafetensors(folder, tensors, 12000));
        QVERIFY(fileutil::writeFileAtomic(folder + "/config.json", kTinyLlama));
        // The same model again as a gated one.
        QVERIFY(QDir().mkpath(m_dir.filePath(QStringLiteral("hub/org/gated"))));
        for (const QString &name : QDir(m_folder).entryList(QDir::Files))
            QVERIFY(QFile::copy(m_folder + QLatin1Char('/') + name,
                                m_dir.filePath(QStringLiteral("hub/org/gated/")) + name));

        auto estimate = test::runAccel({QStringLiteral("estimate-memory"), m_folder, QStringLiteral("--json")});
        QCOMPARE(estimate.exitCode, 0);
        m_estimate = withoutName(parseJson(estimate.out));
        const auto configOnly = test::runAccel(
            {QStringLiteral("estimate-memory"), m_folder + QStringLiteral("/config.json"), QStringLiteral("--json")});
        QVERIFY(withoutName(parseJson(configOnly.out)) != m_estimate);
        auto map = test::runAccel(deviceMapArguments(m_folder));
        QVERIFY2(map.exitCode == 0, qPrintable(map.err));
        m_deviceMap = withoutName(parseJson(map.out));

        m_log = m_dir.filePath(QStringLiteral("requests.jsonl"));
        const QString portFile = m_dir.filePath(QStringLiteral("port"));
        test::killWithTest(m_hub);
        m_hub.start(QStringLiteral("python3"),
                    {QDir(test::sourceDir()).filePath(QStringLiteral("tests/bigmodel/hub_server.py")),
                     m_dir.filePath(QStringLiteral("hub")), QString::fromLatin1(kCommit), m_log, portFile,
                     QStringLiteral("org/gated"), QStringLiteral("hf_secret_test_token")});
        QVERIFY(m_hub.waitForStarted());
        QTRY_VERIFY_WITH_TIMEOUT(QFile::exists(portFile), 10000);
        QFile port(portFile);
        QVERIFY(port.open(QIODevice::ReadOnly));
        m_endpoint = QStringLiteral("http://127.0.0.1:") + QString::fromLatin1(port.readAll()).trimmed();
    }

    void cleanupTestCase()
    {
        m_hub.kill();
        m_hub.waitForFinished();
    }

    void fromTheHubOnlyHeadersAreFetched()
    {
        const QString cache = m_dir.filePath(QStringLiteral("empty-cache"));
        QFile::remove(m_log);
        const auto estimate =
            test::runAccel({QStringLiteral("estimate-memory"), QStringLiteral("org/tiny"), QStringLiteral("--json")},
                           60000, {}, hubEnvironment(cache));
        QVERIFY2(estimate.exitCode == 0, qPrintable(estimate.err));
        const nlohmann::json got = parseJson(estimate.out);
        QCOMPARE(got["model"].get<std::string>(), std::string("org/tiny"));
        QVERIFY2(withoutName(got) == m_estimate, qPrintable(estimate.out));

        // config.json, model.safetensors (absent), the index, and each shard's header by range:
        // never a whole shard.
        QStringList files;
        for (const nlohmann::json &request : requests()) {
            const QString path = QString::fromStdString(request["path"].get<std::string>());
            files << path.section(QLatin1Char('/'), 5);
            if (path.endsWith(QLatin1String(".safetensors"))) {
                QVERIFY2(request["range"].is_string(), qPrintable(path));
                const QString range = QString::fromStdString(request["range"].get<std::string>());
                QVERIFY2(range.startsWith(QLatin1String("bytes=0-")) || range.startsWith(QLatin1String("bytes=")),
                         qPrintable(range));
                QVERIFY(range.section(QLatin1Char('-'), 1).toULongLong() < 65536);
            }
        }
        QStringList wanted{QStringLiteral("config.json"), QStringLiteral("model.safetensors.index.json")};
        wanted << QDir(m_folder).entryList({QStringLiteral("model-*.safetensors")}, QDir::Files);
        QVERIFY(wanted.size() >= 4); // sharded
        for (const QString &file : wanted)
            QVERIFY2(files.contains(file),
                     qPrintable(file + QStringLiteral(" not asked for: ") + files.join(QLatin1Char(' '))));
        QVERIFY(!QDir(cache).exists()); // nothing written to the cache

        const auto map =
            test::runAccel(deviceMapArguments(QStringLiteral("org/tiny")), 60000, {}, hubEnvironment(cache));
        QVERIFY2(map.exitCode == 0, qPrintable(map.err));
        QVERIFY2(withoutName(parseJson(map.out)) == m_deviceMap, qPrintable(map.out));
    }

    // One file whose header is longer than the first range asked for (64 KiB), without config.json:
    // the rest of the header is a second range request, and the figures are the local file's.
    void aLongHeaderTakesASecondRange()
    {
        const std::string folder = m_dir.filePath(QStringLiteral("hub/org/wide")).toStdString();
        std::filesystem::create_directories(folder);
        static const float value = 0;
        std::vector<TensorToWrite> tensors;
        for (int i = 0; i < 1200; ++i)
            tensors.push_back({"model.layers." + std::to_string(i) + ".a_name_long_enough_to_fill_the_header.weight",
                               DType::F32,
                               {1},
                               &value,
                               4});
        QVERIFY(writeSafetensors(folder + "/model.safetensors", tensors));
        const auto header = readSafetensorsHeader(folder + "/model.safetensors");
        QVERIFY(header);
        const uint64_t headerEnd = 8 + header->headerSize;
        QVERIFY(headerEnd > 65536);

        const auto local = test::runAccel(
            {QStringLiteral("estimate-memory"), QString::fromStdString(folder), QStringLiteral("--json")});
        QVERIFY2(local.exitCode == 0, qPrintable(local.err));
        QFile::remove(m_log);
        const auto remote =
            test::runAccel({QStringLiteral("estimate-memory"), QStringLiteral("org/wide"), QStringLiteral("--json")},
                           60000, {}, hubEnvironment(m_dir.filePath(QStringLiteral("empty-cache"))));
        QVERIFY2(remote.exitCode == 0, qPrintable(remote.err));
        QVERIFY2(withoutName(parseJson(remote.out)) == withoutName(parseJson(local.out)), qPrintable(remote.out));
        QStringList ranges;
        for (const nlohmann::json &request : requests()) {
            if (request["path"].get<std::string>().find("model.safetensors") != std::string::npos)
                ranges << QString::fromStdString(request["range"].get<std::string>());
        }
        QCOMPARE(ranges,
                 (QStringList{QStringLiteral("bytes=0-65535"), QStringLiteral("bytes=65536-%1").arg(headerEnd - 1)}));
    }

    void aGatedModelWantsTheToken()
    {
        const QString cache = m_dir.filePath(QStringLiteral("empty-cache"));
        const QStringList arguments{QStringLiteral("estimate-memory"), QStringLiteral("org/gated"),
                                    QStringLiteral("--json")};
        auto refused = test::runAccel(arguments, 60000, {}, hubEnvironment(cache));
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains(QStringLiteral("org/gated is a gated model")) &&
                     refused.err.contains(QStringLiteral("HTTP 401")) &&
                     refused.err.contains(QStringLiteral("HF_TOKEN")),
                 qPrintable(refused.err));

        QStringList withToken = hubEnvironment(cache);
        withToken << QStringLiteral("HF_TOKEN=hf_secret_test_token");
        QFile::remove(m_log);
        auto allowed = test::runAccel(arguments, 60000, {}, withToken);
        QVERIFY2(allowed.exitCode == 0, qPrintable(allowed.err));
        QVERIFY(withoutName(parseJson(allowed.out)) == m_estimate);
        // The token goes to the Hub, never to the storage host (another host name) its shards
        // redirect to.
        int toStorage = 0;
        for (const nlohmann::json &request : requests()) {
            const std::string path = request["path"].get<std::string>();
            if (path.rfind("/_storage/", 0) == 0) {
                ++toStorage;
                QVERIFY2(request["auth"].is_null(), path.c_str());
            } else {
                QVERIFY2(request["auth"] == "Bearer hf_secret_test_token", path.c_str());
            }
        }
        QVERIFY(toStorage >= 3);

        // The token file huggingface_hub writes ($HF_HOME/token) when HF_TOKEN is not set.
        const QString home = m_dir.filePath(QStringLiteral("hf-home"));
        QVERIFY(QDir().mkpath(home));
        QVERIFY(fileutil::writeFileAtomic((home + QStringLiteral("/token")).toStdString(), "hf_secret_test_token\n"));
        QStringList withFile = hubEnvironment(cache);
        withFile << QStringLiteral("HF_HOME=") + home;
        allowed = test::runAccel(arguments, 60000, {}, withFile);
        QVERIFY2(allowed.exitCode == 0, qPrintable(allowed.err));

        const auto missing = test::runAccel({QStringLiteral("estimate-memory"), QStringLiteral("org/nothing")}, 60000,
                                            {}, hubEnvironment(cache));
        QCOMPARE(missing.exitCode, 2);
        // A mistyped local path reads as an id as well: the error says it is no file or folder either.
        QVERIFY2(missing.err.contains(QStringLiteral("no model org/nothing on ") + m_endpoint) &&
                     missing.err.contains(QStringLiteral("nor is there a file or folder org/nothing here")),
                 qPrintable(missing.err));
    }

    // The cache as the real huggingface_hub fills it (blobs, snapshots/<commit> links, refs/main),
    // read with HF_HUB_OFFLINE set: the same figures, and the Hub is not asked.
    void fromACachePopulatedByHuggingfaceHub()
    {
        const QString python = qEnvironmentVariable("ACCEL_PYTHON");
        if (python.isEmpty() || !QFileInfo(python).isExecutable())
            QSKIP("ACCEL_PYTHON (the project's Python environment) is not there: run packaging/install-deps.sh");
        const QString home = m_dir.filePath(QStringLiteral("populated-home"));
        const auto download = test::runProgram(
            python,
            {QStringLiteral("-c"),
             QStringLiteral("import json\n"
                            "from huggingface_hub import hf_hub_download\n"
                            "hf_hub_download('org/tiny', 'config.json')\n"
                            "index = json.load(open(hf_hub_download('org/tiny', 'model.safetensors.index.json')))\n"
                            "for name in sorted(set(index['weight_map'].values())):\n"
                            "    hf_hub_download('org/tiny', name)\n")},
            120000, {},
            {QStringLiteral("HF_ENDPOINT=") + m_endpoint, QStringLiteral("HF_HOME=") + home,
             QStringLiteral("HF_HUB_DISABLE_XET=1")});
        QVERIFY2(download.exitCode == 0, qPrintable(download.err));
        const QString repo = home + QStringLiteral("/hub/models--org--tiny");
        QVERIFY(QFile::exists(repo + QStringLiteral("/refs/main")));
        QVERIFY(
            QFileInfo(repo + QStringLiteral("/snapshots/") + QLatin1String(kCommit) + QStringLiteral("/config.json"))
                .isSymLink());

        QFile::remove(m_log);
        for (const QString &id : {QStringLiteral("org/tiny"), QStringLiteral("org/tiny@") + QLatin1String(kCommit)}) {
            // $HF_HOME/hub, and HF_HUB_CACHE naming the same folder.
            for (const QStringList &environment :
                 {QStringList{QStringLiteral("HF_HOME=") + home, QStringLiteral("HF_HUB_CACHE=")},
                  QStringList{QStringLiteral("HF_HOME="),
                              QStringLiteral("HF_HUB_CACHE=") + home + QStringLiteral("/hub")}}) {
                QStringList env = environment;
                env << QStringLiteral("HF_HUB_OFFLINE=1") << QStringLiteral("HF_ENDPOINT=") + m_endpoint;
                const auto estimate =
                    test::runAccel({QStringLiteral("estimate-memory"), id, QStringLiteral("--json")}, 60000, {}, env);
                QVERIFY2(estimate.exitCode == 0, qPrintable(id + QLatin1Char(' ') + estimate.err));
                QVERIFY2(withoutName(parseJson(estimate.out)) == m_estimate, qPrintable(estimate.out));
            }
        }
        const QStringList offline{QStringLiteral("HF_HOME=") + home, QStringLiteral("HF_HUB_CACHE="),
                                  QStringLiteral("HF_HUB_OFFLINE=1"), QStringLiteral("HF_ENDPOINT=") + m_endpoint};
        const auto map = test::runAccel(deviceMapArguments(QStringLiteral("org/tiny")), 60000, {}, offline);
        QVERIFY2(map.exitCode == 0, qPrintable(map.err));
        QVERIFY(withoutName(parseJson(map.out)) == m_deviceMap);
        QVERIFY(requests().isEmpty()); // read from the cache only

        // Offline, what the cache lacks is an error naming the cache folder; a revision it has no
        // ref for too.
        auto missing =
            test::runAccel({QStringLiteral("estimate-memory"), QStringLiteral("org/other")}, 60000, {}, offline);
        QCOMPARE(missing.exitCode, 2);
        QVERIFY2(missing.err.contains(home + QStringLiteral("/hub/models--org--other")) &&
                     missing.err.contains(QStringLiteral("HF_HUB_OFFLINE")),
                 qPrintable(missing.err));
        missing =
            test::runAccel({QStringLiteral("estimate-memory"), QStringLiteral("org/tiny@v2")}, 60000, {}, offline);
        QCOMPARE(missing.exitCode, 2);
        QVERIFY(requests().isEmpty());
    }

    void pathsAndFileNamesAreNotHubIds()
    {
        // A missing path or file name is still "no such file or folder", never a Hub request.
        QFile::remove(m_log);
        for (const QString &path : {QStringLiteral("./missing"), QStringLiteral("/nowhere/model"),
                                    QStringLiteral("model.safetensors"), QStringLiteral("config.json")}) {
            const auto result = test::runAccel({QStringLiteral("estimate-memory"), path}, 60000, {},
                                               hubEnvironment(m_dir.filePath(QStringLiteral("empty-cache"))));
            QCOMPARE(result.exitCode, 2);
            QVERIFY2(result.err.contains(QStringLiteral("no such file or folder")), qPrintable(result.err));
        }
        QVERIFY(requests().isEmpty());
    }
};

QTEST_GUILESS_MAIN(tst_HubModels)
#include "tst_hubmodels.moc"
