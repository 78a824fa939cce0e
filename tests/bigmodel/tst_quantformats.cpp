// Quantized weight formats (core/bigmodel/bnbformats.h, groupquant.h) against their definitions,
// bit for bit, on hand-built tensors:
//  - bitsandbytes int8 rows, NF4 / FP4 blocks and nested absmax: the expected float32 bit patterns
//    are what bitsandbytes 0.50.2 returns for the same inputs on the CPU (its native library:
//    int8_vectorwise_dequant, dequantize_4bit, dequantize_blockwise + offset; get_4bit_type for the
//    code tables), and its quantizers' indices for the same weights;
//  - GPTQ (v1 and v2 zero points, g_idx, 2/4/8 bits) and AWQ: packed words written out by hand
//    (0x76543210 holds the values 0..7 in its nibbles) with the integers each layout puts where.
#include "core/bigmodel/bnbformats.h"
#include "core/bigmodel/groupquant.h"

#include <QtTest>

#include <cstring>
#include <vector>

using namespace accel::bigmodel;

namespace {

uint32_t bitsOf(float f)
{
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    return b;
}

float fromBits(uint32_t b)
{
    float f;
    std::memcpy(&f, &b, sizeof f);
    return f;
}

void compareBits(const std::vector<float> &got, const std::vector<uint32_t> &want)
{
    QCOMPARE(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
        QVERIFY2(bitsOf(got[i]) == want[i], qPrintable(QStringLiteral("element %1: 0x%2, bitsandbytes 0x%3")
                                                           .arg(i)
                                                           .arg(bitsOf(got[i]), 8, 16, QLatin1Char('0'))
                                                           .arg(want[i], 8, 16, QLatin1Char('0'))));
}

// Every index in both nibble positions (i high, 15 - i low), then 0x7F and 0xF7: 36 elements.
std::vector<uint8_t> everyIndex()
{
    std::vector<uint8_t> packed;
    for (int i = 0; i < 16; ++i)
        packed.push_back(uint8_t((i << 4) | (15 - i)));
    packed.push_back(0x7F);
    packed.push_back(0xF7);
    return packed;
}

const std::vector<float> kWeights = {0.3f,  -1.7f, 0.05f, 1.7f,    0.0f, -0.849999f, 0.85f, 1e-3f,
                                     -2.0f, 0.5f,  0.25f, -0.125f, 1.0f, 0.0f,       0.75f, -1.5f};

} // namespace

class tst_QuantFormats : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void int8RowsDequantizeAsBitsandbytes()
    {
        const std::vector<int8_t> cb = {127, -127, 64, 0, 1, -1, 100, -3, 5, -127, 33, 77, -12, 9, 0, 127};
        const std::vector<float> scb = {2.5f, 0.1f};
        std::vector<float> out(16);
        bnb::dequantizeInt8Rows(cb.data(), scb.data(), 2, 8, out.data());
        compareBits(out, {0x40200000, 0xc0200000, 0x3fa14285, 0x0, 0x3ca14285, 0xbca14285, 0x3ffbf7f0, 0xbd71e3c8,
                          0x3b810204, 0xbdcccccd, 0x3cd4dced, 0x3d785715, 0xbc1acf38, 0x3be836d5, 0x0, 0x3dcccccd});
    }

    void int8RowsQuantizeAsBitsandbytes()
    {
        std::vector<int8_t> cb(16);
        std::vector<float> scb(2);
        bnb::quantizeInt8Rows(kWeights.data(), 2, 8, cb.data(), scb.data());
        QCOMPARE(cb, (std::vector<int8_t>{22, -127, 4, 127, 0, -63, 64, 0, -127, 32, 16, -8, 64, 0, 48, -95}));
        QCOMPARE(bitsOf(scb[0]), 0x3fd9999au); // 1.7
        QCOMPARE(bitsOf(scb[1]), 0x40000000u); // 2
    }

