// The Configure page opens real config files, shows validation messages beside the fields they
// concern, previews the text it will write, and saves unchanged configs byte for byte.
#include "app/studio/configbinding.h"
#include "app/studio/configform.h"
#include "app/studio/configurepage.h"
#include "app/studio/fieldeditor.h"

#include "core/config/configio.h"
#include "core/config/configschema.h"
#include "core/config/validation.h"

#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSpinBox>
#include <QTextEdit>
#include <QTimer>
#include <QtTest>

using namespace accel::app;
namespace config = accel::config;

namespace {
// What `accelerate config` writes for two GPUs with bf16 (keys sorted, 'no' quoted).
const QByteArray multiGpuYaml = "compute_environment: LOCAL_MACHINE\n"
                                "debug: false\n"
                                "distributed_type: MULTI_GPU\n"
                                "downcast_bf16: 'no'\n"
                                "enable_cpu_affinity: false\n"
                                "gpu_ids: all\n"
                                "machine_rank: 0\n"
                                "main_training_function: main\n"
                                "mixed_precision: bf16\n"
                                "num_machines: 1\n"
                                "num_processes: 2\n"
                                "rdzv_backend: static\n"
                                "same_network: true\n"
                                "tpu_env: []\n"
                                "tpu_use_cluster: false\n"
                                "tpu_use_sudo: false\n"
                                "use_cpu: false\n";

const QByteArray fsdpYaml = "compute_environment: LOCAL_MACHINE\n"
                            "debug: false\n"
                            "distributed_type: FSDP\n"
                            "downcast_bf16: 'no'\n"
                            "enable_cpu_affinity: false\n"
                            "fsdp_config:\n"
                            "  fsdp_activation_checkpointing: false\n"
                            "  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP\n"
                            "  fsdp_cpu_ram_efficient_loading: true\n"
                            "  fsdp_offload_params: false\n"
                            "  fsdp_reshard_after_forward: true\n"
                            "  fsdp_state_dict_type: SHARDED_STATE_DICT\n"
                            "  fsdp_version: 2\n"
                            "machine_rank: 0\n"
                            "main_training_function: main\n"
                            "mixed_precision: bf16\n"
                            "num_machines: 1\n"
                            "num_processes: 4\n"
                            "rdzv_backend: static\n"
                            "same_network: true\n"
                            "tpu_env: []\n"
                            "tpu_use_cluster: false\n"
                            "tpu_use_sudo: false\n"
                            "use_cpu: false\n";

// Like Accelerate's examples/config_yaml_templates: comments, keys out of order, defaults left out.
const QByteArray templateYaml = "# Multi-GPU template: set num_processes to the number of GPUs.\n"
                                "compute_environment: LOCAL_MACHINE\n"
                                "distributed_type: MULTI_GPU\n"
                                "# all the GPUs of this machine\n"
                                "num_processes: 2 # one per GPU\n"
                                "mixed_precision: 'bf16'\n"
                                "machine_rank: 0\n"
                                "num_machines: 1\n"
                                "\n"
                                "use_cpu: false\n";

QString writeFile(const QTemporaryDir &dir, const QString &name, const QByteArray &content)
{
    const QString path = dir.filePath(name);
    QFile file(path);
    if (!file.open(QIODevice::WriteOnly))
        return {};
    file.write(content);
    return path;
}

QByteArray readAll(const QString &path)
{
    QFile file(path);
    return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}
} // namespace

