// Zero-copy views over mapped safetensors, device-map dispatch with CPU and disk offload (outputs
// equal to the all-in-memory model, weights released after each forward), and Accelerate's
// offload folder written and read back.
#include "tests/helpers/dtypename.h"
#include "tests/inference/kernelisas.h"
#include "tests/inference/tinymodels.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/offloadfolder.h"
#include "core/hardware/procparsers.h"
#include "core/inference/bf16gemv.h"
#include "core/inference/bf16pairs.h"
#include "core/inference/causallm.h"
#include "core/inference/decodebound.h"
#include "core/inference/floatgemv.h"
#include "core/inference/gemvcolumns.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/int8gemv.h"
#include "core/inference/int8kernel.h"
#include "core/inference/intraopteam.h"
#include "core/inference/layers.h"
#include "core/inference/offloadhook.h"
#include "core/inference/quantizedweight.h"
#include "core/inference/torchtensors.h"

#include <ATen/Parallel.h>

#include <nlohmann/json.hpp>

#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <pthread.h>
#include <set>
#include <thread>

using namespace accel;
using namespace accel::inference;
using accel::test::dtypeName;

class tst_Dispatch : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void viewsShareTheMapping_data();
    void viewsShareTheMapping();
    void viewOutlivesCheckpoint();
    void cpuModelIsZeroCopy();
    void residentWeightsAreMappedAtLoad();
    void diskOffloadMatchesInMemory_data();
    void diskOffloadMatchesInMemory();
    void offloadFolderRoundTrip();
    void badDeviceMapsAreNamed();
    void plannedKeysThatHoldNoWeightPlaceNothing();
    void gpusRunOnTheCpuWhenAsked();
    void shapeMismatchNamesTensor();
    void gpuNeedsCuda();
    // Decode settings (decodebound.h): bfloat16 chosen by capability and measurement, pinned threads.
    void bfloat16OnlyWithTheFlagsAndTheMeasurement();
    void pinnedThreadsRunOnTheirCpus();
    void memoryBandwidthIsReadOnTheDecodeThreads();
    // Int8 decode products (int8gemv.h, int8kernel.h): our kernel at every ISA this CPU runs, the
    // work split over the intra-op threads, and the kernel chosen by capability and measurement.
    void piecesRunOnTheIntraOpThreads();
    void int8KernelEqualsTheDequantizedProduct();
    void floatKernelEqualsTheExactProduct();
    void bf16KernelEqualsTheExactProduct();
    void bf16DecodeMatchesLibtorchLinear();
    void columnKernelEqualsTheExactProduct();
    void gpt2DecodeTakesTheColumnProduct();
    void bf16ColumnKernelEqualsTheExactProduct();
    void bf16Gpt2DecodeMatchesLibtorchAddmm();
    void sharedPiecesDoNotWaitForAHeldHelper();
    void sharedPiecesHelpersSleepOutsideTheirSpin();
    void newHelpersTakeTheFirstProduct();
    void int8KernelChosenByFlagsAndMeasurement();

private:
    static at::Tensor logitsOf(InferenceModel &model, const at::Tensor &ids);
    QTemporaryDir m_dir;
};

at::Tensor tst_Dispatch::logitsOf(InferenceModel &model, const at::Tensor &ids)
{
    at::InferenceMode guard;
    return model.lm().forward(ids, nullptr);
}

static at::Tensor someIds(int64_t vocab)
{
    at::manual_seed(1);
    return at::randint(vocab, {2, 8}, at::TensorOptions().dtype(at::kLong));
}

void tst_Dispatch::viewsShareTheMapping_data()
{
    QTest::addColumn<int>("storeAs");
    QTest::newRow("F32") << int(at::kFloat);
    QTest::newRow("BF16") << int(at::kBFloat16);
}

void tst_Dispatch::viewsShareTheMapping()
{
    QFETCH(int, storeAs);
    const auto type = static_cast<at::ScalarType>(storeAs);
    const std::string dir = m_dir.filePath(QString("views-%1").arg(storeAs)).toStdString();
    auto tiny = test::writeTinyModel(dir, "gpt2", 3, type);
    auto checkpoint = bigmodel::Checkpoint::open(dir + "/model.safetensors");
    QVERIFY(checkpoint);
    const auto *info = checkpoint->find("transformer.wte.weight");
    QVERIFY(info);
    auto view = viewBytes(info->data, info->byteSize(), info->dtype, info->shape, checkpoint->shards()[0]->mapping(),
                          info->name);
    QVERIFY(view);
    QCOMPARE(dtypeName(view->scalar_type()), dtypeName(type));
    QCOMPARE(static_cast<const void *>(view->data_ptr()), static_cast<const void *>(info->data));
    QVERIFY(at::equal(view->to(at::kFloat), tiny.weights.at("transformer.wte.weight")));
    // Same dtype and device: the view itself; a cast: one copy.
    QCOMPARE(placeTensor(*view, at::kCPU, type).data_ptr(), view->data_ptr());
    auto cast = placeTensor(*view, at::kCPU, type == at::kFloat ? at::kBFloat16 : at::kFloat);
    QVERIFY(cast.data_ptr() != view->data_ptr());
    QVERIFY(cast.scalar_type() != type);
    // Integer tensors are never cast.
    auto ints = at::arange(6, at::TensorOptions().dtype(at::kLong));
    QCOMPARE(dtypeName(placeTensor(ints, at::kCPU, at::kBFloat16).scalar_type()), dtypeName(at::kLong));
}

void tst_Dispatch::viewOutlivesCheckpoint()
{
    const std::string dir = m_dir.filePath("outlive").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 4);
    at::Tensor view;
    {
        auto checkpoint = bigmodel::Checkpoint::open(dir + "/model.safetensors");
        QVERIFY(checkpoint);
        const auto *info = checkpoint->find("model.norm.weight");
        auto made = viewBytes(info->data, info->byteSize(), info->dtype, info->shape,
                              checkpoint->shards()[0]->mapping(), info->name);
        QVERIFY(made);
        view = *made;
    }
    // The checkpoint object is gone; the deleter's reference keeps the mapping.
    QVERIFY(at::equal(view, tiny.weights.at("model.norm.weight")));
}

void tst_Dispatch::cpuModelIsZeroCopy()
{
    const std::string dir = m_dir.filePath("zerocopy").toStdString();
    test::writeTinyModel(dir, "llama", 5, at::kBFloat16);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    const auto &report = (*model)->report();
    QVERIFY(report.residentTensors > 0);
    QCOMPARE(report.zeroCopyTensors, report.residentTensors);
    QCOMPARE(report.offloadedTensors, size_t(0));
    for (const auto &p : (*model)->lm().namedParameters())
        QCOMPARE(dtypeName(p.parameter->value.scalar_type()), dtypeName(at::kBFloat16));
}

// The pages of /proc/self/smaps' mappings of `path`, resident now (their Rss), in bytes.
static uint64_t mappedResidentBytes(const std::string &path)
{
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool inside = false;
    uint64_t bytes = 0;
    while (std::getline(smaps, line)) {
        const bool header = !line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
                            line.find('-') != std::string::npos && line.find(':') > line.find(' ');
        if (header)
            inside = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
        else if (inside && line.rfind("Rss:", 0) == 0)
            bytes += std::stoull(line.substr(4)) * 1024;
    }
    return bytes;
}

// A weight left in the file's mapping is read at every forward, so the load maps its pages in
// (MappedFile::populate) rather than the first prompt's faults. A model of about 1 MiB: the header's
// read maps in only the pages around it (the kernel's fault-around, 64 KiB).
void tst_Dispatch::residentWeightsAreMappedAtLoad()
{
    const std::string dir = m_dir.filePath("populated").toStdString();
    test::writeTinyModel(dir, "llama", 6, at::kFloat, /*tied=*/false, /*withoutBasePrefix=*/false, /*vocab=*/8192);
    const std::string file = std::filesystem::canonical(dir + "/model.safetensors").string();
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    const auto &report = (*model)->report();
    QCOMPARE(report.zeroCopyTensors, report.residentTensors);
    QVERIFY(report.residentBytes > (uint64_t(512) << 10));
    const uint64_t mapped = mappedResidentBytes(file);
    QVERIFY2(mapped >= report.residentBytes,
             qPrintable(QStringLiteral("%1 of %2 resident bytes mapped").arg(mapped).arg(report.residentBytes)));
}

