// Generation: greedy equals step-by-step argmax of full recomputation, seeded sampling is
// reproducible, top-k 1 is greedy, the repetition penalty follows Transformers' rule, stop tokens
// and stop strings end a sequence, batches equal single runs, cancellation stops at once.
// Speculative decoding with a draft model gives greedy's tokens for any draft and proposal count,
// keeps every proposal of a draft that is the model itself, stops where greedy stops, and refuses
// sampling, a repetition penalty and another vocabulary by name.
#include "tests/inference/tinymodels.h"

#include "core/inference/causallm.h"
#include "core/inference/generator.h"
#include "core/inference/inferencemodel.h"
#include "core/inference/intraopteam.h"

#include <ATen/Parallel.h>

#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::inference;

class tst_Generator : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void greedyMatchesRecomputation();
    void seededSamplingIsReproducible();
    void topKOneIsGreedy();
    void repetitionPenaltyFollowsTransformers();
    void stopTokenEndsSequence();
    void stopStringCutsText();
    void streamingDecoderMatchesFullDecoder();
    void batchEqualsSingleRuns();
    void cancellationStopsAtOnce();
    void badInputsAreNamed();
    void draftGivesGreedysTokens();
    void draftThatIsTheModelIsAlwaysAccepted();
    void draftStopsWhereGreedyStops();
    void draftRefusals();
    void chunkedPrefillGivesTheSameTokens();
    void oneSequenceDecodesWithOneThreadedOps();

private:
    QTemporaryDir m_dir;
    test::TinyModel m_tiny;
    std::unique_ptr<InferenceModel> m_model;
    const std::vector<int64_t> m_prompt{3, 17, 5, 40, 22};
};

void tst_Generator::initTestCase()
{
    const std::string dir = m_dir.filePath("llama").toStdString();
    m_tiny = test::writeTinyModel(dir, "llama", 21);
    auto model = InferenceModel::load(dir);
    QVERIFY2(model, model ? "" : model.error().toString().c_str());
    m_model = std::move(*model);
}

static SamplingOptions greedy(int tokens)
{
    SamplingOptions o;
    o.greedy = true;
    o.maxNewTokens = tokens;
    o.stopTokenIds = {-1}; // never stop early
    return o;
}

