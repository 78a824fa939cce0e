// inferAutoDeviceMap on small hand-built models whose answers are worked out by hand in the
// comments (Accelerate's algorithm, facts 5.2-5.5), and on Llama-2-70B's config.
#include "core/bigmodel/devicemap.h"
#include "core/bigmodel/modelfamilies.h"
#include "core/bigmodel/modulesizes.h"

#include <QtTest>

using namespace accel;
using namespace accel::bigmodel;

namespace {

using Map = std::vector<std::pair<std::string, std::string>>;

// U8 tensors, so bytes = elements and no dtype rule interferes.
//   embed.weight 100 | layers.N.attn.weight 60, layers.N.mlp.weight 40 (N = 0..2, class Block)
//   norm.weight 10   | head.weight 100 (or tied to embed.weight: 0)          total 510 (410 tied)
ModelStructure toyModel(bool tiedHead = false, int layers = 3)
{
    ModelStructure s;
    s.addModule("", "Toy");
    auto add = [&](const std::string &module, const std::string &cls, int64_t bytes) {
        s.addModule(module, cls);
        s.addTensor({module + ".weight", DType::U8, {bytes}, 0, false, {}});
    };
    add("embed", "Embedding", 100);
    s.addModule("layers", "ModuleList");
    for (int i = 0; i < layers; ++i) {
        const std::string p = "layers." + std::to_string(i);
        s.addModule(p, "Block");
        add(p + ".attn", "Linear", 60);
        add(p + ".mlp", "Linear", 40);
    }
    add("norm", "Norm", 10);
    add("head", "Linear", 100);
    if (tiedHead)
        s.tie("head.weight", "embed.weight");
    s.noSplitClasses = {"Block"};
    return s;
}

DeviceMapOptions options(const std::string &maxMemory, DeviceMapStrategy strategy)
{
    DeviceMapOptions o;
    o.maxMemory = *parseMaxMemory(maxMemory);
    o.strategy = strategy;
    return o;
}

} // namespace

