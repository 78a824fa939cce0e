// The FP8 recipes' scaling rules against sequences worked by hand, and the FP8 settings read from
// Accelerate's ACCELERATE_FP8_* variables (every spelling; what is not implemented is refused).
#include "core/plan/fp8config.h"
#include "core/runtime/distributedenv.h"
#include "core/runtime/precision/fp8scaling.h"

#include <QTest>

#include <cfloat>
#include <cmath>
#include <map>
#include <memory>

using namespace accel::runtime;

namespace {

Fp8Config::Lookup lookupFrom(std::map<std::string, std::string> vars)
{
    auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
    return [shared](const char *name) -> const char * {
        auto it = shared->find(name);
        return it == shared->end() ? nullptr : it->second.c_str();
    };
}

accel::Result<Fp8Config> parse(std::map<std::string, std::string> vars)
{
    return Fp8Config::fromEnvironment(lookupFrom(std::move(vars)));
}

std::vector<float> v(std::initializer_list<float> values)
{
    return values;
}

} // namespace

class tst_Fp8Scaling : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void delayedScalingMaxOverTheWindow();
    void delayedScalingMostRecentAndMargin();
    void delayedScalingZeroNanInfAndTinyAmax();
    void powerOfTwoScale();
    void powerOfTwoWindowWarmsUpThenDelays();
    void dynamicScaleInFloat64();

    void defaultsWhenNothingIsSet();
    void gemmPolicyIsReadAndRefusedByName();
    void readsEverySpelling();
    void spellingsThatDisagreeAreRefused();
    void refusesWhatIsNotImplementedByName();
    void badValuesNameTheVariable();
    void overrideTupleStringIsRefusedNotMisread();
    void distributedEnvReadsFp8OnlyReportingLater();
};

void tst_Fp8Scaling::delayedScalingMaxOverTheWindow()
{
    DelayedScalingState s(3, AmaxComputeAlgo::Max, 0, 448.0f);
    QCOMPARE(s.scale(), 1.0f); // the first step quantises with 1
    s.record(1.0f);
    s.record(2.0f); // row 0 keeps the step's maximum
    QCOMPARE(s.currentAmax(), 2.0f);
    s.update();
    QCOMPARE(s.history(), v({0, 0, 2})); // the current row became the oldest, row 0 starts at 0
    QCOMPARE(s.scale(), 224.0f);
    s.record(4.0f);
    s.update();
    QCOMPARE(s.history(), v({0, 2, 4}));
    QCOMPARE(s.scale(), 112.0f);
    for (int step = 0; step < 2; ++step) { // 4 stays in the window of 3 for two more steps
        s.record(1.0f);
        s.update();
        QCOMPARE(s.scale(), 112.0f);
    }
    QCOMPARE(s.history(), v({0, 1, 1}));
    s.record(1.0f);
    s.update();
    QCOMPARE(s.scale(), 448.0f);
}

void tst_Fp8Scaling::delayedScalingMostRecentAndMargin()
{
    DelayedScalingState recent(3, AmaxComputeAlgo::MostRecent, 0, 448.0f);
    recent.record(4.0f);
    recent.update();
    QCOMPARE(recent.scale(), 112.0f);
    recent.record(1.0f);
    recent.update();
    QCOMPARE(recent.scale(), 448.0f); // the larger amax one step back no longer counts
    DelayedScalingState margin(4, AmaxComputeAlgo::Max, 2, 57344.0f);
    margin.record(7.0f);
    margin.update();
    QCOMPARE(margin.scale(), 57344.0f / 7.0f / 4.0f);
}

void tst_Fp8Scaling::delayedScalingZeroNanInfAndTinyAmax()
{
    DelayedScalingState s(2, AmaxComputeAlgo::Max, 0, 448.0f);
    s.record(2.0f);
    s.update();
    QCOMPARE(s.scale(), 224.0f);
    // A step that quantised nothing (amax 0) changes neither history nor scale.
    const auto before = s.history();
    s.update();
    QCOMPARE(s.history(), before);
    QCOMPARE(s.scale(), 224.0f);
    // NaN: the scale is kept while the NaN is in the window (2 steps), then it recovers.
    s.record(NAN);
    s.update();
    QCOMPARE(s.scale(), 224.0f);
    s.record(8.0f);
    s.update();
    QCOMPARE(s.scale(), 224.0f);
    s.record(8.0f);
    s.update();
    QCOMPARE(s.scale(), 56.0f);
    // Infinity keeps the previous scale too.
    QCOMPARE(delayedScalingFactor(INFINITY, 3.0f, 448.0f, 0), 3.0f);
    QCOMPARE(delayedScalingFactor(0.0f, 3.0f, 448.0f, 0), 3.0f);
    // An amax so small that the quotient overflows gives FLT_MAX, not infinity.
    QCOMPARE(delayedScalingFactor(1e-40f, 1.0f, 448.0f, 0), FLT_MAX);
}

