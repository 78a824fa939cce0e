// RunActions: what the Runs page does to runs of this machine beside following them: notes and
// tags (monitor/runannotations.h through RunsModel), open the folder in the desktop's file
// manager, export a run as one .tar.gz in the background, delete runs with their files after a
// confirmation that says what goes, and the hyperparameter diff. The same library code as `accel
// runs notes/tag/open/export/delete`. Runs of other hosts are managed there (accel runs …).
#pragma once

#include <QObject>
#include <QStringList>
#include <QUrl>

#include <functional>

class QWidget;

namespace accel::monitor {
class RunsModel;
}

namespace accel::app {

class RunActions : public QObject {
    Q_OBJECT
public:
    RunActions(monitor::RunsModel *model, QWidget *dialogParent);

    // False (with a reason) for runs this studio cannot change: other hosts' runs.
    bool isManageable(const QString &address, QString *why = nullptr) const;

    bool setNotes(const QString &address, const QString &notes);
    bool setTags(const QString &address, const QString &tags); // "a, b"
    // Asks for the notes (a multi-line text dialog) or tags (one line).
    void editNotes(const QString &address);
    void editTags(const QString &address);

    bool openFolder(const QString &address);
    // Tests and headless runs replace the desktop's opener (QDesktopServices::openUrl).
    static void setFolderOpener(std::function<bool(const QUrl &)> opener);

    // Writes the archive in the background; exportFinished() tells how it went.
    void exportRun(const QString &address, const QString &archive);
    void askExport(const QString &address); // asks where (a save dialog), then exportRun()

    // Deletes the runs and their files now (live runs are refused: stop them first); returns the
    // addresses deleted, and the reasons for the others in `errors`.
    QStringList deleteRuns(const QStringList &addresses, QStringList *errors = nullptr);
    // Asks first ("Delete 2 runs and their 14 files (3.2 MiB)? ..."), then deleteRuns().
    void confirmAndDelete(const QStringList &addresses);
    // The confirmation's text for these runs.
    QString deleteQuestion(const QStringList &addresses) const;

    void showDiff(const QStringList &addresses); // RunDiffDialog

Q_SIGNALS:
    void statusMessage(const QString &message);
    void exportFinished(const QString &address, const QString &archive, const QString &error);

private:
    int rowOf(const QString &address) const;

    monitor::RunsModel *m_model;
    QWidget *m_parent;
};

} // namespace accel::app