void tst_Dispatch::diskOffloadMatchesInMemory_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<QString>("map");
    QTest::addColumn<QString>("offloadedModule");
    QTest::addColumn<bool>("tied");
    QTest::newRow("gpt2 block 1 + ln_f on disk")
        << "gpt2"
        << R"({"transformer.wte": "cpu", "transformer.wpe": "cpu", "transformer.h.0": "cpu", "transformer.h.1": "disk", "transformer.ln_f": "disk", "lm_head": "cpu"})"
        << "transformer.h.1.mlp.c_fc" << false;
    QTest::newRow("gpt2 tied embedding on disk") << "gpt2"
                                                 << R"({"transformer.wte": "disk", "transformer": "cpu"})"
                                                 << "transformer.wte" << true;
    QTest::newRow("llama block 0 and lm_head on disk")
        << "llama"
        << R"({"model.embed_tokens": "cpu", "model.layers.0": "disk", "model.layers.1": "cpu", "model.norm": "cpu", "lm_head": "disk"})"
        << "model.layers.0.self_attn.q_proj" << false;
    QTest::newRow("llama one tensor on disk") << "llama"
                                              << R"({"": "cpu", "model.layers.1.mlp.up_proj.weight": "disk"})"
                                              << "model.layers.1.mlp.up_proj" << false;
}

void tst_Dispatch::diskOffloadMatchesInMemory()
{
    QFETCH(QString, type);
    QFETCH(QString, map);
    QFETCH(QString, offloadedModule);
    QFETCH(bool, tied);
    const std::string dir = m_dir.filePath("disk-" + QString::number(qHash(map))).toStdString();
    auto tiny = test::writeTinyModel(dir, type.toStdString(), 6, at::kFloat, tied);
    auto inMemory = InferenceModel::load(dir);
    QVERIFY(inMemory);
    LoadOptions options;
    options.deviceMap = map.toStdString();
    auto offloaded = InferenceModel::load(dir, options);
    QVERIFY2(offloaded, offloaded ? "" : offloaded.error().toString().c_str());
    QVERIFY((*offloaded)->report().offloadedTensors > 0);
    QVERIFY((*offloaded)->report().hookedModules > 0);

    Module *module = (*offloaded)->lm().findModule(offloadedModule.toStdString());
    QVERIFY(module);
    QVERIFY(!module->parameters().front()->value.defined()); // not resident between forwards
    QCOMPARE(module->hooks().size(), size_t(1));
    auto *hook = dynamic_cast<OffloadHook *>(module->hooks().front().get());
    QVERIFY(hook);
    QCOMPARE(hook->materialisations(), int64_t(0));

    auto ids = someIds(tiny.vocab);
    auto expected = logitsOf(**inMemory, ids);
    auto got = logitsOf(**offloaded, ids);
    QVERIFY(at::equal(got, expected));
    QVERIFY(hook->materialisations() >= 1);
    QVERIFY(!module->parameters().front()->value.defined()); // released after the forward
    auto again = logitsOf(**offloaded, ids);
    QVERIFY(at::equal(again, expected));
}

void tst_Dispatch::offloadFolderRoundTrip()
{
    const std::string dir = m_dir.filePath("folder-model").toStdString();
    const std::string folder = m_dir.filePath("offload").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 8, at::kBFloat16, true);
    LoadOptions options;
    options.deviceMap =
        R"({"model.embed_tokens": "cpu", "model.layers.0": "cpu", "model.layers.1": "disk", "model.norm": "cpu"})";
    options.dispatch.offloadFolder = folder;
    options.dispatch.computeDType = "float32";
    auto first = InferenceModel::load(dir, options);
    QVERIFY2(first, first ? "" : first.error().toString().c_str());
    const size_t disk = (*first)->report().offloadedTensors;
    QCOMPARE(disk, size_t(9)); // 2 norms + 4 attention + 3 mlp weights of layer 1
    QCOMPARE((*first)->report().offloadFolderWrites, disk);

    // Accelerate's layout: index.json with numpy dtype names (bf16 as "bfloat16"), raw .dat files.
    std::ifstream in(folder + "/index.json");
    auto index = nlohmann::json::parse(in);
    QCOMPARE(index.size(), disk);
    const std::string name = "model.layers.1.self_attn.k_proj.weight";
    QCOMPARE(index[name]["dtype"].get<std::string>(), std::string("bfloat16"));
    QCOMPARE(index[name]["shape"], nlohmann::json::array({16, 48}));
    QCOMPARE(std::filesystem::file_size(folder + "/" + name + ".dat"), uintmax_t(16 * 48 * 2));
    auto stored = bigmodel::OffloadFolder::open(folder);
    QVERIFY(stored);
    auto viewed = stored->load(name);
    QVERIFY(viewed);
    auto back = viewBytes(viewed->data, viewed->size, viewed->dtype, viewed->shape, viewed->keepAlive, name);
    QVERIFY(back);
    QVERIFY(at::equal(back->to(at::kFloat), tiny.weights.at(name)));

    // A second load finds index.json and reads the folder instead of writing it.
    auto second = InferenceModel::load(dir, options);
    QVERIFY(second);
    QCOMPARE((*second)->report().offloadFolderWrites, size_t(0));
    auto ids = someIds(tiny.vocab);
    auto expected = test::referenceLlama(tiny, ids);
    QVERIFY(at::allclose(logitsOf(**second, ids), expected, 1e-4, 1e-4));
    QVERIFY(at::equal(logitsOf(**second, ids), logitsOf(**first, ids)));
}

void tst_Dispatch::badDeviceMapsAreNamed()
{
    const std::string dir = m_dir.filePath("badmap").toStdString();
    test::writeTinyModel(dir, "gpt2", 9);
    auto expectError = [&](const std::string &map, const std::string &needle) {
        LoadOptions options;
        options.deviceMap = map;
        auto model = InferenceModel::load(dir, options);
        QVERIFY2(!model, map.c_str());
        QVERIFY2(model.error().message.find(needle) != std::string::npos, model.error().message.c_str());
    };
    expectError(R"({"transformer.h.7": "cpu", "": "cpu"})", "'transformer.h.7' names no module");
    expectError(R"({"transformer.h": "cpu"})", "no entry covers transformer.ln_f");
    expectError(R"({"": "tpu"})", "expected \"cpu\", \"disk\" or a GPU index");
    expectError(R"(["cpu"])", "expected a JSON object");
}

// Keys of the planned tree (what accel device-map writes) that the engine's tree does not hold:
// modules without tensors, rotary_emb and its buffers, a tied lm_head. They load and place
// nothing; a tied head mapped away from its embedding is a warning.
void tst_Dispatch::plannedKeysThatHoldNoWeightPlaceNothing()
{
    const std::string gpt2 = m_dir.filePath("planned-gpt2").toStdString();
    const std::string llama = m_dir.filePath("planned-llama").toStdString();
    test::writeTinyModel(gpt2, "gpt2", 11, at::kFloat, true);
    test::writeTinyModel(llama, "llama", 12, at::kFloat, true);
    auto load = [](const std::string &dir, const std::string &map) {
        LoadOptions options;
        options.deviceMap = map;
        return InferenceModel::load(dir, options);
    };
    for (
        const auto &[dir, map] : std::vector<std::pair<std::string, std::string>>{
            {gpt2,
             R"({"transformer.wte": "cpu", "lm_head": "cpu", "transformer.drop": "disk", "transformer.h.0.attn.attn_dropout": "disk", "transformer.h.0.mlp.act": "cpu", "transformer": "disk"})"},
            {llama,
             R"({"model.embed_tokens": "cpu", "model.layers.0.mlp.act_fn": "disk", "model.rotary_emb": "disk", "model.rotary_emb.inv_freq": "cpu", "lm_head.weight": "cpu", "model": "disk"})"}}) {
        auto model = load(dir, map);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        QVERIFY((*model)->report().offloadedTensors > 0);
        std::string said;
        for (const std::string &w : (*model)->warnings())
            said += w + "; ";
        QVERIFY2((*model)->warnings().empty(), said.c_str());
    }
    // The tied head on another device than its embedding: loaded, said.
    auto apart = load(gpt2, R"({"transformer": "cpu", "lm_head": "disk"})");
    QVERIFY(apart);
    QCOMPARE((*apart)->warnings().size(), size_t(1));
    QVERIFY2((*apart)->warnings().front().find("lm_head.weight is tied to transformer.wte.weight: the device map puts "
                                               "it on disk and transformer.wte.weight on cpu") != std::string::npos,
             (*apart)->warnings().front().c_str());
    // A name neither tree has is still refused.
    auto unknown = load(gpt2, R"({"transformer.dropout": "cpu", "": "cpu"})");
    QVERIFY(!unknown);
    QVERIFY(unknown.error().message.find("'transformer.dropout' names no module") != std::string::npos);
}

