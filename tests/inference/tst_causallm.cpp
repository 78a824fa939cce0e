// The C++ model families against naive references computed in the test (plain attention, no
// cache), the key/value cache against full recomputation, one-query attention's kernel against
// libtorch's tensor path, and config.json selection.
#include "tests/helpers/dtypename.h"
#include "tests/inference/kernelisas.h"
#include "tests/inference/tinymodels.h"

#include "core/inference/causallm.h"
#include "core/inference/decodeattention.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/layers.h"

#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::inference;

class tst_CausalLM : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void logitsMatchReference_data();
    void logitsMatchReference();
    void cacheMatchesRecomputation_data();
    void cacheMatchesRecomputation();
    void decodeAttentionEqualsTheTensorPath_data();
    void decodeAttentionEqualsTheTensorPath();
    void bf16CheckpointComputedInFloat32();
    void unsupportedModelTypeIsNamed();
    void everyConfigKeyIsReadMeaninglessOrRefused();

private:
    QTemporaryDir m_dir;
};

static at::Tensor sampleIds(int64_t vocab, int64_t batch, int64_t tokens, uint64_t seed)
{
    at::manual_seed(seed);
    return at::randint(vocab, {batch, tokens}, at::TensorOptions().dtype(at::kLong));
}

void tst_CausalLM::logitsMatchReference_data()
{
    QTest::addColumn<QString>("type");
    QTest::addColumn<bool>("tied");
    QTest::addColumn<bool>("noPrefix");
    QTest::newRow("gpt2 tied") << "gpt2" << true << false;
    QTest::newRow("gpt2 untied") << "gpt2" << false << false;
    QTest::newRow("gpt2 keys without transformer.") << "gpt2" << true << true;
    QTest::newRow("llama untied") << "llama" << false << false;
    QTest::newRow("llama tied") << "llama" << true << false;
    QTest::newRow("mistral") << "mistral" << false << false;
    QTest::newRow("qwen2 (qkv bias)") << "qwen2" << true << false;
}

void tst_CausalLM::logitsMatchReference()
{
    QFETCH(QString, type);
    QFETCH(bool, tied);
    QFETCH(bool, noPrefix);
    const std::string dir = m_dir.filePath(QString("ref-%1-%2-%3").arg(type).arg(tied).arg(noPrefix)).toStdString();
    auto tiny = test::writeTinyModel(dir, type.toStdString(), 7, at::kFloat, tied, noPrefix);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    QCOMPARE((*model)->report().unexpectedKeys.size(), size_t(0));
    auto ids = sampleIds(tiny.vocab, 2, 9, 3);
    at::InferenceMode guard;
    auto logits = (*model)->lm().forward(ids, nullptr);
    auto expected = type == "gpt2" ? test::referenceGpt2(tiny, ids) : test::referenceLlama(tiny, ids);
    QCOMPARE(logits.sizes().vec(), expected.sizes().vec());
    const double diff = (logits - expected).abs().max().item<double>();
    QVERIFY2(diff < 1e-4, qPrintable(QString("max |diff| %1").arg(diff)));
    // lastOnly computes the same last row.
    auto last = (*model)->lm().forward(ids, nullptr, true);
    QVERIFY(at::allclose(last.squeeze(1), logits.select(1, 8), 1e-5, 1e-5));
}

void tst_CausalLM::cacheMatchesRecomputation_data()
{
    QTest::addColumn<QString>("type");
    QTest::newRow("gpt2") << "gpt2";
    QTest::newRow("llama") << "llama";
    QTest::newRow("qwen2") << "qwen2";
}

void tst_CausalLM::cacheMatchesRecomputation()
{
    QFETCH(QString, type);
    const std::string dir = m_dir.filePath("cache-" + type).toStdString();
    auto tiny = test::writeTinyModel(dir, type.toStdString(), 11);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    auto &lm = (*model)->lm();
    auto ids = sampleIds(tiny.vocab, 2, 70, 5); // past the cache's first capacity (64)
    at::InferenceMode guard;
    auto full = lm.forward(ids, nullptr);
    KVCache cache;
    auto prefill = lm.forward(ids.narrow(1, 0, 6), &cache);
    QVERIFY(at::allclose(prefill, full.narrow(1, 0, 6), 1e-4, 1e-4));
    for (int64_t t = 6; t < ids.size(1); ++t) {
        auto step = lm.forward(ids.narrow(1, t, 1), &cache);
        const double diff = (step.squeeze(1) - full.select(1, t)).abs().max().item<double>();
        QVERIFY2(diff < 1e-4, qPrintable(QString("position %1: max |diff| %2").arg(t).arg(diff)));
    }
    QCOMPARE(cache.length(), ids.size(1));
}