    // Rows long enough for the vector loops (sixteen products, four maxima at a time) and their
    // tails: the rows above repeated (40 columns: two blocks of 16 and a tail of 8, the ties 63.5 ->
    // 64 in every position), and a row of 17 whose absolute maximum is its last, lone column.
    // Rounding towards zero instead of to even, or a maximum that skips the tail, fails.
    void int8RowsQuantizeAsBitsandbytesInLongRows()
    {
        const std::vector<int8_t> indices = {22, -127, 4, 127, 0, -63, 64, 0, -127, 32, 16, -8, 64, 0, 48, -95};
        std::vector<float> weights;
        std::vector<int8_t> want;
        for (int r = 0; r < 2; ++r)
            for (int copy = 0; copy < 5; ++copy) {
                weights.insert(weights.end(), kWeights.begin() + 8 * r, kWeights.begin() + 8 * r + 8);
                want.insert(want.end(), indices.begin() + 8 * r, indices.begin() + 8 * r + 8);
            }
        std::vector<int8_t> cb(want.size());
        std::vector<float> scb(2);
        bnb::quantizeInt8Rows(weights.data(), 2, 40, cb.data(), scb.data());
        QCOMPARE(cb, want);
        QCOMPARE(bitsOf(scb[0]), 0x3fd9999au);
        QCOMPARE(bitsOf(scb[1]), 0x40000000u);

        std::vector<float> row;
        std::vector<int8_t> rowWant;
        for (int copy = 0; copy < 2; ++copy)
            for (int c = 8; c < 16; ++c) { // the second row with its -2.0 (column 8) moved to the end
                row.push_back(c == 8 ? 0.0f : kWeights[c]);
                rowWant.push_back(c == 8 ? 0 : indices[c]);
            }
        row.push_back(-2.0f);
        rowWant.push_back(-127);
        std::vector<int8_t> rowCb(row.size());
        float rowScale = 0;
        bnb::quantizeInt8Rows(row.data(), 1, int64_t(row.size()), rowCb.data(), &rowScale);
        QCOMPARE(rowCb, rowWant);
        QCOMPARE(bitsOf(rowScale), 0x40000000u);
    }

    void fourBitCodesAreGet4bitType()
    {
        const std::vector<uint32_t> nf4 = {0xbf800000, 0xbf3239b1, 0xbf066b30, 0xbeca32a0, 0xbe91a24d, 0xbe3d353f,
                                           0xbdba7871, 0x0,        0x3da2faff, 0x3e24cae3, 0x3e7c04dd, 0x3ead033a,
                                           0x3ee1a4b8, 0x3f1007ab, 0x3f3913b3, 0x3f800000};
        const std::vector<uint32_t> fp4 = {0x0,        0x3baaaaab, 0x3f2aaaab, 0x3f800000, 0x3eaaaaab, 0x3f000000,
                                           0x3e2aaaab, 0x3e800000, 0x80000000, 0xbbaaaaab, 0xbf2aaaab, 0xbf800000,
                                           0xbeaaaaab, 0xbf000000, 0xbe2aaaab, 0xbe800000};
        const auto &n = bnb::fourBitCode(bnb::FourBit::NF4);
        const auto &f = bnb::fourBitCode(bnb::FourBit::FP4);
        compareBits(std::vector<float>(n.begin(), n.end()), nf4);
        compareBits(std::vector<float>(f.begin(), f.end()), fp4);
        // FP4 is the 4-bit float its comment describes: sign bit 8, 0.0625 (subnormal), then
        // exponents 8, 4, 2 with mantissa 1.0 / 1.5, all over 12.
        QCOMPARE(f[3], 1.0f);
        QCOMPARE(f[1] * 12.0f, 0.0625f);
        QCOMPARE(bnb::fourBitName(bnb::FourBit::NF4), "nf4");
    }