void tst_Fp8Scaling::powerOfTwoScale()
{
    QCOMPARE(powerOfTwoScalingFactor(3.0f, 1.0f, 448.0f), 128.0f);        // floor(log2(149.3)) = 7
    QCOMPARE(powerOfTwoScalingFactor(448.0f, 1.0f, 448.0f), 1.0f);        // exactly the maximum
    QCOMPARE(powerOfTwoScalingFactor(1000.0f, 1.0f, 448.0f), 0.25f);      // floor(log2(0.448)) = -2
    QCOMPARE(powerOfTwoScalingFactor(0.05f, 1.0f, 65504.0f), 1048576.0f); // FP16 weights: 2^20
    QCOMPARE(powerOfTwoScalingFactor(3.0f, 1.0f, 448.0f, 1), 64.0f);      // margin
    QCOMPARE(powerOfTwoScalingFactor(0.0f, 8.0f, 448.0f), 8.0f);          // zero: previous scale
    QCOMPARE(powerOfTwoScalingFactor(NAN, 8.0f, 448.0f), 8.0f);           // NaN: previous scale
    QCOMPARE(powerOfTwoScalingFactor(INFINITY, 8.0f, 448.0f), 0.125f);    // MS-AMP: 1 / previous
}

void tst_Fp8Scaling::powerOfTwoWindowWarmsUpThenDelays()
{
    PowerOfTwoScalingState s(2, 448.0f);
    QVERIFY(s.inTime());
    QCOMPARE(s.scaleFor(3.0f), 128.0f); // warm-up: each tensor by its own amax
    s.update();
    QCOMPARE(s.window(), v({0, 3}));
    QVERIFY(s.inTime());
    QCOMPARE(s.scaleFor(100.0f), 4.0f);
    s.update();
    QVERIFY(!s.inTime());             // two updates: the window is full
    QCOMPARE(s.scaleFor(1.0f), 4.0f); // delayed: the scale from the window (100)
    s.update();
    QCOMPARE(s.scaleFor(1.0f), 4.0f); // 100 is still in the window
    s.update();
    QCOMPARE(s.scaleFor(1.0f), 256.0f); // the window holds 1 and 1
    // A non-finite amax restarts the warm-up and keeps the scale.
    s.scaleFor(INFINITY);
    s.update();
    QVERIFY(s.inTime());
    QCOMPARE(s.scale(), 256.0f);
    PowerOfTwoScalingState single(1, 448.0f);
    QCOMPARE(single.scaleFor(3.0f), 128.0f);
    single.update();
    QCOMPARE(single.scaleFor(1000.0f), 0.25f); // window 1: always in time
}

void tst_Fp8Scaling::dynamicScaleInFloat64()
{
    QCOMPARE(dynamicScalingFactor(2.0f, 448.0f), 224.0f);
    QCOMPARE(dynamicScalingFactor(0.0f, 448.0f), float(448.0 / 1e-12));
    // 448 / 3 rounded once from float64 (float32 division of the same operands agrees here, so
    // check a case where it does not: 57344 / 0.1f).
    QCOMPARE(dynamicScalingFactor(0.1f, 57344.0f), float(57344.0 / double(0.1f)));
}

void tst_Fp8Scaling::defaultsWhenNothingIsSet()
{
    auto config = parse({});
    QVERIFY2(config, config ? "" : config.error().message.c_str());
    QCOMPARE(config->backend, Fp8Backend::Ao);
    QCOMPARE(config->format, Fp8RecipeFormat::Hybrid);
    QCOMPARE(config->amaxHistoryLen, 1024);
    QCOMPARE(config->amaxComputeAlgo, AmaxComputeAlgo::Max);
    QCOMPARE(config->margin, 0);
    QCOMPARE(config->optLevel, MsAmpLevel::O2);
    QVERIFY(config->padInnerDim);
    QVERIFY(config->enableFsdpFloat8AllGather);
    QVERIFY(!config->useAutocastDuringEval);
    QVERIFY(!config->overrideWgrad);
    QCOMPARE(config->gemm, Fp8GemmPolicy::Auto);
}