void tst_CausalLM::decodeAttentionEqualsTheTensorPath_data()
{
    QTest::addColumn<int>("type");
    QTest::addColumn<int>("heads");
    QTest::addColumn<int>("kvHeads");
    QTest::addColumn<int>("dim");
    QTest::addColumn<int>("keys");
    QTest::addColumn<double>("scale");
    QTest::addColumn<double>("softcap");
    QTest::addColumn<int>("window");
    for (const at::ScalarType type : {at::kFloat, at::kBFloat16}) {
        const std::string name = test::dtypeName(type).toStdString();
        const int t = int(type);
        QTest::newRow((name + " gpt2-like heads").c_str()) << t << 4 << 4 << 64 << 37 << 0.0 << 0.0 << 0;
        QTest::newRow((name + " grouped, a row of 24").c_str()) << t << 6 << 2 << 24 << 5 << 0.0 << 0.0 << 0;
        QTest::newRow((name + " scaled, soft-capped, windowed").c_str()) << t << 4 << 2 << 32 << 40 << 0.3 << 5.0 << 16;
        QTest::newRow((name + " one key").c_str()) << t << 2 << 1 << 16 << 1 << 0.0 << 0.0 << 0;
    }
}

// One query per sequence (a decode step) without autograd goes through decodeattention.h's kernel:
// its output equals libtorch's tensor path (taken with autograd on) within float32's rounding (1e-5
// of the largest output) or, in bfloat16, bit for bit but for rare ties (below), at every
// instruction set this CPU runs; at the host's, causalAttention's own result bit for bit. The
// cache is a view of a longer one, as KVCache::append returns it.
void tst_CausalLM::decodeAttentionEqualsTheTensorPath()
{
    QFETCH(int, type);
    QFETCH(int, heads);
    QFETCH(int, kvHeads);
    QFETCH(int, dim);
    QFETCH(int, keys);
    QFETCH(double, scale);
    QFETCH(double, softcap);
    QFETCH(int, window);
    const auto dtype = static_cast<at::ScalarType>(type);
    const int64_t batch = 2;
    at::manual_seed(7);
    const at::Tensor q = at::randn({batch, heads, 1, dim}).to(dtype);
    const at::Tensor k = at::randn({batch, kvHeads, keys + 7, dim}).to(dtype).narrow(2, 0, keys);
    const at::Tensor v = at::randn({batch, kvHeads, keys + 7, dim}).to(dtype).narrow(2, 0, keys);
    AttentionOptions options;
    options.scale = scale;
    options.softcap = softcap;
    options.window = window;
    at::Tensor expected, fused;
    {
        at::AutoGradMode grad(true);
        expected = causalAttention(q, k, v, options).to(at::kFloat);
    }
    {
        at::NoGradGuard noGrad;
        fused = causalAttention(q, k, v, options);
    }
    QCOMPARE(fused.sizes().vec(), expected.sizes().vec());
    QCOMPARE(test::dtypeName(fused.scalar_type()), test::dtypeName(dtype));
    // bfloat16 rounds where libtorch does, so its outputs are libtorch's bit for bit but for a rare
    // tie the summation order tips: at most one output in a hundred differs (without those
    // roundings half of them do), none by more than 2^-7 of the largest.
    const double tolerance = (dtype == at::kFloat ? 1e-5 : 1.0 / 128) * expected.abs().max().item<double>();
    const int64_t mayDiffer = dtype == at::kFloat ? expected.numel() : expected.numel() / 100;
    const auto within = [&](const at::Tensor &out) {
        const at::Tensor wide = out.to(at::kFloat);
        const double diff = (wide - expected).abs().max().item<double>();
        const int64_t differ = wide.ne(expected).sum().item<int64_t>();
        return std::make_pair(diff <= tolerance && differ <= mayDiffer,
                              QString("max |diff| %1, tolerance %2; %3 of %4 outputs differ, %5 may")
                                  .arg(diff)
                                  .arg(tolerance)
                                  .arg(differ)
                                  .arg(expected.numel())
                                  .arg(mayDiffer));
    };
    const auto [close, message] = within(fused);
    QVERIFY2(close, qPrintable(message));

    const int64_t seen = window > 0 ? std::min<int64_t>(keys, window) : keys; // the window's last keys
    const at::Tensor kSeen = k.narrow(2, keys - seen, seen), vSeen = v.narrow(2, keys - seen, seen);
    const DecodeAttentionShape shape = decodeAttentionShape(q, kSeen, vSeen, attentionScale(options, dim), softcap);
    for (KernelIsa isa : test::isasThisCpuRuns()) {
        at::Tensor out = at::empty_like(q);
        if (dtype == at::kFloat) {
            decodeAttention(isa, shape, q.data_ptr<float>(), kSeen.data_ptr<float>(), vSeen.data_ptr<float>(),
                            out.data_ptr<float>());
        } else {
            const auto bits = [](const at::Tensor &t) {
                return reinterpret_cast<uint16_t *>(t.data_ptr<at::BFloat16>());
            };
            decodeAttention(isa, shape, bits(q), bits(kSeen), bits(vSeen), bits(out));
        }
        const auto [ok, why] = within(out);
        QVERIFY2(ok, qPrintable(QString(kernelIsaName(isa)) + ": " + why));
        if (isa == hostKernelIsa())
            QVERIFY2(at::equal(out, fused), kernelIsaName(isa));
    }
}

