// FP8 formats: every code of E4M3 and E5M2 decodes and re-encodes exactly as PyTorch's float8
// dtypes do (PyTorch from the project's Python environment is the oracle), plus the rounding,
// overflow, NaN and saturation rules worked by hand.
#include "core/runtime/precision/float8format.h"

#include "tests/helpers/testsupport.h"

#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace accel::runtime;

namespace {

uint32_t bitsOf(float value)
{
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

float fromBits(uint32_t bits)
{
    float value;
    std::memcpy(&value, &bits, sizeof(value));
    return value;
}

// Reads float32 bit patterns (hex, one a line) on stdin; per format prints the 256 decoded codes
// as float32 bits, then for every probe PyTorch's cast and the clamp-then-cast saturating cast.
const char *oracleScript = R"(
import struct, sys, torch
probes = [int(line, 16) for line in sys.stdin.read().split()]
x = torch.tensor([struct.unpack('<f', struct.pack('<I', p))[0] for p in probes], dtype=torch.float32)
for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
    decoded = torch.arange(256, dtype=torch.uint8).view(dtype).float()
    print(' '.join('%08x' % struct.unpack('<I', struct.pack('<f', v))[0] for v in decoded.tolist()))
    print(' '.join(str(c) for c in x.to(dtype).view(torch.uint8).tolist()))
    m = torch.finfo(dtype).max
    print(' '.join(str(c) for c in x.clamp(min=-m, max=m).to(dtype).view(torch.uint8).tolist()))
)";

// Every code's value, the midpoints between neighbours (ties), one float32 ulp either side of
// them, overflow thresholds, infinities, NaN and values below the smallest subnormal.
std::vector<float> probes()
{
    std::vector<float> out;
    for (Fp8Format format : {Fp8Format::E4M3, Fp8Format::E5M2}) {
        for (int code = 0; code < 256; ++code) {
            const float value = decodeFloat8(uint8_t(code), format);
            out.push_back(value);
            const float next = decodeFloat8(uint8_t(code + 1), format);
            if ((code & 0x7F) != 0x7F && std::isfinite(value) && std::isfinite(next)) {
                const float middle = (value + next) / 2;
                out.insert(out.end(), {middle, std::nextafter(middle, -INFINITY), std::nextafter(middle, INFINITY)});
            }
        }
    }
    for (float v : {463.9f, 464.0f, 464.01f, 465.0f, 479.0f, 480.0f, 1e6f, 61439.0f, 61440.0f, 65535.0f, 65536.0f,
                    1e30f, std::ldexp(1.0f, -10), std::ldexp(1.0f, -17), std::ldexp(1.0f, -30), 1e-45f}) {
        out.push_back(v);
        out.push_back(-v);
    }
    out.insert(out.end(), {INFINITY, -INFINITY, std::numeric_limits<float>::quiet_NaN(), 0.0f, -0.0f});
    return out;
}

std::vector<uint32_t> parseNumbers(const QString &line, int base)
{
    std::vector<uint32_t> values;
    for (const QString &word : line.split(QLatin1Char(' '), Qt::SkipEmptyParts))
        values.push_back(word.toUInt(nullptr, base));
    return values;
}

} // namespace

class tst_Fp8Format : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void matchesPytorchOnEveryCode();
    void roundsToNearestEven();
    void overflowRules();
    void saturatingCastClampsButKeepsNaN();
    void decodesTheNamedValues();
};

