// `accel config to-fsdp2`'s mapping (as Accelerate's to-fsdp2 converts), key by key.
#include "core/config/configio.h"
#include "core/config/fsdp2conversion.h"
#include "core/config/validation.h"

#include <QtTest>

using namespace accel::config;

namespace {

ClusterConfig fsdp1(const std::string &block)
{
    auto config =
        parseConfig("distributed_type: FSDP\nnum_processes: 2\nfsdp_config:\n" + block, ConfigFormat::Yaml, "f.yaml");
    return config ? *config : ClusterConfig{};
}

} // namespace

class tst_Fsdp2Conversion : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void strategyBecomesReshardFlag_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("strategy");
        QTest::addColumn<bool>("reshard");
        for (const char *key : {"fsdp_sharding_strategy", "fsdp_reshard_after_forward"}) {
            QTest::addRow("%s FULL_SHARD", key) << key << "FULL_SHARD" << true;
            QTest::addRow("%s HYBRID_SHARD", key) << key << "HYBRID_SHARD" << true;
            QTest::addRow("%s SHARD_GRAD_OP", key) << key << "SHARD_GRAD_OP" << false;
            QTest::addRow("%s HYBRID_SHARD_ZERO2", key) << key << "HYBRID_SHARD_ZERO2" << false;
            QTest::addRow("%s NO_SHARD", key) << key << "NO_SHARD" << false;
        }
    }

    void strategyBecomesReshardFlag()
    {
        QFETCH(QString, key);
        QFETCH(QString, strategy);
        QFETCH(bool, reshard);
        const Fsdp2Conversion result =
            convertToFsdp2(fsdp1("  " + key.toStdString() + ": " + strategy.toStdString() + "\n"));
        QVERIFY(result.changed);
        QCOMPARE(*result.config.fsdp.version, std::int64_t(2));
        QCOMPARE(std::get<bool>(*result.config.fsdp.reshardAfterForward), reshard);
        QVERIFY(!result.config.fsdp.shardingStrategy.has_value());
        // The converted config is a valid FSDP2 config.
        for (const Diagnostic &d : validate(result.config))
            QVERIFY2(d.severity == Severity::Warning, d.toString().c_str());
    }

    void explicitStrategyWinsOverStoredOne()
    {
        const Fsdp2Conversion result =
            convertToFsdp2(fsdp1("  fsdp_sharding_strategy: NO_SHARD\n  fsdp_reshard_after_forward: FULL_SHARD\n"));
        QCOMPARE(std::get<bool>(*result.config.fsdp.reshardAfterForward), false);
    }

    void keepsAndDropsKeys()
    {
        const Fsdp2Conversion result = convertToFsdp2(fsdp1("  fsdp_activation_checkpointing: true\n"
                                                            "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                                            "  fsdp_backward_prefetch: BACKWARD_PRE\n"
                                                            "  fsdp_cpu_ram_efficient_loading: false\n"
                                                            "  fsdp_forward_prefetch: true\n"
                                                            "  fsdp_ignored_modules: 'lm_head'\n"
                                                            "  fsdp_min_num_params: 5\n"
                                                            "  fsdp_offload_params: true\n"
                                                            "  fsdp_state_dict_type: LOCAL_STATE_DICT\n"
                                                            "  fsdp_sync_module_states: true\n"
                                                            "  fsdp_transformer_layer_cls_to_wrap: Block\n"
                                                            "  fsdp_use_orig_params: false\n"));
        const FsdpConfig &f = result.config.fsdp;
        QCOMPARE(*f.activationCheckpointing, true);
        QCOMPARE(*f.autoWrapPolicy, std::string("TRANSFORMER_BASED_WRAP"));
        QCOMPARE(*f.cpuRamEfficientLoading, false);
        QCOMPARE(*f.ignoredModules, std::string("lm_head"));
        QCOMPARE(*f.minNumParams, std::int64_t(5));
        QCOMPARE(*f.offloadParams, true);
        QCOMPARE(*f.stateDictType, std::string("SHARDED_STATE_DICT"));
        QCOMPARE(*f.transformerLayerClsToWrap, std::string("Block"));
        QVERIFY(!f.backwardPrefetch && !f.forwardPrefetch && !f.syncModuleStates && !f.useOrigParams);
        QVERIFY(!f.reshardAfterForward.has_value()); // nothing said: FSDP2's default (true) applies
        QCOMPARE(result.notes.size(), size_t(5));
        QCOMPARE(
            QString::fromStdString(result.notes.front()),
            QStringLiteral("fsdp_state_dict_type LOCAL_STATE_DICT does not exist in FSDP2; using SHARDED_STATE_DICT"));
    }

    void skipsWhenNothingToConvert()
    {
        auto plain = parseConfig("distributed_type: MULTI_GPU\nnum_processes: 2\n", ConfigFormat::Yaml, "g.yaml");
        QVERIFY(plain.has_value());
        Fsdp2Conversion result = convertToFsdp2(*plain);
        QVERIFY(!result.changed);
        QCOMPARE(QString::fromStdString(result.notes.at(0)),
                 QStringLiteral("the config has no fsdp_config block; nothing to convert"));
        result = convertToFsdp2(fsdp1("  fsdp_version: 2\n"));
        QVERIFY(!result.changed);
        QCOMPARE(QString::fromStdString(result.notes.at(0)),
                 QStringLiteral("fsdp_version is already 2; nothing to convert"));
    }
};

QTEST_GUILESS_MAIN(tst_Fsdp2Conversion)
#include "tst_fsdp2conversion.moc"