// ACCEL_FP8_GEMM forces the GEMM path in any case, and names itself in the description; anything
// else is refused naming the variable and the three values.
void tst_Fp8Scaling::gemmPolicyIsReadAndRefusedByName()
{
    const std::pair<const char *, Fp8GemmPolicy> values[] = {{"auto", Fp8GemmPolicy::Auto},
                                                             {"SCALED_MM", Fp8GemmPolicy::ScaledMm},
                                                             {" dequantized ", Fp8GemmPolicy::Dequantized}};
    for (const auto &[text, policy] : values) {
        auto config = parse({{"ACCEL_FP8_GEMM", text}});
        QVERIFY2(config, text);
        QCOMPARE(config->gemm, policy);
    }
    QVERIFY(parse({{"ACCEL_FP8_GEMM", "dequantized"}})->describe().find(", GEMM dequantized") != std::string::npos);
    QVERIFY(parse({})->describe().find("GEMM") == std::string::npos);
    auto bad = parse({{"ACCEL_FP8_GEMM", "fast"}});
    QVERIFY(!bad);
    QCOMPARE(bad.error().code, accel::ErrorCode::InvalidInput);
    QVERIFY2(bad.error().message.find("ACCEL_FP8_GEMM=fast") != std::string::npos, bad.error().message.c_str());
    QVERIFY2(bad.error().message.find("auto, scaled_mm or dequantized") != std::string::npos,
             bad.error().message.c_str());
}

