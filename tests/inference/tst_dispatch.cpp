// Zero-copy views over mapped safetensors, device-map dispatch with CPU and disk offload (outputs
// equal to the all-in-memory model, weights released after each forward), and Accelerate's
// offload folder written and read back.
#include "tests/inference/tst_dispatch.h"
#include "tests/helpers/dtypename.h"
#include "tests/inference/tinymodels.h"

#include "core/bigmodel/checkpoint.h"
#include "core/bigmodel/offloadfolder.h"
#include "core/hardware/procparsers.h"
#include "core/inference/causallm.h"
#include "core/inference/decodebound.h"
#include "core/inference/floatgemv.h"
#include "core/inference/gemvcolumns.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/intraopteam.h"
#include "core/inference/kernelisa.h"
#include "core/inference/layers.h"
#include "core/inference/offloadhook.h"
#include "core/inference/promptkernel.h"
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

using namespace accel;
using namespace accel::inference;
using accel::test::cpuFlags;
using accel::test::dtypeName;

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

// Up to how many float32 rows our kernels take a product (promptkernel.h): ours up to the last
// measured row count before libtorch's GEMM measured the margin faster, on made-up times; the
// products then take the kernel chosen, bit for bit; on this machine, a real measurement.
void tst_Dispatch::promptRowsChosenByMeasurement()
{
    // ms ours / libtorch's at 4, 16 and 64 rows.
    auto times = [](std::vector<std::pair<double, double>> ms) {
        return [ms] {
            PromptProductTimes t;
            t.product = "products [rows] x 2048 by 2048 x 5632 Linear (copies: 6)";
            for (size_t i = 0; i < ms.size(); ++i)
                t.rows.push_back({kPromptRowsMeasured[i], ms[i].first, ms[i].second});
            return t;
        };
    };
    PromptKernelChoice choice = choosePromptKernel(times({{2, 9}, {5, 10}, {20, 30}})); // the AVX2 EPYC's kind
    QCOMPARE(choice.ourMostRows, int64_t(64));
    QVERIFY2(choice.reason == "float32 products [rows] x 2048 by 2048 x 5632 Linear (copies: 6): 4 rows 2.00 ms ours, "
                              "9.00 ms libtorch's, 16 rows 5.00 ms ours, 10.00 ms libtorch's, 64 rows 20.00 ms ours, "
                              "30.00 ms libtorch's; ours up to 64 rows (libtorch's GEMM was not 1.2x faster at any)",
             choice.reason.c_str());
    choice = choosePromptKernel(times({{2, 3}, {6, 4}, {30, 18}})); // libtorch's 1.5x from 16 rows
    QCOMPARE(choice.ourMostRows, int64_t(4));
    QVERIFY2(choice.reason.find("; ours up to 4 rows, libtorch's GEMM beyond (at least 1.2x faster at 16 rows)") !=
                 std::string::npos,
             choice.reason.c_str());
    QCOMPARE(choosePromptKernel(times({{3, 2}, {6, 4}, {30, 18}})).ourMostRows, int64_t(1)); // from 4 rows
    QCOMPARE(choosePromptKernel(times({{2, 3}, {6, 4}, {20, 30}})).ourMostRows, int64_t(4)); // the first decides
    // 1.1x faster: within the margin of a measurement, ours stays.
    QCOMPARE(choosePromptKernel(times({{2, 3}, {5, 6}, {22, 20}})).ourMostRows, int64_t(64));
    QCOMPARE(choosePromptKernel(times({{2, 3}, {5, 6}, {24, 20}})).ourMostRows, int64_t(16));

    // In use: up to ourKernelMostRows() rows a Linear's and a Conv1D's products are our kernels',
    // beyond it libtorch's, bit for bit.
    c10::InferenceMode guard;
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    const int64_t before = ourKernelMostRows();
    const int64_t k = 300, n = 200;
    const at::Tensor w = at::randn({n, k}), bias = at::randn({n});
    Conv1D conv(k, n);
    conv.parameters()[0]->value = w.t().contiguous();
    conv.parameters()[1]->value = bias;
    useOurKernelMostRows(4);
    QCOMPARE(ourKernelMostRows(), int64_t(4));
    for (const int64_t rows : {int64_t(4), int64_t(5)}) {
        const at::Tensor x = at::randn({rows, k});
        at::Tensor ours = at::empty({rows, n}), oursColumns = at::empty({rows, n});
        f32::gemv(hostKernelIsa(), x.data_ptr<float>(), rows, k, w.data_ptr<float>(), bias.data_ptr<float>(), n,
                  ours.data_ptr<float>());
        f32::gemmColumns(hostKernelIsa(), x.data_ptr<float>(), rows, k, conv.parameters()[0]->value.data_ptr<float>(),
                         bias.data_ptr<float>(), n, oursColumns.data_ptr<float>());
        const at::Tensor linear = linearRows(x, w, bias), columns = conv.forward(x.view({1, rows, k})).view({rows, n});
        const bool oursTaken = rows <= 4;
        QVERIFY2(at::equal(linear, oursTaken ? ours : at::linear(x, w, bias)), qPrintable(QString::number(rows)));
        QVERIFY2(at::equal(columns, oursTaken ? oursColumns : at::addmm(bias, x, conv.parameters()[0]->value)),
                 qPrintable(QString::number(rows)));
    }
    useOurKernelMostRows(before);

    // This machine: the three row counts, both kernels timed, the rule applied to them.
    const PromptKernelChoice here =
        choosePromptKernel([] { return measurePromptProducts(256, 1024, /*conv1d=*/false); });
    qInfo("this CPU: %s", here.reason.c_str());
    // Every count up to the decisive one: the first at which libtorch's was clearly faster, else all.
    QVERIFY(!here.times.rows.empty() && here.times.rows.size() <= std::size(kPromptRowsMeasured));
    for (size_t i = 0; i < here.times.rows.size(); ++i) {
        QCOMPARE(here.times.rows[i].rows, kPromptRowsMeasured[i]);
        QVERIFY(here.times.rows[i].oursMs > 0 && here.times.rows[i].libtorchMs > 0);
        const bool last = i + 1 == here.times.rows.size();
        if (!last || here.times.rows.size() < std::size(kPromptRowsMeasured))
            QCOMPARE(libtorchClearlyFaster(here.times.rows[i]), last);
    }
    QVERIFY2(here.reason.find("products [rows] x 256 by 256 x 1024 Linear (copies: 64)") != std::string::npos,
             here.reason.c_str());
    at::set_num_threads(previous);
}

