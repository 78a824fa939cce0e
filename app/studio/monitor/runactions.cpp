#include "app/studio/monitor/runactions.h"

#include "app/studio/monitor/axisunits.h"
#include "app/studio/monitor/rundiffdialog.h"
#include "monitor/runfolder.h"
#include "monitor/runsmodel.h"

#include <QAbstractButton>
#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QFutureWatcher>
#include <QInputDialog>
#include <QMessageBox>
#include <QtConcurrent/QtConcurrentRun>

namespace accel::app {

namespace {

std::function<bool(const QUrl &)> &folderOpener()
{
    static std::function<bool(const QUrl &)> opener = [](const QUrl &url) { return QDesktopServices::openUrl(url); };
    return opener;
}

} // namespace

RunActions::RunActions(monitor::RunsModel *model, QWidget *dialogParent)
    : QObject(dialogParent), m_model(model), m_parent(dialogParent)
{}

void RunActions::setFolderOpener(std::function<bool(const QUrl &)> opener)
{
    folderOpener() = std::move(opener);
}

int RunActions::rowOf(const QString &address) const
{
    return m_model->rowOfAddress(address);
}

bool RunActions::isManageable(const QString &address, QString *why) const
{
    const int row = rowOf(address);
    if (row < 0) {
        if (why)
            *why = tr("%1 is not listed").arg(address);
        return false;
    }
    const monitor::RunInfo &info = m_model->run(row);
    if (!info.location.isEmpty()) {
        if (why)
            *why = tr("%1 is a run of %2: manage it there with accel runs").arg(info.id, info.location);
        return false;
    }
    return true;
}

bool RunActions::setNotes(const QString &address, const QString &notes)
{
    const int row = rowOf(address);
    return row >= 0 && m_model->setData(m_model->index(row, monitor::RunsModel::NotesColumn), notes);
}

bool RunActions::setTags(const QString &address, const QString &tags)
{
    const int row = rowOf(address);
    return row >= 0 && m_model->setData(m_model->index(row, monitor::RunsModel::TagsColumn), tags);
}

void RunActions::editNotes(const QString &address)
{
    const int row = rowOf(address);
    if (row < 0)
        return;
    bool ok = false;
    const QString notes =
        QInputDialog::getMultiLineText(m_parent, tr("Notes"), tr("Notes on %1:").arg(m_model->run(row).displayName()),
                                       m_model->run(row).annotations.notes, &ok);
    if (ok)
        setNotes(address, notes);
}

void RunActions::editTags(const QString &address)
{
    const int row = rowOf(address);
    if (row < 0)
        return;
    bool ok = false;
    const QString tags = QInputDialog::getText(
        m_parent, tr("Tags"), tr("Tags of %1, separated by commas:").arg(m_model->run(row).displayName()),
        QLineEdit::Normal, m_model->run(row).annotations.tags.join(QStringLiteral(", ")), &ok);
    if (ok)
        setTags(address, tags);
}

bool RunActions::openFolder(const QString &address)
{
    QString why;
    if (!isManageable(address, &why)) {
        Q_EMIT statusMessage(why);
        return false;
    }
    const bool opened = folderOpener()(QUrl::fromLocalFile(address));
    Q_EMIT statusMessage(opened
                             ? tr("Opened %1").arg(QDir::toNativeSeparators(address))
                             : tr("Cannot open %1: no file manager answered").arg(QDir::toNativeSeparators(address)));
    return opened;
}

void RunActions::exportRun(const QString &address, const QString &archive)
{
    QString why;
    if (!isManageable(address, &why)) {
        Q_EMIT exportFinished(address, archive, why);
        return;
    }
    auto *watcher = new QFutureWatcher<QString>(this);
    connect(watcher, &QFutureWatcher<QString>::finished, this, [this, watcher, address, archive] {
        const QString error = watcher->result();
        watcher->deleteLater();
        Q_EMIT statusMessage(error.isEmpty() ? tr("Exported %1 to %2").arg(QFileInfo(address).fileName(), archive)
                                             : tr("Export failed: %1").arg(error));
        Q_EMIT exportFinished(address, archive, error);
    });
    watcher->setFuture(QtConcurrent::run([address, archive] {
        const auto summary = monitor::exportRunArchive(address, archive);
        return summary ? QString() : QString::fromStdString(summary.error().toString());
    }));
    Q_EMIT statusMessage(tr("Exporting %1…").arg(QFileInfo(address).fileName()));
}

void RunActions::askExport(const QString &address)
{
    const QString archive = QFileDialog::getSaveFileName(m_parent, tr("Export run"),
                                                         QDir::home().filePath(monitor::defaultArchiveName(address)),
                                                         tr("Run archives (*.tar.gz)"));
    if (!archive.isEmpty())
        exportRun(address, archive);
}

QString RunActions::deleteQuestion(const QStringList &addresses) const
{
    int files = 0;
    qint64 bytes = 0;
    QStringList names;
    for (const QString &address : addresses) {
        if (const auto contents = monitor::listRunFolder(address)) {
            files += contents->files;
            bytes += contents->bytes;
        }
        const int row = rowOf(address);
        names.append(row >= 0 ? m_model->run(row).displayName() : address);
    }
    const QString runs = addresses.size() == 1 ? tr("1 run") : tr("%1 runs").arg(addresses.size());
    return tr("Delete %1 and their %2 files (%3)? This cannot be undone.\n\n%4")
        .arg(runs)
        .arg(files)
        .arg(formatBytes(double(bytes)), names.join(QLatin1Char('\n')));
}

QStringList RunActions::deleteRuns(const QStringList &addresses, QStringList *errors)
{
    QStringList deleted;
    for (const QString &address : addresses) {
        QString why;
        if (!isManageable(address, &why)) {
            if (errors)
                errors->append(why);
            continue;
        }
        const auto removed = monitor::deleteRunFolder(address);
        if (!removed) {
            if (errors)
                errors->append(QString::fromStdString(removed.error().toString()));
            continue;
        }
        deleted.append(address);
    }
    m_model->refresh();
    return deleted;
}

void RunActions::confirmAndDelete(const QStringList &addresses)
{
    QStringList manageable;
    for (const QString &address : addresses) {
        if (isManageable(address))
            manageable.append(address);
    }
    if (manageable.isEmpty())
        return;
    QMessageBox box(QMessageBox::Warning, tr("Delete runs"), deleteQuestion(manageable),
                    QMessageBox::Yes | QMessageBox::Cancel, m_parent);
    box.setObjectName(QStringLiteral("confirmDelete"));
    box.setDefaultButton(QMessageBox::Cancel);
    box.button(QMessageBox::Yes)->setText(tr("Delete"));
    if (box.exec() != QMessageBox::Yes)
        return;
    QStringList errors;
    const QStringList deleted = deleteRuns(manageable, &errors);
    const QString done = tr("Deleted %1 of %2 runs").arg(deleted.size()).arg(manageable.size());
    Q_EMIT statusMessage(errors.isEmpty() ? done
                                          : tr("%1; not deleted: %2").arg(done, errors.join(QStringLiteral("; "))));
}

void RunActions::showDiff(const QStringList &addresses)
{
    QList<monitor::RunInfo> runs;
    for (const QString &address : addresses) {
        const int row = rowOf(address);
        if (row >= 0)
            runs.append(m_model->run(row));
    }
    if (runs.size() < 2)
        return;
    auto *dialog = new RunDiffDialog(runs, m_parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
}

} // namespace accel::app
