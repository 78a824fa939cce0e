// Safetensors reading, writing and validation on files the test generates: round trips of every
// dtype, sharded checkpoints with their index, and malformed files each rejected with the message
// that names the file and the tensor.
#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/safetensors.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"

#include <QTemporaryDir>
#include <QtTest>

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

using namespace accel;
using namespace accel::bigmodel;

namespace {

std::string rawFile(const std::string &header, const std::string &data, int64_t declaredLength = -1)
{
    const uint64_t n = declaredLength < 0 ? header.size() : static_cast<uint64_t>(declaredLength);
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
        bytes[static_cast<size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return bytes + header + data;
}

std::vector<float> iota(size_t n, float start = 0)
{
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = start + static_cast<float>(i);
    return v;
}

} // namespace

class tst_SafeTensors : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const char *name) const { return (m_dir.path() + "/" + name).toStdString(); }
    std::string expectError(const std::string &content)
    {
        const std::string file = path("bad.safetensors");
        if (!fileutil::writeFileAtomic(file, content))
            return "cannot write";
        auto opened = SafetensorsFile::open(file);
        if (opened)
            return "accepted";
        auto headerOnly = readSafetensorsHeader(file);
        if (headerOnly)
            return "header-only read accepted";
        if (headerOnly.error().toString() != opened.error().toString())
            return "header-only read differs: " + headerOnly.error().toString();
        if (opened.error().context != file)
            return "error does not name the file: " + opened.error().toString();
        return opened.error().message;
    }

