// The Configure page's line-preserving edits: only the lines of changed keys change; comments,
// order, quoting and keys the file leaves to defaults stay; added keys go in sorted place.
#include "app/studio/configtextpatch.h"

#include <QtTest>

using namespace accel::app;

namespace {
const QString original = QStringLiteral("# FSDP template: edit num_processes for your GPUs.\n"
                                        "compute_environment: LOCAL_MACHINE\n"
                                        "distributed_type: FSDP\n"
                                        "\n"
                                        "fsdp_config:\n"
                                        "  # wrap each transformer block\n"
                                        "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                        "  fsdp_version: 2\n"
                                        "mixed_precision: 'bf16'   # the precision of the run\n"
                                        "num_processes: 8 # one per GPU\n"
                                        "use_cpu: false\n");
// The writer's text for the same config: sorted, defaults spelled out, no comments.
const QString before = QStringLiteral("compute_environment: LOCAL_MACHINE\n"
                                      "debug: false\n"
                                      "distributed_type: FSDP\n"
                                      "fsdp_config:\n"
                                      "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                      "  fsdp_version: 2\n"
                                      "machine_rank: 0\n"
                                      "mixed_precision: bf16\n"
                                      "num_processes: 8\n"
                                      "use_cpu: false\n");
} // namespace

class tst_ConfigTextPatch : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void unchangedConfigKeepsTheText()
    {
        QCOMPARE(patchConfigText(original, before, before), std::optional<QString>(original));
    }

    void changedScalarKeepsItsComment()
    {
        QString after = before;
        after.replace(QStringLiteral("num_processes: 8"), QStringLiteral("num_processes: 4"));
        QString expected = original;
        expected.replace(QStringLiteral("num_processes: 8 # one per GPU"),
                         QStringLiteral("num_processes: 4 # one per GPU"));
        QCOMPARE(patchConfigText(original, before, after), std::optional<QString>(expected));
    }

    void nestedChangeAndAddedKeys()
    {
        QString after = before;
        after.replace(QStringLiteral("  fsdp_version: 2\n"),
                      QStringLiteral("  fsdp_offload_params: true\n  fsdp_version: 2\n"));
        after.replace(QStringLiteral("machine_rank: 0\n"), QStringLiteral("gpu_ids: 0,1\nmachine_rank: 0\n"));
        const auto patched = patchConfigText(original, before, after);
        QVERIFY(patched);
        QCOMPARE(*patched, QStringLiteral("# FSDP template: edit num_processes for your GPUs.\n"
                                          "compute_environment: LOCAL_MACHINE\n"
                                          "distributed_type: FSDP\n"
                                          "\n"
                                          "fsdp_config:\n"
                                          "  # wrap each transformer block\n"
                                          "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                                          "  fsdp_offload_params: true\n"
                                          "  fsdp_version: 2\n"
                                          "gpu_ids: 0,1\n"
                                          "mixed_precision: 'bf16'   # the precision of the run\n"
                                          "num_processes: 8 # one per GPU\n"
                                          "use_cpu: false\n"));
    }

    void droppedKeyLosesItsLines()
    {
        QString after = before;
        after.replace(
            QStringLiteral("fsdp_config:\n  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n  fsdp_version: 2\n"),
            QString());
        after.replace(QStringLiteral("distributed_type: FSDP"), QStringLiteral("distributed_type: MULTI_GPU"));
        const auto patched = patchConfigText(original, before, after);
        QVERIFY(patched);
        QVERIFY2(!patched->contains(QStringLiteral("fsdp_")) &&
                     patched->contains(QStringLiteral("distributed_type: MULTI_GPU\n")),
                 qPrintable(*patched));
        QVERIFY(patched->startsWith(QStringLiteral("# FSDP template")));
        QVERIFY(patched->contains(QStringLiteral("num_processes: 8 # one per GPU\n")));
    }

    // Regression: a key replaced by one that sorts just before it (fp8_config's optimization_level
    // by opt_level) left the text unchanged: the new line was inserted where the old one was
    // removed, and then removed in its place.
    void replacedKeyThatSortsBeforeTheOld()
    {
        const QString file = QStringLiteral("mixed_precision: fp8\nfp8_config:\n  backend: MSAMP\n"
                                            "  optimization_level: O1 # from the questionnaire\nnum_processes: 2\n");
        const QString was = QStringLiteral("fp8_config:\n  backend: MSAMP\n  optimization_level: O1\n"
                                           "mixed_precision: fp8\nnum_processes: 2\n");
        const QString now = QStringLiteral("fp8_config:\n  backend: MSAMP\n  opt_level: O2\n"
                                           "mixed_precision: fp8\nnum_processes: 2\n");
        QCOMPARE(patchConfigText(file, was, now),
                 std::optional<QString>(QStringLiteral("mixed_precision: fp8\nfp8_config:\n  backend: MSAMP\n"
                                                       "  opt_level: O2\nnum_processes: 2\n")));
    }

    void textItCannotReadIsLeftToTheWriter()
    {
        QString after = before;
        after.replace(QStringLiteral("num_processes: 8"), QStringLiteral("num_processes: 4"));
        const QString json = QStringLiteral("{\"compute_environment\": \"LOCAL_MACHINE\", \"num_processes\": 8}\n");
        QVERIFY(!patchConfigText(json, before, after));
        QVERIFY(!patchConfigText(QStringLiteral("base: &anchor\n  a: 1\n"), before, after));
        // A legacy key the loader renamed (fp16 -> mixed_precision) must not survive beside the new one.
        QVERIFY(!patchConfigText(QStringLiteral("fp16: true\nnum_processes: 8\n"), before, after));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigTextPatch)
#include "tst_configtextpatch.moc"