class tst_ConfigurePage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        QCoreApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
        QCoreApplication::setApplicationName(QStringLiteral("tst_configurepage"));
        // Saving shows the changes first by default; the tests below save directly, except
        // reviewBeforeSaveShowsDiff which switches it back on.
        ConfigurePage().setReviewBeforeSave(false);
    }

    // The form's choices and ranges are the config schema's (the reader accepts exactly what the
    // form offers): every choice field of a schema key lists the schema's values, every number
    // field has the schema's range, and each value the form offers is accepted by the field.
    void formOffersWhatTheSchemaDeclares()
    {
        int checked = 0;
        for (const FieldGroup &group : configFieldGroups()) {
            for (const FieldBinding &field : group.fields) {
                const config::schema::KeyRule *rule = config::schema::keyRule(field.spec.key.toStdString());
                if (!rule)
                    continue;
                if (field.spec.kind == FieldSpec::Kind::Choice) {
                    for (const std::string &value : rule->choices.values)
                        QVERIFY2(field.spec.choices.contains(QString::fromStdString(value)),
                                 qPrintable(field.spec.key + QStringLiteral(": ") + QString::fromStdString(value)));
                    for (const QString &value : field.spec.choices) {
                        config::ClusterConfig model;
                        QVERIFY2(field.set(model, value).isEmpty(), qPrintable(field.spec.key + ": " + value));
                    }
                    ++checked;
                } else if (field.spec.kind == FieldSpec::Kind::Int) {
                    if (rule->range.minimum)
                        QCOMPARE(field.spec.minimum, static_cast<int>(*rule->range.minimum));
                    QCOMPARE(field.spec.maximum,
                             rule->range.maximum ? static_cast<int>(*rule->range.maximum) : 2147483647);
                    ++checked;
                }
            }
        }
        QVERIFY(checked >= 20);
        // Two the form used to lack.
        const config::schema::KeyRule *mode = config::schema::keyRule("dynamo_config.dynamo_mode");
        QVERIFY(mode);
        QVERIFY(std::count(mode->choices.values.begin(), mode->choices.values.end(), "max-autotune-no-cudagraphs"));
    }

    void loadsFileIntoForm()
    {
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("fsdp.yaml"), fsdpYaml);
        ConfigurePage page;
        QVERIFY(page.openFile(path));
        QVERIFY(page.loadErrorText().isEmpty());
        ConfigForm *form = page.form();
        QCOMPARE(form->field(QStringLiteral("distributed_type"))->value(),
                 std::optional<QString>(QStringLiteral("FSDP")));
        QCOMPARE(form->field(QStringLiteral("num_processes"))->value(), std::optional<QString>(QStringLiteral("4")));
        QCOMPARE(form->field(QStringLiteral("fsdp_config.fsdp_version"))->value(),
                 std::optional<QString>(QStringLiteral("2")));
        QCOMPARE(form->field(QStringLiteral("fsdp_config.fsdp_auto_wrap_policy"))->value(),
                 std::optional<QString>(QStringLiteral("TRANSFORMER_BASED_WRAP")));
        QCOMPARE(form->field(QStringLiteral("fsdp_config.fsdp_reshard_after_forward"))->value(),
                 std::optional<QString>(QStringLiteral("true")));
        // Where SHARDED_STATE_DICT is chosen, the studio says which merge tool reads which folder:
        // Accelerate's refuses accel-worker's own sharded folder ("metadata is None").
        const QString stateDictTip =
            form->field(QStringLiteral("fsdp_config.fsdp_state_dict_type"))->editorWidget()->toolTip();
        QVERIFY2(stateDictTip.contains(QStringLiteral("metadata is None")) &&
                     stateDictTip.contains(QStringLiteral("accel merge-weights CHECKPOINT OUTPUT_DIR")),
                 qPrintable(stateDictTip));
        // Keys absent from the file read "not set".
        QCOMPARE(form->field(QStringLiteral("deepspeed_config.zero_stage"))->value(), std::nullopt);
        QCOMPARE(form->field(QStringLiteral("main_process_ip"))->value(), std::nullopt);
        QVERIFY(!page.isModified());
        QVERIFY(page.recentFiles().contains(QFileInfo(path).absoluteFilePath()));
        // Blocks the topology does not use say when they apply.
        // (In a wrapping line under the title, so that a long hint never widens the form.)
        auto hint = [&](const char *group) {
            return page.findChild<QGroupBox *>(QString::fromLatin1(group))
                ->findChild<QLabel *>(QStringLiteral("groupHint"));
        };
        QCOMPARE(page.findChild<QGroupBox *>(QStringLiteral("group:fsdp"))->title(), QStringLiteral("FSDP"));
        QVERIFY(hint("group:fsdp")->isHidden());
        QCOMPARE(page.findChild<QGroupBox *>(QStringLiteral("group:deepspeed"))->title(), QStringLiteral("DeepSpeed"));
        QVERIFY(!hint("group:deepspeed")->isHidden());
        QCOMPARE(hint("group:deepspeed")->text(), QStringLiteral("Used when distributed_type is DEEPSPEED."));
        QVERIFY(hint("group:deepspeed")->wordWrap());
    }

    void savesUnchangedConfigByteIdentical_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::newRow("multi-gpu") << multiGpuYaml;
        QTest::newRow("fsdp2") << fsdpYaml;
    }
    void savesUnchangedConfigByteIdentical()
    {
        QFETCH(QByteArray, content);
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("config.yaml"), content);
        ConfigurePage page;
        QVERIFY(page.openFile(path));
        QCOMPARE(page.previewText().toUtf8(), content);
        QVERIFY(page.save());
        QCOMPARE(readAll(path), content);
        // Save As to another name writes the same bytes.
        const QString copy = dir.filePath(QStringLiteral("copy.yaml"));
        QVERIFY(page.saveAs(copy));
        QCOMPARE(readAll(copy), content);
        QCOMPARE(page.filePath(), QFileInfo(copy).absoluteFilePath());
    }

    void previewUpdatesOnEdit()
    {
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("config.yaml"), multiGpuYaml);
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(path));
        auto *preview = page.findChild<QPlainTextEdit *>(QStringLiteral("preview"));
        QVERIFY(preview);
        QVERIFY(preview->toPlainText().contains(QStringLiteral("mixed_precision: bf16\n")));

        // Choose fp16 in the combo box as a user would.
        auto *precision = page.findChild<QComboBox *>(QStringLiteral("editor:mixed_precision"));
        QVERIFY(precision);
        precision->setCurrentIndex(precision->findText(QStringLiteral("fp16")));
        QVERIFY(preview->toPlainText().contains(QStringLiteral("mixed_precision: fp16\n")));
        QVERIFY(!preview->toPlainText().contains(QStringLiteral("mixed_precision: bf16")));
        QVERIFY(page.isModified());

        // Type a DeepSpeed-free text key: gpu_ids.
        auto *gpuIds = page.findChild<QLineEdit *>(QStringLiteral("editor:gpu_ids"));
        QVERIFY(gpuIds);
        gpuIds->selectAll();
        QTest::keyClicks(gpuIds, QStringLiteral("0,1"));
        QVERIFY2(preview->toPlainText().contains(QStringLiteral("gpu_ids: 0,1\n")), qPrintable(preview->toPlainText()));

        // Saving writes exactly the preview.
        QVERIFY(page.save());
        QCOMPARE(QString::fromUtf8(readAll(path)), preview->toPlainText());
        QVERIFY(!page.isModified());
    }

    void validationMessageBesideOffendingField()
    {
        QTemporaryDir dir;
        QByteArray content = multiGpuYaml;
        content.replace("machine_rank: 0\n", "machine_rank: 3\n");
        const QString path = writeFile(dir, QStringLiteral("bad-rank.yaml"), content);
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(path));
        FieldEditor *rank = page.form()->field(QStringLiteral("machine_rank"));
        QVERIFY2(!rank->diagnosticText().isEmpty(), "no message beside machine_rank");
        QVERIFY(rank->diagnosticLabel()->isVisible());
        // The label sits right under the spin box, inside the same field widget.
        QCOMPARE(rank->diagnosticLabel()->parentWidget(), static_cast<QWidget *>(rank));
        QVERIFY(rank->diagnosticLabel()->text().contains(QStringLiteral("status-error")));
        // Fields that are fine carry no message.
        QVERIFY(page.form()->field(QStringLiteral("mixed_precision"))->diagnosticText().isEmpty());

        // Fixing the value in the form removes the message.
        auto *spin = page.findChild<QSpinBox *>(QStringLiteral("editor:machine_rank"));
        QVERIFY(spin);
        spin->setValue(0);
        QVERIFY2(rank->diagnosticText().isEmpty(), qPrintable(rank->diagnosticText()));
        QVERIFY(!rank->diagnosticLabel()->isVisible());
    }

    void badValueTypedInFormIsShownBesideField()
    {
        ConfigurePage page;
        page.show();
        page.form()->field(QStringLiteral("deepspeed_config.gradient_clipping"));
        auto *clipping = page.findChild<QLineEdit *>(QStringLiteral("editor:deepspeed_config.gradient_clipping"));
        QVERIFY(clipping);
        QTest::keyClicks(clipping, QStringLiteral("one"));
        const QString message =
            page.form()->field(QStringLiteral("deepspeed_config.gradient_clipping"))->diagnosticText();
        QVERIFY2(message.contains(QStringLiteral("expected a number")), qPrintable(message));
        QVERIFY(!page.previewText().contains(QStringLiteral("gradient_clipping")));
    }

    void reviewBeforeSaveShowsDiff()
    {
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("config.yaml"), multiGpuYaml);
        ConfigurePage page;
        page.setReviewBeforeSave(true);
        page.show();
        QVERIFY(page.openFile(path));
        auto *processes = page.findChild<QSpinBox *>(QStringLiteral("editor:num_processes"));
        processes->setValue(3);

        // Cancel in the review dialog: nothing is written.
        QString shownDiff;
        auto answerDialog = [&shownDiff](bool accept) {
            QTimer::singleShot(0, [&shownDiff, accept] {
                auto *dialog = qobject_cast<QDialog *>(QApplication::activeModalWidget());
                QVERIFY(dialog);
                shownDiff = dialog->findChild<QTextEdit *>()->toPlainText();
                accept ? dialog->accept() : dialog->reject();
            });
        };
        answerDialog(false);
        QVERIFY(!page.save());
        QVERIFY2(shownDiff.contains(QStringLiteral("- num_processes: 2")), qPrintable(shownDiff));
        QVERIFY(shownDiff.contains(QStringLiteral("+ num_processes: 3")));
        QCOMPARE(readAll(path), multiGpuYaml);
        QVERIFY(page.isModified());

        answerDialog(true);
        QVERIFY(page.save());
        QVERIFY(readAll(path).contains("num_processes: 3\n"));
        QVERIFY(!page.isModified());
        page.setReviewBeforeSave(false);
    }

    void loadErrorsAreShownInPage()
    {
        QTemporaryDir dir;
        QByteArray content = multiGpuYaml;
        content.replace("mixed_precision: bf16\n", "mixed_precision: fp17\n");
        const QString bad = writeFile(dir, QStringLiteral("bad.yaml"), content);
        const QString good = writeFile(dir, QStringLiteral("good.yaml"), multiGpuYaml);
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(good));
        QVERIFY(!page.openFile(bad));
        QVERIFY(page.loadErrorText().contains(QStringLiteral("bad.yaml")));
        QVERIFY2(page.loadErrorText().contains(QStringLiteral("fp17")), qPrintable(page.loadErrorText()));
        // The document that was open stays open.
        QCOMPARE(page.filePath(), QFileInfo(good).absoluteFilePath());
        QVERIFY(!page.openFile(dir.filePath(QStringLiteral("missing.yaml"))));
        QVERIFY(page.loadErrorText().contains(QStringLiteral("missing.yaml")));
        QVERIFY(!page.openFile(writeFile(dir, QStringLiteral("broken.yaml"), "a: [1, 2\n")));
        // A good file clears the message.
        QVERIFY(page.openFile(good));
        QVERIFY(page.loadErrorText().isEmpty());
    }

    void jsonConfigsStayJson()
    {
        QTemporaryDir dir;
        const QByteArray json =
            "{\n  \"compute_environment\": \"LOCAL_MACHINE\",\n  \"distributed_type\": \"MULTI_CPU\",\n"
            "  \"num_processes\": 2\n}\n";
        const QString path = writeFile(dir, QStringLiteral("config.json"), json);
        ConfigurePage page;
        QVERIFY(page.openFile(path));
        QVERIFY(page.previewText().startsWith(QLatin1Char('{')));
        QVERIFY(page.save());
        QVERIFY(QJsonDocument::fromJson(readAll(path)).isObject());
        QCOMPARE(QJsonDocument::fromJson(readAll(path)).object().value(QStringLiteral("num_processes")).toInt(), 2);
    }

    void templateOpensUnmodifiedAndSavesSameBytes()
    {
        // Regression: opening a template counted as an edit, asked about unsaved changes, and a
        // save dropped its comments and added every default.
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("template.yaml"), templateYaml);
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(path));
        QVERIFY(!page.isModified());
        QCOMPARE(page.previewText().toUtf8(), templateYaml);
        // No "unsaved changes" question for an untouched file (a dialog would fail the test, not hang it).
        bool asked = false;
        QTimer closer;
        connect(&closer, &QTimer::timeout, this, [&] {
            if (QWidget *modal = QApplication::activeModalWidget()) {
                asked = true;
                modal->close();
            }
        });
        closer.start(100);
        QVERIFY(page.maybeDiscardChanges());
        QVERIFY(!asked);
        QVERIFY(page.save());
        QCOMPARE(readAll(path), templateYaml);
    }

    void editChangesOnlyItsLine()
    {
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("template.yaml"), templateYaml);
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(path));
        auto *processes = page.findChild<QSpinBox *>(QStringLiteral("editor:num_processes"));
        QVERIFY(processes);
        processes->setValue(4);
        QVERIFY(page.isModified());
        QVERIFY(page.save());
        QByteArray expected = templateYaml;
        expected.replace("num_processes: 2 # one per GPU", "num_processes: 4 # one per GPU");
        QCOMPARE(readAll(path), expected);
        QVERIFY(!page.isModified());
        // Back to the old value: the file is back to its old bytes.
        processes->setValue(2);
        QVERIFY(page.isModified());
        QVERIFY(page.save());
        QCOMPARE(readAll(path), templateYaml);
    }

    void onlyFieldsOfTheChosenTypeAreShown()
    {
        QTemporaryDir dir;
        const QString path = writeFile(dir, QStringLiteral("fsdp.yaml"), fsdpYaml);
        ConfigurePage page;
        page.resize(1024, 700);
        page.show();
        QVERIFY(page.openFile(path));
        ConfigForm *form = page.form();
        const int total = form->keys().size();
        QVERIFY(form->isFieldShown(QStringLiteral("fsdp_config.fsdp_version")));
        QVERIFY(form->isFieldShown(QStringLiteral("num_processes")));
        QVERIFY(form->isFieldShown(QStringLiteral("mixed_precision")));
        QVERIFY(!form->isFieldShown(QStringLiteral("deepspeed_config.zero_stage")));
        QVERIFY(!form->isFieldShown(QStringLiteral("fp8_config.margin"))); // bf16, not fp8
        QVERIFY(!form->isFieldShown(QStringLiteral("main_process_ip")));   // one machine
        QVERIFY2(form->shownFieldCount() < total / 2,
                 qPrintable(QStringLiteral("%1 of %2 shown").arg(form->shownFieldCount()).arg(total)));
        // "Show all fields" brings every one back.
        auto *showAll = page.findChild<QCheckBox *>(QStringLiteral("showAllFields"));
        QVERIFY(showAll);
        showAll->setChecked(true);
        QCOMPARE(form->shownFieldCount(), total);
        showAll->setChecked(false);
        // Choosing DeepSpeed shows its block instead of FSDP's.
        auto *type = page.findChild<QComboBox *>(QStringLiteral("editor:distributed_type"));
        QVERIFY(type);
        type->setCurrentIndex(type->findText(QStringLiteral("DEEPSPEED")));
        QVERIFY(form->isFieldShown(QStringLiteral("deepspeed_config.zero_stage")));
        QVERIFY(!form->isFieldShown(QStringLiteral("fsdp_config.fsdp_version")));
    }

    // Regression: the FP8 form wrote amax_history_length (which nothing reads; the page then
    // warned it has no effect) and showed "(not set)" beside a file's amax_history_len: 1024.
    void fp8FieldsWriteTheKeysTheRecipesRead()
    {
        QTemporaryDir dir;
        const QByteArray te = "distributed_type: MULTI_GPU\nmixed_precision: fp8\nnum_processes: 2\n"
                              "fp8_config:\n  backend: TE\n  amax_history_len: 1024\n  amax_compute_algo: max\n";
        ConfigurePage page;
        page.show();
        QVERIFY(page.openFile(writeFile(dir, QStringLiteral("te.yaml"), te)));
        ConfigForm *form = page.form();
        QVERIFY(form->isFieldShown(QStringLiteral("fp8_config.amax_history_len")));
        QCOMPARE(form->field(QStringLiteral("fp8_config.amax_history_len"))->value(),
                 std::optional<QString>(QStringLiteral("1024")));
        QCOMPARE(form->field(QStringLiteral("fp8_config.amax_compute_algo"))->value(),
                 std::optional<QString>(QStringLiteral("max")));
        auto *history = page.findChild<QSpinBox *>(QStringLiteral("editor:fp8_config.amax_history_len"));
        QVERIFY(history);
        history->setValue(16);
        QVERIFY2(page.previewText().contains(QStringLiteral("  amax_history_len: 16\n")),
                 qPrintable(page.previewText()));
        QVERIFY(!page.previewText().contains(QStringLiteral("amax_history_length")));

        // A questionnaire's file: its spelling is shown in the same field, with the warning that it
        // has no effect; editing the field writes the spelling that works and drops the other.
        const QByteArray questionnaire = "distributed_type: MULTI_GPU\nmixed_precision: fp8\nnum_processes: 2\n"
                                         "fp8_config:\n  backend: MSAMP\n  optimization_level: O1\n";
        const QString path = writeFile(dir, QStringLiteral("msamp.yaml"), questionnaire);
        QVERIFY(page.openFile(path));
        QCOMPARE(form->field(QStringLiteral("fp8_config.opt_level"))->value(),
                 std::optional<QString>(QStringLiteral("O1")));
        auto before = config::loadConfigFile(path.toStdString());
        QVERIFY(before);
        const config::Diagnostics warned = config::validate(*before);
        QVERIFY(std::any_of(warned.begin(), warned.end(), [](const config::Diagnostic &diagnostic) {
            return diagnostic.key == "fp8_config.optimization_level";
        }));
        auto *level = page.findChild<QComboBox *>(QStringLiteral("editor:fp8_config.opt_level"));
        QVERIFY(level);
        level->setCurrentIndex(level->findText(QStringLiteral("O2")));
        QVERIFY2(page.previewText().contains(QStringLiteral("  opt_level: O2\n")), qPrintable(page.previewText()));
        QVERIFY(!page.previewText().contains(QStringLiteral("optimization_level")));
        QVERIFY(page.save());
        auto saved = config::loadConfigFile(path.toStdString());
        QVERIFY(saved);
        QCOMPARE(saved->fp8.optLevel, std::optional<std::string>("O2"));
        QVERIFY(!saved->fp8.optimizationLevel);
        for (const config::Diagnostic &diagnostic : config::validate(*saved))
            QVERIFY2(diagnostic.key.find("optimization_level") == std::string::npos, diagnostic.message.c_str());
    }

    void recommendationLoadsAsUnsavedDocument()
    {
        ConfigurePage page;
        accel::config::ClusterConfig config;
        config.distributedType = accel::config::DistributedType::MultiCpu;
        config.numProcesses = 4;
        accel::config::applyDefaults(config);
        page.loadConfig(config, QStringLiteral("recommendation"));
        QVERIFY(page.filePath().isEmpty());
        QVERIFY(page.isModified());
        QVERIFY(page.previewText().contains(QStringLiteral("distributed_type: MULTI_CPU\n")));
        QCOMPARE(page.form()->field(QStringLiteral("num_processes"))->value(),
                 std::optional<QString>(QStringLiteral("4")));
    }
};

QTEST_MAIN(tst_ConfigurePage)
#include "tst_configurepage.moc"