    void fourBitDequantizeAsBitsandbytes_data()
    {
        QTest::addColumn<int>("type");
        QTest::addColumn<std::vector<uint32_t>>("want");
        QTest::newRow("nf4") << int(bnb::FourBit::NF4)
                             << std::vector<uint32_t>{
                                    0xc06ccccd, 0x406ccccd, 0xc024dbc4, 0x402b3239, 0xbff8acb3, 0x40053a4b,
                                    0xbfbb086e, 0x3fd0b85e, 0xbf86b621, 0x3fa00963, 0xbf2f0474, 0x3f691e19,
                                    0xbeac7c35, 0x3f186edf, 0x0,        0x3e96c1c6, 0x3e96c1c6, 0x0,
                                    0x3f186edf, 0xbeac7c35, 0x3f691e19, 0xbf2f0474, 0x3fa00963, 0xbf86b621,
                                    0x3fd0b85e, 0xbfbb086e, 0x40053a4b, 0xbff8acb3, 0x402b3239, 0xc024dbc4,
                                    0x406ccccd, 0xc06ccccd, 0x0,        0x3c4985f0, 0x3c4985f0, 0x0};
        QTest::newRow("fp4") << int(bnb::FourBit::FP4)
                             << std::vector<uint32_t>{
                                    0x0,        0xbf6ccccd, 0x3c9dddde, 0xbf1dddde, 0x401dddde, 0xbfeccccd,
                                    0x406ccccd, 0xbf9dddde, 0x3f9dddde, 0xc06ccccd, 0x3feccccd, 0xc01dddde,
                                    0x3f1dddde, 0xbc9dddde, 0x3f6ccccd, 0x80000000, 0x80000000, 0x3f6ccccd,
                                    0xbc9dddde, 0x3f1dddde, 0xc01dddde, 0x3feccccd, 0xc06ccccd, 0x3f9dddde,
                                    0xbf9dddde, 0x406ccccd, 0xbfeccccd, 0x401dddde, 0xbf1dddde, 0x3c9dddde,
                                    0xbf6ccccd, 0x0,        0x3b4985f0, 0xbb4985f0, 0xbb4985f0, 0x3b4985f0};
    }
    void fourBitDequantizeAsBitsandbytes()
    {
        QFETCH(int, type);
        QFETCH(std::vector<uint32_t>, want);
        const std::vector<uint8_t> packed = everyIndex();
        const std::vector<float> absmax = {3.7f, 0.0123f}; // blocks of 32: the last 4 elements in the second
        QCOMPARE(bnb::blockCount(36, 32), int64_t(2));
        QCOMPARE(bnb::packedBytes(36), int64_t(packed.size()));
        std::vector<float> out(36);
        bnb::dequantize4bit(packed.data(), absmax.data(), 36, 32, static_cast<bnb::FourBit>(type), out.data());
        compareBits(out, want);
    }

    void fourBitQuantizeAsBitsandbytes_data()
    {
        QTest::addColumn<int>("type");
        QTest::addColumn<std::vector<uint8_t>>("want");
        const std::vector<uint8_t> nf4Pattern = {144, 126, 115, 199, 10, 150, 199, 177};
        const std::vector<uint8_t> fp4Pattern = {107, 19, 13, 88, 183, 105, 80, 74};
        std::vector<uint8_t> nf4, fp4;
        for (int r = 0; r < 4; ++r) {
            nf4.insert(nf4.end(), nf4Pattern.begin(), nf4Pattern.end());
            fp4.insert(fp4.end(), fp4Pattern.begin(), fp4Pattern.end());
        }
        nf4.insert(nf4.end(), {196, 247}); // the partial block, padded with the code's 0.0
        fp4.insert(fp4.end(), {95, 48});
        QTest::newRow("nf4") << int(bnb::FourBit::NF4) << nf4;
        QTest::newRow("fp4") << int(bnb::FourBit::FP4) << fp4;
    }
    void fourBitQuantizeAsBitsandbytes()
    {
        QFETCH(int, type);
        QFETCH(std::vector<uint8_t>, want);
        std::vector<float> weights;
        for (int r = 0; r < 4; ++r)
            weights.insert(weights.end(), kWeights.begin(), kWeights.end());
        weights.insert(weights.end(), {0.2f, -0.1f, 0.4f}); // 67 elements: a block of 64 and one of 3
        std::vector<uint8_t> packed(size_t(bnb::packedBytes(67)));
        std::vector<float> absmax(size_t(bnb::blockCount(67, 64)));
        const auto fourBit = static_cast<bnb::FourBit>(type);
        bnb::quantize4bit(weights.data(), 67, 64, fourBit, packed.data(), absmax.data());
        // The same indices, except that for a value nearer 0 than any other code bitsandbytes
        // 0.50.2 (bucketize over the sorted code) may take FP4's -0 where the nearest-value rule
        // takes the first 0: both decode to zero.
        QCOMPARE(packed.size(), want.size());
        const auto &code = bnb::fourBitCode(fourBit);
        int zeroTies = 0;
        for (size_t k = 0; k < 2 * packed.size(); ++k) {
            const int ours = k % 2 ? packed[k / 2] & 0x0F : packed[k / 2] >> 4;
            const int theirs = k % 2 ? want[k / 2] & 0x0F : want[k / 2] >> 4;
            if (ours != theirs) {
                QVERIFY2(
                    code[size_t(ours)] == 0.0f && code[size_t(theirs)] == 0.0f,
                    qPrintable(QStringLiteral("element %1: index %2, bitsandbytes %3").arg(k).arg(ours).arg(theirs)));
                ++zeroTies;
            }
        }
        QCOMPARE(zeroTies, fourBit == bnb::FourBit::FP4 ? 4 : 0); // 1e-3 in each of the four repeats
        QCOMPARE(bitsOf(absmax[0]), 0x40000000u);
        QCOMPARE(bitsOf(absmax[1]), 0x3ecccccdu); // 0.4, the partial block's own
        // Round trip: every element lands on a code value times its block's absmax.
        std::vector<float> back(67);
        bnb::dequantize4bit(packed.data(), absmax.data(), 67, 64, static_cast<bnb::FourBit>(type), back.data());
        for (size_t k = 0; k < back.size(); ++k)
            QVERIFY(std::fabs(back[k] - weights[k]) <= 0.25f * absmax[k / 64]);
    }

