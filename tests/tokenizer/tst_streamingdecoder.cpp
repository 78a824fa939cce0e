// Streaming decode: ids arrive one at a time (as during generation); each push returns only text
// whose characters are complete, and the pieces add up to the full decode.
#include "fixtures.h"

#include "core/tokenizer/streamingdecoder.h"

#include <random>

using accel::test::Ids;
using accel::tokenizer::StreamingDecoder;
using accel::tokenizer::Tokenizer;

namespace {

const std::string kReplacement = "\xEF\xBF\xBD";

std::vector<std::string> pushAll(StreamingDecoder &decoder, const Ids &ids)
{
    std::vector<std::string> pieces;
    for (const int32_t id : ids)
        pieces.push_back(decoder.push(id));
    return pieces;
}

std::string joined(const std::vector<std::string> &pieces)
{
    std::string all;
    for (const std::string &piece : pieces)
        all += piece;
    return all;
}

} // namespace

class tst_StreamingDecoder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void llamaByteFallbackHeldBack();
    void llamaConsecutiveMultiByteCharacters();
    void llamaSkipsSpecialTokens();
    void gpt2ByteLevelHeldBack();
    void finishFlushesBrokenBytes();
    void byteFallbackBadByteStreamsOneReplacement();
    void piecesAddUpToDecode_data();
    void piecesAddUpToDecode();
    void randomIds();
};

void tst_StreamingDecoder::llamaByteFallbackHeldBack()
{
    const Tokenizer tokenizer = accel::test::loadFixture("llama-tiny.json");
    StreamingDecoder decoder(tokenizer);
    // "▁the" then 日 then 本 as <0xE6> <0x9C> <0xAC>: nothing shows until the last byte.
    const auto pieces = pushAll(decoder, {269, 274, 233, 159, 175, 272});
    QCOMPARE(pieces, (std::vector<std::string>{"the", "日", "", "", "本", " low"}));
    QCOMPARE(decoder.finish(), std::string());
}

void tst_StreamingDecoder::llamaConsecutiveMultiByteCharacters()
{
    // Two byte-fallback characters in a row (本本): the second must not be glued onto the stray
    // bytes of the first and shown as U+FFFD.
    const Tokenizer tokenizer = accel::test::loadFixture("llama-tiny.json");
    StreamingDecoder decoder(tokenizer);
    const auto pieces = pushAll(decoder, {259, 233, 159, 175, 233, 159, 175, 243, 162, 155, 131});
    QCOMPARE(pieces, (std::vector<std::string>{"", "", "", "本", "", "", "本", "", "", "", "😀"}));
    QCOMPARE(joined(pieces), tokenizer.decode({259, 233, 159, 175, 233, 159, 175, 243, 162, 155, 131}));
}

void tst_StreamingDecoder::llamaSkipsSpecialTokens()
{
    const Tokenizer tokenizer = accel::test::loadFixture("llama-tiny.json");
    StreamingDecoder skipping(tokenizer, true);
    // BOS is skipped and the first word still loses its leading space (Strip decoder).
    QCOMPARE(pushAll(skipping, {1, 269, 2, 272}), (std::vector<std::string>{"", "the", "", " low"}));
    StreamingDecoder keeping(tokenizer, false);
    QCOMPARE(pushAll(keeping, {1, 269, 2, 272}), (std::vector<std::string>{"<s>", " the", "</s>", " low"}));
}

void tst_StreamingDecoder::gpt2ByteLevelHeldBack()
{
    const Tokenizer tokenizer = accel::test::loadFixture("gpt2-tiny.json");
    StreamingDecoder decoder(tokenizer);
    // 日本 byte by byte (E6 97 A5 E6 9C AC), then "😀" (F0 9F 98 80), then " the".
    const auto pieces = pushAll(decoder, {230, 151, 165, 230, 156, 172, 240, 159, 152, 128, 258});
    QCOMPARE(pieces, (std::vector<std::string>{"", "", "日", "", "", "本", "", "", "", "😀", " the"}));
    for (const std::string &piece : pieces)
        QVERIFY(piece.find(kReplacement) == std::string::npos);
}

