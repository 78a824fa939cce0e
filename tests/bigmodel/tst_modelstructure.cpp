// Model structure without weights: analytic trees from config.json for every supported family,
// and trees from generated checkpoints (order, class names, tied lm_head, GPT-2 prefixes).
#include "core/bigmodel/modelloader.h"
#include "core/bigmodel/modulesizes.h"
#include "core/bigmodel/safetensorswriter.h"
#include "core/common/fileutil.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <map>

using namespace accel;
using namespace accel::bigmodel;

namespace {

// Writes every tensor of `s` (zero bytes) except those in `skip`, plus config.json.
bool writeCheckpointFor(const ModelStructure &s, const std::string &folder, const std::string &config,
                        const std::vector<std::string> &skip, uint64_t maxShard = 1 << 30,
                        const std::string &strip = {})
{
    std::filesystem::create_directories(folder);
    std::vector<TensorToWrite> tensors;
    static std::string zeros(1 << 20, '\0');
    for (const ModelTensor &t : s.tensors()) {
        if (t.buffer || !t.aliasOf.empty() || std::find(skip.begin(), skip.end(), t.name) != skip.end())
            continue;
        const uint64_t bytes = t.elements * static_cast<uint64_t>(dtypeBits(t.dtype)) / 8;
        std::string name = t.name;
        if (!strip.empty() && name.rfind(strip, 0) == 0)
            name = name.substr(strip.size());
        tensors.push_back({name, t.dtype, t.shape, zeros.data(), bytes});
    }
    return writeShardedSafetensors(folder, tensors, maxShard).has_value() &&
           fileutil::writeFileAtomic(folder + "/config.json", config).has_value();
}

const char *kTinyLlama = R"({"model_type":"llama","hidden_size":8,"intermediate_size":16,"num_attention_heads":2,
  "num_key_value_heads":1,"num_hidden_layers":11,"vocab_size":20,"torch_dtype":"bfloat16"})";

} // namespace

class tst_ModelStructure : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;

