// The Launch page's form for a built-in recipe (gpt or mlp): one editor per field of the job
// schema (launcher/jobfile), grouped as Job / Model / Data / Training / Advanced, with the
// field's problem shown beside it as you type. Loads a job file into the form and saves the form
// as a job file that accel-worker accepts. The schema, defaults and checks live in JobFile; this
// widget only maps them to editors.
#pragma once

#include "core/common/result.h"
#include "launcher/jobfile.h"

#include <QHash>
#include <QWidget>

class QComboBox;
class QLabel;
class QStackedWidget;

namespace accel::app {

class RecipeForm : public QWidget {
    Q_OBJECT
public:
    explicit RecipeForm(QWidget *parent = nullptr);

    QString recipe() const;
    void setRecipe(const QString &recipe); // gpt or mlp; shared fields are kept

    const launcher::JobFile &job() const { return m_job; }
    void setJob(const launcher::JobFile &job);
    // Sets one field as if typed into its editor ("" = the schema default is left out).
    void setValue(const QString &key, const QString &value);
    QString value(const QString &key) const;

    Result<void> loadJob(const QString &path);
    Result<void> saveJob(const QString &path) const; // validates, then writes atomically
    QString jobPath() const { return m_jobPath; }    // last loaded or saved file ("" if none)

    bool isValid() const { return m_job.validate().empty(); }
    // The problem shown beside `key` ("" when the field is fine).
    QString fieldError(const QString &key) const;
    QWidget *editor(const QString &key) const;

Q_SIGNALS:
    void changed();
    void statusMessage(const QString &message);

private:
    struct Editor {
        QWidget *widget = nullptr;
        QLabel *error = nullptr;
    };
    QWidget *buildPanel(const std::string &recipe);
    QWidget *makeEditor(const launcher::JobField &field, QWidget *parent);
    void showJob();
    void showIssues();
    void editorChanged(const QString &key, const QString &text);
    QHash<QString, Editor> &editors() { return m_editors[QString::fromStdString(m_job.recipe())]; }
    const QHash<QString, Editor> &editors() const
    {
        static const QHash<QString, Editor> none;
        auto it = m_editors.find(QString::fromStdString(m_job.recipe()));
        return it == m_editors.end() ? none : *it;
    }

    QComboBox *m_recipe = nullptr;
    QStackedWidget *m_panels = nullptr;
    QHash<QString, QHash<QString, Editor>> m_editors; // recipe -> key -> editor
    launcher::JobFile m_job;
    QString m_jobPath;
    bool m_updating = false;
};

} // namespace accel::app