void tst_StreamingDecoder::finishFlushesBrokenBytes()
{
    const Tokenizer tokenizer = accel::test::loadFixture("gpt2-tiny.json");
    StreamingDecoder decoder(tokenizer);
    QCOMPARE(decoder.push(97), std::string("a"));
    QCOMPARE(decoder.push(230), std::string()); // the start of a three-byte character
    QCOMPARE(decoder.finish(), kReplacement);
    // After finish the decoder starts over.
    QCOMPARE(decoder.push(258), std::string(" the"));

    // Bytes that can never complete a character are let through after a few ids.
    StreamingDecoder stuck(tokenizer);
    std::string all;
    for (int i = 0; i < 8; ++i)
        all += stuck.push(230); // E6 E6 E6 ...: each is a broken start of a character
    all += stuck.finish();
    QCOMPARE(all, tokenizer.decode(Ids(8, 230)));
}

// Regression: a bad byte right after a byte-fallback character joined that character's run, which
// then decoded as one U+FFFD per byte: the stream showed 本 and then four replacement characters.
void tst_StreamingDecoder::byteFallbackBadByteStreamsOneReplacement()
{
    const Tokenizer tokenizer = accel::test::loadFixture("llama-tiny.json");
    auto stream = [&](const Ids &ids) {
        StreamingDecoder decoder(tokenizer);
        const std::string pushed = joined(pushAll(decoder, ids));
        return pushed + decoder.finish();
    };
    // "▁the", 本 as <0xE6> <0x9C> <0xAC>, a stray <0xE6>, "▁low".
    QCOMPARE(stream({269, 233, 159, 175, 233, 272}), "the本" + kReplacement + " low");
    // A stray byte at the very end: one U+FFFD from finish().
    QCOMPARE(stream({269, 233, 159, 175, 233}), "the本" + kReplacement);
    // Two stray bytes between words: two.
    QCOMPARE(stream({269, 233, 159, 175, 233, 233, 272}), "the本" + kReplacement + kReplacement + " low");
    // A stray continuation byte after the character, then another character: 本 <0x9C> 本.
    QCOMPARE(stream({269, 233, 159, 175, 159, 233, 159, 175}), "the本" + kReplacement + "本");
    // The same right after a word: "▁the" <0x9C> 本 "▁low".
    QCOMPARE(stream({269, 159, 233, 159, 175, 272}), "the" + kReplacement + "本 low");
}

void tst_StreamingDecoder::piecesAddUpToDecode_data()
{
    QTest::addColumn<QString>("fixture");
    for (const char *name : {"gpt2-tiny.json", "gpt2-split.json", "llama-tiny.json", "llama-metaspace.json"})
        QTest::newRow(name) << QString::fromLatin1(name);
}

void tst_StreamingDecoder::piecesAddUpToDecode()
{
    QFETCH(QString, fixture);
    const Tokenizer tokenizer = accel::test::loadFixture(fixture.toLatin1().constData());
    const std::string text = "the lower café, 日本語 😀👍🏽!\n\n  the low\tend 123 éé 本本本";
    const Ids ids = tokenizer.encode(text, true);
    StreamingDecoder decoder(tokenizer);
    const auto pieces = pushAll(decoder, ids);
    for (const std::string &piece : pieces)
        QVERIFY2(piece.find(kReplacement) == std::string::npos, piece.c_str());
    QCOMPARE(joined(pieces) + decoder.finish(), tokenizer.decode(ids, true));
}

void tst_StreamingDecoder::randomIds()
{
    // Random ids, many of them byte tokens that never form a character: every piece is valid
    // UTF-8. Byte-level decoding repairs broken bytes locally, so the pieces add up to the full
    // decode exactly. Llama's ByteFallback decoder turns a whole run of byte tokens into U+FFFD
    // when any of it is broken, which a stream that already showed the run's good characters
    // cannot follow: there the pieces must match only when the text has no broken bytes.
    std::mt19937 random(9);
    for (const char *name : {"gpt2-tiny.json", "llama-tiny.json"}) {
        const Tokenizer tokenizer = accel::test::loadFixture(name);
        for (int round = 0; round < 50; ++round) {
            Ids ids(random() % 40);
            for (int32_t &id : ids)
                id = static_cast<int32_t>(random() % 280);
            StreamingDecoder decoder(tokenizer);
            std::string all;
            for (const int32_t id : ids) {
                const std::string piece = decoder.push(id);
                QVERIFY(QString::fromStdString(piece).toStdString() == piece);
                all += piece;
            }
            all += decoder.finish();
            const std::string full = tokenizer.decode(ids, true);
            if (std::string(name) == "gpt2-tiny.json" || full.find(kReplacement) == std::string::npos)
                QCOMPARE(all, full);
            else
                QVERIFY(!all.empty() || full.empty());
        }
    }
}

QTEST_GUILESS_MAIN(tst_StreamingDecoder)
#include "tst_streamingdecoder.moc"