void tst_Generator::greedyMatchesRecomputation()
{
    auto result = generate(*m_model, {m_prompt}, greedy(12));
    QVERIFY2(result, result ? "" : result.error().toString().c_str());
    const auto &tokens = result->sequences[0].tokens;
    QCOMPARE(tokens.size(), size_t(12));
    QCOMPARE(result->sequences[0].stopReason, std::string("length"));
    std::vector<int64_t> all = m_prompt;
    at::InferenceMode guard;
    for (int64_t t : tokens) {
        auto ids = at::tensor(all, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
        auto logits = test::referenceLlama(m_tiny, ids);
        QCOMPARE(logits[0][-1].argmax().item<int64_t>(), t);
        all.push_back(t);
    }
    QVERIFY(result->stats.timeToFirstTokenMs > 0);
    QVERIFY(result->stats.decodeTokensPerSecond > 0);
    QVERIFY(result->stats.prefillTokensPerSecond > 0);
}

void tst_Generator::seededSamplingIsReproducible()
{
    SamplingOptions o;
    o.maxNewTokens = 20;
    o.temperature = 1.5;
    o.topK = 20;
    o.topP = 0.95;
    o.stopTokenIds = {-1};
    o.seed = 1234;
    auto a = generate(*m_model, {m_prompt}, o);
    auto b = generate(*m_model, {m_prompt}, o);
    QVERIFY(a && b);
    QCOMPARE(a->sequences[0].tokens, b->sequences[0].tokens);
    o.seed = 99;
    auto c = generate(*m_model, {m_prompt}, o);
    QVERIFY(c);
    QVERIFY(c->sequences[0].tokens != a->sequences[0].tokens);
    auto g = generate(*m_model, {m_prompt}, greedy(20));
    QVERIFY(g->sequences[0].tokens != a->sequences[0].tokens); // sampling is not greedy at T=1.5
}

void tst_Generator::topKOneIsGreedy()
{
    SamplingOptions o = greedy(10);
    o.greedy = false;
    o.temperature = 3.0;
    o.topK = 1;
    o.seed = 5;
    auto sampled = generate(*m_model, {m_prompt}, o);
    auto reference = generate(*m_model, {m_prompt}, greedy(10));
    QVERIFY(sampled && reference);
    QCOMPARE(sampled->sequences[0].tokens, reference->sequences[0].tokens);
}

void tst_Generator::repetitionPenaltyFollowsTransformers()
{
    SamplingOptions o = greedy(1);
    o.repetitionPenalty = 50.0;
    auto result = generate(*m_model, {m_prompt}, o);
    QVERIFY(result);
    at::InferenceMode guard;
    auto ids = at::tensor(m_prompt, at::TensorOptions().dtype(at::kLong)).unsqueeze(0);
    auto logits = test::referenceLlama(m_tiny, ids)[0][-1].clone();
    for (int64_t t : m_prompt) {
        const float v = logits[t].item<float>();
        logits[t] = v < 0 ? v * 50.0f : v / 50.0f;
    }
    QCOMPARE(result->sequences[0].tokens.front(), logits.argmax().item<int64_t>());
}

void tst_Generator::stopTokenEndsSequence()
{
    auto free = generate(*m_model, {m_prompt}, greedy(10));
    QVERIFY(free);
    SamplingOptions o = greedy(10);
    o.stopTokenIds = {free->sequences[0].tokens[3]};
    auto stopped = generate(*m_model, {m_prompt}, o);
    QVERIFY(stopped);
    const auto &tokens = stopped->sequences[0].tokens;
    QVERIFY(tokens.size() <= 4);
    QCOMPARE(tokens.back(), o.stopTokenIds[0]);
    QCOMPARE(stopped->sequences[0].stopReason, std::string("stop_token"));
}

void tst_Generator::stopStringCutsText()
{
    // A decoder spelling each token as a letter: the text is known from the tokens.
    Decoder letters = [](const std::vector<int64_t> &tokens) {
        std::string s;
        for (int64_t t : tokens)
            s += static_cast<char>('A' + t % 26);
        return s;
    };
    auto free = generate(*m_model, {m_prompt}, greedy(10), {}, letters);
    QVERIFY(free);
    const std::string full = free->sequences[0].text;
    QCOMPARE(full.size(), size_t(10));
    SamplingOptions o = greedy(10);
    o.stopStrings = {full.substr(4, 2)};
    std::string streamed;
    auto stopped = generate(
        *m_model, {m_prompt}, o,
        [&](size_t, int64_t, const std::string &piece) {
            streamed += piece;
            return true;
        },
        letters);
    QVERIFY(stopped);
    const std::string &text = stopped->sequences[0].text;
    QCOMPARE(stopped->sequences[0].stopReason, std::string("stop_string"));
    QCOMPARE(text, full.substr(0, full.find(o.stopStrings[0])));
    QVERIFY(stopped->sequences[0].tokens.size() <= 6);
    QCOMPARE(streamed, text);
}

void tst_Generator::streamingDecoderMatchesFullDecoder()
{
    Decoder letters = [](const std::vector<int64_t> &tokens) {
        std::string s;
        for (int64_t t : tokens)
            s += static_cast<char>('A' + t % 26);
        return s;
    };
    // A stream that holds every other letter back, like a character whose bytes span two tokens.
    int streams = 0;
    Decoder stream = Decoder::streaming([&streams] {
        ++streams;
        auto pending = std::make_shared<std::string>();
        return Decoder::Stream{[pending](int64_t id) {
                                   pending->push_back(static_cast<char>('A' + id % 26));
                                   if (pending->size() < 2)
                                       return std::string();
                                   std::string out;
                                   out.swap(*pending);
                                   return out;
                               },
                               [pending] {
                                   std::string out;
                                   out.swap(*pending);
                                   return out;
                               }};
    });
    for (int tokens : {9, 10}) {
        auto full = generate(*m_model, {m_prompt}, greedy(tokens), {}, letters);
        std::string streamed;
        auto pieces = generate(
            *m_model, {m_prompt}, greedy(tokens),
            [&](size_t, int64_t, const std::string &piece) {
                streamed += piece;
                return true;
            },
            stream);
        QVERIFY(full && pieces);
        QCOMPARE(pieces->sequences[0].text, full->sequences[0].text); // finish() adds the held-back letter
        QCOMPARE(streamed, full->sequences[0].text);
    }
    QCOMPARE(streams, 2); // one stream per sequence and generation

    auto free = generate(*m_model, {m_prompt}, greedy(10), {}, letters);
    QVERIFY(free);
    SamplingOptions o = greedy(10);
    o.stopStrings = {free->sequences[0].text.substr(5, 3)};
    auto a = generate(*m_model, {m_prompt}, o, {}, letters);
    auto b = generate(*m_model, {m_prompt}, o, {}, stream);
    QVERIFY(a && b);
    QCOMPARE(b->sequences[0].stopReason, std::string("stop_string"));
    QCOMPARE(b->sequences[0].text, a->sequences[0].text);
    QVERIFY(b->sequences[0].tokens.size() <= a->sequences[0].tokens.size() + 1); // at most one held-back token later
}

void tst_Generator::batchEqualsSingleRuns()
{
    const std::vector<int64_t> other{9, 9, 1, 2, 60};
    auto both = generate(*m_model, {m_prompt, other}, greedy(8));
    auto first = generate(*m_model, {m_prompt}, greedy(8));
    auto second = generate(*m_model, {other}, greedy(8));
    QVERIFY(both && first && second);
    QCOMPARE(both->sequences.size(), size_t(2));
    QCOMPARE(both->sequences[0].tokens, first->sequences[0].tokens);
    QCOMPARE(both->sequences[1].tokens, second->sequences[0].tokens);
}

void tst_Generator::cancellationStopsAtOnce()
{
    int calls = 0;
    auto result =
        generate(*m_model, {m_prompt}, greedy(50), [&](size_t, int64_t, const std::string &) { return ++calls < 3; });
    QVERIFY(result);
    QVERIFY(result->cancelled);
    QCOMPARE(calls, 3);
    QCOMPARE(result->sequences[0].tokens.size(), size_t(3));
    QCOMPARE(result->sequences[0].stopReason, std::string("cancelled"));
}

void tst_Generator::badInputsAreNamed()
{
    auto outOfVocab = generate(*m_model, {{1, 2, 999}}, greedy(2));
    QVERIFY(!outOfVocab);
    QVERIFY(outOfVocab.error().message.find("token id 999") != std::string::npos);
    auto ragged = generate(*m_model, {{1, 2}, {1}}, greedy(2));
    QVERIFY(!ragged);
    SamplingOptions o = greedy(2);
    o.stopStrings = {"x"};
    auto noDecoder = generate(*m_model, {m_prompt}, o);
    QVERIFY(!noDecoder);
    QVERIFY(noDecoder.error().message.find("tokenizer") != std::string::npos);
}

void tst_Generator::draftGivesGreedysTokens()
{
    const std::string dir = m_dir.filePath("draft").toStdString();
    test::writeTinyModel(dir, "llama", 99); // same family vocabulary, other weights: proposals often wrong
    auto draft = InferenceModel::load(dir);
    QVERIFY(draft);
    auto plain = generate(*m_model, {m_prompt}, greedy(24));
    QVERIFY(plain);
    for (int tokens : {1, 3, 7}) {
        auto fast = generate(*m_model, {m_prompt}, greedy(24), {}, {}, DraftModel{draft->get(), tokens});
        QVERIFY2(fast, fast ? "" : fast.error().toString().c_str());
        QCOMPARE(fast->sequences[0].tokens, plain->sequences[0].tokens);
        QCOMPARE(fast->sequences[0].stopReason, std::string("length"));
        QCOMPARE(fast->stats.newTokens, 24);
        QVERIFY(fast->stats.draftProposed > 0);
        QVERIFY(fast->stats.draftAccepted < fast->stats.draftProposed); // another model disagrees somewhere
    }
}

void tst_Generator::draftThatIsTheModelIsAlwaysAccepted()
{
    auto plain = generate(*m_model, {m_prompt}, greedy(17));
    QVERIFY(plain);
    auto self = generate(*m_model, {m_prompt}, greedy(17), {}, {}, DraftModel{m_model.get(), 5});
    QVERIFY(self);
    QCOMPARE(self->sequences[0].tokens, plain->sequences[0].tokens);
    QVERIFY(self->stats.draftProposed >= 16 / 6); // 16 tokens after the first, at most 6 per forward
    QCOMPARE(self->stats.draftAccepted, self->stats.draftProposed);
}

void tst_Generator::draftStopsWhereGreedyStops()
{
    auto plain = generate(*m_model, {m_prompt}, greedy(20));
    QVERIFY(plain);
    SamplingOptions o = greedy(20);
    o.stopTokenIds = {plain->sequences[0].tokens[9]};
    auto stopped = generate(*m_model, {m_prompt}, o);
    QVERIFY(stopped);
    QCOMPARE(stopped->sequences[0].stopReason, std::string("stop_token"));
    std::vector<int64_t> streamed;
    auto fast = generate(
        *m_model, {m_prompt}, o,
        [&](size_t, int64_t token, const std::string &) {
            streamed.push_back(token);
            return true;
        },
        {}, DraftModel{m_model.get(), 6});
    QVERIFY(fast);
    QCOMPARE(fast->sequences[0].tokens, stopped->sequences[0].tokens);
    QCOMPARE(fast->sequences[0].stopReason, std::string("stop_token"));
    QCOMPARE(streamed, stopped->sequences[0].tokens); // nothing past the stop reaches the callback
}

void tst_Generator::draftRefusals()
{
    auto expectRefusal = [&](const SamplingOptions &o, const DraftModel &draft, const char *needle) {
        auto r = generate(*m_model, {m_prompt}, o, {}, {}, draft);
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::InvalidInput);
        QVERIFY2(r.error().message.find(needle) != std::string::npos, r.error().message.c_str());
    };
    SamplingOptions sampled = greedy(4);
    sampled.greedy = false;
    sampled.temperature = 0.7;
    expectRefusal(sampled, {m_model.get(), 4}, "--greedy");
    SamplingOptions penalty = greedy(4);
    penalty.repetitionPenalty = 1.3;
    expectRefusal(penalty, {m_model.get(), 4}, "repetition penalty");
    expectRefusal(greedy(4), {m_model.get(), 0}, "draft tokens: expected 1 to 64; got 0");
    const std::string dir = m_dir.filePath("gpt2-draft").toStdString();
    test::writeTinyModel(dir, "gpt2", 5);
    auto other = InferenceModel::load(dir);
    QVERIFY(other);
    expectRefusal(greedy(4), {other->get(), 4}, "vocab_size 53 differs from the model's 61");
}

