#include "app/studio/configwizard.h"

#include "app/studio/cluster/clusterform.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/wizard/summarypage.h"
#include "core/config/configio.h"

#include <QPushButton>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace accel::app {

ConfigWizard::ConfigWizard(QWidget *parent) : QWizard(parent), m_flow(config::QuestionFlow::standard())
{
    setWindowTitle(tr("New config from questions"));
    setObjectName(QStringLiteral("configWizard"));
    setWizardStyle(QWizard::ClassicStyle);
    setOption(QWizard::NoBackButtonOnStartPage, true);
    resize(760, 560);
    for (const config::Section &section : m_flow.sections()) {
        const auto questions = m_flow.questionsIn(section.id);
        if (questions.empty())
            continue;
        auto *page = new QuestionPage(section, questions, this);
        connect(page, &QuestionPage::inputChanged, this, &ConfigWizard::refresh);
        setPage(static_cast<int>(m_pages.size()), page);
        m_pages.push_back(page);
    }
    m_summary = new SummaryPage(this);
    m_summaryId = static_cast<int>(m_pages.size());
    setPage(m_summaryId, m_summary);
    setStartId(0);
    setButtonText(QWizard::FinishButton, tr("Open in Configure"));
    if (QuestionPage *multiNode = sectionPage("multi_node")) {
        auto *cluster = new QPushButton(tr("Generate every node's config..."), multiNode);
        cluster->setObjectName(QStringLiteral("wizardClusterButton"));
        cluster->setToolTip(tr("One form for the whole cluster: hosts, processes per host, main host and port"));
        connect(cluster, &QPushButton::clicked, this, [this] {
            std::unique_ptr<ClusterForm> form(createClusterForm());
            form->exec();
        });
        multiNode->addFooter(cluster);
    }

    if (parent) {
        if (auto *hardware = parent->window()->findChild<HardwarePage *>(); hardware && hardware->hasReport())
            setRecommendation(hardware->recommendedConfig());
    }
    refresh();
}

void ConfigWizard::setRecommendation(const config::ClusterConfig &config)
{
    for (const auto &[id, answer] : m_flow.seedAnswers(config))
        setAnswer(id, answer);
    refresh();
}

QuestionPage *ConfigWizard::pageFor(const std::string &questionId) const
{
    for (QuestionPage *page : m_pages)
        if (page->hasQuestion(questionId))
            return page;
    return nullptr;
}

QuestionPage *ConfigWizard::sectionPage(const std::string &sectionId) const
{
    for (QuestionPage *page : m_pages)
        if (page->sectionId() == sectionId)
            return page;
    return nullptr;
}

QWidget *ConfigWizard::editor(const std::string &questionId) const
{
    QuestionPage *page = pageFor(questionId);
    return page ? page->editor(questionId) : nullptr;
}

bool ConfigWizard::setAnswer(const std::string &questionId, const std::string &answer)
{
    QuestionPage *page = pageFor(questionId);
    return page && page->setAnswer(questionId, answer);
}

WizardEvaluation ConfigWizard::evaluate() const
{
    WizardEvaluation evaluation;
    config::Answers &a = evaluation.answers;
    for (const config::Question &question : m_flow.questions()) {
        if (question.condition && !question.condition(a))
            continue;
        evaluation.applicable.insert(question.id);
        evaluation.prompts[question.id] = question.promptFor(a);
        QuestionPage *page = pageFor(question.id);
        const std::string input = page ? page->input(question.id).toStdString() : std::string();
        Result<std::string> answer = m_flow.interpret(question, input, a);
        if (answer) {
            a[question.id] = *answer;
        } else {
            evaluation.problems[question.id] = answer.error().message;
            a[question.id] = question.defaultAnswer; // later questions see the default meanwhile
        }
    }
    return evaluation;
}

Result<config::ClusterConfig> ConfigWizard::result() const
{
    const WizardEvaluation evaluation = evaluate();
    if (!evaluation.problems.empty()) {
        const auto &[id, problem] = *evaluation.problems.begin();
        return makeError(ErrorCode::InvalidInput, problem, id);
    }
    return m_flow.build(evaluation.answers);
}

Result<void> ConfigWizard::saveTo(const QString &path)
{
    auto built = result();
    if (!built) {
        m_summary->setStatus(QString::fromStdString(built.error().toString()), true);
        return tl::make_unexpected(built.error());
    }
    if (auto written = config::saveConfigFile(*built, path.toStdString()); !written) {
        m_summary->setStatus(tr("Not saved: %1").arg(QString::fromStdString(written.error().toString())), true);
        return written;
    }
    m_summary->setStatus(tr("Saved to %1").arg(path), false);
    Q_EMIT saved(path);
    return {};
}

ClusterForm *ConfigWizard::createClusterForm()
{
    const WizardEvaluation evaluation = evaluate();
    config::Answers answers = evaluation.answers;
    auto get = [&](const char *id) {
        auto it = answers.find(id);
        return it == answers.end() ? std::string() : it->second;
    };
    const int machines = std::max(1, std::atoi(get("num_machines").c_str()));
    const int processes = std::max(1, std::atoi(get("num_processes").c_str()));
    const std::string mainIp = get("main_process_ip");
    const std::string port = get("main_process_port");
    // The settings every node shares: the answers as one machine (the form sets the cluster keys).
    answers["num_machines"] = "1";
    answers["num_processes"] = std::to_string(std::max(2, processes / machines));
    config::ClusterConfig base;
    if (auto built = m_flow.build(m_flow.prune(answers)))
        base = *built;
    else
        base.distributedType =
            config::distributedTypeFromString(get("machine_type")).value_or(config::DistributedType::No);
    auto *form = new ClusterForm(base, this);
    form->setProcessesPerHost(std::max(1, processes / machines));
    if (!mainIp.empty()) {
        QStringList hosts{QString::fromStdString(mainIp)};
        for (int i = 1; i < machines; ++i)
            hosts << QString();
        form->setHosts(hosts);
    }
    if (!port.empty() && std::atoi(port.c_str()) > 0)
        form->setPort(std::atoi(port.c_str()));
    return form;
}

int ConfigWizard::nextId() const
{
    const int current = currentId();
    if (current < 0 || current >= m_summaryId)
        return -1;
    const WizardEvaluation evaluation = evaluate();
    for (int id = current + 1; id < m_summaryId; ++id)
        if (m_pages[static_cast<size_t>(id)]->applies(evaluation))
            return id;
    return m_summaryId;
}

void ConfigWizard::refresh()
{
    const WizardEvaluation evaluation = evaluate();
    for (QuestionPage *page : m_pages)
        page->apply(evaluation);
}

} // namespace accel::app