    void nestedAbsmaxAsBitsandbytes()
    {
        std::vector<float> code(256);
        for (int i = 0; i < 256; ++i)
            code[size_t(i)] = float(i / 255.0 * 2 - 1); // a hand-built table (the checkpoint stores its own)
        const std::vector<uint8_t> quantized = {0, 255, 128, 7, 200, 33};
        const std::vector<float> scales = {0.5f, 2.0f, 0.3f};
        std::vector<float> absmax(6);
        bnb::dequantizeNestedAbsmax(quantized.data(), 6, code.data(), scales.data(), 2, 0.1f, absmax.data());
        compareBits(absmax, {0xbecccccd, 0x3f19999a, 0x3ddcdcdd, 0xbfe52525, 0x3e8a8a8b, 0xbdfa942f});
    }

    void gptqUnpacksAlongTheInputs()
    {
        // 8 inputs x 8 outputs, 4 bits, one group: qweight [1, 8], output o's word holds inputs 0..7.
        std::vector<int32_t> qweight(8);
        for (int o = 0; o < 8; ++o)
            qweight[size_t(o)] = int32_t(o % 2 ? 0xFEDCBA98u : 0x76543210u);
        const std::vector<int32_t> qzeros = {int32_t(0x07070707u)}; // 8 outputs, stored zero 7 each
        std::vector<float> scales(8, 0.5f);
        groupquant::GptqWeight w{
            qweight.data(), qzeros.data(), scales.data(), nullptr, 8, 8, 8, 4, groupquant::GptqFormat::V1};
        std::vector<int32_t> q(64), z(8);
        QVERIFY(groupquant::unpackGptq(w, q.data(), z.data()));
        for (int i = 0; i < 8; ++i) {
            QCOMPARE(q[size_t(i * 8 + 0)], i);     // 0x76543210: input i in nibble i
            QCOMPARE(q[size_t(i * 8 + 1)], 8 + i); // 0xFEDCBA98
        }
        // 0x07070707 holds 7, 0, 7, 0... for outputs 0, 1, 2, 3...: v1 stores each zero point minus one.
        QCOMPARE(z, (std::vector<int32_t>{8, 1, 8, 1, 8, 1, 8, 1}));
        std::vector<float> weight(64);
        QVERIFY(groupquant::dequantizeGptq(w, weight.data()));
        QCOMPARE(weight[size_t(0 * 8 + 3)], 0.5f * float(3 - 8));  // W[o=0, i=3]
        QCOMPARE(weight[size_t(1 * 8 + 3)], 0.5f * float(11 - 1)); // W[o=1, i=3]
    }