void tst_Fp8Scaling::readsEverySpelling()
{
    for (const char *name : {"te", "TE", "Te"}) {
        auto config = parse({{"ACCELERATE_FP8_BACKEND", name}});
        QVERIFY(config);
        QCOMPARE(config->backend, Fp8Backend::Te);
    }
    QCOMPARE(parse({{"ACCELERATE_FP8_BACKEND", "msamp"}})->backend, Fp8Backend::MsAmp);
    QCOMPARE(parse({{"ACCELERATE_FP8_BACKEND", "ao"}})->backend, Fp8Backend::Ao);
    // The questionnaire's long names mean the same as the short ones.
    auto longNames = parse({{"ACCELERATE_FP8_AMAX_HISTORY_LENGTH", "16"},
                            {"ACCELERATE_FP8_AMAX_COMPUTE_ALGORITHM", "most_recent"},
                            {"ACCELERATE_FP8_OPTIMIZATION_LEVEL", "O1"}});
    QVERIFY(longNames);
    QCOMPARE(longNames->amaxHistoryLen, 16);
    QCOMPARE(longNames->amaxComputeAlgo, AmaxComputeAlgo::MostRecent);
    QCOMPARE(longNames->optLevel, MsAmpLevel::O1);
    auto shortNames = parse({{"ACCELERATE_FP8_AMAX_HISTORY_LEN", "32"},
                             {"ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "max"},
                             {"ACCELERATE_FP8_OPT_LEVEL", "o2"},
                             {"ACCELERATE_FP8_FORMAT", "e4m3"},
                             {"ACCELERATE_FP8_MARGIN", "2"},
                             {"ACCELERATE_FP8_INTERVAL", "1"},
                             {"ACCELERATE_FP8_USE_AUTOCAST_DURING_EVAL", "True"},
                             {"ACCELERATE_FP8_PAD_INNER_DIM", "False"},
                             {"ACCELERATE_FP8_ENABLE_FSDP_FLOAT8_ALL_GATHER", "0"},
                             {"ACCELERATE_FP8_OVERRIDE_FPROP", "False"},
                             {"ACCELERATE_FP8_OVERRIDE_DGRAD", "False"},
                             {"ACCELERATE_FP8_OVERRIDE_WGRAD", "True"}});
    QVERIFY2(shortNames, shortNames ? "" : shortNames.error().message.c_str());
    QCOMPARE(shortNames->amaxHistoryLen, 32);
    QCOMPARE(shortNames->optLevel, MsAmpLevel::O2);
    QCOMPARE(shortNames->format, Fp8RecipeFormat::E4M3);
    QCOMPARE(shortNames->margin, 2);
    QVERIFY(shortNames->useAutocastDuringEval);
    QVERIFY(!shortNames->padInnerDim);
    QVERIFY(!shortNames->enableFsdpFloat8AllGather);
    QVERIFY(shortNames->overrideWgrad);
    // Both spellings with the same value are fine.
    QVERIFY(parse({{"ACCELERATE_FP8_OPT_LEVEL", "O1"}, {"ACCELERATE_FP8_OPTIMIZATION_LEVEL", "o1"}}));
}

void tst_Fp8Scaling::spellingsThatDisagreeAreRefused()
{
    auto config = parse({{"ACCELERATE_FP8_AMAX_HISTORY_LEN", "16"}, {"ACCELERATE_FP8_AMAX_HISTORY_LENGTH", "32"}});
    QVERIFY(!config);
    QVERIFY(config.error().message.find("ACCELERATE_FP8_AMAX_HISTORY_LEN=16") != std::string::npos);
    QVERIFY(config.error().message.find("ACCELERATE_FP8_AMAX_HISTORY_LENGTH=32") != std::string::npos);
}

void tst_Fp8Scaling::refusesWhatIsNotImplementedByName()
{
    auto backend = parse({{"ACCELERATE_FP8_BACKEND", "apex"}});
    QVERIFY(!backend);
    QCOMPARE(backend.error().code, accel::ErrorCode::InvalidInput);
    QVERIFY(backend.error().message.find("ACCELERATE_FP8_BACKEND=apex") != std::string::npos);
    QVERIFY(backend.error().message.find("AO, TE, MSAMP") != std::string::npos);
    auto o3 = parse({{"ACCELERATE_FP8_BACKEND", "MSAMP"}, {"ACCELERATE_FP8_OPT_LEVEL", "O3"}});
    QVERIFY(!o3);
    QCOMPARE(o3.error().code, accel::ErrorCode::Unsupported);
    QVERIFY(o3.error().message.find("ACCELERATE_FP8_OPT_LEVEL=O3") != std::string::npos);
    auto e5m2 = parse({{"ACCELERATE_FP8_FORMAT", "E5M2"}});
    QVERIFY(!e5m2);
    QCOMPARE(e5m2.error().code, accel::ErrorCode::Unsupported);
    QVERIFY(e5m2.error().message.find("E5M2") != std::string::npos);
    auto fprop = parse({{"ACCELERATE_FP8_OVERRIDE_FPROP", "True"}});
    QVERIFY(!fprop);
    QVERIFY(fprop.error().message.find("ACCELERATE_FP8_OVERRIDE_FPROP=True") != std::string::npos);
    auto mx = parse({{"ACCELERATE_FP8_USE_MXFP8_BLOCK_SCALING", "true"}});
    QVERIFY(!mx);
    QVERIFY(mx.error().message.find("MXFP8") != std::string::npos);
}

void tst_Fp8Scaling::badValuesNameTheVariable()
{
    const std::pair<const char *, const char *> cases[] = {
        {"ACCELERATE_FP8_MARGIN", "-1"},           {"ACCELERATE_FP8_AMAX_HISTORY_LEN", "0"},
        {"ACCELERATE_FP8_AMAX_HISTORY_LEN", "1k"}, {"ACCELERATE_FP8_AMAX_COMPUTE_ALGO", "mean"},
        {"ACCELERATE_FP8_PAD_INNER_DIM", "maybe"}, {"ACCELERATE_FP8_FORMAT", "E3M4"},
        {"ACCELERATE_FP8_OPT_LEVEL", "O0"},        {"ACCELERATE_FP8_INTERVAL", "0"},
    };
    for (const auto &[name, value] : cases) {
        auto config = parse({{name, value}});
        QVERIFY2(!config, name);
        QCOMPARE(config.error().code, accel::ErrorCode::InvalidInput);
        const std::string expected = std::string(name) + "=" + value;
        QVERIFY2(config.error().message.find(expected) != std::string::npos, config.error().message.c_str());
        QVERIFY2(config.error().message.find("expected") != std::string::npos, config.error().message.c_str());
    }
}

void tst_Fp8Scaling::overrideTupleStringIsRefusedNotMisread()
{
    // Accelerate >= 1.5 exports the characters of "(false, false, false)" one per variable when a
    // config writes the override as a string; a rank must stop with the variable's name.
    auto config = parse({{"ACCELERATE_FP8_OVERRIDE_FPROP", "("},
                         {"ACCELERATE_FP8_OVERRIDE_DGRAD", "f"},
                         {"ACCELERATE_FP8_OVERRIDE_WGRAD", "a"}});
    QVERIFY(!config);
    QVERIFY(config.error().message.find("ACCELERATE_FP8_OVERRIDE_") != std::string::npos);
}

void tst_Fp8Scaling::distributedEnvReadsFp8OnlyReportingLater()
{
    auto env = DistributedEnv::fromEnvironment(lookupFrom(
        {{"ACCELERATE_MIXED_PRECISION", "fp8"}, {"ACCELERATE_FP8_BACKEND", "te"}, {"OMP_NUM_THREADS", "1"}}));
    QVERIFY(env);
    QCOMPARE(env->mixedPrecision, MixedPrecision::Fp8);
    QVERIFY(env->fp8);
    QCOMPARE(env->fp8->backend, Fp8Backend::Te);
    // A bad FP8 variable does not stop a bf16 run from reading its environment; the error is kept.
    auto bf16 = DistributedEnv::fromEnvironment(lookupFrom(
        {{"ACCELERATE_MIXED_PRECISION", "bf16"}, {"ACCELERATE_FP8_BACKEND", "nope"}, {"OMP_NUM_THREADS", "1"}}));
    QVERIFY(bf16);
    QVERIFY(!bf16->fp8);
    QVERIFY(bf16->fp8.error().message.find("ACCELERATE_FP8_BACKEND=nope") != std::string::npos);
}

QTEST_GUILESS_MAIN(tst_Fp8Scaling)
#include "tst_fp8scaling.moc"