void tst_Fp8Format::matchesPytorchOnEveryCode()
{
    const QString python = qEnvironmentVariable("ACCEL_PYTHON");
    if (python.isEmpty())
        QSKIP("ACCEL_PYTHON is not set: run through ctest (PyTorch in the project's environment is the oracle)");
    const std::vector<float> inputs = probes();
    QByteArray stdinData;
    for (float v : inputs)
        stdinData += QByteArray::number(bitsOf(v), 16) + '\n';
    const auto result =
        accel::test::runProgram(python, {QStringLiteral("-c"), QString::fromUtf8(oracleScript)}, 120000, stdinData);
    if (result.exitCode != 0 && result.err.contains(QStringLiteral("No module named 'torch'")))
        QSKIP("PyTorch is not installed in ACCEL_PYTHON");
    QCOMPARE(result.exitCode, 0);
    const QStringList lines = result.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 6);
    int checked = 0;
    for (int f = 0; f < 2; ++f) {
        const Fp8Format format = f ? Fp8Format::E5M2 : Fp8Format::E4M3;
        const auto decoded = parseNumbers(lines[3 * f], 16);
        const auto encoded = parseNumbers(lines[3 * f + 1], 10);
        const auto saturated = parseNumbers(lines[3 * f + 2], 10);
        QCOMPARE(decoded.size(), size_t(256));
        QCOMPARE(encoded.size(), inputs.size());
        QCOMPARE(saturated.size(), inputs.size());
        for (int code = 0; code < 256; ++code) {
            const float ours = decodeFloat8(uint8_t(code), format), theirs = fromBits(decoded[size_t(code)]);
            if (std::isnan(theirs)) {
                QVERIFY2(std::isnan(ours),
                         qPrintable(QStringLiteral("%1 code %2").arg(fp8FormatName(format)).arg(code)));
            } else {
                QVERIFY2(bitsOf(ours) == bitsOf(theirs), qPrintable(QStringLiteral("%1 code %2: ours %3, PyTorch %4")
                                                                        .arg(fp8FormatName(format))
                                                                        .arg(code)
                                                                        .arg(double(ours))
                                                                        .arg(double(theirs))));
                // Every non-NaN code re-encodes to itself.
                QCOMPARE(int(encodeFloat8(ours, format)), code);
            }
            ++checked;
        }
        for (size_t i = 0; i < inputs.size(); ++i) {
            const auto where = QStringLiteral("%1 of %2 (bits %3)")
                                   .arg(fp8FormatName(format))
                                   .arg(double(inputs[i]), 0, 'g', 9)
                                   .arg(bitsOf(inputs[i]), 8, 16, QLatin1Char('0'));
            QVERIFY2(encodeFloat8(inputs[i], format) == encoded[i],
                     qPrintable(
                         where +
                         QStringLiteral(": ours %1, PyTorch %2").arg(encodeFloat8(inputs[i], format)).arg(encoded[i])));
            QVERIFY2(encodeFloat8Saturating(inputs[i], format) == saturated[i],
                     qPrintable(where + QStringLiteral(" saturating: ours %1, clamp+cast %2")
                                            .arg(encodeFloat8Saturating(inputs[i], format))
                                            .arg(saturated[i])));
            checked += 2;
        }
    }
    QVERIFY(checked > 2 * (256 + 2 * 1000));
}

void tst_Fp8Format::roundsToNearestEven()
{
    // 1.0625 lies halfway between 1.0 (mantissa 000, even) and 1.125 (001): to even.
    QCOMPARE(int(encodeFloat8(1.0625f, Fp8Format::E4M3)), 0x38);
    // 1.1875 lies between 1.125 (001) and 1.25 (010, even).
    QCOMPARE(int(encodeFloat8(1.1875f, Fp8Format::E4M3)), 0x3A);
    // Subnormal ties: 2^-10 is half the smallest E4M3 subnormal -> 0; 1.5 * 2^-9 -> 2 * 2^-9.
    QCOMPARE(int(encodeFloat8(std::ldexp(1.0f, -10), Fp8Format::E4M3)), 0x00);
    QCOMPARE(int(encodeFloat8(std::ldexp(1.5f, -9), Fp8Format::E4M3)), 0x02);
    QCOMPARE(int(encodeFloat8(std::ldexp(1.0f, -17), Fp8Format::E5M2)), 0x00);
    QCOMPARE(int(encodeFloat8(-std::ldexp(3.0f, -17), Fp8Format::E5M2)), 0x82);
    // E5M2 1.125 is halfway between 1.0 (00) and 1.25 (01): to even 1.0.
    QCOMPARE(int(encodeFloat8(1.125f, Fp8Format::E5M2)), 0x3C);
}