// The prompt through the cache 1, 2 or 3 tokens at a time (and a chunk longer than the prompt) gives
// the tokens of the whole prompt at once, in both attention implementations (llama, gpt2).
void tst_Generator::chunkedPrefillGivesTheSameTokens()
{
    const std::string dir = m_dir.filePath("gpt2-chunks").toStdString();
    test::writeTinyModel(dir, "gpt2", 12);
    auto gpt2 = InferenceModel::load(dir);
    QVERIFY(gpt2);
    const std::vector<int64_t> prompt{3, 17, 5, 40, 22, 9, 31};
    for (InferenceModel *model : {m_model.get(), gpt2->get()}) {
        auto whole = generate(*model, {prompt}, greedy(10));
        QVERIFY(whole);
        for (int chunk : {1, 2, 3, 100}) {
            SamplingOptions o = greedy(10);
            o.prefillChunk = chunk;
            auto chunked = generate(*model, {prompt}, o);
            QVERIFY2(chunked, chunked ? "" : chunked.error().toString().c_str());
            QCOMPARE(chunked->sequences[0].tokens, whole->sequences[0].tokens);
        }
    }
    SamplingOptions negative = greedy(2);
    negative.prefillChunk = -1;
    auto refused = generate(*m_model, {prompt}, negative);
    QVERIFY(!refused);
    QVERIFY2(refused.error().message.find("prefill chunk: expected 0") != std::string::npos,
             refused.error().message.c_str());
}

