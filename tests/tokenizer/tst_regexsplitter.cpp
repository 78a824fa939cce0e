// The tokenizer's text helpers: PCRE2 splitting with each split behaviour, regex replace, the
// GPT-2 pattern, lossy UTF-8 repair and the byte-level alphabet.
#include "core/tokenizer/bytelevel.h"
#include "core/tokenizer/regexsplitter.h"
#include "core/tokenizer/utf8.h"

#include <QTest>

using accel::tokenizer::RegexSplitter;
using accel::tokenizer::SplitBehavior;
using Pieces = std::vector<std::string>;

namespace {

Pieces split(const char *pattern, const char *text, SplitBehavior behavior, bool invert = false)
{
    auto regex = RegexSplitter::create(pattern);
    if (!regex)
        qFatal("%s", regex.error().message.c_str());
    Pieces out;
    regex->split(text, out, behavior, invert);
    return out;
}

} // namespace

class tst_RegexSplitter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void behaviours();
    void gpt2Pattern();
    void replace();
    void utf8Repair();
    void byteLevelAlphabet();
};

void tst_RegexSplitter::behaviours()
{
    const char *text = "the--final--countdown";
    QCOMPARE(split("-", text, SplitBehavior::Removed), (Pieces{"the", "final", "countdown"}));
    QCOMPARE(split("-", text, SplitBehavior::Isolated), (Pieces{"the", "-", "-", "final", "-", "-", "countdown"}));
    QCOMPARE(split("-", text, SplitBehavior::MergedWithPrevious), (Pieces{"the-", "-", "final-", "-", "countdown"}));
    QCOMPARE(split("-", text, SplitBehavior::MergedWithNext), (Pieces{"the", "-", "-final", "-", "-countdown"}));
    QCOMPARE(split("-", text, SplitBehavior::Contiguous), (Pieces{"the", "--", "final", "--", "countdown"}));
    // invert: the words are the delimiters, so Removed keeps the dashes.
    QCOMPARE(split("[a-z]+", text, SplitBehavior::Removed, true), (Pieces{"the", "final", "countdown"}));
    QCOMPARE(split("[a-z]+", text, SplitBehavior::Removed, false), (Pieces{"--", "--"}));
    // Metaspace-style: "▁" starts a word; runs of it stay separate.
    QCOMPARE(split("▁", "▁Hey▁▁▁friend", SplitBehavior::MergedWithNext), (Pieces{"▁Hey", "▁", "▁", "▁friend"}));
    QCOMPARE(split("x", "", SplitBehavior::Isolated), Pieces{});
}

void tst_RegexSplitter::gpt2Pattern()
{
    auto regex = RegexSplitter::create(RegexSplitter::gpt2Pattern());
    QVERIFY(regex.has_value());
    Pieces out;
    regex->split("Hello world's 42 日本!!  \n\tend  ", out);
    // "  \n\t" before "end": \s+(?!\S) backs off one character, and the "\t" is a piece of its own
    // (only a plain space joins the following word).
    QCOMPARE(out, (Pieces{"Hello", " world", "'s", " 42", " 日本", "!!", "  \n", "\t", "end", "  "}));
}

void tst_RegexSplitter::replace()
{
    auto regex = RegexSplitter::create(" {2,}");
    QVERIFY(regex.has_value());
    QCOMPARE(regex->replace("a  b   c d", " "), std::string("a b c d"));
    QCOMPARE(regex->replace("", " "), std::string());
    // "$1" is taken literally, not as a group reference.
    QCOMPARE(regex->replace("x  y", "$1"), std::string("x$1y"));
}

void tst_RegexSplitter::utf8Repair()
{
    using namespace accel::tokenizer;
    const std::string fffd = "\xEF\xBF\xBD";
    QCOMPARE(utf8::toValid("plain é 日本 😀"), std::string("plain é 日本 😀"));
    // A truncated three-byte character is one U+FFFD; two stray continuation bytes are two.
    QCOMPARE(utf8::toValid("a\xE6\x97"), "a" + fffd);
    QCOMPARE(utf8::toValid("\x97\xA5z"), fffd + fffd + "z");
    // Overlong and surrogate encodings are invalid.
    QCOMPARE(utf8::toValid("\xC0\xAF"), fffd + fffd);
    QCOMPARE(utf8::toValid("\xED\xA0\x80"), fffd + fffd + fffd);
    QVERIFY(utf8::isValid("日本"));
    QVERIFY(!utf8::isValid("\xF0\x9F\x98"));
    QVERIFY(utf8::endsWithReplacement("ok" + fffd));
}

void tst_RegexSplitter::byteLevelAlphabet()
{
    using namespace accel::tokenizer;
    QCOMPARE(bytelevel::charForByte(' '), std::string("Ġ"));
    QCOMPARE(bytelevel::charForByte('\n'), std::string("Ċ"));
    QCOMPARE(bytelevel::charForByte('a'), std::string("a"));
    QCOMPARE(bytelevel::charForByte(0xE6), std::string("æ"));
    std::string all;
    for (int b = 0; b < 256; ++b)
        all.push_back(static_cast<char>(b));
    const auto back = bytelevel::decode(bytelevel::encode(all));
    QVERIFY(back.has_value());
    QVERIFY(*back == all);
    QVERIFY(!bytelevel::decode("日").has_value()); // not in the alphabet
}

QTEST_GUILESS_MAIN(tst_RegexSplitter)
#include "tst_regexsplitter.moc"
