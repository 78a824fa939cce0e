// The studio's config wizard (a QWizard generated from the question flow), driven through its
// widgets on the offscreen platform: the same scripted answers as tst_configcli's terminal
// sessions must save byte-identical files; pages that do not apply are skipped; validation
// messages sit beside the fields and keep Next disabled; the recommendation seeds the fields.
#include "app/studio/configwizard.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/wizard/summarypage.h"
#include "core/config/configio.h"
#include "tests/config/scriptedflows.h"
#include "tests/helpers/testsupport.h"

#include <QAbstractButton>
#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QTemporaryDir>
#include <QtTest>

using namespace accel;
using namespace accel::app;

namespace {

QByteArray readBytes(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return "<missing " + path.toUtf8() + ">";
    return file.readAll();
}

// The canonical answers the terminal questionnaire derives from typed lines (re-asking a question
// after a refused line, as `accel config` does).
config::Answers replay(const QStringList &lines)
{
    const config::QuestionFlow &flow = config::QuestionFlow::standard();
    config::Answers answers;
    int index = 0;
    while (const config::Question *question = flow.next(answers)) {
        const std::string line = index < lines.size() ? lines[index].toStdString() : std::string();
        ++index;
        if (auto answer = flow.interpret(*question, line, answers))
            answers[question->id] = *answer;
        else if (index > lines.size())
            break;
    }
    return answers;
}

// Sets a question's widget the way a person would: picks the combo entry or types the text.
bool setWidget(ConfigWizard &wizard, const std::string &id, const std::string &answer)
{
    QWidget *editor = wizard.editor(id);
    if (auto *combo = qobject_cast<QComboBox *>(editor)) {
        const int index = combo->findData(QString::fromStdString(answer));
        if (index < 0)
            return false;
        combo->setCurrentIndex(index);
        return true;
    }
    if (auto *line = qobject_cast<QLineEdit *>(editor)) {
        line->clear();
        QTest::keyClicks(line, QString::fromStdString(answer));
        return line->text() == QString::fromStdString(answer);
    }
    return false;
}

QuestionPage *currentQuestionPage(ConfigWizard &wizard)
{
    return qobject_cast<QuestionPage *>(wizard.currentPage());
}

} // namespace

