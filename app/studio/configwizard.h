// "New from questions": `accelerate config`'s questionnaire as a QWizard generated from the same
// declarative flow as `accel config` (core/config/questionflow.h), so the two cannot drift. One
// page per section of the flow (machine, multi-node, dynamo, DeepSpeed, FSDP, processes,
// precision, FP8, ...); pages and rows whose questions do not apply to the answers so far are
// skipped or hidden; each field shows the flow's validation message beside it and Next stays
// disabled while one is shown. Starting values come from this machine's hardware recommendation
// when the studio has one. The Summary page previews the file and saves it atomically; Finish
// hands the config to the Configure page as an unsaved document.
#pragma once

#include "app/studio/wizard/questionpage.h"
#include "core/common/result.h"
#include "core/config/clusterconfig.h"
#include "core/config/questionflow.h"

#include <QWizard>

#include <string>
#include <vector>

namespace accel::app {

class ClusterForm;
class SummaryPage;

class ConfigWizard : public QWizard {
    Q_OBJECT
public:
    // Takes the hardware recommendation from the main window's Hardware page when it has one.
    explicit ConfigWizard(QWidget *parent = nullptr);

    // Starting values from a recommended config (machine type, CPU only, processes, GPU ids,
    // mixed precision); answers typed since are replaced.
    void setRecommendation(const config::ClusterConfig &config);

    const config::QuestionFlow &flow() const { return m_flow; }
    // The page holding a question, nullptr for unknown ids.
    QuestionPage *pageFor(const std::string &questionId) const;
    QuestionPage *sectionPage(const std::string &sectionId) const;
    SummaryPage *summaryPage() const { return m_summary; }
    int summaryId() const { return m_summaryId; }
    // The input widget of a question (objectName "field_<id>").
    QWidget *editor(const std::string &questionId) const;
    // Sets a question's widget to a canonical answer; false for unknown ids or menu values.
    bool setAnswer(const std::string &questionId, const std::string &answer);

    // What the widgets hold now, walked in flow order (applicable questions only).
    WizardEvaluation evaluate() const;
    config::Answers answers() const { return evaluate().answers; }
    // The config the answers build, or why Accelerate would refuse them.
    Result<config::ClusterConfig> result() const;
    // Writes the config atomically (YAML, or JSON for a .json path) as `accel config` would.
    Result<void> saveTo(const QString &path);

    // The multi-node page's "Generate every node's config..." form, over the config the answers
    // build so far (hosts, port and processes per host taken from the answers). Owned by the caller.
    ClusterForm *createClusterForm();

    int nextId() const override;

Q_SIGNALS:
    void saved(const QString &path);

private:
    void refresh();

    const config::QuestionFlow &m_flow;
    std::vector<QuestionPage *> m_pages; // page id = index
    SummaryPage *m_summary = nullptr;
    int m_summaryId = -1;
};

} // namespace accel::app