// A map planned for GPUs runs on this CPU with gpusOnCpu: GPU 0 is the main device, so the cpu
// entries are offloaded to it (hooks) as beside a real GPU, and the logits are the unsplit model's.
void tst_Dispatch::gpusRunOnTheCpuWhenAsked()
{
    const std::string dir = m_dir.filePath("gpus-on-cpu").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 13);
    const std::string map =
        R"({"model.embed_tokens": 0, "model.layers.0": 1, "model.layers.1": "cpu", "model.norm": "disk", "model.rotary_emb": 0, "lm_head": 0})";
    LoadOptions options;
    options.deviceMap = map;
    auto refused = InferenceModel::load(dir, options);
    QVERIFY(!refused);
    QVERIFY2(refused.error().message.find("gpus_on_cpu") != std::string::npos, refused.error().message.c_str());
    options.dispatch.gpusOnCpu = true;
    auto model = InferenceModel::load(dir, options);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    QCOMPARE((*model)->report().mainDevice, std::string("0"));
    QVERIFY((*model)->lm().findModule("model.layers.1.mlp.up_proj")->hooks().size() == 1); // cpu: offloaded
    QVERIFY((*model)->lm().findModule("model.layers.0.mlp.up_proj")->hooks().empty());     // GPU 1: resident
    auto ids = someIds(tiny.vocab);
    QVERIFY(at::allclose(logitsOf(**model, ids), test::referenceLlama(tiny, ids), 1e-4, 1e-4));
}

void tst_Dispatch::shapeMismatchNamesTensor()
{
    const std::string dir = m_dir.filePath("mismatch").toStdString();
    test::writeTinyModel(dir, "gpt2", 10);
    std::string config;
    {
        std::ifstream in(dir + "/config.json");
        config.assign(std::istreambuf_iterator<char>(in), {});
    }
    config.replace(config.find("\"vocab_size\": 53"), 16, "\"vocab_size\": 54");
    std::ofstream(dir + "/config.json") << config;
    auto model = InferenceModel::load(dir);
    QVERIFY(!model);
    QVERIFY2(model.error().message.find("transformer.wte.weight: shape [53, 32] does not match the model's [54, 32]") !=
                 std::string::npos,
             model.error().message.c_str());
}

void tst_Dispatch::gpuNeedsCuda()
{
#if ACCEL_WITH_CUDA
    QSKIP("GPU placement is exercised on CUDA machines by diskOffloadMatchesInMemory with a GPU main device");
#else
    auto device = parseDevice("0");
    QVERIFY(!device);
    QCOMPARE(device.error().code, ErrorCode::Unsupported);
    QSKIP("this libtorch has no CUDA: GPU dispatch (main device 0, CPU-offloaded blocks) needs a GPU machine");
#endif
}

// /proc/cpuinfo of two CPUs through the real parser: one with avx512_bf16 (Sapphire Rapids also has
// amx_bf16), one without either.
static std::vector<std::string> cpuFlags(const std::string &flags)
{
    const std::string text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU\nphysical id\t: 0\n"
                             "core id\t\t: 0\ncpu cores\t: 1\nflags\t\t: fpu sse2 avx avx2 fma " +
                             flags + "\n\n";
    return hardware::parseCpuInfo(text).flags;
}

void tst_Dispatch::bfloat16OnlyWithTheFlagsAndTheMeasurement()
{
    const int previous = at::get_num_threads();
    int measured = 0;
    auto times = [&](double float32Ms, double bfloat16Ms) {
        return [&measured, float32Ms, bfloat16Ms] {
            ++measured;
            return inference::ProductTimes{float32Ms, bfloat16Ms, {}};
        };
    };
    // Without the flags nothing is measured and float32 stays.
    auto choice = inference::chooseDecodeDType(cpuFlags("avx512f avx512_vnni"), "float32", times(2, 1));
    QCOMPARE(choice.dtype, std::string("float32"));
    QCOMPARE(measured, 0);
    QVERIFY(choice.reason.find("neither amx_bf16 nor avx512_bf16") != std::string::npos);
    // With them, the measurement decides, and says so.
    choice = inference::chooseDecodeDType(cpuFlags("avx512f avx512_bf16 amx_bf16 amx_tile"), "float32", times(2, 1));
    QCOMPARE(choice.dtype, std::string("bfloat16"));
    QCOMPARE(measured, 1);
    QVERIFY2(choice.reason.find("amx_bf16 avx512_bf16") != std::string::npos &&
                 choice.reason.find("1.000 ms in bfloat16, 2.000 ms in float32") != std::string::npos,
             choice.reason.c_str());
    choice = inference::chooseDecodeDType(cpuFlags("avx512_bf16"), "float32", times(1.1, 1));
    QCOMPARE(choice.dtype, std::string("float32")); // under the 1.2x margin
    QVERIFY(choice.reason.find("float32 kept") != std::string::npos);
    // A model stored in another dtype is left as stored, unmeasured.
    measured = 0;
    choice = inference::chooseDecodeDType(cpuFlags("avx512_bf16"), "bfloat16", times(2, 1));
    QCOMPARE(choice.dtype, std::string("bfloat16"));
    QCOMPARE(measured, 0);
    // This machine: its own flags and a real measurement; the rule holds on what was measured.
    std::string cpuinfo;
    if (QFile file(QStringLiteral("/proc/cpuinfo")); file.open(QIODevice::ReadOnly))
        cpuinfo = file.readAll().toStdString();
    const auto flags = hardware::parseCpuInfo(cpuinfo).flags;
    choice = inference::chooseDecodeDType(flags, "float32", [] { return inference::measureDecodeProducts(512, 2048); });
    qInfo("this CPU: %s (%s)", choice.dtype.c_str(), choice.reason.c_str());
    const bool capable =
        std::count(flags.begin(), flags.end(), "avx512_bf16") + std::count(flags.begin(), flags.end(), "amx_bf16") > 0;
    if (!capable) {
        QCOMPARE(choice.dtype, std::string("float32"));
    } else {
        QVERIFY(choice.float32Ms > 0 && choice.bfloat16Ms > 0);
        QCOMPARE(choice.dtype == "bfloat16", choice.float32Ms >= inference::kMeasuredChoiceMargin * choice.bfloat16Ms);
    }
    // A model's choice times its own MLP input product in its own layer: GPT-2's Conv1D (weight
    // [in, out], the column product), a Linear for the other families; the reason names it.
    const auto conv1d = inference::measureDecodeProducts(64, 256, true);
    QVERIFY(conv1d.float32Ms > 0 && conv1d.bfloat16Ms > 0);
    QCOMPARE(conv1d.product, std::string("a 1 x 64 by 64 x 256 Conv1D (weight [in, out]) product (copies: 64)"));
    // A weight over 64 MiB in bfloat16 is timed on the rows that fill 64 MiB, once.
    QCOMPARE(inference::measureDecodeProducts(1024, 65536).product,
             std::string("a 1 x 1024 by 1024 x 32768 Linear product (copies: 1)"));
    for (const std::string type : {"gpt2", "llama"}) {
        const std::string dir = m_dir.filePath(QString::fromStdString("choice-" + type)).toStdString();
        test::writeTinyModel(dir, type, 3);
        const auto config = inference::loadModelConfig(dir);
        QVERIFY(config);
        const auto model = inference::chooseModelDecodeDType(dir, 2);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        if (!capable)
            continue;
        const std::string product = QString("a 1 x %1 by %1 x %2 %3 product (copies: ")
                                        .arg(config->hiddenSize)
                                        .arg(config->intermediateSize)
                                        .arg(type == "gpt2" ? "Conv1D (weight [in, out])" : "Linear")
                                        .toStdString();
        QVERIFY2(model->reason.find(product) != std::string::npos, model->reason.c_str());
    }
    at::set_num_threads(previous);
}

