// The Configure page: open any Accelerate YAML/JSON config, edit it as a form with validation
// messages beside the fields, watch the file text it will write, and save it atomically.
#pragma once

#include "app/studio/recentfiles.h"
#include "core/config/clusterconfig.h"
#include "core/config/configio.h"
#include "core/config/diagnostic.h"

#include <QWidget>

class QLabel;
class QScrollArea;
class QToolButton;

namespace accel::app {

class ConfigChecksPanel;
class ConfigForm;

class ConfigurePage : public QWidget {
    Q_OBJECT
public:
    explicit ConfigurePage(QWidget *parent = nullptr);

    // Loads `path` into the form. On failure the page shows why (with the file's line numbers)
    // and keeps the document it had; returns false.
    bool openFile(const QString &path);
    // Shows `config` as a new, unsaved document (e.g. the hardware recommendation).
    void loadConfig(const config::ClusterConfig &config, const QString &origin);
    void newConfig();
    // Runs the questionnaire dialog and shows its config as a new, unsaved document.
    void newFromQuestions();
    // Writes the current document to its file (asks for a name when it has none).
    bool save();
    bool saveAs(const QString &path);
    void openWithDialog();
    bool saveWithDialog();
    // Asks what to do with unsaved changes; false when the user cancels.
    bool maybeDiscardChanges();
    // Shows the line diff between the file on disk and what a save would write; true when the
    // user accepts (the button reads `acceptText`).
    bool reviewChanges(const QString &acceptText);
    // Whether Save shows the diff first (remembered; on by default).
    bool reviewBeforeSave() const;
    void setReviewBeforeSave(bool review);

    bool isModified() const;
    QString filePath() const { return m_path; }
    // The exact text a save would write now.
    QString previewText() const;
    QString loadErrorText() const;
    const config::Diagnostics &diagnostics() const { return m_diagnostics; }
    QStringList recentFiles() const { return m_recent.files(); }
    ConfigForm *form() const { return m_form; }

Q_SIGNALS:
    void statusMessage(const QString &message);
    void documentChanged();

private:
    void buildUi();
    void setDocument(const config::ClusterConfig &config, const QString &path, const QString &savedText);
    void refresh();
    void showLoadError(const QString &title, const config::Diagnostics &diagnostics);
    void updateRecentMenu();
    void focusField(const QString &key);
    config::ConfigFormat format() const;
    // What a save to `path` writes: the file's own text with only the changed keys' lines edited
    // (comments kept), or the whole config as Accelerate writes it for a new file or format.
    QString textFor(const QString &path) const;
    QString currentYaml() const;

    ConfigForm *m_form = nullptr;
    QLabel *m_title = nullptr;
    QLabel *m_loadError = nullptr;
    ConfigChecksPanel *m_checks = nullptr;
    QScrollArea *m_scroll = nullptr;
    QToolButton *m_recentButton = nullptr;
    QString m_path;      // "" for an unsaved document
    QString m_origin;    // what an unsaved document came from
    QString m_savedText; // the text on disk when opened or last saved
    QString m_baseline;  // the config as opened or last saved, in the writer's YAML (what "modified" compares)
    config::Diagnostics m_diagnostics;
    RecentFiles m_recent;
};

} // namespace accel::app