private Q_SLOTS:
    void roundTripEveryDtype()
    {
        // One tensor per dtype, sized so packed types fill whole bytes (F6: 4 elements = 3 bytes;
        // F4: 2 elements = 1 byte).
        const std::vector<DType> types = {
            DType::Bool,    DType::U8,      DType::I8,      DType::I16,     DType::U16,         DType::I32,
            DType::U32,     DType::I64,     DType::U64,     DType::F16,     DType::BF16,        DType::F32,
            DType::F64,     DType::C64,     DType::F8_E4M3, DType::F8_E5M2, DType::F8_E4M3FNUZ, DType::F8_E5M2FNUZ,
            DType::F8_E8M0, DType::F6_E2M3, DType::F6_E3M2, DType::F4};
        std::vector<std::string> buffers;
        std::vector<TensorToWrite> tensors;
        for (DType t : types) {
            const int64_t elements = 4;
            const uint64_t bytes = static_cast<uint64_t>(elements * dtypeBits(t) / 8);
            std::string data;
            for (uint64_t i = 0; i < bytes; ++i)
                data.push_back(static_cast<char>(i * 7 + static_cast<uint64_t>(t)));
            buffers.push_back(data);
        }
        for (size_t i = 0; i < types.size(); ++i)
            tensors.push_back(
                {std::string("t.") + dtypeCode(types[i]), types[i], {2, 2}, buffers[i].data(), buffers[i].size()});
        tensors.push_back({"scalar", DType::F32, {}, buffers[11].data(), 4});
        tensors.push_back({"empty", DType::F32, {0, 3}, nullptr, 0});
        const std::string file = path("all.safetensors");
        QVERIFY(writeSafetensors(file, tensors, {{"format", "pt"}, {"note", "all types"}}));

        auto opened = SafetensorsFile::open(file);
        QVERIFY2(opened, opened ? "" : opened.error().toString().c_str());
        const SafetensorsFile &st = **opened;
        QCOMPARE(st.tensors().size(), tensors.size());
        QCOMPARE(st.metadata().at("note"), std::string("all types"));
        QCOMPARE(st.header().dataStart % 8, uint64_t(0));
        for (size_t i = 0; i < types.size(); ++i) {
            const TensorInfo *t = st.find(std::string("t.") + dtypeCode(types[i]));
            QVERIFY(t);
            QCOMPARE(t->dtype, types[i]);
            QCOMPARE(t->shape, (std::vector<int64_t>{2, 2}));
            QCOMPARE(t->byteSize(), uint64_t(buffers[i].size()));
            QVERIFY(std::memcmp(t->data, buffers[i].data(), buffers[i].size()) == 0);
            QVERIFY(t->data >= st.mapping()->data() && t->data < st.mapping()->data() + st.mapping()->size());
        }
        QCOMPARE(st.find("scalar")->elementCount(), uint64_t(1));
        QCOMPARE(st.find("empty")->byteSize(), uint64_t(0));
    }

    void writerOrderIsDtypeThenName()
    {
        auto a = iota(2), b = iota(2);
        int64_t i64[2] = {1, 2};
        uint8_t flags[2] = {1, 0};
        uint16_t half[2] = {1, 2};
        const std::string file = path("order.safetensors");
        QVERIFY(writeSafetensors(file, {{"z.f32", DType::F32, {2}, a.data(), 8},
                                        {"flags", DType::Bool, {2}, flags, 2},
                                        {"a.f32", DType::F32, {2}, b.data(), 8},
                                        {"h", DType::BF16, {2}, half, 4},
                                        {"ids", DType::I64, {2}, i64, 16}}));
        auto header = readSafetensorsHeader(file);
        QVERIFY(header);
        std::vector<std::string> order;
        for (const TensorInfo &t : header->tensors)
            order.push_back(t.name);
        QCOMPARE(order, (std::vector<std::string>{"ids", "a.f32", "z.f32", "h", "flags"}));
        // Header JSON is space-padded to a multiple of 8 and starts with the metadata.
        auto raw = fileutil::readFile(file);
        QCOMPARE(header->headerSize % 8, uint64_t(0));
        QVERIFY(raw->substr(8, 32).rfind("{\"__metadata__\":{\"format\":\"pt\"}", 0) == 0);
    }

    void writerRejectsWrongSizes()
    {
        auto a = iota(3);
        auto result = writeSafetensors(path("w.safetensors"), {{"w", DType::F32, {2, 2}, a.data(), 12}});
        QVERIFY(!result);
        QCOMPARE(result.error().message, std::string("tensor \"w\": has 12 bytes but its shape and dtype need 16"));
        QVERIFY(!std::filesystem::exists(path("w.safetensors")));
    }

    void shardedRoundTrip()
    {
        const std::string folder = path("sharded");
        std::filesystem::create_directories(folder);
        // A stale shard from an earlier save with more shards must disappear.
        QVERIFY(fileutil::writeFileAtomic(folder + "/model-00004-of-00004.safetensors", "stale"));
        std::vector<std::vector<float>> data = {iota(10), iota(10, 100), iota(30, 200), iota(5, 300), iota(5, 400)};
        std::vector<TensorToWrite> tensors = {
            {"embed.weight", DType::F32, {10}, data[0].data(), 40},
            {"layers.0.weight", DType::F32, {10}, data[1].data(), 40},
            {"layers.1.weight", DType::F32, {30}, data[2].data(), 120}, // bigger than the limit: own shard
            {"layers.2.weight", DType::F32, {5}, data[3].data(), 20},
            {"norm.weight", DType::F32, {5}, data[4].data(), 20},
        };
        // Limit 100 bytes: [embed, layers.0] (80), then layers.1 alone (120 > 100, written before
        // the open shard), then [layers.2, norm] (40). Order: {embed, layers.0}... The big tensor's
        // shard is appended as soon as it is seen, so shard 1 = layers.1.
        auto written = writeShardedSafetensors(folder, tensors, 100);
        QVERIFY2(written, written ? "" : written.error().toString().c_str());
        QCOMPARE(written->files,
                 (std::vector<std::string>{"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                           "model-00003-of-00003.safetensors"}));
        QCOMPARE(written->totalSize, uint64_t(240));
        QVERIFY(!std::filesystem::exists(folder + "/model-00004-of-00004.safetensors"));

        auto indexText = fileutil::readFile(folder + "/model.safetensors.index.json");
        QVERIFY(indexText);
        QCOMPARE(indexText->back(), '\n');
        const auto index = nlohmann::json::parse(*indexText);
        QCOMPARE(index["metadata"]["total_size"].get<uint64_t>(), uint64_t(240));
        QCOMPARE(index["weight_map"]["layers.1.weight"].get<std::string>(),
                 std::string("model-00001-of-00003.safetensors"));
        QCOMPARE(index["weight_map"]["embed.weight"].get<std::string>(),
                 std::string("model-00002-of-00003.safetensors"));
        QCOMPARE(index["weight_map"]["norm.weight"].get<std::string>(),
                 std::string("model-00003-of-00003.safetensors"));
        QVERIFY(indexText->find("  \"metadata\": {\n    \"total_size\": 240\n  },") != std::string::npos);

        auto checkpoint = Checkpoint::open(folder);
        QVERIFY2(checkpoint, checkpoint ? "" : checkpoint.error().toString().c_str());
        QVERIFY(checkpoint->isSharded());
        QCOMPARE(checkpoint->shards().size(), size_t(3));
        QCOMPARE(checkpoint->tensors().size(), size_t(5));
        QCOMPARE(checkpoint->totalBytes(), uint64_t(240));
        const TensorInfo *t = checkpoint->find("layers.2.weight");
        QVERIFY(t);
        QCOMPARE(reinterpret_cast<const float *>(t->data)[4], 304.0f);

        // Writing again under a large limit gives one file and removes the index and shards.
        auto single = writeShardedSafetensors(folder, tensors, 10000);
        QVERIFY(single);
        QCOMPARE(single->files, std::vector<std::string>{"model.safetensors"});
        QVERIFY(single->indexFile.empty());
        QVERIFY(!std::filesystem::exists(folder + "/model.safetensors.index.json"));
        QVERIFY(!std::filesystem::exists(folder + "/model-00001-of-00003.safetensors"));
        auto reopened = Checkpoint::open(folder);
        QVERIFY(reopened);
        QVERIFY(!reopened->isSharded());
        QCOMPARE(reopened->tensors().size(), size_t(5));
    }

    void indexDisagreeingWithShardIsRejected()
    {
        const std::string folder = path("badindex");
        std::filesystem::create_directories(folder);
        auto a = iota(2);
        QVERIFY(writeSafetensors(folder + "/model-00001-of-00001.safetensors", {{"a", DType::F32, {2}, a.data(), 8}}));
        QVERIFY(fileutil::writeFileAtomic(
            folder + "/model.safetensors.index.json",
            R"({"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00001.safetensors","b":"model-00001-of-00001.safetensors"}})"));
        auto checkpoint = Checkpoint::open(folder);
        QVERIFY(!checkpoint);
        QCOMPARE(
            checkpoint.error().message,
            std::string("tensor \"b\" is mapped to model-00001-of-00001.safetensors but that shard does not hold it"));
        QCOMPARE(checkpoint.error().context, folder + "/model.safetensors.index.json");
    }

    void malformed_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("message");
        const std::string f8 = std::string(8, '\0');
        const std::string f16 = std::string(16, '\0');
        auto add = [](const char *tag, const std::string &content, const std::string &message) {
            QTest::newRow(tag) << QByteArray(content.data(), static_cast<int>(content.size()))
                               << QString::fromStdString(message);
        };
        add("header too small", std::string(5, '\0'),
            "header too small: the file has 5 bytes, a safetensors file starts with an 8-byte header length");
        add("huge header", rawFile("{}", "", 100000001), "header too large: 100000001 bytes (limit 100000000)");
        add("header longer than file", rawFile("{}", "", 64),
            "invalid header length: 64 bytes declared but only 2 follow the length field");
        add("not json", rawFile("{\"a\": nope}", ""),
            "header is not valid JSON: parse error at line 1, column 8: syntax error while parsing value - invalid "
            "literal; last read: '\"a\": no'");
        add("not an object start", rawFile("[1, 2]  ", ""), "header does not start with '{'");
        add("invalid utf8", rawFile("{\"\xff\": 1}", ""), "header is not valid UTF-8");
        add("duplicate keys",
            rawFile(
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                f8),
            "duplicate key \"a\" in header");
        add("metadata not string", rawFile(R"({"__metadata__":{"format":"pt","step":3}})", ""),
            "__metadata__ value of \"step\" is not a string: 3");
        add("bad dtype", rawFile(R"({"w":{"dtype":"F99","shape":[2],"data_offsets":[0,8]}})", f8),
            "tensor \"w\": unknown dtype \"F99\" (valid: U64, I64, F64, C64, F32, U32, I32, BF16, F16, U16, I16, "
            "F8_E5M2FNUZ, "
            "F8_E4M3FNUZ, F8_E8M0, F8_E4M3, F8_E5M2, I8, U8, F6_E3M2, F6_E2M3, F4, BOOL)");
        add("negative shape", rawFile(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", f8),
            "tensor \"w\": \"shape\" must hold non-negative integers, got [-2]");
        add("overflowing offsets",
            rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,18446744073709551616]}})", f8),
            "tensor \"w\": \"data_offsets\" must be two non-negative integers [begin, end], got "
            "[0,1.8446744073709552e+19]");
        add("end before begin", rawFile(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[8,4]}})", f8),
            "tensor \"w\": data_offsets end 4 is before begin 8");
        add("shape overflow",
            rawFile(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", f8),
            "tensor \"w\": shape [4294967296, 4294967296] overflows a 64-bit element count");
        add("wrong size",
            rawFile(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", std::string(12, '\0')),
            "tensor \"w\": data_offsets span 12 bytes but shape [2, 2] of F32 needs 16");
        add("misaligned packed",
            rawFile(R"({"w":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}})", std::string(2, '\0')),
            "tensor \"w\": 3 elements of F4 are not a whole number of bytes (misaligned slice)");
        add("gap at start", rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})", f16),
            "tensor \"w\": data begins at 8 but the first tensor must begin at 0 (gap)");
        add("gap between",
            rawFile(
                R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
                f16),
            "tensor \"b\": data begins at 8 but the previous tensor \"a\" ends at 4 (gap)");
        add("overlap",
            rawFile(
                R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                std::string(12, '\0')),
            "tensor \"b\": data begins at 4, inside the previous tensor \"a\" which ends at 8 (overlap)");
        add("truncated data", rawFile(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", f8),
            "tensor \"w\": data ends at 16 beyond the data buffer of 8 bytes (truncated file?)");
        add("trailing bytes", rawFile(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", f16),
            "the data buffer has 16 bytes but the tensors end at 8 (trailing bytes)");
        add("entry not object", rawFile(R"({"w":[1,2]})", ""), "tensor \"w\": entry is not an object");
        add("missing offsets", rawFile(R"({"w":{"dtype":"F32","shape":[2]}})", f8),
            "tensor \"w\": \"data_offsets\" must be two non-negative integers [begin, end], got nothing");
    }

    void malformed()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, message);
        QCOMPARE(QString::fromStdString(expectError(content.toStdString())), message);
    }

    void paddedHeaderAndEmptyTensorsAccepted()
    {
        // Two empty tensors at the same offset and trailing spaces in the header are valid.
        const std::string header =
            R"({"e1":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"e2":{"dtype":"I8","shape":[3,0],"data_offsets":[0,0]},"w":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}   )";
        QVERIFY(fileutil::writeFileAtomic(path("ok.safetensors"), rawFile(header, "abc")));
        auto opened = SafetensorsFile::open(path("ok.safetensors"));
        QVERIFY2(opened, opened ? "" : opened.error().toString().c_str());
        QCOMPARE((*opened)->tensors().size(), size_t(3));
        QVERIFY(!(*opened)->header().hasMetadata);
        QCOMPARE(std::string(reinterpret_cast<const char *>((*opened)->find("w")->data), 3), std::string("abc"));
    }

    void mutatedFilesNeverBreakInvariants()
    {
        // 3000 deterministic mutations of a valid file (byte flips in the length, the header and
        // the data; truncations): each is either rejected or accepted with every tensor inside
        // the file, contiguous and sized by its shape.
        auto a = iota(6);
        int64_t ids[3] = {1, 2, 3};
        const std::string file = path("seed.safetensors");
        QVERIFY(writeSafetensors(file, {{"w", DType::F32, {2, 3}, a.data(), 24}, {"ids", DType::I64, {3}, ids, 24}}));
        const std::string seed = *fileutil::readFile(file);
        uint64_t state = 0x9e3779b97f4a7c15ull;
        auto next = [&] {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            return state;
        };
        int accepted = 0;
        for (int round = 0; round < 3000; ++round) {
            std::string bytes = seed;
            const int edits = 1 + static_cast<int>(next() % 3);
            for (int e = 0; e < edits; ++e) {
                const size_t at = next() % bytes.size();
                switch (next() % 4) {
                case 0:
                    bytes[at] = static_cast<char>(next());
                    break;
                case 1:
                    bytes[at] = "0123456789,[]{}\":"[next() % 17];
                    break;
                case 2:
                    bytes.resize(at);
                    break;
                default:
                    bytes.insert(at, 1, static_cast<char>(next()));
                    break;
                }
                if (bytes.empty())
                    bytes = "x";
            }
            auto parsed =
                parseSafetensors(reinterpret_cast<const std::byte *>(bytes.data()), bytes.size(), bytes.size(), "m");
            if (!parsed) {
                QVERIFY(!parsed.error().message.empty());
                continue;
            }
            ++accepted;
            uint64_t position = 0;
            for (const TensorInfo &t : parsed->tensors) {
                QCOMPARE(t.begin, position);
                uint64_t bits = t.elementCount() * static_cast<uint64_t>(dtypeBits(t.dtype));
                QCOMPARE(t.byteSize(), bits / 8);
                position = t.end;
                QVERIFY(reinterpret_cast<const char *>(t.data) + t.byteSize() <= bytes.data() + bytes.size());
            }
            QCOMPARE(parsed->dataStart + position, uint64_t(bytes.size()));
        }
        QVERIFY(accepted > 0); // flips inside tensor data keep the file valid
    }

    void torchFormatRule()
    {
        auto a = iota(2);
        std::string warning;
        QVERIFY(writeSafetensors(path("pt.safetensors"), {{"a", DType::F32, {2}, a.data(), 8}}));
        QVERIFY(checkTorchFormat(**SafetensorsFile::open(path("pt.safetensors")), &warning));
        QVERIFY(warning.empty());
        QVERIFY(writeSafetensors(path("none.safetensors"), {{"a", DType::F32, {2}, a.data(), 8}}, {}));
        QVERIFY(checkTorchFormat(**SafetensorsFile::open(path("none.safetensors")), &warning));
        QCOMPARE(warning, path("none.safetensors") + ": no __metadata__ format; read as a PyTorch (\"pt\") checkpoint");
        QVERIFY(writeSafetensors(path("tf.safetensors"), {{"a", DType::F32, {2}, a.data(), 8}}, {{"format", "tf"}}));
        auto tf = checkTorchFormat(**SafetensorsFile::open(path("tf.safetensors")), nullptr);
        QVERIFY(!tf);
        QCOMPARE(tf.error().code, ErrorCode::Unsupported);
    }

    void tensorsOutliveTheirFileObject()
    {
        auto a = iota(4, 1);
        QVERIFY(writeSafetensors(path("keep.safetensors"), {{"a", DType::F32, {4}, a.data(), 16}}));
        std::shared_ptr<const MappedFile> mapping;
        const std::byte *data = nullptr;
        {
            auto opened = SafetensorsFile::open(path("keep.safetensors"));
            QVERIFY(opened);
            mapping = (*opened)->mapping();
            data = (*opened)->find("a")->data;
        }
        QCOMPARE(reinterpret_cast<const float *>(data)[3], 4.0f);
        QCOMPARE(mapping.use_count(), long(1));
    }

    // Another process truncates a checkpoint while it is mapped (a serve worker holds its weights
    // zero-copy): the next read of the lost bytes ends the reader with exit code 1 and an error
    // naming the file, not a SIGBUS crash. The reader is a forked child; this process truncates.
    void truncatedWhileMappedFailsNamingTheFile()
    {
        const std::vector<float> a(64 * 1024, 1.5f); // 256 KB: pages the truncation takes away
        const std::string file = path("shrinks.safetensors");
        QVERIFY(writeSafetensors(file, {{"a", DType::F32, {64 * 1024}, a.data(), a.size() * 4}}));
        int mapped[2];
        int truncated[2];
        int errors[2];
        QVERIFY(::pipe(mapped) == 0 && ::pipe(truncated) == 0 && ::pipe(errors) == 0);
        const pid_t child = ::fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            ::dup2(errors[1], STDERR_FILENO);
            auto opened = SafetensorsFile::open(file);
            char byte = opened ? 'm' : 'x';
            (void)!::write(mapped[1], &byte, 1);
            (void)!::read(truncated[0], &byte, 1); // the parent has truncated the file
            const auto *values = reinterpret_cast<const float *>((*opened)->find("a")->data);
            volatile float sum = 0;
            for (size_t i = 0; i < a.size(); i += 1024)
                sum = sum + values[i];
            ::_exit(sum == 0 ? 3 : 0); // read after the truncation: must not get here
        }
        ::close(errors[1]);
        char byte = 0;
        QCOMPARE(::read(mapped[0], &byte, 1), ssize_t(1));
        QCOMPARE(byte, 'm');
        QVERIFY(::truncate(file.c_str(), 0) == 0);
        QCOMPARE(::write(truncated[1], &byte, 1), ssize_t(1));
        int status = 0;
        QCOMPARE(::waitpid(child, &status, 0), child);
        QByteArray message;
        char buffer[512];
        for (ssize_t n; (n = ::read(errors[0], buffer, sizeof buffer)) > 0;)
            message.append(buffer, n);
        for (int fd : {mapped[0], mapped[1], truncated[0], truncated[1], errors[0]})
            ::close(fd);
        QVERIFY2(WIFEXITED(status), qPrintable(QStringLiteral("ended by signal %1").arg(WTERMSIG(status))));
        QCOMPARE(WEXITSTATUS(status), 1);
        QVERIFY2(message.contains(QByteArray::fromStdString("error: " + file + ": the file shrank while mapped")),
                 message.constData());
    }
};

QTEST_GUILESS_MAIN(tst_SafeTensors)
#include "tst_safetensors.moc"