void tst_Fp8Format::overflowRules()
{
    // E4M3 has no infinity: up to 464 rounds to 448 (0x7E), beyond it is NaN (sign kept).
    QCOMPARE(int(encodeFloat8(464.0f, Fp8Format::E4M3)), 0x7E);
    QCOMPARE(int(encodeFloat8(464.01f, Fp8Format::E4M3)), 0x7F);
    QCOMPARE(int(encodeFloat8(-1000.0f, Fp8Format::E4M3)), 0xFF);
    QCOMPARE(int(encodeFloat8(INFINITY, Fp8Format::E4M3)), 0x7F);
    // E5M2: below 61440 rounds to 57344 (0x7B), from 61440 (the tie, to the even infinity) on inf.
    QCOMPARE(int(encodeFloat8(61439.0f, Fp8Format::E5M2)), 0x7B);
    QCOMPARE(int(encodeFloat8(61440.0f, Fp8Format::E5M2)), 0x7C);
    QCOMPARE(int(encodeFloat8(-INFINITY, Fp8Format::E5M2)), 0xFC);
    QCOMPARE(int(encodeFloat8(std::numeric_limits<float>::quiet_NaN(), Fp8Format::E5M2)), 0x7F);
}

void tst_Fp8Format::saturatingCastClampsButKeepsNaN()
{
    QCOMPARE(int(encodeFloat8Saturating(1000.0f, Fp8Format::E4M3)), 0x7E);
    QCOMPARE(int(encodeFloat8Saturating(-INFINITY, Fp8Format::E4M3)), 0xFE);
    QCOMPARE(int(encodeFloat8Saturating(1e9f, Fp8Format::E5M2)), 0x7B);
    QCOMPARE(int(encodeFloat8Saturating(-INFINITY, Fp8Format::E5M2)), 0xFB);
    QVERIFY(std::isnan(decodeFloat8(encodeFloat8Saturating(NAN, Fp8Format::E4M3), Fp8Format::E4M3)));
    QVERIFY(std::isnan(decodeFloat8(encodeFloat8Saturating(NAN, Fp8Format::E5M2), Fp8Format::E5M2)));
    // In range the saturating cast is the plain cast.
    QCOMPARE(encodeFloat8Saturating(3.3f, Fp8Format::E4M3), encodeFloat8(3.3f, Fp8Format::E4M3));
}

void tst_Fp8Format::decodesTheNamedValues()
{
    QCOMPARE(decodeFloat8(0x7E, Fp8Format::E4M3), 448.0f);
    QCOMPARE(decodeFloat8(0x08, Fp8Format::E4M3), 0.015625f);
    QCOMPARE(decodeFloat8(0x01, Fp8Format::E4M3), std::ldexp(1.0f, -9));
    QCOMPARE(decodeFloat8(0x7B, Fp8Format::E5M2), 57344.0f);
    QCOMPARE(decodeFloat8(0x01, Fp8Format::E5M2), std::ldexp(1.0f, -16));
    QCOMPARE(decodeFloat8(0x7C, Fp8Format::E5M2), INFINITY);
    QVERIFY(std::isnan(decodeFloat8(0xFF, Fp8Format::E4M3)));
    QVERIFY(!std::isnan(decodeFloat8(0x7E, Fp8Format::E4M3)));
    int nanCodes = 0;
    for (int code = 0; code < 256; ++code)
        nanCodes += std::isnan(decodeFloat8(uint8_t(code), Fp8Format::E5M2)) ? 1 : 0;
    QCOMPARE(nanCodes, 6);
    QCOMPARE(std::signbit(decodeFloat8(0x80, Fp8Format::E4M3)), true);
}

QTEST_GUILESS_MAIN(tst_Fp8Format)
#include "tst_fp8format.moc"
