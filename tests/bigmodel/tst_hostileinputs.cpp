// Checkpoints, indexes and config.json files written to hurt: deeply nested JSON, 40,000 tensors,
// FIFOs in place of files, shards outside the model folder, absurd layer counts. Each is refused
// with an error naming the file (or parsed in linear time), never a crash, hang or huge allocation.
#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"
#include "tests/bigmodel/generatedheaders.h"

#include <QTemporaryDir>
#include <QtTest>

#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <future>
#include <sys/stat.h>
#include <unistd.h>

using namespace accel;
using namespace accel::bigmodel;
namespace fs = std::filesystem;

namespace {

std::string deepArray(size_t depth)
{
    return std::string(depth, '[') + "1" + std::string(depth, ']');
}

// Runs `read` on another thread and fails (rather than hangs) when it does not return in time;
// `fifo` is opened for writing then, which releases a reader blocked on it.
template <typename Read>
auto withinDeadline(const std::string &fifo, Read read) -> std::optional<decltype(read())>
{
    auto running = std::async(std::launch::async, read);
    if (running.wait_for(std::chrono::seconds(20)) == std::future_status::ready)
        return running.get();
    const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0)
        ::close(writer);
    return std::nullopt;
}

} // namespace

class tst_HostileInputs : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const std::string &name) const { return m_dir.path().toStdString() + "/" + name; }

    std::string writeOneTensorFile(const std::string &file, const std::string &tensor = "w")
    {
        float values[2] = {1, 2};
        fs::create_directories(fs::path(file).parent_path());
        return writeSafetensors(file, {{tensor, DType::F32, {2}, values, 8}}) ? file : std::string();
    }