private Q_SLOTS:
    void analyticFamilies_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<qulonglong>("parameters");
        QTest::addColumn<QString>("noSplit");
        // GPT-2 small: the published 124,439,808 parameters (lm_head tied to wte).
        QTest::newRow("gpt2") << R"({"model_type":"gpt2"})" << qulonglong(124439808) << "GPT2Block";
        // Llama-2-7B: 6,738,415,616.
        QTest::newRow("llama") << R"({"model_type":"llama","hidden_size":4096,"intermediate_size":11008,
            "num_attention_heads":32,"num_hidden_layers":32,"vocab_size":32000})"
                               << qulonglong(6738415616) << "LlamaDecoderLayer";
        // Mistral-7B-v0.1: 7,241,732,096.
        QTest::newRow("mistral") << R"({"model_type":"mistral","hidden_size":4096,"intermediate_size":14336,
            "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":32000})"
                                 << qulonglong(7241732096) << "MistralDecoderLayer";
        // Qwen2-0.5B: 494,032,768 (q/k/v biases, tied embeddings).
        QTest::newRow("qwen2") << R"({"model_type":"qwen2","hidden_size":896,"intermediate_size":4864,
            "num_attention_heads":14,"num_hidden_layers":24,"num_key_value_heads":2,"vocab_size":151936,
            "tie_word_embeddings":true})"
                               << qulonglong(494032768) << "Qwen2DecoderLayer";
        // Mixtral-8x7B: 46,702,792,704.
        QTest::newRow("mixtral") << R"({"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,
            "num_attention_heads":32,"num_hidden_layers":32,"num_key_value_heads":8,"vocab_size":32000,
            "num_local_experts":8,"num_experts_per_tok":2})"
                                 << qulonglong(46702792704) << "MixtralDecoderLayer";
    }

    void analyticFamilies()
    {
        QFETCH(QString, config);
        QFETCH(qulonglong, parameters);
        QFETCH(QString, noSplit);
        auto parsed = parseModelConfig(config.toStdString(), "config.json");
        QVERIFY2(parsed, parsed ? "" : parsed.error().toString().c_str());
        const ModelStructure s = buildModelStructure(*parsed);
        QCOMPARE(qulonglong(s.parameterCount()), parameters);
        QCOMPARE(s.noSplitClasses, std::vector<std::string>{noSplit.toStdString()});
        // The block class is on the blocks.
        const std::string block = parsed->modelType == "gpt2" ? "transformer.h.0" : "model.layers.0";
        QCOMPARE(s.module(block)->className, noSplit.toStdString());
    }

    void unknownFamilyIsExplained()
    {
        auto parsed = parseModelConfig(R"({"model_type":"bert"})", "/m/config.json");
        QVERIFY(!parsed);
        QCOMPARE(
            parsed.error().toString(),
            std::string("/m/config.json: model_type \"bert\" cannot be planned from its config alone "
                        "(supported: gpt2, llama, mistral, qwen2, mixtral, gemma, gemma2, qwen2_moe, qwen3, phi3); "
                        "point at a checkpoint instead"));
    }

    void checkpointWithoutLmHeadIsTied()
    {
        auto config = parseModelConfig(kTinyLlama, "config.json");
        QVERIFY(config);
        const ModelStructure analytic = buildModelStructure(*config);
        const std::string folder = (m_dir.path() + "/tiny-llama").toStdString();
        // Sharded so the shards hold the layers in name order (layers.10 before layers.2).
        QVERIFY(writeCheckpointFor(analytic, folder, kTinyLlama, {"lm_head.weight"}, 600));
        auto model = loadModel(folder);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        QVERIFY(model->checkpoint);
        QVERIFY(model->checkpoint->isSharded());
        const ModelStructure &s = model->structure;
        QCOMPARE(s.family, std::string("llama"));
        QCOMPARE(s.tensor("lm_head.weight")->aliasOf, std::string("model.embed_tokens.weight"));
        QCOMPARE(s.tiedGroups(),
                 (std::vector<std::vector<std::string>>{{"lm_head.weight", "model.embed_tokens.weight"}}));
        // Registration order: embed, layers 0..10, norm, rotary, lm_head; class names kept.
        const ModuleInfo *layers = s.module("model.layers");
        QCOMPARE(layers->children.size(), size_t(11));
        QCOMPARE(layers->children[2], std::string("model.layers.2"));
        QCOMPARE(layers->children[10], std::string("model.layers.10"));
        QCOMPARE(s.module("")->children, (std::vector<std::string>{"model", "lm_head"}));
        QCOMPARE(s.module("model.layers.3")->className, std::string("LlamaDecoderLayer"));
        QCOMPARE(s.tensor("model.layers.3.mlp.up_proj.weight")->dtype, DType::BF16);
        // The checkpoint lacks lm_head, config did not tie: parameters = analytic minus lm_head.
        QCOMPARE(s.parameterCount(), analytic.parameterCount() - 20 * 8);
        // The rotary buffer the checkpoint does not store is still counted.
        QVERIFY(s.tensor("model.rotary_emb.inv_freq") && s.tensor("model.rotary_emb.inv_freq")->buffer);
    }

    // Found by tst_devicemapcompat: transformers' Qwen2 defaults to 32 key/value heads when
    // config.json has no num_key_value_heads (Llama: the head count; Mistral, Mixtral: 8).
    void absentKeyValueHeadsTakeTransformersDefaults()
    {
        for (const auto &[type, heads] : std::vector<std::pair<std::string, int64_t>>{
                 {"qwen2", 32}, {"llama", 4}, {"mistral", 8}, {"mixtral", 8}}) {
            auto parsed = parseModelConfig(
                R"({"model_type":")" + type + R"(","hidden_size":64,"num_attention_heads":4})", "config.json");
            QVERIFY(parsed);
            QCOMPARE(parsed->numKeyValueHeads, heads);
        }
    }

    // transformers 5 builds Mixtral's experts as one module with 3-D tensors; the Hub's checkpoint
    // names keep one module per expert.
    void mixtralLayouts()
    {
        auto parsed = parseModelConfig(R"({"model_type":"mixtral","hidden_size":64,"intermediate_size":32,
            "num_attention_heads":4,"num_hidden_layers":1,"num_local_experts":4,"vocab_size":100})",
                                       "config.json");
        QVERIFY(parsed);
        const ModelStructure fused = buildModelStructure(*parsed);
        QCOMPARE(fused.tensor("model.layers.0.mlp.experts.gate_up_proj")->shape, (std::vector<int64_t>{4, 64, 64}));
        QCOMPARE(fused.module("model.layers.0.mlp.experts")->className, std::string("MixtralExperts"));
        QCOMPARE(fused.module("model.layers.0.mlp.experts")->children,
                 std::vector<std::string>{"model.layers.0.mlp.experts.act_fn"});
        const ModelStructure perExpert = buildModelStructure(*parsed, std::nullopt, MixtralLayout::PerExpert);
        QVERIFY(perExpert.tensor("model.layers.0.block_sparse_moe.experts.3.w2.weight"));
        QCOMPARE(fused.parameterCount(), perExpert.parameterCount());
    }

    void gpt2HubNamesGetTheirPrefix()
    {
        const std::string config =
            R"({"model_type":"gpt2","n_embd":8,"n_layer":2,"n_head":2,"n_positions":16,"vocab_size":30})";
        auto parsed = parseModelConfig(config, "config.json");
        QVERIFY(parsed);
        const ModelStructure analytic = buildModelStructure(*parsed);
        const std::string folder = (m_dir.path() + "/tiny-gpt2").toStdString();
        QVERIFY(writeCheckpointFor(analytic, folder, config, {"lm_head.weight"}, 1 << 30, "transformer."));
        auto model = loadModel(folder + "/model.safetensors");
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        const ModelStructure &s = model->structure;
        QVERIFY(s.tensor("transformer.h.1.mlp.c_fc.weight"));
        QCOMPARE(s.module("transformer.h.1")->className, std::string("GPT2Block"));
        QCOMPARE(s.tensor("lm_head.weight")->aliasOf, std::string("transformer.wte.weight"));
        QCOMPARE(s.parameterCount(), analytic.parameterCount());
    }

    // Modules that own no tensor (dropouts, activations) are in no checkpoint, but transformers'
    // named_modules() has them and Accelerate's device map names them when it splits their parent:
    // a checkpoint with config.json gets every module of the family's tree, in its order.
    void checkpointGetsTheFamilysModulesWithoutTensors_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<QString>("strip");
        QTest::newRow("gpt2") << R"({"model_type":"gpt2","n_embd":8,"n_layer":2,"n_head":2,"n_positions":16,
            "vocab_size":30})"
                              << "transformer.";
        QTest::newRow("llama") << QString::fromLatin1(kTinyLlama) << "";
        QTest::newRow("mixtral") << R"({"model_type":"mixtral","hidden_size":16,"intermediate_size":8,
            "num_attention_heads":2,"num_hidden_layers":2,"num_local_experts":2,"vocab_size":30})"
                                 << "";
    }

    void checkpointGetsTheFamilysModulesWithoutTensors()
    {
        QFETCH(QString, config);
        QFETCH(QString, strip);
        auto parsed = parseModelConfig(config.toStdString(), "config.json");
        QVERIFY(parsed);
        const ModelStructure analytic = buildModelStructure(*parsed);
        const std::string folder = (m_dir.path() + "/without-tensors-" + QTest::currentDataTag()).toStdString();
        QVERIFY(writeCheckpointFor(analytic, folder, config.toStdString(), {"lm_head.weight"}, 1 << 30,
                                   strip.toStdString()));
        auto model = loadModel(folder);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        const ModelStructure &s = model->structure;
        int withoutTensors = 0;
        for (const ModuleInfo &m : analytic.modules()) {
            const ModuleInfo *ours = s.module(m.name);
            QVERIFY2(ours, m.name.c_str());
            QCOMPARE(ours->className, m.className);
            QCOMPARE(ours->children, m.children);
            const bool holds = std::any_of(analytic.tensors().begin(), analytic.tensors().end(),
                                           [&](const ModelTensor &t) { return t.name.rfind(m.name + ".", 0) == 0; });
            withoutTensors += holds || m.name.empty() ? 0 : 1;
        }
        QCOMPARE(s.modules().size(), analytic.modules().size());
        // gpt2: drop + 2 x (attn_dropout, resid_dropout, act, dropout); llama: 11 act_fn;
        // mixtral: 2 experts' act_fn.
        const std::map<std::string, int> expected{{"gpt2", 9}, {"llama", 11}, {"mixtral", 2}};
        QCOMPARE(withoutTensors, expected.at(QTest::currentDataTag()));
        if (QTest::currentDataTag() == std::string("gpt2"))
            QCOMPARE(s.module("transformer")->children,
                     (std::vector<std::string>{"transformer.wte", "transformer.wpe", "transformer.drop",
                                               "transformer.h", "transformer.ln_f"}));
    }

    void configAloneAndFolderWithoutWeights()
    {
        const std::string folder = (m_dir.path() + "/config-only").toStdString();
        std::filesystem::create_directories(folder);
        QVERIFY(fileutil::writeFileAtomic(folder + "/config.json", kTinyLlama));
        for (const std::string &path : {folder, folder + "/config.json"}) {
            auto model = loadModel(path);
            QVERIFY2(model, model ? "" : model.error().toString().c_str());
            QVERIFY(!model->checkpoint);
            QCOMPARE(model->name, std::string("config-only"));
            QCOMPARE(model->structure.module("model.layers")->children.size(), size_t(11));
        }
        auto missing = loadModel(folder + "/nothing");
        QVERIFY(!missing);
        QCOMPARE(missing.error().code, ErrorCode::NotFound);
    }

    void checkpointWithoutConfigUsesNaturalOrder()
    {
        const std::string folder = (m_dir.path() + "/no-config").toStdString();
        std::filesystem::create_directories(folder);
        static const char data[64] = {};
        QVERIFY(writeSafetensors(folder + "/model.safetensors", {{"lm_head.weight", DType::F32, {2}, data, 8},
                                                                 {"blocks.10.w", DType::F32, {2}, data, 8},
                                                                 {"blocks.2.w", DType::F32, {2}, data, 8},
                                                                 {"embed.weight", DType::F32, {2}, data, 8}}));
        auto model = loadModel(folder);
        QVERIFY2(model, model ? "" : model.error().toString().c_str());
        QCOMPARE(model->structure.module("")->children, (std::vector<std::string>{"blocks", "embed", "lm_head"}));
        QCOMPARE(model->structure.module("blocks")->children, (std::vector<std::string>{"blocks.2", "blocks.10"}));
    }
};

QTEST_GUILESS_MAIN(tst_ModelStructure)
#include "tst_modelstructure.moc"