// The CPUs a sharedPieces helper (not the calling thread) may run on, inside a OneThreadedOps scope
// over the 2 intra-op threads set: the caller's piece waits (up to 10 s) until a helper has run one.
static cpu_set_t sharedHelperCpus()
{
    cpu_set_t helperSet;
    CPU_ZERO(&helperSet);
    const pthread_t caller = pthread_self();
    std::atomic<bool> seen{false};
    std::mutex mutex;
    OneThreadedOps decode;
    inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) {
        if (!pthread_equal(pthread_self(), caller)) {
            std::lock_guard<std::mutex> lock(mutex);
            if (!seen && sched_getaffinity(0, sizeof helperSet, &helperSet) == 0)
                seen = true;
            return;
        }
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!seen && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
    });
    std::lock_guard<std::mutex> lock(mutex);
    if (!seen)
        qWarning("no sharedPieces helper ran a piece within 10 s");
    return helperSet;
}

void tst_Dispatch::pinnedThreadsRunOnTheirCpus()
{
    cpu_set_t before;
    QCOMPARE(sched_getaffinity(0, sizeof before, &before), 0);
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    auto pinned = inference::pinIntraOpThreads();
    QVERIFY2(pinned, pinned ? "" : pinned.error().toString().c_str());
    QCOMPARE(int(pinned->size()), 2);
    if (CPU_COUNT(&before) >= 2)
        QVERIFY((*pinned)[0] != (*pinned)[1]);
    // Each intra-op thread now runs on its CPU alone, the calling thread (thread 0) included, and
    // libtorch's own parallel work runs on those threads.
    QCOMPARE(inference::intraOpThreadCpus(), *pinned);
    cpu_set_t mine;
    QCOMPARE(sched_getaffinity(0, sizeof mine, &mine), 0);
    QCOMPARE(CPU_COUNT(&mine), 1);
    QVERIFY(CPU_ISSET((*pinned)[0], &mine));
    const at::Tensor sum = at::ones({1 << 20}).sum();
    QCOMPARE(sum.item<float>(), float(1 << 20));
    QCOMPARE(inference::intraOpThreadCpus(), *pinned);
    // One-sequence decode: libtorch's team at 1 thread, the products shared between the caller and
    // a helper on libtorch's inter-op threads (sharedPieces). The helper runs on thread 1's CPU
    // alone, apart from the caller's.
    cpu_set_t helperSet = sharedHelperCpus();
    QCOMPARE(CPU_COUNT(&helperSet), 1);
    QVERIFY(CPU_ISSET((*pinned)[1], &helperSet));
    if (CPU_COUNT(&before) >= 2)
        QVERIFY(!CPU_ISSET((*pinned)[0], &helperSet));
    // Undone for the other tests: every thread back on the CPUs the process had, the helpers' too.
    QVERIFY(inference::unpinIntraOpThreads());
    QCOMPARE(inference::intraOpThreadCpus(), std::vector<int>(2, CPU_COUNT(&before) == 1 ? (*pinned)[0] : -1));
    helperSet = sharedHelperCpus();
    QVERIFY(CPU_EQUAL(&helperSet, &before));
    at::set_num_threads(previous);
}

// The decode bound's bandwidth is a read-only stream split like the decode products, on the threads
// decode shares them among (sharedThreads: the count set before a OneThreadedOps scope, not its 1),
// measured once per thread count (and again on request) and named in decodeBoundJson. Its speed is not asserted; the
// single-thread memcpy the bound was once timed by is printed beside it.
void tst_Dispatch::memoryBandwidthIsReadOnTheDecodeThreads()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(1);
    const MemoryBandwidth one = inference::measureMemoryBandwidth();
    QVERIFY(one.bytesPerSecond > 0);
    QCOMPARE(one.threads, 1);
    QVERIFY2(one.method.find("read-only") == 0 && one.method.find("on 1 thread ") != std::string::npos &&
                 one.method.find("median of 20 passes after 2 untimed") != std::string::npos,
             one.method.c_str());
    at::set_num_threads(2);
    MemoryBandwidth two;
    {
        OneThreadedOps decode;
        QCOMPARE(at::get_num_threads(), 1);
        two = inference::measureMemoryBandwidth();
    }
    QVERIFY(two.bytesPerSecond > 0);
    QCOMPARE(two.threads, 2);
    QVERIFY2(two.method.find("on 2 threads") != std::string::npos, two.method.c_str());
    // Remembered per thread count.
    QCOMPARE(inference::memoryBandwidth(), two.bytesPerSecond);
    at::set_num_threads(1);
    QCOMPARE(inference::memoryBandwidth(), one.bytesPerSecond);
    at::set_num_threads(2);
    // Measured again on request (the bench's bound next to each decode), the same way, and not
    // remembered in place of the first.
    const MemoryBandwidth again = inference::measureMemoryBandwidthNow();
    QVERIFY(again.bytesPerSecond > 0);
    QCOMPARE(again.threads, 2);
    QVERIFY2(again.method.find("on 2 threads") != std::string::npos, again.method.c_str());
    QCOMPARE(inference::memoryBandwidth(), two.bytesPerSecond);
    // What the serve worker's loaded event carries.
    const std::string dir = m_dir.filePath("bound").toStdString();
    test::writeTinyModel(dir, "gpt2", 7);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    const nlohmann::ordered_json bound = inference::decodeBoundJson(**model);
    const auto bytes = bound.at("weight_bytes_per_token").get<uint64_t>();
    QVERIFY(bytes > 0);
    QCOMPARE(bound.at("memory_bandwidth_bytes_per_s").get<double>(), two.bytesPerSecond);
    QCOMPARE(bound.at("memory_bandwidth_threads").get<int>(), 2);
    QCOMPARE(bound.at("memory_bandwidth_method").get<std::string>(), two.method);
    QCOMPARE(bound.at("tokens_per_s").get<double>(), two.bytesPerSecond / double(bytes));
    // For the record only (the machine is shared): the single-thread copy of 256 MiB.
    const size_t size = size_t(256) << 20;
    std::unique_ptr<char[]> from(new char[size]), to(new char[size]);
    std::memset(from.get(), 1, size);
    std::memset(to.get(), 0, size);
    double copy = 1e30;
    for (int i = 0; i < 5; ++i) {
        const auto start = std::chrono::steady_clock::now();
        std::memcpy(to.get(), from.get(), size);
        copy = std::min(copy, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    qInfo("read stream: %.2f GB/s on 1 thread, %.2f GB/s on 2 (%s); single-thread memcpy: %.2f GB/s (bytes "
          "copied per second, byte %d)",
          one.bytesPerSecond / 1e9, two.bytesPerSecond / 1e9, two.method.c_str(), double(size) / copy / 1e9,
          int(to[size / 2]));
    at::set_num_threads(previous);
}

// parallelPieces covers [0, n) once, in pieces of whole multiples of the alignment and at least the
// minimum (up to 4 a thread), and with 2 intra-op threads runs them on both threads (each starts
// with a piece of its own; at::parallel_for inlined into code built without -fopenmp would run
// everything on the calling thread).
void tst_Dispatch::piecesRunOnTheIntraOpThreads()
{
    QVERIFY(inference::intraOpTeamAvailable());
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(1001)}) {
        std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
        std::mutex mutex;
        std::set<pthread_t> threads;
        std::vector<std::pair<int64_t, int64_t>> pieces;
        inference::parallelPieces(n, 4, 8, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i)
                ++seen[size_t(i)];
            std::lock_guard<std::mutex> lock(mutex);
            threads.insert(pthread_self());
            pieces.emplace_back(begin, end);
        });
        for (const auto &count : seen)
            QCOMPARE(count.load(), 1);
        for (const auto &[begin, end] : pieces)
            QVERIFY2(begin % 4 == 0 && (end % 4 == 0 || end == n) && (end - begin >= 8 || end == n),
                     qPrintable(QString::number(n)));
        // Two pieces of at least 8 items need 16 items; 64 and 1001 make 4 pieces a thread.
        QCOMPARE(int(threads.size()), n >= 16 ? 2 : 1);
        QCOMPARE(int(pieces.size()), n >= 16 ? 8 : 1);
    }
    at::set_num_threads(previous);
}