class tst_DeviceMap : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void memorySizes()
    {
        QCOMPARE(*parseMemorySize("10GiB"), int64_t(10737418240));
        QCOMPARE(*parseMemorySize("10GB"), int64_t(10000000000));
        QCOMPARE(*parseMemorySize("1.5MiB"), int64_t(1572864));
        QCOMPARE(*parseMemorySize("2KB"), int64_t(2000));
        QCOMPARE(*parseMemorySize("123"), int64_t(123));
        // Accelerate's quirk: a lower-case final b means bits.
        QCOMPARE(*parseMemorySize("10Gb"), int64_t(1250000000));
        QCOMPARE(*parseMemorySize("5gb"), int64_t(625000000));
        QCOMPARE(*parseMemorySize("8mb"), int64_t(1000000));
        QCOMPARE(*parseMemorySize("8gib"), int64_t(8589934592));
        QVERIFY(!parseMemorySize("ten GB"));
        QVERIFY(!parseMemorySize("10TB"));
        QVERIFY(!parseMemorySize("-1GB"));

        auto budgets = parseMaxMemory("cpu=30GiB, disk=1GB,1=1GB,mps=3GB,0=2GB");
        QVERIFY(budgets);
        QCOMPARE(*budgets, (DeviceBudgets{{"0", 2000000000},
                                          {"1", 1000000000},
                                          {"mps", 3000000000},
                                          {"cpu", 32212254720},
                                          {"disk", 1000000000}}));
        auto bad = parseMaxMemory("gpu0=1GB");
        QVERIFY(!bad);
        QCOMPARE(bad.error().message,
                 std::string("max_memory: device \"gpu0\" is not recognized; as in Accelerate, the "
                             "devices are integers (the index of each GPU, XPU, NPU, MLU, MUSA or "
                             "HPU device), mps, cpu and disk"));
        // Accelerate's get_max_memory refuses backend-qualified names: the hint gives the index.
        for (const char *device : {"cuda:0", "xpu:0", "npu:1", "mlu:0", "musa:0", "hpu:0"}) {
            bad = parseMaxMemory(std::string(device) + "=1GB,cpu=2GB");
            QVERIFY(!bad);
            const std::string index(1, std::string(device).back());
            QVERIFY2(
                bad.error().message.find("\"" + std::string(device) + "\" is not recognized") != std::string::npos &&
                    bad.error().message.find("; for " + std::string(device) + " write " + index) != std::string::npos,
                bad.error().message.c_str());
        }
        bad = parseMaxMemory("0=1GB,cpu=2GB,0=3GB");
        QVERIFY(!bad);
        QCOMPARE(bad.error().message, std::string("max_memory: device 0 is given twice"));
        bad = parseMaxMemory("cpu=1GB,cpu=2GB");
        QVERIFY(!bad);
        QCOMPARE(bad.error().message, std::string("max_memory: device cpu is given twice"));

        QCOMPARE(formatAccelerateSize(512), std::string("512 bytes"));
        QCOMPARE(formatAccelerateSize(1536), std::string("1.5 KB"));
        QCOMPARE(formatAccelerateSize(12.0 * 1024 * 1024), std::string("12.0 MB"));
        QCOMPARE(formatAccelerateSize(7.0 * 1024 * 1024 * 1024 / 3), std::string("2.33 GB"));
        // Python's round() on the exact value, ties to even: 72.125 KB is "72.12 KB", not "72.13 KB".
        QCOMPARE(formatAccelerateSize(72.125 * 1024), std::string("72.12 KB"));
    }

    void moduleSizesAndLargestLayer()
    {
        const ModelStructure s = toyModel();
        const ModuleSizes sizes(s, std::nullopt);
        QCOMPARE(sizes.of(""), uint64_t(510));
        QCOMPARE(sizes.of("layers"), uint64_t(300));
        QCOMPARE(sizes.of("layers.1"), uint64_t(100));
        // With Block no-split the layers are 100 each, tied with embed and head.
        auto max = maxLayerSize(rootWorkList(s), s, sizes, {"Block"});
        QCOMPARE(max.size, uint64_t(100));
        QCOMPARE(max.names, (std::vector<std::string>{"embed", "layers.0", "layers.1", "layers.2", "head"}));
        // Without it the leaves are attn (60) and mlp (40): embed and head win.
        max = maxLayerSize(rootWorkList(s), s, sizes, {});
        QCOMPARE(max.names, (std::vector<std::string>{"embed", "head"}));
        // A tied head costs nothing a second time.
        const ModelStructure tied = toyModel(true);
        QCOMPARE(ModuleSizes(tied, std::nullopt).of(""), uint64_t(410));
        QCOMPARE(tied.tiedGroups(), (std::vector<std::vector<std::string>>{{"embed.weight", "head.weight"}}));
    }

    void dtypeRule()
    {
        // Floating tensors count min(target, own); integer tensors keep their size.
        ModelStructure s;
        s.addTensor({"a.weight", DType::F32, {10}, 0, false, {}});
        s.addTensor({"a.ids", DType::I64, {10}, 0, false, {}});
        s.addTensor({"b.weight", DType::BF16, {10}, 0, false, {}});
        const ModuleSizes half(s, *parseTargetDType("float16"));
        QCOMPARE(half.of("a"), uint64_t(20 + 80));
        QCOMPARE(half.of("b"), uint64_t(20));
        const ModuleSizes full(s, *parseTargetDType("float32"));
        QCOMPARE(full.of("b"), uint64_t(20)); // min(4, 2)
        QCOMPARE(ModuleSizes(s, *parseTargetDType("int4")).of("a.weight"), uint64_t(5));
    }

    void sequentialWithNoSplit()
    {
        // Budgets 0=250, 1=250, cpu=1000; largest layer 100 reserved on GPU 0 and cpu.
        // embed (100) fits GPU 0 (budget 250-100=150). layers (300) does not: split into blocks.
        // layers.0: 100+100 > 150 and Block cannot split → GPU 1 (no reserve, 250): layers.0 and
        // layers.1 (200); layers.2 would make 300 → cpu (1000-100): layers.2, norm, head.
        const auto result =
            inferAutoDeviceMap(toyModel(), options("0=250,1=250,cpu=1000", DeviceMapStrategy::Sequential));
        QCOMPARE(result.map, (Map{{"embed", "0"},
                                  {"layers.0", "1"},
                                  {"layers.1", "1"},
                                  {"layers.2", "cpu"},
                                  {"norm", "cpu"},
                                  {"head", "cpu"}}));
        QCOMPARE(result.perDevice,
                 (std::vector<std::pair<std::string, uint64_t>>{{"0", 100}, {"1", 200}, {"cpu", 210}}));
        QCOMPARE(result.largestLayer, uint64_t(100));
        QVERIFY(result.warnings.empty());
    }

    void withoutNoSplitBlocksAreCut()
    {
        // Same budgets, no no-split class: the largest layers are embed and head (100).
        // embed → GPU 0. layers split; layers.0 split again (it is not no-split) into attn 60 and
        // mlp 40; attn: 100+60 > 150 and is a leaf → GPU 1: layers.0.attn, layers.0.mlp, layers.1
        // (200); layers.2 (300 > 250) splits: layers.2.attn 260 > 250 → cpu with the rest.
        auto o = options("0=250,1=250,cpu=1000", DeviceMapStrategy::Sequential);
        o.noSplitClasses = std::vector<std::string>{};
        o.cleanResult = false;
        const auto result = inferAutoDeviceMap(toyModel(), o);
        QCOMPARE(result.map, (Map{{"embed", "0"},
                                  {"layers.0.attn", "1"},
                                  {"layers.0.mlp", "1"},
                                  {"layers.1", "1"},
                                  {"layers.2.attn", "cpu"},
                                  {"layers.2.mlp", "cpu"},
                                  {"norm", "cpu"},
                                  {"head", "cpu"}}));
        // clean_device_map merges layers.0.* and layers.2.* into their parents.
        auto cleaned = result.map;
        cleanDeviceMap(cleaned);
        QCOMPARE(cleaned, (Map{{"embed", "0"},
                               {"layers.0", "1"},
                               {"layers.1", "1"},
                               {"layers.2", "cpu"},
                               {"norm", "cpu"},
                               {"head", "cpu"}}));
    }

    void sequentialEverythingFitsCollapsesToRoot()
    {
        // 510 ≤ 1000 - 100 on GPU 0: every entry lands there and the map collapses to "".
        const auto result =
            inferAutoDeviceMap(toyModel(), options("0=1000,1=1000,cpu=1000", DeviceMapStrategy::Sequential));
        QCOMPARE(result.map, (Map{{"", "0"}}));
    }

    void balanced()
    {
        // get_balanced_memory: 2 GPUs, total 510 → per_gpu 255; buffer = 1.25 × max(first Block
        // = 100, mean of final modules = 510 / 9 = 56) = 125 → 380. GPU 0 = min(380, 1000), the
        // last GPU keeps 1000. Then: embed → 0 (380-100 = 280 room), layers split, layers.0 → 0
        // (200), layers.1 would be 300 > 280 → GPU 1 takes layers.1, layers.2, norm, head.
        for (auto strategy : {DeviceMapStrategy::Auto, DeviceMapStrategy::Balanced}) {
            const auto result = inferAutoDeviceMap(toyModel(), options("0=1000,1=1000,cpu=1000", strategy));
            QCOMPARE(result.budgets, (DeviceBudgets{{"0", 380}, {"1", 1000}, {"cpu", 1000}}));
            QCOMPARE(result.map, (Map{{"embed", "0"},
                                      {"layers.0", "0"},
                                      {"layers.1", "1"},
                                      {"layers.2", "1"},
                                      {"norm", "1"},
                                      {"head", "1"}}));
        }
    }

    void balancedLowZero()
    {
        // 3 GPUs, low_zero: per_gpu = 510 // 2 + 125 = 380; GPU 0 keeps 1000 in the loop, GPU 1 =
        // 380, GPU 2 (last) 1000; then GPU 0 = min(1000, max(0, 510 - (380 + 1000))) = 0.
        // embed cannot go on GPU 0 (0 - 100 reserve) → GPU 1: embed, layers.0, layers.1 (300 ≤
        // 380); layers.2 would be 400 → GPU 2 with norm and head.
        const auto result =
            inferAutoDeviceMap(toyModel(), options("0=1000,1=1000,2=1000,cpu=1000", DeviceMapStrategy::BalancedLow0));
        QCOMPARE(result.budgets, (DeviceBudgets{{"0", 0}, {"1", 380}, {"2", 1000}, {"cpu", 1000}}));
        QCOMPARE(result.map, (Map{{"embed", "1"},
                                  {"layers.0", "1"},
                                  {"layers.1", "1"},
                                  {"layers.2", "2"},
                                  {"norm", "2"},
                                  {"head", "2"}}));
        QCOMPARE(result.warnings.size(), size_t(1));
        QVERIFY(result.warnings[0].find("device 0") != std::string::npos);
    }

    void singleGpuReserveOnlyWithoutUserBudgets()
    {
        // One GPU of 600 bytes from the machine (not typed by the user): ×0.9 → 540.
        auto o = options("0=600,cpu=1000", DeviceMapStrategy::Auto);
        o.userGaveMaxMemory = false;
        QCOMPARE(inferAutoDeviceMap(toyModel(), o).budgets.front().second, int64_t(540));
        o.userGaveMaxMemory = true;
        QCOMPARE(inferAutoDeviceMap(toyModel(), o).budgets.front().second, int64_t(600));
    }

    void tiedWeightsTravelTogether()
    {
        // head.weight is embed.weight. Sizes: total 410, largest layer 100 (embed, blocks).
        // embed with its tie (head adds 0) fits GPU 0 (250-100): embed and head → 0 (100 used).
        // layers (200): the max layer names are gone → recomputed over [norm] = 10, room 240;
        // 300 > 240 → split; max layer back to 100 (room 150): layers.0 → 200 > 150 → cpu
        // (250-100): layers.0; layers.1 with reserve 10 (only norm left): 200 ≤ 240; norm → cpu.
        // Cleaning merges layers.0/1 into "layers", keeping its place.
        const auto result =
            inferAutoDeviceMap(toyModel(true, 2), options("0=250,cpu=250", DeviceMapStrategy::Sequential));
        QCOMPARE(result.map, (Map{{"embed", "0"}, {"head", "0"}, {"layers", "cpu"}, {"norm", "cpu"}}));
        QCOMPARE(result.deviceOf("head.weight"), std::string("0"));
        QCOMPARE(result.deviceOf("layers.1.mlp.weight"), std::string("cpu"));
    }

    void diskOffload()
    {
        // As above with cpu=120: the cpu budget minus the 100 reserve leaves 20, so layers.0 goes
        // on to disk (unlimited), and so does everything after it.
        const auto result =
            inferAutoDeviceMap(toyModel(true, 2), options("0=250,cpu=120", DeviceMapStrategy::Sequential));
        QCOMPARE(result.map, (Map{{"embed", "0"}, {"head", "0"}, {"layers", "disk"}, {"norm", "disk"}}));
        QCOMPARE(result.perDevice, (std::vector<std::pair<std::string, uint64_t>>{{"0", 100}, {"disk", 210}}));
        QCOMPARE(result.warnings.size(), size_t(1));
        QVERIFY(result.warnings[0].find("device cpu") != std::string::npos);
    }

    void fallbackAllocation()
    {
        // GPU 0 = 150 with the 100 reserve leaves 50: embed (100) cannot go there. With
        // fallback_allocation the still-empty GPU looks (breadth first) for a module fitting
        // 150 - max(100, 100) = 50: layers (300) no, norm (10) yes → norm is placed on GPU 0
        // first; embed then moves on to cpu (1000 - 100) with layers (400 in all) and head.
        auto o = options("0=150,cpu=1000", DeviceMapStrategy::Sequential);
        o.fallbackAllocation = true;
        auto result = inferAutoDeviceMap(toyModel(), o);
        QCOMPARE(result.map, (Map{{"norm", "0"}, {"embed", "cpu"}, {"layers", "cpu"}, {"head", "cpu"}}));
        // Without it GPU 0 stays empty and a warning says so.
        o.fallbackAllocation = false;
        result = inferAutoDeviceMap(toyModel(), o);
        QCOMPARE(result.map, (Map{{"", "cpu"}}));
        QCOMPARE(result.warnings.size(), size_t(1));
    }

    void cpuOnly()
    {
        // No GPU: cpu is the only main device. 510 ≤ 1000 - 100 → everything on cpu.
        const auto result = inferAutoDeviceMap(toyModel(), options("cpu=1000", DeviceMapStrategy::Auto));
        QCOMPARE(result.map, (Map{{"", "cpu"}}));
    }

    void llama70bFromConfig()
    {
        const std::string config = R"({"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":8192,
            "intermediate_size":28672,"num_attention_heads":64,"num_hidden_layers":80,"num_key_value_heads":8,
            "vocab_size":32000,"max_position_embeddings":4096,"torch_dtype":"float16","tie_word_embeddings":false})";
        auto parsed = parseModelConfig(config, "config.json");
        QVERIFY(parsed);
        const ModelStructure s = buildModelStructure(*parsed);
        QCOMPARE(s.parameterCount(), uint64_t(68976648192));
        QCOMPARE(s.noSplitClasses, std::vector<std::string>{"LlamaDecoderLayer"});
        // Two 60 GiB GPUs are not enough in float16 (128.5 GiB + reserves): the tail goes to cpu.
        auto o = options("0=60GiB,1=60GiB,cpu=200GiB", DeviceMapStrategy::Auto);
        const auto result = inferAutoDeviceMap(s, o);
        QCOMPARE(result.totalSize, uint64_t(68976648192) * 2 + 2 * 64 * 4); // inv_freq, original_inv_freq
        uint64_t placed = 0;
        for (const auto &[device, bytes] : result.perDevice)
            placed += bytes;
        QCOMPARE(placed, result.totalSize);
        // No decoder layer is cut, every layer has a device, and all three devices are used.
        for (const auto &[name, device] : result.map)
            QVERIFY2(std::count(name.begin(), name.end(), '.') <= 2, name.c_str());
        for (int i = 0; i < 80; ++i)
            QVERIFY(!result.deviceOf("model.layers." + std::to_string(i) + ".mlp.up_proj.weight").empty());
        QCOMPARE(result.perDevice.size(), size_t(3));
        QCOMPARE(result.deviceOf("model.embed_tokens.weight"), std::string("0"));
        QCOMPARE(result.deviceOf("lm_head.weight"), std::string("cpu"));
        QVERIFY(result.perDevice[0].second <= uint64_t(60) << 30);
    }
};

QTEST_GUILESS_MAIN(tst_DeviceMap)
#include "tst_devicemap.moc"
