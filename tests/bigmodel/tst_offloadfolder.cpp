// The disk-offload folder: .dat files and index.json as Accelerate writes them, merging with an
// existing index, lazy safetensors entries, and size checks on reading back.
#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/offloadfolder.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"

#include <QTemporaryDir>
#include <QtTest>

#include <cstring>
#include <filesystem>

using namespace accel;
using namespace accel::bigmodel;

class tst_OffloadFolder : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const std::string &name) const { return m_dir.path().toStdString() + "/" + name; }

private Q_SLOTS:
    void writeAndReadBack()
    {
        const std::string folder = path("offload");
        auto opened = OffloadFolder::open(folder);
        QVERIFY(opened);
        const float weights[6] = {1, 2, 3, 4, 5, 6};
        const uint16_t bf16[2] = {0x3f80, 0xc000}; // 1.0, -2.0 as bfloat16 bit patterns
        const int64_t scalar = 42;
        QVERIFY(opened->writeTensor("model.layers.0.mlp.up_proj.weight", DType::F32, {2, 3}, weights, 24));
        QVERIFY(opened->writeTensor("model.norm.weight", DType::BF16, {2}, bf16, 4));
        QVERIFY(opened->writeTensor("step", DType::I64, {}, &scalar, 8));
        QVERIFY(opened->save());

        // Raw bytes, dots kept in the file name, no header.
        auto raw = fileutil::readFile(folder + "/model.layers.0.mlp.up_proj.weight.dat");
        QVERIFY(raw);
        QCOMPARE(raw->size(), size_t(24));
        QVERIFY(std::memcmp(raw->data(), weights, 24) == 0);
        auto index = fileutil::readFile(folder + "/index.json");
        QVERIFY(index);
        QCOMPARE(
            *index,
            std::string(
                "{\n  \"model.layers.0.mlp.up_proj.weight\": {\n    \"dtype\": \"float32\",\n    \"shape\": [\n      "
                "2,\n      3\n    ]\n  },\n"
                "  \"model.norm.weight\": {\n    \"dtype\": \"bfloat16\",\n    \"shape\": [\n      2\n    ]\n  },\n"
                "  \"step\": {\n    \"dtype\": \"int64\",\n    \"shape\": []\n  }\n}"));

        // A second session merges into the existing index.
        auto again = OffloadFolder::open(folder);
        QVERIFY(again);
        QCOMPARE(again->entries().size(), size_t(3));
        const uint8_t flags[3] = {1, 0, 1};
        QVERIFY(again->writeTensor("mask", DType::Bool, {3}, flags, 3));
        QVERIFY(again->save());
        auto third = OffloadFolder::open(folder);
        QCOMPARE(third->entries().size(), size_t(4));
        QCOMPARE(third->find("mask")->dtype, std::string("bool"));

        auto view = third->load("model.norm.weight");
        QVERIFY2(view, view ? "" : view.error().toString().c_str());
        QCOMPARE(view->dtype, DType::BF16);
        QCOMPARE(reinterpret_cast<const uint16_t *>(view->data)[1], uint16_t(0xc000));
        auto s = third->load("step");
        QVERIFY(s);
        QCOMPARE(*reinterpret_cast<const int64_t *>(s->data), int64_t(42));
        QVERIFY(s->shape.empty());
    }

    void truncatedDatIsRejected()
    {
        const std::string folder = path("broken");
        auto opened = OffloadFolder::open(folder);
        const float w[4] = {};
        QVERIFY(opened->writeTensor("w", DType::F32, {4}, w, 16));
        QVERIFY(opened->save());
        QVERIFY(fileutil::writeFileAtomic(folder + "/w.dat", std::string(10, '\0')));
        auto view = OffloadFolder::open(folder)->load("w");
        QVERIFY(!view);
        QCOMPARE(view.error().toString(),
                 folder + "/w.dat: has 10 bytes but index.json's dtype float32 and shape need 16");
        QVERIFY(!opened->writeTensor("v", DType::F32, {4}, w, 12));
    }

    void diskTensorsOfADeviceMap()
    {
        // A toy checkpoint whose device map sends the layers to disk.
        const std::string folder = path("model");
        std::filesystem::create_directories(folder);
        std::vector<float> data(64, 1.5f);
        QVERIFY(
            writeSafetensors(folder + "/model.safetensors", {{"embed.weight", DType::F32, {16}, data.data(), 64},
                                                             {"layers.0.weight", DType::F32, {16}, data.data(), 64},
                                                             {"layers.1.weight", DType::F32, {16}, data.data(), 64}}));
        auto model = loadModel(folder);
        QVERIFY(model);
        DeviceMapOptions o;
        o.maxMemory = *parseMaxMemory("cpu=130");
        o.strategy = DeviceMapStrategy::Sequential;
        // cpu budget 130 - 64 reserve = 66: embed (64) fits, the layers go to disk.
        const auto map = inferAutoDeviceMap(model->structure, o);
        QCOMPARE(map.deviceOf("embed.weight"), std::string("cpu"));
        QCOMPARE(map.deviceOf("layers.1.weight"), std::string("disk"));
        for (bool lazy : {false, true}) {
            auto offload = OffloadFolder::open(path(lazy ? "lazy" : "copied"));
            QVERIFY(offload);
            auto count = offloadDiskTensors(
                *model->checkpoint, *offload, [&](const std::string &n) { return map.deviceOf(n); }, lazy);
            QVERIFY(count);
            QCOMPARE(*count, size_t(2));
            auto reread = OffloadFolder::open(path(lazy ? "lazy" : "copied"));
            auto view = reread->load("layers.1.weight");
            QVERIFY2(view, view ? "" : view.error().toString().c_str());
            QCOMPARE(reinterpret_cast<const float *>(view->data)[15], 1.5f);
            QCOMPARE(std::filesystem::exists(path(lazy ? "lazy" : "copied") + "/layers.1.weight.dat"), !lazy);
            if (lazy)
                QCOMPARE(reread->find("layers.0.weight")->safetensorsFile, folder + "/model.safetensors");
        }
    }
};

QTEST_GUILESS_MAIN(tst_OffloadFolder)
#include "tst_offloadfolder.moc"
