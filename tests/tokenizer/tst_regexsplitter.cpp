// The tokenizer's text helpers: PCRE2 splitting with each split behaviour, regex replace, the
// GPT-2 pattern, lossy UTF-8 repair and the byte-level alphabet.
#include "core/common/utf8.h"
#include "core/tokenizer/bytelevel.h"
#include "core/tokenizer/regexsplitter.h"

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
    void unicodeTablesNotPcre2s();
    void explicitClassesKeepOtherSyntax();
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

// Regression: letters and digits of Unicode 15 and 16 were no letters or digits to the installed
// PCRE2 (10.42, older tables), and U+180E was whitespace to it; ids then differed from tokenizers.
void tst_RegexSplitter::unicodeTablesNotPcre2s()
{
    const char *gpt2 = RegexSplitter::gpt2Pattern();
    // Todhri (Unicode 16) and Kawi (Unicode 15) letters inside a Latin word stay in the word.
    QCOMPARE(split(gpt2, "a\U000105C0\U000105C1b \U00011F04x", SplitBehavior::Isolated),
             (Pieces{"a\U000105C0\U000105C1b", " \U00011F04x"}));
    // Outlined digits (Unicode 16) are digits.
    QCOMPARE(split(gpt2, "x \U0001CCF01", SplitBehavior::Isolated), (Pieces{"x", " \U0001CCF01"}));
    // U+180E (a format character since Unicode 6.3) is not whitespace: no \s+(?!\S) split.
    QCOMPARE(split(gpt2, "x\u180e\u180ey", SplitBehavior::Isolated), (Pieces{"x", "\u180e\u180e", "y"}));
    QCOMPARE(split("\\s+", "a\u180eb\u00a0c", SplitBehavior::Removed), (Pieces{"a\u180eb", "c"}));
    QCOMPARE(split("\\S+", "a\u180eb\u00a0c", SplitBehavior::Removed), (Pieces{"\u00a0"}));
    QCOMPARE(split("[^\\s]+", "a\u180eb\u3000c", SplitBehavior::Removed), (Pieces{"\u3000"}));
    QCOMPARE(split("\\P{L}+", "ab12\U000105C0", SplitBehavior::Removed), (Pieces{"ab", "\U000105C0"}));
    QCOMPARE(split("[^\\p{L}\\p{N}]+", "ab, \U0001CCF0!", SplitBehavior::Removed), (Pieces{"ab", "\U0001CCF0"}));
    QCOMPARE(split("[\\P{L}]+", "ab12cd", SplitBehavior::Removed), (Pieces{"ab", "cd"}));
    QCOMPARE(split("\\p{^N}+", "ab12cd", SplitBehavior::Removed), (Pieces{"12"}));
    QCOMPARE(split("\\pN+", "ab12cd", SplitBehavior::Removed), (Pieces{"ab", "cd"}));
    QCOMPARE(split("[\\p{Lu}\\p{Lt}]+", "abCDe\u01C5f", SplitBehavior::Removed), (Pieces{"ab", "e", "f"}));
}

void tst_RegexSplitter::explicitClassesKeepOtherSyntax()
{
    // Escapes other than the general categories and \s pass through to PCRE2 unchanged.
    QCOMPARE(split("\\\\s", "a\\sb\\s", SplitBehavior::Removed), (Pieces{"a", "b"}));
    QCOMPARE(split("\\d+", "ab12cd", SplitBehavior::Removed), (Pieces{"ab", "cd"}));
    QCOMPARE(split("\\p{Han}+", "ab日本cd", SplitBehavior::Removed), (Pieces{"ab", "cd"}));
    QCOMPARE(split("[]s]+", "a]sb", SplitBehavior::Removed), (Pieces{"a", "b"}));
    QCOMPARE(split("[[:digit:]\\s]+", "a1 2b", SplitBehavior::Removed), (Pieces{"a", "b"}));
    QCOMPARE(split("\\x{41}", "bAb", SplitBehavior::Removed), (Pieces{"b", "b"}));
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
    namespace utf8 = accel::utf8;
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