    void gptqDequantizes_data()
    {
        QTest::addColumn<int>("bits");
        QTest::addColumn<bool>("v2");
        QTest::addColumn<bool>("actOrder");
        QTest::newRow("4-bit v1") << 4 << false << false;
        QTest::newRow("4-bit v2 act-order") << 4 << true << true;
        QTest::newRow("8-bit v1") << 8 << false << false;
        QTest::newRow("2-bit v2") << 2 << true << false;
    }
    void gptqDequantizes()
    {
        QFETCH(int, bits);
        QFETCH(bool, v2);
        QFETCH(bool, actOrder);
        const int perWord = 32 / bits;
        const int64_t in = 32, out = 16, groupSize = 8, groups = 4;
        const int mask = (1 << bits) - 1;
        // The integers first, then packed by the layout: input i of output o in word (i / perWord, o).
        auto qOf = [&](int64_t i, int64_t o) { return int32_t((i * 7 + o * 3) & mask); };
        auto zOf = [&](int64_t g, int64_t o) { return int32_t((g * 5 + o) & mask); }; // as stored
        std::vector<int32_t> qweight(size_t(in / perWord * out), 0), qzeros(size_t(groups * out / perWord), 0);
        for (int64_t i = 0; i < in; ++i)
            for (int64_t o = 0; o < out; ++o)
                qweight[size_t((i / perWord) * out + o)] |= int32_t(uint32_t(qOf(i, o)) << (bits * (i % perWord)));
        for (int64_t g = 0; g < groups; ++g)
            for (int64_t o = 0; o < out; ++o)
                qzeros[size_t(g * out / perWord + o / perWord)] |=
                    int32_t(uint32_t(zOf(g, o)) << (bits * (o % perWord)));
        std::vector<uint16_t> halfScales(size_t(groups * out));
        std::vector<float> scales(halfScales.size());
        for (size_t k = 0; k < halfScales.size(); ++k) {
            halfScales[k] = uint16_t(0x2E66 + 17 * k); // 0.1 and up, as float16 bits
            scales[k] = groupquant::halfToFloat(halfScales[k]);
        }
        std::vector<int32_t> gIdx(static_cast<size_t>(in));
        for (int64_t i = 0; i < in; ++i)
            gIdx[size_t(i)] = int32_t(actOrder ? (i * 3) % groups : i / groupSize);
        groupquant::GptqWeight w{qweight.data(),
                                 qzeros.data(),
                                 scales.data(),
                                 actOrder ? gIdx.data() : nullptr,
                                 in,
                                 out,
                                 groupSize,
                                 bits,
                                 v2 ? groupquant::GptqFormat::V2 : groupquant::GptqFormat::V1};
        std::vector<float> weight(size_t(in * out));
        QVERIFY(groupquant::dequantizeGptq(w, weight.data()));
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i) {
                const int64_t g = gIdx[size_t(i)];
                const int32_t z = zOf(g, o) + (v2 ? 0 : 1);
                const float want = scales[size_t(g * out + o)] * float(qOf(i, o) - z);
                QCOMPARE(bitsOf(weight[size_t(o * in + i)]), bitsOf(want));
            }
    }

    void awqUnpacksInItsOrder()
    {
        // One input row, 8 outputs: nibble j of 0x76543210 holds j, and goes to output AWQ_ORDER[j].
        const std::vector<int32_t> qweight = {int32_t(0x76543210u)};
        const std::vector<int32_t> qzeros = {int32_t(0x11111111u)};
        const std::vector<float> scales(8, 1.0f);
        groupquant::AwqWeight w{qweight.data(), qzeros.data(), scales.data(), 1, 8, 1};
        std::vector<int32_t> q(8), z(8);
        QVERIFY(groupquant::unpackAwq(w, q.data(), z.data()));
        QCOMPARE(q, (std::vector<int32_t>{0, 4, 1, 5, 2, 6, 3, 7}));
        QCOMPARE(z, std::vector<int32_t>(8, 1)); // no plus one in AWQ
        std::vector<float> weight(8);
        QVERIFY(groupquant::dequantizeAwq(w, weight.data()));
        QCOMPARE(weight, (std::vector<float>{-1, 3, 0, 4, 1, 5, 2, 6}));
    }

    void awqDequantizesGroups()
    {
        const int64_t in = 8, out = 16, groupSize = 4;
        const std::vector<int32_t> qweight(size_t(in * 2), int32_t(0xFEDCBA98u));
        const std::vector<int32_t> qzeros = {int32_t(0x88888888u), int32_t(0x33333333u), int32_t(0x00000000u),
                                             int32_t(0xFFFFFFFFu)};
        std::vector<float> scales(size_t(2 * out));
        for (size_t k = 0; k < scales.size(); ++k)
            scales[k] = groupquant::halfToFloat(uint16_t(0x3555 + k)); // around 1/3
        groupquant::AwqWeight w{qweight.data(), qzeros.data(), scales.data(), in, out, groupSize};
        std::vector<float> weight(size_t(in * out));
        QVERIFY(groupquant::dequantizeAwq(w, weight.data()));
        const int reordered[8] = {8, 12, 9, 13, 10, 14, 11, 15}; // 0xFEDCBA98 in AWQ order
        const int zeros[2][2] = {{8, 3}, {0, 15}};               // [group][column]
        for (int64_t o = 0; o < out; ++o)
            for (int64_t i = 0; i < in; ++i) {
                const int64_t g = i / groupSize;
                const float want = float(reordered[o % 8] - zeros[g][o / 8]) * scales[size_t(g * out + o)];
                QCOMPARE(bitsOf(weight[size_t(o * in + i)]), bitsOf(want));
            }
    }

    void badShapesAreRefusedByName()
    {
        const int32_t word = 0;
        const float scale = 1;
        groupquant::GptqWeight three{&word, &word, &scale, nullptr, 32, 32, 32, 3, groupquant::GptqFormat::V1};
        std::vector<float> out(32 * 32);
        auto refused = groupquant::dequantizeGptq(three, out.data());
        QVERIFY(!refused);
        QVERIFY(refused.error().message.find("GPTQ bits 3") != std::string::npos);
        const int32_t badGroup = 9;
        groupquant::GptqWeight g{&word, &word, &scale, &badGroup, 8, 8, 8, 4, groupquant::GptqFormat::V1};
        std::vector<int32_t> gIdx(8, 0);
        gIdx[3] = 9;
        g.gIdx = gIdx.data();
        refused = groupquant::dequantizeGptq(g, out.data());
        QVERIFY(!refused);
        QVERIFY(refused.error().message.find("g_idx[3] = 9") != std::string::npos);
        groupquant::AwqWeight awq{&word, &word, &scale, 8, 12, 8};
        refused = groupquant::dequantizeAwq(awq, out.data());
        QVERIFY(!refused);
        QVERIFY(refused.error().message.find("multiple of 8") != std::string::npos);
    }

    void halfConversionsAreExact()
    {
        QCOMPARE(groupquant::halfToFloat(0x3C00), 1.0f);
        QCOMPARE(groupquant::halfToFloat(0xC000), -2.0f);
        QCOMPARE(groupquant::halfToFloat(0x7BFF), 65504.0f);
        QCOMPARE(groupquant::halfToFloat(0x0001), fromBits(0x33800000)); // 2^-24, the smallest subnormal
        QCOMPARE(groupquant::halfToFloat(0x03FF), fromBits(0x387FC000)); // the largest subnormal
        // Every finite half survives the round trip, and a float between two halves goes to the
        // nearer one (the even one on a tie).
        for (uint32_t h = 0; h < 0x10000; ++h) {
            if ((h & 0x7C00) == 0x7C00)
                continue;
            QCOMPARE(groupquant::floatToHalf(groupquant::halfToFloat(uint16_t(h))), uint16_t(h));
        }
        QCOMPARE(groupquant::floatToHalf(1.0f + 1.0f / 2048), uint16_t(0x3C00));   // tie: to even
        QCOMPARE(groupquant::floatToHalf(1.0f + 3.0f / 2048), uint16_t(0x3C02));   // tie: to even (up)
        QCOMPARE(groupquant::floatToHalf(65520.0f), uint16_t(0x7C00));             // overflow to infinity
        QCOMPARE(groupquant::floatToHalf(fromBits(0x33000000)), uint16_t(0x0000)); // 2^-25: tie to 0
        QCOMPARE(groupquant::floatToHalf(fromBits(0x33000001)), uint16_t(0x0001));
    }
};

QTEST_GUILESS_MAIN(tst_QuantFormats)
#include "tst_quantformats.moc"