void tst_CausalLM::bf16CheckpointComputedInFloat32()
{
    const std::string dir = m_dir.filePath("bf16").toStdString();
    auto tiny = test::writeTinyModel(dir, "llama", 13, at::kBFloat16, false);
    LoadOptions options;
    options.dispatch.computeDType = "float32";
    auto model = InferenceModel::load(dir, options);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    QCOMPARE((*model)->report().zeroCopyTensors, size_t(0)); // every tensor was cast
    auto ids = sampleIds(tiny.vocab, 1, 7, 2);
    at::InferenceMode guard;
    auto diff = ((*model)->lm().forward(ids, nullptr) - test::referenceLlama(tiny, ids)).abs().max().item<double>();
    QVERIFY2(diff < 1e-4, qPrintable(QString("max |diff| %1").arg(diff)));
}

void tst_CausalLM::unsupportedModelTypeIsNamed()
{
    auto config = parseModelConfig(R"({"model_type": "bert", "hidden_size": 8})", "x/config.json");
    QVERIFY(!config);
    QCOMPARE(config.error().code, ErrorCode::Unsupported);
    QVERIFY(config.error().message.find("'bert'") != std::string::npos);
    QVERIFY(config.error().message.find("gpt2, llama, mistral, qwen2") != std::string::npos);
    auto bad = parseModelConfig(R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 12, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 3})",
                                "y/config.json");
    QVERIFY(!bad);
    QVERIFY(bad.error().message.find("num_key_value_heads 3") != std::string::npos);
}