// --dtype auto: a float32 model is measured on every CPU and switched to bfloat16 only when that
// measured kMeasuredChoiceMargin faster; the reason names the CPU's bfloat16 flags or their absence.
void tst_Dispatch::bfloat16ByMeasurement()
{
    const int previous = at::get_num_threads();
    int measured = 0;
    auto times = [&](double float32Ms, double bfloat16Ms) {
        return [&measured, float32Ms, bfloat16Ms] {
            ++measured;
            return inference::ProductTimes{float32Ms, bfloat16Ms, {}};
        };
    };
    // Without the flags the measurement decides too (our kernels widen bfloat16 in registers), and
    // the reason says the flags are missing.
    auto choice = inference::chooseDecodeDType(cpuFlags("avx2 fma f16c"), "float32", times(2, 1));
    QCOMPARE(choice.dtype, std::string("bfloat16"));
    QCOMPARE(measured, 1);
    QVERIFY2(choice.reason.rfind(inference::kNoBf16GemmFlagsText, 0) == 0 &&
                 choice.reason.find("1.000 ms in bfloat16, 2.000 ms in float32 (bfloat16 chosen") != std::string::npos,
             choice.reason.c_str());
    choice = inference::chooseDecodeDType(cpuFlags("avx2 fma"), "float32", times(1.1, 1));
    QCOMPARE(choice.dtype, std::string("float32"));
    QVERIFY2(choice.reason.find("float32 kept") != std::string::npos, choice.reason.c_str());
    // With them, the measurement decides, and the reason names them.
    measured = 0;
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
    QVERIFY(choice.float32Ms > 0 && choice.bfloat16Ms > 0);
    QCOMPARE(choice.dtype == "bfloat16", choice.float32Ms >= inference::kMeasuredChoiceMargin * choice.bfloat16Ms);
    QCOMPARE(choice.reason.rfind(inference::kNoBf16GemmFlagsText, 0) == 0, !inference::hasBf16GemmFlags(flags));
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

QTEST_GUILESS_MAIN(tst_Dispatch)
// The class's moc output compiled here, with the precompiled libtorch header, and not in AUTOMOC's
// mocs_compilation.cpp, which is compiled without it.
#include "moc_tst_dispatch.cpp"