// Every element of an int8 product against the exact one (float64). A float32 dot product of k
// terms summed in any order (recursive or blocked) is within gamma_k * sum_i |x_i w_i| of the exact
// sum (gamma_k = k u / (1 - k u), u = 2^-24), and scaling the sum rounds once more. Through
// QuantizedWeight the reference is dequantize()'s float32 weights, which round q * SCB / 127 once
// where the kernels use q times the scale SCB / 127 (rounded twice): (k + 4) u * sum_i |x_i| |w_i|
// covers every case. A wrong row, a lost tail or a missing scale is off by whole terms, far outside.
void tst_Dispatch::int8KernelEqualsTheDequantizedProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(11);
    std::string cpuinfo;
    if (QFile file(QStringLiteral("/proc/cpuinfo")); file.open(QIODevice::ReadOnly))
        cpuinfo = file.readAll().toStdString();
    const KernelIsa host = kernelIsaForFlags(hardware::parseCpuInfo(cpuinfo).flags);
    QCOMPARE(int(hostKernelIsa()), int(host));
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns(); // host, checked just above
    qInfo("this CPU's int8 kernel: %s", kernelIsaName(host));
    const double u = std::ldexp(1.0, -24);
    auto within = [&](const at::Tensor &got, const at::Tensor &x, const at::Tensor &w, const QString &what) {
        const at::Tensor want = at::matmul(x.to(at::kDouble), w.to(at::kDouble).t());
        const at::Tensor bound =
            at::matmul(x.abs().to(at::kDouble), w.abs().to(at::kDouble).t()) * (double(x.size(1) + 4) * u);
        const double excess = ((got.to(at::kDouble) - want).abs() - bound).max().item<double>();
        return excess <= 0 ? QString() : QStringLiteral("%1: %2 over the bound").arg(what).arg(excess);
    };
    // Shapes with tails of every kind (k not a multiple of 8, 16 or 32, n not a multiple of 4), one
    // large enough (203 x 1029) to be split over both threads, and rows of at least
    // every ISA's kOneStreamRowBytes (21 x 8195), which one row of x reads four side by side, not one
    // at a time.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48}, {7, 3}, {9, 40}, {21, 8195}};
    for (const auto &[n, k] : shapes) {
        const QString shape = QStringLiteral("[%1 x %2]").arg(n).arg(k);
        const at::Tensor q = at::randint(-127, 128, {n, k}).to(at::kChar);
        const at::Tensor scale = at::rand({n}) * 0.02 + 0.001;
        const at::Tensor w = q.to(at::kFloat) * scale.unsqueeze(1); // exact in float64 below
        const QuantizedWeight weight = QuantizedWeight::quantizeInt8(at::randn({n, k}));
        const at::Tensor dequantized = weight.dequantize();
        for (int64_t rows : {1, 2, 3, 4, 6}) {
            const at::Tensor x = at::randn({rows, k});
            const QString what = shape + QStringLiteral(", %1 rows").arg(rows);
            for (KernelIsa isa : isas) {
                at::Tensor out = at::full({rows, n}, std::nan(""));
                int8::gemv(isa, x.data_ptr<float>(), rows, k, q.data_ptr<int8_t>(), scale.data_ptr<float>(), n,
                           out.data_ptr<float>());
                const QString failed = within(out, x, w, what + " ours-" + kernelIsaName(isa));
                QVERIFY2(failed.isEmpty(), qPrintable(failed));
            }
            QString failed = within(weight.decodeProduct(x, Int8Kernel::Ours), x, dequantized, what + " decode");
            QVERIFY2(failed.isEmpty(), qPrintable(failed));
            failed = within(weight.matmul(x), x, dequantized, what + " matmul");
            QVERIFY2(failed.isEmpty(), qPrintable(failed));
        }
    }
    at::set_num_threads(previous);
}

// The exact product (float64) of x [.., k] and `columns` [k, n] plus an optional bias [n], and the
// bound every float32 sum of its terms stays within: (k + 2) u (|x| |columns| + |bias|), u = 2^-24
// (the decode kernels' exactness tests below).
struct ExactProduct {
    at::Tensor want, bound;
};
static ExactProduct exactProduct(const at::Tensor &x, const at::Tensor &columns, const at::Tensor &bias)
{
    const at::Tensor xd = x.to(at::kDouble), wd = columns.to(at::kDouble);
    ExactProduct exact{at::matmul(xd, wd), at::matmul(xd.abs(), wd.abs())};
    if (bias.defined()) {
        exact.want = exact.want + bias.to(at::kDouble);
        exact.bound = exact.bound + bias.abs().to(at::kDouble);
    }
    exact.bound = exact.bound * (double(wd.size(0) + 2) * std::ldexp(1.0, -24));
    return exact;
}

// Every element of the float32 decode product (floatgemv.h) against the exact one (float64): a dot
// product of k float32 terms summed in any order is within gamma_k * sum_i |x_i w_i| of the exact
// sum, and adding the bias rounds once more: (k + 2) u * (sum_i |x_i| |w_i| + |b|) covers it (u =
// 2^-24). A wrong row, a lost tail of k or a missing bias is off by whole terms. Also through
// linearRows, which a Linear's forward of up to kOurKernelMostRows rows takes.
void tst_Dispatch::floatKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(12);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    // 600 x 2061: rows of at least every ISA's kOneStreamRowBytes, read four side by side also for one
    // row of x; and pieces of several kChunkBytes chunks (32 rows each), which more rows of x than one
    // pass serves (6, 9) take chunk by chunk.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48},   {7, 3},
                                                          {9, 40},     {1030, 17}, {600, 2061}};
    for (const auto &[n, k] : shapes) {
        const at::Tensor w = at::randn({n, k});
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}) : at::Tensor();
            for (int64_t rows : {1, 2, 3, 4, 6, 9}) {
                const at::Tensor x = at::randn({rows, k});
                const auto [want, bound] = exactProduct(x, w.t(), bias);
                const QString what =
                    QStringLiteral("[%1 x %2], %3 rows, bias %4").arg(n).arg(k).arg(rows).arg(withBias);
                for (KernelIsa isa : isas) {
                    at::Tensor out = at::full({rows, n}, std::nan(""));
                    f32::gemv(isa, x.data_ptr<float>(), rows, k, w.data_ptr<float>(),
                              withBias ? bias.data_ptr<float>() : nullptr, n, out.data_ptr<float>());
                    const double excess = ((out.to(at::kDouble) - want).abs() - bound).max().item<double>();
                    QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + ": " + QString::number(excess)));
                }
                // A block's input: [1, rows, k] (a decode step, or a prompt of that many tokens).
                const at::Tensor got = linearRows(x.view({1, rows, k}), w, bias);
                QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, rows, n}));
                const double excess = ((got.view({rows, n}).to(at::kDouble) - want).abs() - bound).max().item<double>();
                QVERIFY2(excess <= 0, qPrintable(what + " linearRows: " + QString::number(excess)));
            }
        }
    }
    // A weight whose rows are not as long as x's is libtorch's to refuse (at::linear raises), never
    // read by the kernel past the end of x.
    bool refused = false;
    try {
        linearRows(at::randn({1, 3, 8}), at::randn({5, 9}), at::Tensor());
    } catch (const c10::Error &) {
        refused = true;
    }
    QVERIFY(refused);
    at::set_num_threads(previous);
}