private Q_SLOTS:
    void deeplyNestedHeaderValuesAreRefused_data()
    {
        QTest::addColumn<QString>("header");
        const std::string deep = deepArray(100000);
        QTest::newRow("shape") << QString::fromStdString(R"({"w":{"dtype":"F32","shape":)" + deep +
                                                         R"(,"data_offsets":[0,8]}})");
        QTest::newRow("data_offsets") << QString::fromStdString(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":)" +
                                                                deep + "}}");
        QTest::newRow("metadata") << QString::fromStdString(R"({"__metadata__":{"format":)" + deep + "}}");
        QTest::newRow("dtype") << QString::fromStdString(R"({"w":{"dtype":)" + deep + "}}");
    }

    void deeplyNestedHeaderValuesAreRefused()
    {
        QFETCH(QString, header);
        const std::string file = path("deep.safetensors");
        QVERIFY(fileutil::writeFileAtomic(file, test::safetensorsBytes(header.toStdString(), std::string(8, '\0'))));
        auto opened = SafetensorsFile::open(file);
        QVERIFY(!opened);
        QCOMPARE(opened.error().toString(), file + ": header nested deeper than 64 levels");
        QCOMPARE(readSafetensorsHeader(file).error().toString(), opened.error().toString());
    }

    void headerWith40000TensorsParsesInOnePass()
    {
        // Took 17-30 s when the duplicate-key check rescanned the header object at every entry;
        // now one pass (timing: bench_bigmodel's header40000Tensors).
        constexpr int count = 40000;
        const std::string bytes = test::manyTensorsFile(count);
        auto parsed = parseSafetensors(reinterpret_cast<const std::byte *>(bytes.data()), bytes.size(), bytes.size(),
                                       "many.safetensors");
        QVERIFY2(parsed, parsed ? "" : parsed.error().toString().c_str());
        QCOMPARE(parsed->tensors.size(), size_t(count));
        QCOMPARE(parsed->tensors.back().name, std::string("model.layers.39999.weight"));
        QCOMPARE(parsed->tensors.back().end, uint64_t(4 * count));
    }

    void fifoInPlaceOfCheckpointFileDoesNotBlock()
    {
        const std::string fifo = path("fifo/model.safetensors");
        fs::create_directories(path("fifo"));
        QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
        const std::string expected = fifo + ": is a FIFO (named pipe), expected a regular file";
        auto mapped = withinDeadline(fifo, [&] { return SafetensorsFile::open(fifo); });
        QVERIFY2(mapped, "SafetensorsFile::open blocked on a FIFO");
        QCOMPARE(mapped->error().toString(), expected);
        auto headerOnly = withinDeadline(fifo, [&] { return readSafetensorsHeader(fifo); });
        QVERIFY2(headerOnly, "readSafetensorsHeader blocked on a FIFO");
        QCOMPARE(headerOnly->error().toString(), expected);
        auto folder = withinDeadline(fifo, [&] { return Checkpoint::open(path("fifo")); });
        QVERIFY2(folder, "Checkpoint::open blocked on a folder's FIFO");
        QCOMPARE(folder->error().toString(), expected);
        // An index naming a FIFO shard.
        QVERIFY(fileutil::writeFileAtomic(path("fifo/model.safetensors.index.json"),
                                          R"({"weight_map":{"w":"model.safetensors"}})"));
        auto sharded =
            withinDeadline(fifo, [&] { return Checkpoint::open(path("fifo/model.safetensors.index.json")); });
        QVERIFY2(sharded, "Checkpoint::open blocked on a FIFO shard");
        QCOMPARE(sharded->error().toString(), expected);
    }

    void indexMetadataNestedDeeplyIsRefused()
    {
        const std::string folder = path("deepindex");
        QVERIFY(!writeOneTensorFile(folder + "/model-00001-of-00001.safetensors").empty());
        const std::string index = folder + "/model.safetensors.index.json";
        QVERIFY(fileutil::writeFileAtomic(index, R"({"metadata":{"total_size":)" + deepArray(100000) +
                                                     R"(},"weight_map":{"w":"model-00001-of-00001.safetensors"}})"));
        auto checkpoint = Checkpoint::open(folder);
        QVERIFY(!checkpoint);
        QCOMPARE(checkpoint.error().toString(), index + ": JSON nested deeper than 64 levels");
    }

    void indexOverTheLimitIsRefused()
    {
        const std::string folder = path("bigindex");
        fs::create_directories(folder);
        const std::string index = folder + "/model.safetensors.index.json";
        const int fd = ::open(index.c_str(), O_CREAT | O_WRONLY, 0600);
        QVERIFY(fd >= 0);
        QCOMPARE(::ftruncate(fd, off_t(kMaxIndexBytes) + 1), 0); // sparse: nothing is written
        ::close(fd);
        auto checkpoint = Checkpoint::open(folder);
        QVERIFY(!checkpoint);
        QCOMPARE(checkpoint.error().toString(), index + ": file too large: 67108865 bytes (the limit for this file is "
                                                        "67108864 bytes)");
    }

    void indexEntriesOutsideTheFolderAreRefused_data()
    {
        QTest::addColumn<QString>("shard");
        QTest::addColumn<QString>("message");
        QTest::newRow("parent") << "../outside.safetensors"
                                << "shard \"../outside.safetensors\" points outside the checkpoint folder";
        QTest::newRow("nested parent") << "sub/../../outside.safetensors"
                                       << "shard \"sub/../../outside.safetensors\" points outside the checkpoint "
                                          "folder";
        QTest::newRow("absolute") << "/etc/passwd"
                                  << "shard \"/etc/passwd\" must be a file name relative to the checkpoint folder";
        QTest::newRow("empty") << ""
                               << "shard \"\" must be a file name relative to the checkpoint folder";
        QTest::newRow("link out") << "link.safetensors"
                                  << "shard \"link.safetensors\" is a link to ";
    }

    void indexEntriesOutsideTheFolderAreRefused()
    {
        QFETCH(QString, shard);
        QFETCH(QString, message);
        const std::string outside = writeOneTensorFile(path("outside.safetensors"));
        QVERIFY(!outside.empty());
        const std::string folder = path("escape");
        fs::create_directories(folder);
        fs::remove(folder + "/link.safetensors");
        fs::create_symlink(outside, folder + "/link.safetensors");
        const std::string index = folder + "/model.safetensors.index.json";
        QVERIFY(fileutil::writeFileAtomic(index, R"({"weight_map":{"w":")" + shard.toStdString() + R"("}})"));
        auto checkpoint = Checkpoint::open(index);
        QVERIFY(!checkpoint);
        QCOMPARE(checkpoint.error().context, index);
        const std::string expected = "weight_map entry \"w\": " + message.toStdString();
        QVERIFY2(checkpoint.error().message.rfind(expected, 0) == 0, checkpoint.error().message.c_str());
    }

    void linksInsideTheFolderAndTheHubCacheAreFollowed()
    {
        // huggingface_hub's cache: <repo>/snapshots/<revision>/<file> -> ../../blobs/<hash>.
        const std::string repo = path("models--org--tiny");
        const std::string blob = writeOneTensorFile(repo + "/blobs/0123abcd");
        QVERIFY(!blob.empty());
        const std::string snapshot = repo + "/snapshots/main";
        fs::create_directories(snapshot + "/real");
        fs::create_symlink("../../blobs/0123abcd", snapshot + "/model-00001-of-00001.safetensors");
        QVERIFY(fileutil::writeFileAtomic(snapshot + "/model.safetensors.index.json",
                                          R"({"weight_map":{"w":"model-00001-of-00001.safetensors"}})"));
        auto cached = Checkpoint::open(snapshot);
        QVERIFY2(cached, cached ? "" : cached.error().toString().c_str());
        QCOMPARE(cached->tensors().size(), size_t(1));
        // A link to another file of the folder.
        QVERIFY(!writeOneTensorFile(snapshot + "/real/shard.safetensors").empty());
        QVERIFY(checkShardName(snapshot, "real/shard.safetensors"));
        fs::create_symlink("real/shard.safetensors", snapshot + "/alias.safetensors");
        QVERIFY(checkShardName(snapshot, "alias.safetensors"));
    }

    void configSizesOutOfRangeAreRefused_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("message");
        QTest::newRow("2^31 gpt2 layers") << R"({"model_type":"gpt2","n_layer":2147483648})"
                                          << "n_layer: 2147483648 is out of range (expected an integer from 0 to 4096)";
        QTest::newRow("2^31-1 llama layers")
            << R"({"model_type":"llama","num_hidden_layers":2147483647})"
            << "num_hidden_layers: 2147483647 is out of range (expected an integer from 0 to 4096)";
        QTest::newRow("2^64 layers") << R"({"model_type":"llama","num_hidden_layers":18446744073709551615})"
                                     << "num_hidden_layers: expected an integer from 0 to 4096, got "
                                        "18446744073709551615";
        QTest::newRow("float layers") << R"({"model_type":"gpt2","n_layer":1e12})"
                                      << "n_layer: expected an integer from 0 to 4096, got 1000000000000.0";
        QTest::newRow("negative width") << R"({"model_type":"llama","hidden_size":-1})"
                                        << "hidden_size: -1 is out of range (expected an integer from 1 to 1048576)";
        QTest::newRow("text vocabulary") << R"({"model_type":"qwen2","vocab_size":"many"})"
                                         << "vocab_size: expected an integer from 1 to 16777216, got \"many\"";
        QTest::newRow("experts x layers")
            << R"({"model_type":"mixtral","num_hidden_layers":4096,"num_local_experts":4096})"
            << "4096 layers of 4096 experts are 16777216 blocks, more than the 131072 a model structure is built for";
        QTest::newRow("model_type number") << R"({"model_type":5})"
                                           << "model_type: expected a string, got 5";
        QTest::newRow("deep") << QString::fromStdString(R"({"model_type":"gpt2","task_specific_params":)" +
                                                        deepArray(100000) + "}")
                              << "JSON nested deeper than 64 levels";
    }

    void configSizesOutOfRangeAreRefused()
    {
        QFETCH(QString, config);
        QFETCH(QString, message);
        auto parsed = parseModelConfig(config.toStdString(), "/m/config.json");
        QVERIFY(!parsed);
        QCOMPARE(parsed.error().code, ErrorCode::InvalidInput);
        QCOMPARE(QString::fromStdString(parsed.error().toString()), QStringLiteral("/m/config.json: ") + message);
    }

    void configDeclaringMoreLayersThanTheCheckpointIsRefused()
    {
        const std::string folder = path("fewlayers");
        float values[2] = {1, 2};
        fs::create_directories(folder);
        QVERIFY(writeSafetensors(folder + "/model.safetensors",
                                 {{"model.layers.0.input_layernorm.weight", DType::F32, {2}, values, 8},
                                  {"model.layers.1.input_layernorm.weight", DType::F32, {2}, values, 8}}));
        const std::string configPath = folder + "/config.json";
        QVERIFY(fileutil::writeFileAtomic(
            configPath, R"({"model_type":"llama","hidden_size":2,"num_attention_heads":1,"num_hidden_layers":4000})"));
        auto loaded = loadModel(folder);
        QVERIFY(!loaded);
        QCOMPARE(loaded.error().toString(), configPath +
                                                ": num_hidden_layers: 4000 layers declared but the "
                                                "checkpoint " +
                                                folder + "/model.safetensors holds 2");
        // As many layers as the checkpoint (or fewer) is fine.
        QVERIFY(fileutil::writeFileAtomic(
            configPath, R"({"model_type":"llama","hidden_size":2,"num_attention_heads":1,"num_hidden_layers":2})"));
        QVERIFY(loadModel(folder));
    }

    void fifoConfigInModelFolderIsAnError()
    {
        const std::string folder = path("fifoconfig");
        QVERIFY(!writeOneTensorFile(folder + "/model.safetensors").empty());
        const std::string config = folder + "/config.json";
        QCOMPARE(::mkfifo(config.c_str(), 0600), 0);
        auto loaded = withinDeadline(config, [&] { return loadModel(folder); });
        QVERIFY2(loaded, "loadModel blocked on a FIFO config.json");
        QVERIFY(!*loaded);
        QCOMPARE((*loaded).error().toString(), config + ": is a FIFO (named pipe), expected a regular file");
    }
};

QTEST_GUILESS_MAIN(tst_HostileInputs)
#include "tst_hostileinputs.moc"