// A config.json key is read, has no part in inference, or is refused by name: what transformers 5
// and a transformers 4 Hub config write loads; an unknown key, remote code and cross-attention are
// errors naming the key; quantization_config is kept for the loader.
void tst_CausalLM::everyConfigKeyIsReadMeaninglessOrRefused()
{
    // GPT2Config().to_json_string() of transformers 5.23, and the keys of the Hub's gpt2 config.json.
    const std::string transformers5 = R"({"activation_function": "gelu_new", "add_cross_attention": false,
        "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "bos_token_id": 50256, "dtype": "float32",
        "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2", "n_embd": 32, "n_head": 4, "n_inner": null, "n_layer": 2, "n_positions": 64,
        "pad_token_id": null, "reorder_and_upcast_attn": false, "resid_pdrop": 0.1,
        "scale_attn_by_inverse_layer_idx": false, "scale_attn_weights": true, "summary_activation": null,
        "summary_first_dropout": 0.1, "summary_proj_to_labels": true, "summary_type": "cls_index",
        "summary_use_proj": true, "tie_word_embeddings": true, "transformers_version": "5.23.0",
        "use_cache": true, "vocab_size": 100})";
    const std::string hub = R"({"model_type": "gpt2", "n_ctx": 1024, "n_embd": 32, "n_head": 4, "n_layer": 2,
        "task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}, "vocab_size": 100})";
    QVERIFY(parseModelConfig(transformers5, "a/config.json"));
    QVERIFY(parseModelConfig(hub, "b/config.json"));
    const std::string llama = R"({"model_type": "llama", "vocab_size": 10, "hidden_size": 16, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 4, "pretraining_tp": 1, "rope_theta": 10000.0)";
    QVERIFY(parseModelConfig(llama + "}", "c/config.json"));
    auto refused = [&](const std::string &text, const std::string &needle) {
        auto config = parseModelConfig(text, "d/config.json");
        QVERIFY2(!config, text.c_str());
        QVERIFY2(config.error().code == ErrorCode::Unsupported, config.error().message.c_str());
        QVERIFY2(config.error().message.find(needle) != std::string::npos, config.error().message.c_str());
    };
    refused(llama + R"(, "logit_scale": 0.5})", R"(key "logit_scale" (0.5) is not known for model_type llama)");
    // quantization_config is the loader's (core/inference/quantization.h, tests/compat/tst_quantcompat).
    auto quantized =
        parseModelConfig(llama + R"(, "quantization_config": {"quant_method": "gptq", "bits": 4}})", "c/config.json");
    QVERIFY(quantized);
    QCOMPARE(quantized->quantizationConfig, std::string(R"({"bits":4,"quant_method":"gptq"})"));
    // transformers runs its own class for a known model_type unless trust_remote_code is given.
    auto remote = parseModelConfig(llama + R"(, "auto_map": {"AutoModelForCausalLM": "m.M"}})", "c/config.json");
    QVERIFY(remote);
    QCOMPARE(remote->warnings.size(), size_t(1));
    QVERIFY2(remote->warnings[0].find("auto_map names the model's own Python code") != std::string::npos,
             remote->warnings[0].c_str());
    refused(llama + R"(, "rope_scaling": {"rope_type": "proportional", "factor": 2.0}})",
            "rope_scaling: rope_type \"proportional\" is not implemented (implemented: default, linear, dynamic, "
            "yarn, longrope, llama3)");
    refused(llama + R"(, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})",
            "rope_parameters.partial_rotary_factor: rotating part of each head is not implemented for model_type "
            "llama");
    refused(llama + R"(, "rope_parameters": {"full_attention": {"rope_type": "default"}}})",
            "rope_parameters: parameters per layer type (\"full_attention\") are not implemented");
    refused(R"({"model_type": "gemma", "vocab_size": 10, "hidden_size": 16, "intermediate_size": 8,
        "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 4, "use_bidirectional_attention": true})",
            "use_bidirectional_attention: true is not implemented");
    auto invalid =
        parseModelConfig(llama + R"(, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})", "e/config.json");
    QVERIFY(!invalid);
    QVERIFY2(invalid.error().message.find("rope_scaling: rope_type llama3 needs \"low_freq_factor\"") !=
                 std::string::npos,
             invalid.error().message.c_str());
    // Read without effect, as transformers reads them: noted, not refused.
    auto noted = parseModelConfig(llama + R"(, "sliding_window": 8, "rope_scaling": {"rope_type": "linear",
        "factor": 2.0, "beta_fast": 3}})",
                                  "f/config.json");
    QVERIFY(noted);
    QCOMPARE(noted->rope.type, std::string("linear"));
    QCOMPARE(noted->warnings.size(), size_t(2));
    QVERIFY2(noted->warnings[0].find("rope_scaling.beta_fast is not read for rope_type linear") != std::string::npos,
             noted->warnings[0].c_str());
    QVERIFY2(noted->warnings[1].find("sliding_window is not read by model_type llama") != std::string::npos,
             noted->warnings[1].c_str());
    // Training-only settings of the MoE router: meaningless for inference, refused by training.
    auto moe = parseModelConfig(R"({"model_type": "mixtral", "vocab_size": 10, "hidden_size": 16,
        "intermediate_size": 8, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
        "num_local_experts": 4,
        "router_jitter_noise": 0.1, "router_aux_loss_coef": 0.02})",
                                "g/config.json");
    QVERIFY(moe);
    QCOMPARE(moe->trainingUnimplemented.size(), size_t(1));
    QVERIFY(moe->trainingUnimplemented[0].rfind("router_jitter_noise 0.1", 0) == 0);
    refused(llama + R"(, "layer_types": ["full_attention", "chunked_attention"]})",
            "layer_types: \"chunked_attention\" is not implemented");
    refused(R"({"model_type": "gpt2", "add_cross_attention": true})", "add_cross_attention: true is not implemented");
    refused(R"({"model_type": "gpt2", "hidden_size": 64})",
            R"(key "hidden_size" (64) is not known for model_type gpt2)");
}

QTEST_GUILESS_MAIN(tst_CausalLM)
#include "tst_causallm.moc"
