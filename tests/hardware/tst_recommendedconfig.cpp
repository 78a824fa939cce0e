// The recommended configs against accel::config: each one loads without diagnostics, has the
// recommended values, and accel::config serialises it back byte for byte.
#include "core/config/configio.h"
#include "core/hardware/recommender.h"
#include "tests/hardware/samplereports.h"

#include <QtTest>

using namespace accel;
using namespace accel::hardware;

Q_DECLARE_METATYPE(accel::hardware::HardwareReport)

class tst_RecommendedConfig : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void loadsAndRoundTrips_data()
    {
        QTest::addColumn<HardwareReport>("report");
        QTest::newRow("1 socket CPU") << test::cpuHost(1, 16, false, 1);
        QTest::newRow("2 sockets CPU bf16") << test::cpuHost(2, 24, true, 2);
        QTest::newRow("8 x A100") << test::gpuHost(8, "NVIDIA A100-SXM4-80GB", 8, 0, "535.104.05", 12, 128);
        QTest::newRow("2 x RTX 4090") << test::gpuHost(2, "NVIDIA GeForce RTX 4090", 8, 9, "535.129.03", 0, 16);
        QTest::newRow("1 x V100") << test::gpuHost(1, "Tesla V100-SXM2-16GB", 7, 0, "470.82.01", 0, 8);
    }

    void loadsAndRoundTrips()
    {
        QFETCH(HardwareReport, report);
        const RecommendedConfig recommendation = recommendConfig(report);
        const std::string yaml = recommendedConfigYaml(recommendation, true);
        config::Diagnostics diagnostics;
        auto parsed = config::parseConfig(yaml, config::ConfigFormat::Yaml, "recommended.yaml", &diagnostics);
        QVERIFY2(parsed.has_value(), parsed ? "" : parsed.error().toString().c_str());
        QVERIFY(diagnostics.empty());
        QCOMPARE(std::string(config::toString(parsed->distributedType)), recommendation.distributedType);
        QCOMPARE(*parsed->numProcesses, int64_t(recommendation.numProcesses));
        QCOMPARE(std::string(config::toString(*parsed->mixedPrecision)), recommendation.mixedPrecision);
        QCOMPARE(QString::fromStdString(config::serializeConfig(*parsed, config::ConfigFormat::Yaml)),
                 QString::fromStdString(recommendedConfigYaml(recommendation, false)));
    }
};

QTEST_GUILESS_MAIN(tst_RecommendedConfig)
#include "tst_recommendedconfig.moc"