// The one-row product of a weight stored [in, out] (gemvcolumns.h, GPT-2's Conv1D) against the
// exact one (float64), with the bound of floatKernelEqualsTheExactProduct: (k + 2) u * (sum_i
// |x_i| |w_ij| + |b_j|). Shapes with columns past the last whole vector, one vector, and a split
// over two threads whose last piece is short.
void tst_Dispatch::columnKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(13);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 2304}, {1024, 1000}, {40, 203}, {9, 7}, {3, 16}};
    for (const auto &[k, n] : shapes) {
        const at::Tensor w = at::randn({k, n});
        const at::Tensor x = at::randn({k});
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}) : at::Tensor();
            const auto [want, bound] = exactProduct(x, w, bias);
            for (KernelIsa isa : isas) {
                at::Tensor out = at::full({n}, std::nan(""));
                f32::gemvColumns(isa, x.data_ptr<float>(), k, w.data_ptr<float>(),
                                 withBias ? bias.data_ptr<float>() : nullptr, n, out.data_ptr<float>());
                const double excess = ((out.to(at::kDouble) - want).abs() - bound).max().item<double>();
                QVERIFY2(excess <= 0, qPrintable(QStringLiteral("[%1 x %2] bias %3 %4: %5")
                                                     .arg(k)
                                                     .arg(n)
                                                     .arg(withBias)
                                                     .arg(kernelIsaName(isa))
                                                     .arg(excess)));
            }
        }
    }
    at::set_num_threads(previous);
}

// A tiny GPT-2 decoding one token at a time with its cache (each Conv1D multiplying one row, the
// column product) gives the logits of the plain no-cache reference within 1e-4, and generate()'s
// greedy tokens (one sequence: OneThreadedOps, the products shared over two threads) are their
// argmax.
void tst_Dispatch::gpt2DecodeTakesTheColumnProduct()
{
    const std::string dir = m_dir.filePath("gpt2-columns").toStdString();
    auto tiny = test::writeTinyModel(dir, "gpt2", 31);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::vector<int64_t> all{3, 17, 5, 40, 22};
    const size_t promptLength = all.size();
    {
        at::InferenceMode guard;
        KVCache cache;
        auto ids = at::tensor(all, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
        at::Tensor logits = (*model)->lm().forward(ids, &cache, true);
        for (int step = 0; step < 6; ++step) {
            all.push_back(logits[0][-1].argmax().item<int64_t>());
            logits = (*model)->lm().forward(at::tensor({all.back()}, ids.options()).unsqueeze(0), &cache, true);
            const auto everything = at::tensor(all, ids.options()).unsqueeze(0);
            const double diff =
                (logits[0][-1] - test::referenceGpt2(tiny, everything)[0][-1]).abs().max().item<double>();
            QVERIFY2(diff < 1e-4, qPrintable(QStringLiteral("step %1: %2").arg(step).arg(diff)));
        }
    }
    SamplingOptions o;
    o.greedy = true;
    o.maxNewTokens = 6;
    o.stopTokenIds = {-1}; // never stop early
    auto result = generate(**model, {std::vector<int64_t>(all.begin(), all.begin() + promptLength)}, o);
    QVERIFY2(result, result ? "" : result.error().toString().c_str());
    QCOMPARE(result->sequences[0].tokens, std::vector<int64_t>(all.begin() + promptLength, all.end()));
    at::set_num_threads(previous);
}

// Greedy decode of the model in dir at bfloat16, one token a step with the cache, twice from the
// same random prompt (a load error thrown): through our products
// (inference mode) and through libtorch's (grad mode on, which linearRows and Conv1D leave to
// libtorch). The tokens of each, and per step the largest |difference| of the logits and the
// largest |logit| of libtorch's.
struct BothWays {
    std::vector<int64_t> ours, theirs;
    std::vector<std::pair<double, double>> differences;
};

static BothWays decodeBothWays(const std::string &dir, int64_t vocab, uint64_t promptSeed, int steps)
{
    LoadOptions options;
    options.dispatch.computeDType = "bfloat16";
    auto loaded = InferenceModel::load(dir, options);
    if (!loaded)
        throw std::runtime_error(loaded.error().toString());
    InferenceModel &model = **loaded;
    at::manual_seed(promptSeed);
    const at::Tensor prompt = at::randint(vocab, {1, 5}, at::TensorOptions().dtype(at::kLong));
    const auto decode = [&](std::vector<at::Tensor> &logits) {
        KVCache cache;
        std::vector<int64_t> tokens;
        at::Tensor last = model.lm().forward(prompt, &cache).select(1, -1);
        for (int step = 0; step < steps; ++step) {
            const int64_t next = last.argmax(-1).item<int64_t>();
            tokens.push_back(next);
            at::Tensor stepLogits = model.lm().forward(at::full({1, 1}, next, at::kLong), &cache).select(1, 0);
            logits.push_back(stepLogits.detach().clone().to(at::kFloat));
            last = stepLogits;
        }
        return tokens;
    };
    BothWays both;
    std::vector<at::Tensor> ours, theirs;
    {
        at::InferenceMode guard;
        both.ours = decode(ours);
    }
    {
        at::AutoGradMode grad(true);
        both.theirs = decode(theirs);
    }
    for (size_t i = 0; i < ours.size(); ++i)
        both.differences.emplace_back((ours[i] - theirs[i]).abs().max().item<double>(),
                                      theirs[i].abs().max().item<double>());
    return both;
}

// Every kernel ISA this CPU runs, the portable loop first.
static const uint16_t *bf16Bits(const at::Tensor &t)
{
    return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
}

// The bfloat16 column product (gemvcolumns.h, GPT-2's Conv1D at bfloat16) against the exact
// product (float64) of the same bfloat16 values: the float32 sum within (k + 2) u * (sum_i |x_i|
// |w_ij| + |b_j|), then at most half a bfloat16 ulp more for the one rounding. A missing bias or a
// truncating rounding fails. Conv1D::forward on one bfloat16 row, no grad, equals the kernel bit for
// bit (libtorch's addmm, which sums in another order, differs in some outputs of [1024 x 1000]).
void tst_Dispatch::bf16ColumnKernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(17);
    const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 2304}, {1024, 1000}, {40, 203}, {9, 7}, {3, 16}};
    for (const auto &[k, n] : shapes) {
        const at::Tensor w = at::randn({k, n}).to(at::kBFloat16), x = at::randn({k}).to(at::kBFloat16);
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}).to(at::kBFloat16) : at::Tensor();
            const auto [want, bound] = exactProduct(x, w, bias);
            const QString what = QStringLiteral("[%1 x %2] bias %3").arg(k).arg(n).arg(withBias);
            for (KernelIsa isa : test::isasThisCpuRuns()) {
                at::Tensor out = at::full({n}, std::nan("")).to(at::kBFloat16);
                bf16::gemvColumns(isa, bf16Bits(x), k, bf16Bits(w), withBias ? bf16Bits(bias) : nullptr, n,
                                  reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>()));
                const at::Tensor got = out.to(at::kDouble);
                const at::Tensor halfUlp = at::exp2(at::floor(at::log2(at::maximum(want.abs(), got.abs()))) - 8);
                const double excess = ((got - want).abs() - bound - halfUlp).max().item<double>();
                QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + ": " + QString::number(excess)));
            }
            if (withBias) { // Conv1D always has a bias
                Conv1D layer(k, n);
                layer.parameters()[0]->value = w;
                layer.parameters()[1]->value = bias;
                const at::Tensor got = layer.forward(x.view({1, 1, k}));
                QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, 1, n}));
                at::Tensor kernel = at::empty({n}, at::kBFloat16);
                bf16::gemvColumns(hostKernelIsa(), bf16Bits(x), k, bf16Bits(w), bf16Bits(bias), n,
                                  reinterpret_cast<uint16_t *>(kernel.data_ptr<at::BFloat16>()));
                QVERIFY2(at::equal(got.view({n}), kernel), qPrintable(what + " Conv1D::forward"));
            }
        }
    }
    at::set_num_threads(previous);
}

