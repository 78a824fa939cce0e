// The questionnaire dialog walks `accelerate config`'s questions and builds a config.
#include "app/studio/configwizard.h"

#include "core/config/configio.h"

#include <QComboBox>
#include <QLineEdit>
#include <QtTest>

using namespace accel::app;

class tst_ConfigWizard : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void defaultsBuildTheQuestionnairesConfig()
    {
        ConfigWizard wizard;
        int asked = 0;
        while (wizard.currentQuestion() && asked < 200) {
            QVERIFY2(wizard.answerFromWidget(), qPrintable(wizard.errorText()));
            ++asked;
        }
        QVERIFY(asked > 3);
        QVERIFY(!wizard.currentQuestion());
        auto built = wizard.result();
        QVERIFY2(built.has_value(), built ? "" : built.error().toString().c_str());
        auto expected = accel::config::QuestionFlow::standard().build({});
        QVERIFY(expected.has_value());
        QCOMPARE(accel::config::serializeConfig(*built, accel::config::ConfigFormat::Yaml),
                 accel::config::serializeConfig(*expected, accel::config::ConfigFormat::Yaml));
    }

    void choicesAndBadInput()
    {
        ConfigWizard wizard;
        bool choseMachine = false;
        bool sawBadNumber = false;
        int asked = 0;
        while (const accel::config::Question *question = wizard.currentQuestion()) {
            QVERIFY(++asked < 200);
            if (question->id == "machine_type") {
                QVERIFY(wizard.answer(QStringLiteral("MULTI_CPU")));
                choseMachine = true;
                continue;
            }
            if (question->kind == accel::config::QuestionKind::Integer && !sawBadNumber) {
                QVERIFY(!wizard.answer(QStringLiteral("many")));
                QVERIFY(!wizard.errorText().isEmpty());
                QCOMPARE(wizard.currentQuestion(), question); // still on the same question
                sawBadNumber = true;
                // Going back and forth keeps earlier answers.
                const auto answered = wizard.answers().size();
                wizard.back();
                QCOMPARE(wizard.answers().size(), answered - 1);
                continue;
            }
            QVERIFY2(wizard.answer(QString()), qPrintable(wizard.errorText()));
        }
        QVERIFY(choseMachine);
        QVERIFY(sawBadNumber);
        auto built = wizard.result();
        QVERIFY2(built.has_value(), built ? "" : built.error().toString().c_str());
        QCOMPARE(built->distributedType, accel::config::DistributedType::MultiCpu);
    }
};

QTEST_MAIN(tst_ConfigWizard)
#include "tst_configwizard.moc"