// One sequence decodes with libtorch's intra-op threads at 1 and the weight products shared among
// the threads set before (intraopteam.h's OneThreadedOps), which come back after; a batch keeps
// the team for its GEMMs. Tokens are those of the same decode with the team.
void tst_Generator::oneSequenceDecodesWithOneThreadedOps()
{
    const int previous = at::get_num_threads();
    at::set_num_threads(2);
    std::vector<std::pair<int, int>> seen; // (intra-op threads, shared threads) at each token
    const TokenCallback record = [&](size_t, int64_t, const std::string &) {
        seen.emplace_back(at::get_num_threads(), sharedThreads());
        return true;
    };
    auto one = generate(*m_model, {m_prompt}, greedy(6), record);
    QVERIFY(one);
    QCOMPARE(int(seen.size()), 6);
    for (const auto &[intraOp, shared] : seen) {
        QCOMPARE(intraOp, 1);
        QCOMPARE(shared, 2);
    }
    QCOMPARE(at::get_num_threads(), 2);
    QCOMPARE(sharedThreads(), 2);
    seen.clear();
    auto batch = generate(*m_model, {m_prompt, m_prompt}, greedy(6), record);
    QVERIFY(batch);
    QVERIFY(!seen.empty());
    for (const auto &[intraOp, shared] : seen)
        QCOMPARE(intraOp, 2);
    QCOMPARE(batch->sequences[0].tokens, one->sequences[0].tokens);
    at::set_num_threads(previous);
}

QTEST_GUILESS_MAIN(tst_Generator)
#include "tst_generator.moc"