// Greedy decode of a tiny bfloat16 GPT-2, one token a step with the cache: through Conv1D's
// column product (inference mode) and through libtorch's addmm (grad mode on, which Conv1D leaves
// to libtorch). Both round float32 sums once to bfloat16, in different orders, so a value on the
// way may differ by a bfloat16 ulp: the tokens must be the same, and every step's logits within one
// bfloat16 ulp of the step's largest (measured identical; a truncating rounding, 2^-6 of it, fails).
void tst_Dispatch::bf16Gpt2DecodeMatchesLibtorchAddmm()
{
    const std::string dir = m_dir.filePath("bf16gpt2").toStdString();
    auto tiny = test::writeTinyModel(dir, "gpt2", 37, at::kBFloat16);
    const BothWays both = decodeBothWays(dir, tiny.vocab, 5, 12);
    QCOMPARE(both.ours, both.theirs);
    double largest = 0;
    for (size_t i = 0; i < both.differences.size(); ++i) {
        const auto [diff, size] = both.differences[i];
        QVERIFY2(diff <= std::exp2(std::floor(std::log2(size)) - 7),
                 qPrintable(QString("step %1: max |diff| %2 of %3").arg(i).arg(diff).arg(size)));
        largest = std::max(largest, diff / size);
    }
    qInfo("largest logit difference %g of the step's largest logit", largest);
}

// Every element of the bfloat16 decode product (bf16gemv.h) against the exact product (float64) of
// the same bfloat16 values: the float32 sum within (k + 2) u * (sum_i |x_i| |w_i| + |b|), as for
// float32, and then the one rounding to bfloat16, at most half a bfloat16 ulp of the output more.
// A missing bias or a rounding that truncates (off by up to a whole ulp) fails. Also through
// linearRows with bfloat16 x, weight and bias, which must equal the kernel's output bit for bit.
// The dot-pair kernel (bf16pairs.h; exact products, float32 sums, so the same bound) on its own
// where the CPU has avx512_bf16, with bfloat16 x at Avx512 (which bf16::gemv gives it) and through
// linearRows; odd k and k < 32 end in its masked tail. Where the CPU lacks the flag its case is
// skipped (said by a qInfo) and the other kernels are still checked.
void tst_Dispatch::bf16KernelEqualsTheExactProduct()
{
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    at::manual_seed(13);
    const std::vector<KernelIsa> isas = test::isasThisCpuRuns();
    const bool pairs = bf16::pairsRunHere();
    QVERIFY(bf16::pairsRunWith(cpuFlags("avx512f avx512bw avx512_bf16")));
    QVERIFY(!bf16::pairsRunWith(cpuFlags("avx512f avx512bw avx512_vnni")));
    if (!pairs)
        qInfo("the dot-pair kernel is not checked: this CPU's /proc/cpuinfo flags lack avx512_bf16");
    const auto bits = [](const at::Tensor &t) {
        return reinterpret_cast<const uint16_t *>(t.data_ptr<at::BFloat16>());
    };
    // 37 x 4103: rows of at least every ISA's kOneStreamRowBytes, read four side by side also for one
    // row of x.
    const std::vector<std::pair<int64_t, int64_t>> shapes{{203, 1029}, {64, 48},   {7, 3},
                                                          {9, 40},     {1030, 17}, {37, 4103}};
    for (const auto &[n, k] : shapes) {
        const at::Tensor w = at::randn({n, k}).to(at::kBFloat16);
        for (const bool withBias : {false, true}) {
            const at::Tensor bias = withBias ? at::randn({n}).to(at::kBFloat16) : at::Tensor();
            for (int64_t rows : {1, 2, 3, 4, 5}) {
                const at::Tensor x = at::randn({rows, k}).to(at::kBFloat16);
                const auto [want, bound] = exactProduct(x, w.t(), bias);
                const QString what =
                    QStringLiteral("[%1 x %2], %3 rows, bias %4").arg(n).arg(k).arg(rows).arg(withBias);
                const auto excessOf = [&](const at::Tensor &out) {
                    const at::Tensor got = out.to(at::kDouble);
                    const at::Tensor halfUlp = at::exp2(at::floor(at::log2(at::maximum(want.abs(), got.abs()))) - 8);
                    return ((got - want).abs() - bound - halfUlp).max().item<double>();
                };
                const at::Tensor xf = x.to(at::kFloat);
                for (KernelIsa isa : isas) {
                    for (const bool wideX : {false, true}) {
                        at::Tensor out = at::full({rows, n}, std::nan("")).to(at::kBFloat16);
                        auto *o = reinterpret_cast<uint16_t *>(out.data_ptr<at::BFloat16>());
                        if (wideX)
                            bf16::gemv(isa, xf.data_ptr<float>(), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                                       o);
                        else
                            bf16::gemv(isa, bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n, o);
                        const double excess = excessOf(out);
                        QVERIFY2(excess <= 0, qPrintable(what + " " + kernelIsaName(isa) + " float x " +
                                                         QString::number(wideX) + ": " + QString::number(excess)));
                    }
                }
                at::Tensor paired = at::full({rows, n}, std::nan("")).to(at::kBFloat16);
                if (pairs) {
                    bf16::gemvPairs(bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                                    reinterpret_cast<uint16_t *>(paired.data_ptr<at::BFloat16>()));
                    const double excess = excessOf(paired);
                    QVERIFY2(excess <= 0, qPrintable(what + " dot pairs: " + QString::number(excess)));
                }
                // A block's input, [1, rows, k]: one row (a decode step) through our kernel on every
                // CPU, more (a prompt) where libtorch's bfloat16 GEMM has no instructions of its own.
                if (rows == 1 || !bf16GemmHere()) {
                    const at::Tensor got = linearRows(x.view({1, rows, k}), w, bias);
                    QCOMPARE(dtypeName(got.scalar_type()), dtypeName(at::kBFloat16));
                    QCOMPARE(got.sizes().vec(), (std::vector<int64_t>{1, rows, n}));
                    at::Tensor kernel = at::empty({rows, n}, at::kBFloat16);
                    bf16::gemv(hostKernelIsa(), bits(x), rows, k, bits(w), withBias ? bits(bias) : nullptr, n,
                               reinterpret_cast<uint16_t *>(kernel.data_ptr<at::BFloat16>()));
                    QVERIFY2(at::equal(got.view({rows, n}), kernel), qPrintable(what + " linearRows"));
                    if (pairs) // the decode path on this CPU is the dot-pair kernel
                        QVERIFY2(at::equal(got.view({rows, n}), paired), qPrintable(what + " linearRows dot pairs"));
                }
            }
        }
    }
    at::set_num_threads(previous);
}

// Greedy decode of a tiny bfloat16 Llama, one token a step with the cache: through linearRows' GEMV
// (inference mode) and through at::linear (grad mode on, which linearRows leaves to libtorch).
// Both round float32 sums once to bfloat16 but sum in different orders, so a logit may differ by
// one bfloat16 ulp: the tokens must be the same, and every step's logits within 2^-6 of their size.
void tst_Dispatch::bf16DecodeMatchesLibtorchLinear()
{
    const std::string dir = m_dir.filePath("bf16decode").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 21, at::kBFloat16, false);
    const BothWays both = decodeBothWays(dir, tiny.vocab, 4, 12);
    QCOMPARE(both.ours, both.theirs);
    double largest = 0;
    for (size_t i = 0; i < both.differences.size(); ++i) {
        const auto [diff, size] = both.differences[i];
        QVERIFY2(diff <= std::ldexp(size, -6),
                 qPrintable(QString("step %1: max |diff| %2 of %3").arg(i).arg(diff).arg(size)));
        largest = std::max(largest, diff / size);
    }
    qInfo("largest logit difference %g of the step's largest logit", largest);
}