class tst_ConfigWizard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void wizardSavesTheQuestionnairesFiles_data()
    {
        QTest::addColumn<QStringList>("lines");
        QTest::addColumn<QString>("expected");
        for (const test::ScriptedFlow &flow : test::scriptedFlows())
            QTest::newRow(flow.name) << flow.lines << flow.expectedFile;
    }

    void wizardSavesTheQuestionnairesFiles()
    {
        QFETCH(QStringList, lines);
        QFETCH(QString, expected);
        const config::Answers answers = replay(lines);
        QVERIFY(!answers.empty());

        ConfigWizard wizard;
        wizard.show();
        QStringList visited;
        int given = 0;
        for (int guard = 0; wizard.currentId() != wizard.summaryId(); ++guard) {
            QVERIFY(guard < 20);
            QuestionPage *page = currentQuestionPage(wizard);
            QVERIFY(page);
            visited << QString::fromStdString(page->sectionId());
            for (const auto &[id, answer] : answers) {
                if (!page->hasQuestion(id))
                    continue;
                QVERIFY2(setWidget(wizard, id, answer), id.c_str());
                ++given;
            }
            QVERIFY2(wizard.button(QWizard::NextButton)->isEnabled(), qPrintable(visited.join(QLatin1Char(','))));
            const int before = wizard.currentId();
            wizard.next();
            QVERIFY(wizard.currentId() > before);
        }
        QCOMPARE(given, static_cast<int>(answers.size())); // every answer went through a widget
        QVERIFY(visited.contains(QStringLiteral("machine")));
        QCOMPARE(visited.contains(QStringLiteral("multi_node")), answers.count("num_machines") == 1);
        QCOMPARE(visited.contains(QStringLiteral("fsdp")), answers.count("use_fsdp") == 1);

        QTemporaryDir dir;
        const QString fromWizard = dir.filePath(QStringLiteral("wizard.yaml"));
        auto saved = wizard.saveTo(fromWizard);
        QVERIFY2(saved.has_value(), saved ? "" : saved.error().toString().c_str());
        QVERIFY(wizard.summaryPage()->statusText().startsWith(QStringLiteral("Saved to")));
        QCOMPARE(wizard.summaryPage()->previewText().toUtf8(), readBytes(fromWizard));
        QVERIFY(wizard.button(QWizard::FinishButton)->isEnabled());
        wizard.button(QWizard::FinishButton)->click();
        QCOMPARE(static_cast<QDialog &>(wizard).result(), int(QDialog::Accepted));

        const QString fromTerminal = dir.filePath(QStringLiteral("terminal.yaml"));
        const auto run = test::runAccel({QStringLiteral("config"), QStringLiteral("--config_file"), fromTerminal},
                                        60000, test::stdinFor(lines));
        QVERIFY2(run.exitCode == 0, qPrintable(run.err + run.out));
        QCOMPARE(readBytes(fromWizard), readBytes(fromTerminal));
        QCOMPARE(readBytes(fromWizard), readBytes(test::dataPath(QStringLiteral("configs/") + expected)));
    }

    void defaultsBuildTheQuestionnairesConfig()
    {
        ConfigWizard wizard;
        wizard.show();
        QStringList visited;
        for (int guard = 0; wizard.currentId() != wizard.summaryId(); ++guard) {
            QVERIFY(guard < 20);
            QVERIFY(wizard.button(QWizard::NextButton)->isEnabled());
            visited << QString::fromStdString(currentQuestionPage(wizard)->sectionId());
            wizard.next();
        }
        // No distributed training: the pages that only apply to other answers are skipped.
        QVERIFY(!visited.contains(QStringLiteral("multi_node")));
        QVERIFY(!visited.contains(QStringLiteral("fsdp")));
        QVERIFY(!visited.contains(QStringLiteral("sagemaker")));
        auto built = wizard.result();
        QVERIFY(built.has_value());
        auto expected = config::QuestionFlow::standard().build({});
        QCOMPARE(config::serializeConfig(*built, config::ConfigFormat::Yaml),
                 config::serializeConfig(*expected, config::ConfigFormat::Yaml));
        QCOMPARE(wizard.summaryPage()->previewText().toStdString(),
                 config::serializeConfig(*expected, config::ConfigFormat::Yaml));
    }

    void inlineValidationBlocksNext()
    {
        ConfigWizard wizard;
        wizard.show();
        QVERIFY(setWidget(wizard, "machine_type", "MULTI_GPU"));
        wizard.next();
        QCOMPARE(currentQuestionPage(wizard)->sectionId(), std::string("multi_node"));
        QAbstractButton *next = wizard.button(QWizard::NextButton);
        QVERIFY(next->isEnabled());
        // Later rows of the same page appear as earlier answers make them apply.
        QVERIFY(!wizard.editor("main_process_ip")->isVisibleTo(&wizard));
        QVERIFY(setWidget(wizard, "num_machines", "many"));
        auto *problem = wizard.findChild<QLabel *>(QStringLiteral("problem_num_machines"));
        QVERIFY(problem);
        QCOMPARE(problem->text(), QStringLiteral("expected a whole number; got many"));
        QVERIFY(!next->isEnabled());
        QVERIFY(setWidget(wizard, "num_machines", "2"));
        QVERIFY(problem->text().isEmpty());
        QVERIFY(wizard.editor("main_process_ip")->isVisibleTo(&wizard));
        // The main process IP has no default: required.
        auto *ipProblem = wizard.findChild<QLabel *>(QStringLiteral("problem_main_process_ip"));
        QCOMPARE(ipProblem->text(), QStringLiteral("an answer is required"));
        QVERIFY(!next->isEnabled());
        QVERIFY(setWidget(wizard, "machine_rank", "2"));
        QCOMPARE(wizard.findChild<QLabel *>(QStringLiteral("problem_machine_rank"))->text(),
                 QStringLiteral("expected a rank from 0 to 1"));
        QVERIFY(setWidget(wizard, "machine_rank", "1"));
        QVERIFY(setWidget(wizard, "main_process_ip", "10.0.0.7"));
        QVERIFY(setWidget(wizard, "main_process_port", "70000"));
        QVERIFY(!next->isEnabled());
        QVERIFY(setWidget(wizard, "main_process_port", "29501"));
        QVERIFY(next->isEnabled());

        // Going back keeps the answers; the refused MULTI_GPU single process shows on its page.
        wizard.back();
        QVERIFY(setWidget(wizard, "machine_type", "MULTI_CPU"));
        wizard.next();
        QVERIFY(setWidget(wizard, "num_machines", "1"));
        QVERIFY(!wizard.editor("main_process_ip")->isVisibleTo(&wizard));
        QCOMPARE(qobject_cast<QLineEdit *>(wizard.editor("main_process_ip"))->text(), QStringLiteral("10.0.0.7"));
    }

    void singleProcessMultiGpuIsRefusedOnTheProcessesPage()
    {
        ConfigWizard wizard;
        wizard.show();
        QVERIFY(setWidget(wizard, "machine_type", "MULTI_GPU"));
        for (int guard = 0; currentQuestionPage(wizard) && currentQuestionPage(wizard)->sectionId() != "processes";
             ++guard) {
            QVERIFY(guard < 20);
            wizard.next();
        }
        QVERIFY(currentQuestionPage(wizard));
        auto *problem = wizard.findChild<QLabel *>(QStringLiteral("problem_num_processes"));
        QVERIFY(
            problem->text().startsWith(QStringLiteral("a MULTI_GPU run on one machine needs more than one process")));
        QVERIFY(!wizard.button(QWizard::NextButton)->isEnabled());
        QVERIFY(!wizard.result().has_value());
        QVERIFY(setWidget(wizard, "num_processes", "4"));
        QVERIFY(wizard.button(QWizard::NextButton)->isEnabled());
        // The prompt follows the machine type.
        auto *label = wizard.editor("num_processes")->parentWidget()->findChild<QLabel *>();
        QVERIFY2(label->text().startsWith(QStringLiteral("How many GPU(s) should be used")), qPrintable(label->text()));
    }

    void takesTheRecommendationFromTheStudiosHardwarePage()
    {
        QWidget window;
        auto *hardware = new HardwarePage(&window);
        hardware::DetectOptions options;
        options.probePython = false;
        options.probeWorker = false;
        hardware->setDetectOptions(options);
        QSignalSpy finished(hardware, &HardwarePage::detectionFinished);
        hardware->refresh();
        QVERIFY(finished.wait(60000));
        QVERIFY(hardware->hasReport());
        const config::Answers seed = config::QuestionFlow::standard().seedAnswers(hardware->recommendedConfig());
        QVERIFY(seed.count("machine_type"));

        auto *configure = new QWidget(&window); // the wizard's parent, as the Configure page opens it
        ConfigWizard wizard(configure);
        const config::Answers answers = wizard.answers();
        int compared = 0;
        for (const auto &[id, answer] : seed) {
            if (!answers.count(id))
                continue; // e.g. gpu_ids for a CPU run
            QCOMPARE(answers.at(id), answer);
            ++compared;
        }
        QVERIFY(compared >= 2);
    }

    void recommendationSeedsTheFields()
    {
        config::ClusterConfig recommended;
        recommended.distributedType = config::DistributedType::MultiCpu;
        recommended.useCpu = true;
        recommended.numProcesses = 2;
        recommended.mixedPrecision = config::MixedPrecision::Bf16;
        config::applyDefaults(recommended);
        ConfigWizard wizard;
        wizard.setRecommendation(recommended);
        QCOMPARE(qobject_cast<QComboBox *>(wizard.editor("machine_type"))->currentData().toString(),
                 QStringLiteral("MULTI_CPU"));
        QCOMPARE(qobject_cast<QLineEdit *>(wizard.editor("num_processes"))->text(), QStringLiteral("2"));
        QCOMPARE(qobject_cast<QComboBox *>(wizard.editor("mixed_precision"))->currentData().toString(),
                 QStringLiteral("bf16"));
        auto built = wizard.result();
        QVERIFY(built.has_value());
        QCOMPARE(built->distributedType, config::DistributedType::MultiCpu);
        QCOMPARE(*built->numProcesses, std::int64_t(2));
        QCOMPARE(*built->mixedPrecision, config::MixedPrecision::Bf16);
    }
};

QTEST_MAIN(tst_ConfigWizard)
#include "tst_configwizard.moc"