// sharedPieces returns once every piece is done, not when every helper has started: with libtorch's
// inter-op threads (where its helpers run) all held by other tasks, the caller does every piece
// and returns; a helper that starts afterwards runs nothing. Inside OneThreadedOps, parallelPieces
// (the int8 and 4-bit products) shares its pieces the same way.
void tst_Dispatch::sharedPiecesDoNotWaitForAHeldHelper()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::atomic<bool> release{false};
    std::atomic<int> held{0}, finished{0};
    const int pool = at::get_num_interop_threads();
    for (int i = 0; i < pool; ++i)
        at::launch([&] {
            ++held;
            while (!release.load())
                std::this_thread::sleep_for(std::chrono::milliseconds(1));
            ++finished;
        });
    QTRY_COMPARE_WITH_TIMEOUT(held.load(), pool, 10000);
    const pthread_t caller = pthread_self();
    std::vector<std::atomic<int>> seen(1000);
    std::atomic<int> elsewhere{0};
    inference::sharedPieces(1000, 4, 8, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i)
            ++seen[size_t(i)];
        if (!pthread_equal(pthread_self(), caller))
            ++elsewhere;
    });
    for (const auto &count : seen)
        QCOMPARE(count.load(), 1);
    QCOMPARE(elsewhere.load(), 0);
    release = true;
    QTRY_COMPARE_WITH_TIMEOUT(finished.load(), pool, 10000);
    { // one-sequence decode: libtorch's team at 1 thread, the int8 and 4-bit products still in pieces for 2
        OneThreadedOps decode;
        QCOMPARE(at::get_num_threads(), 1);
        std::atomic<int> pieces{0};
        inference::parallelPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
        QCOMPARE(pieces.load(), 8);
    }
    QCOMPARE(at::get_num_threads(), 2);
    at::set_num_threads(previous);
}

// A scope for more threads than ever before starts new helpers, and the product posted right after
// is shared with them too: every piece waits (up to 10 s in all) until each of the 6 threads is in
// one, which only happens when the helpers started a moment ago take pieces of it. (A helper that
// took "the product already there when it started" as seen would leave the first one to the others;
// the pinned-threads test then waited 80 s for its helper.)
void tst_Dispatch::newHelpersTakeTheFirstProduct()
{
    constexpr int kTeam = 6; // more than any other test here sets
    const int previous = at::get_num_threads();
    at::set_num_threads(kTeam);
    std::mutex mutex;
    std::set<pthread_t> threads;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    {
        OneThreadedOps decode;
        inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) {
            {
                std::lock_guard<std::mutex> lock(mutex);
                threads.insert(pthread_self());
            }
            for (;;) {
                {
                    std::lock_guard<std::mutex> lock(mutex);
                    if (int(threads.size()) >= kTeam)
                        return;
                }
                if (std::chrono::steady_clock::now() > deadline)
                    return;
                std::this_thread::yield();
            }
        });
    }
    at::set_num_threads(previous);
    QCOMPARE(int(threads.size()), kTeam);
}

// The CPU time (ns, /proc/self/task/*/schedstat) of this process's threads named `name`, and how
// many there are.
static std::pair<int64_t, int> threadsCpuNs(const std::string &name)
{
    std::pair<int64_t, int> total{0, 0};
    for (const auto &task : std::filesystem::directory_iterator("/proc/self/task")) {
        std::ifstream comm(task.path() / "comm"), stat(task.path() / "schedstat");
        std::string named;
        int64_t ns = 0;
        if (std::getline(comm, named) && named == name && (stat >> ns)) {
            total.first += ns;
            ++total.second;
        }
    }
    return total;
}

// Inside OneThreadedOps the products' helpers are threads of their own ("accel-helper") that spin
// for a moment after a product for the next one, then sleep: their CPU time stops growing a moment
// after the last product, inside the scope and after it (a helper that kept spinning would add up
// to the 300 ms watched).
void tst_Dispatch::sharedPiecesHelpersSleepOutsideTheirSpin()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::atomic<int> pieces{0};
    auto watched = [](int64_t &grown) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // past any spin
        const auto before = threadsCpuNs("accel-helper");
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const auto after = threadsCpuNs("accel-helper");
        QVERIFY(before.second >= 1);
        QCOMPARE(after.second, before.second);
        grown = after.first - before.first;
    };
    int64_t inside = -1, after = -1;
    {
        OneThreadedOps decode;
        for (int i = 0; i < 100; ++i)
            inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
        watched(inside);
        for (int i = 0; i < 100; ++i)
            inference::sharedPieces(1000, 4, 8, [&](int64_t, int64_t) { ++pieces; });
    }
    watched(after);
    QCOMPARE(pieces.load(), 200 * 8);
    qInfo("helpers' CPU time over 300 ms without products: %.2f ms in the scope, %.2f ms after it", inside / 1e6,
          after / 1e6);
    QVERIFY(inside >= 0 && inside < 30000000);
    QVERIFY(after >= 0 && after < 30000000);
    at::set_num_threads(previous);
}

// The choice between our kernel and libtorch's _weight_int8pack_mm: the CPU's flags name our ISA,
// the measurement decides (ours on a tie), libtorch refusing a dtype leaves ours, and the reason
// says so. On this machine, a real measurement on a real weight.
void tst_Dispatch::int8KernelChosenByFlagsAndMeasurement()
{
    auto times = [](double ours, double libtorch) {
        return [ours, libtorch] {
            Int8KernelTimes t;
            t.oursMs = ours;
            t.libtorchMs = libtorch;
            t.bytes = 85000000;
            t.layers = 48;
            if (libtorch < 0)
                t.libtorchError = "expected A to be bfloat16";
            return t;
        };
    };
    auto choice = chooseInt8Kernel(cpuFlags("avx512f"), "float32", times(2, 3));
    QVERIFY(choice.kernel == Int8Kernel::Ours);
    QCOMPARE(choice.name, std::string("ours-avx512"));
    QVERIFY2(choice.reason.find("CPU flags avx512f avx2 fma: ours-avx512; 1-row float32 products through 48 int8 "
                                "layer(s) (85.00 MB) 2.00 ms ours, 3.00 ms libtorch's _weight_int8pack_mm") !=
                 std::string::npos,
             choice.reason.c_str());
    choice = chooseInt8Kernel(cpuFlags(""), "bfloat16", times(3, 2));
    QVERIFY(choice.kernel == Int8Kernel::Libtorch);
    QCOMPARE(choice.name, std::string("libtorch-_weight_int8pack_mm"));
    QCOMPARE(choice.dtype, std::string("bfloat16"));
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2, 2)).name, std::string("ours-avx2")); // a tie
    // libtorch's kernel 1.1x faster: within the margin of a measurement, ours stays.
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2.2, 2)).name, std::string("ours-avx2"));
    QCOMPARE(chooseInt8Kernel(cpuFlags(""), "float32", times(2.4, 2)).name,
             std::string("libtorch-_weight_int8pack_mm"));
    const std::string noFma = "processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 avx avx2\n\n";
    choice = chooseInt8Kernel(hardware::parseCpuInfo(noFma).flags, "float32", times(9, -1)); // the portable loop
    QVERIFY(choice.kernel == Int8Kernel::Ours);
    QCOMPARE(choice.name, std::string("ours-portable"));
    QVERIFY2(choice.reason.find("refused them (expected A to be bfloat16)") != std::string::npos,
             choice.reason.c_str());
    // This machine.
    c10::InferenceMode guard;
    std::string cpuinfo;
    if (QFile file(QStringLiteral("/proc/cpuinfo")); file.open(QIODevice::ReadOnly))
        cpuinfo = file.readAll().toStdString();
    const QuantizedWeight weight = QuantizedWeight::quantizeInt8(at::randn({512, 256}));
    for (const char *dtype : {"float32", "bfloat16"}) {
        choice = chooseInt8Kernel(hardware::parseCpuInfo(cpuinfo).flags, dtype, [&] {
            return measureInt8Kernels({&weight, &weight}, dtype);
        });
        qInfo("this CPU, %s: %s (%s)", dtype, choice.name.c_str(), choice.reason.c_str());
        QCOMPARE(choice.times.layers, size_t(2));
        QCOMPARE(choice.times.bytes, 2 * weight.bytes());
        QVERIFY(choice.times.oursMs > 0);
        QCOMPARE(choice.kernel == Int8Kernel::Libtorch,
                 choice.times.libtorchMs >= 0 &&
                     choice.times.libtorchMs * inference::kMeasuredChoiceMargin <= choice.times.oursMs);
    }
}

QTEST_GUILESS_MAIN(tst_Dispatch)
#include "tst_dispatch.moc"
