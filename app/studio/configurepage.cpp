#include "app/studio/configurepage.h"

#include "app/studio/changesdialog.h"
#include "app/studio/configcheckspanel.h"
#include "app/studio/configform.h"
#include "app/studio/configtextpatch.h"
#include "app/studio/configwizard.h"
#include "app/studio/fieldeditor.h"
#include "app/studio/processcount.h"
#include "core/common/fileutil.h"
#include "core/config/validation.h"

#include <QCheckBox>
#include <QDialog>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>
#include <QPushButton>
#include <QScrollArea>
#include <QSettings>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

namespace {
const QString fileFilter = QStringLiteral("Accelerate configs (*.yaml *.yml *.json);;All files (*)");

QToolButton *toolButton(const QString &text, const QString &toolTip, QWidget *parent)
{
    auto *button = new QToolButton(parent);
    button->setText(text);
    button->setToolTip(toolTip);
    button->setToolButtonStyle(Qt::ToolButtonTextOnly);
    button->setAutoRaise(false);
    return button;
}
} // namespace

ConfigurePage::ConfigurePage(QWidget *parent) : QWidget(parent)
{
    buildUi();
    newConfig();
}

void ConfigurePage::buildUi()
{
    auto *layout = new QVBoxLayout(this);

    auto *bar = new QHBoxLayout;
    m_title = new QLabel(this);
    m_title->setObjectName(QStringLiteral("documentTitle"));
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_title->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred); // a long path never widens the window
    bar->addWidget(m_title, 1);
    QToolButton *newButton = toolButton(tr("New"), tr("Start from Accelerate's defaults"), this);
    connect(newButton, &QToolButton::clicked, this, [this] {
        if (maybeDiscardChanges())
            newConfig();
    });
    QToolButton *questionsButton =
        toolButton(tr("Questions…"), tr("Build a config by answering `accelerate config`'s questions"), this);
    questionsButton->setObjectName(QStringLiteral("newFromQuestions"));
    connect(questionsButton, &QToolButton::clicked, this, &ConfigurePage::newFromQuestions);
    QToolButton *openButton = toolButton(tr("Open…"), tr("Open an Accelerate config (Ctrl+O)"), this);
    connect(openButton, &QToolButton::clicked, this, &ConfigurePage::openWithDialog);
    m_recentButton = toolButton(tr("Recent"), tr("Recently opened configs"), this);
    m_recentButton->setPopupMode(QToolButton::InstantPopup);
    m_recentButton->setMenu(new QMenu(m_recentButton));
    connect(m_recentButton->menu(), &QMenu::aboutToShow, this, &ConfigurePage::updateRecentMenu);
    QToolButton *changesButton = toolButton(tr("Changes…"), tr("Compare with the file on disk"), this);
    connect(changesButton, &QToolButton::clicked, this, [this] {
        if (!reviewChanges(tr("Save")))
            return;
        if (m_path.isEmpty())
            saveWithDialog();
        else
            saveAs(m_path);
    });
    QToolButton *saveButton = toolButton(tr("Save"), tr("Save atomically (Ctrl+S)"), this);
    connect(saveButton, &QToolButton::clicked, this, &ConfigurePage::save);
    QToolButton *saveAsButton = toolButton(tr("Save As…"), tr("Save under a new name; .json writes JSON"), this);
    connect(saveAsButton, &QToolButton::clicked, this, &ConfigurePage::saveWithDialog);
    for (QToolButton *button :
         {newButton, questionsButton, openButton, m_recentButton, changesButton, saveButton, saveAsButton})
        bar->addWidget(button);
    auto *showAll = new QCheckBox(tr("Show all fields"), this);
    showAll->setObjectName(QStringLiteral("showAllFields"));
    showAll->setToolTip(tr("Also show the fields the chosen distributed type and precision do not use"));
    bar->addWidget(showAll);
    layout->addLayout(bar);

    m_loadError = new QLabel(this);
    m_loadError->setObjectName(QStringLiteral("loadError"));
    m_loadError->setWordWrap(true);
    m_loadError->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_loadError->setStyleSheet(QStringLiteral("QLabel { background: #fdecea; color: #8e1b1b; border: 1px solid #e0a8a8;"
                                              " border-radius: 4px; padding: 6px; }"));
    m_loadError->setVisible(false);
    layout->addWidget(m_loadError);

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    m_scroll = new QScrollArea(splitter);
    m_scroll->setWidgetResizable(true);
    m_scroll->setFrameShape(QFrame::NoFrame);
    m_form = new ConfigForm(m_scroll);
    m_scroll->setWidget(m_form);
    connect(m_form, &ConfigForm::configEdited, this, &ConfigurePage::refresh);
    connect(showAll, &QCheckBox::toggled, m_form, &ConfigForm::setShowAllFields);

    m_checks = new ConfigChecksPanel(splitter);
    connect(m_checks, &ConfigChecksPanel::fieldRequested, this, &ConfigurePage::focusField);
    splitter->addWidget(m_scroll);
    splitter->addWidget(m_checks);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    splitter->setSizes({790, 310});
    layout->addWidget(splitter, 1);
}

config::ConfigFormat ConfigurePage::format() const
{
    return m_path.isEmpty() ? config::ConfigFormat::Yaml : config::formatForPath(m_path.toStdString());
}

QString ConfigurePage::currentYaml() const
{
    return QString::fromStdString(config::serializeConfig(m_form->config(), config::ConfigFormat::Yaml));
}

QString ConfigurePage::textFor(const QString &path) const
{
    const config::ConfigFormat target =
        path.isEmpty() ? config::ConfigFormat::Yaml : config::formatForPath(path.toStdString());
    if (!m_path.isEmpty() && !m_savedText.isEmpty() && target == format()) {
        if (currentYaml() == m_baseline)
            return m_savedText; // untouched: the same bytes
        if (target == config::ConfigFormat::Yaml) {
            if (auto patched = patchConfigText(m_savedText, m_baseline, currentYaml()))
                return *patched;
        }
    }
    return QString::fromStdString(config::serializeConfig(m_form->config(), target));
}

QString ConfigurePage::previewText() const
{
    return textFor(m_path);
}

QString ConfigurePage::loadErrorText() const
{
    return m_loadError->isVisible() ? m_loadError->text() : QString();
}

bool ConfigurePage::isModified() const
{
    // An opened file is modified when its config changed, whatever its text looks like
    // (comments, key order, defaults it leaves out); a new document when it differs from its start.
    return m_path.isEmpty() ? previewText() != m_savedText : currentYaml() != m_baseline;
}

void ConfigurePage::newConfig()
{
    config::ClusterConfig config;
    config::applyDefaults(config);
    m_origin = tr("new config");
    setDocument(config, QString(), QString());
    m_savedText = previewText(); // an untouched new document has nothing to lose
    refresh();
}

void ConfigurePage::newFromQuestions()
{
    if (!maybeDiscardChanges())
        return;
    ConfigWizard wizard(this);
    if (wizard.exec() != QDialog::Accepted)
        return;
    auto built = wizard.result();
    if (built)
        loadConfig(*built, tr("answers to the questionnaire"));
}

void ConfigurePage::loadConfig(const config::ClusterConfig &config, const QString &origin)
{
    m_origin = origin;
    setDocument(config, QString(), QString());
    Q_EMIT statusMessage(tr("Loaded the %1 (not saved yet)").arg(origin));
}

bool ConfigurePage::openFile(const QString &path)
{
    config::Diagnostics diagnostics;
    auto loaded = config::loadConfigFile(path.toStdString(), &diagnostics);
    if (!loaded) {
        showLoadError(tr("Could not open %1: %2").arg(path, QString::fromStdString(loaded.error().toString())),
                      diagnostics);
        Q_EMIT statusMessage(tr("Could not open %1").arg(QFileInfo(path).fileName()));
        return false;
    }
    // The text on disk, to tell whether the document changed (and to show the changes).
    auto bytes = fileutil::readFile(path.toStdString());
    m_recent.add(path);
    setDocument(*loaded, QFileInfo(path).absoluteFilePath(), bytes ? QString::fromStdString(*bytes) : QString());
    Q_EMIT statusMessage(tr("Opened %1").arg(path));
    return true;
}

void ConfigurePage::setDocument(const config::ClusterConfig &config, const QString &path, const QString &savedText)
{
    m_path = path;
    m_savedText = savedText;
    m_loadError->setVisible(false);
    m_form->setConfig(config);
    m_baseline = currentYaml();
    refresh();
}

void ConfigurePage::showLoadError(const QString &title, const config::Diagnostics &diagnostics)
{
    QString text = title.toHtmlEscaped();
    int shown = 0;
    for (const config::Diagnostic &diagnostic : diagnostics) {
        if (shown++ == 8) {
            text += tr("<br>… and %1 more").arg(diagnostics.size() - 8);
            break;
        }
        text += QStringLiteral("<br>• ") + QString::fromStdString(diagnostic.toString()).toHtmlEscaped();
    }
    m_loadError->setText(text);
    m_loadError->setVisible(true);
}

void ConfigurePage::refresh()
{
    m_checks->showText(previewText());
    // Every message goes to the list; those with a key are also shown beside their field.
    m_diagnostics = config::validate(m_form->config());
    m_form->showDiagnostics(m_diagnostics);
    bool accepted = false;
    const QString count = processCountFor(m_form->config(), &accepted);
    m_checks->showChecks(m_diagnostics, count, accepted);

    const QString name = m_path.isEmpty() ? tr("Untitled (%1)").arg(m_origin) : m_path;
    m_title->setText(
        QStringLiteral("<b>%1</b>%2").arg(name.toHtmlEscaped(), isModified() ? tr(" — modified") : QString()));
    Q_EMIT documentChanged();
}

bool ConfigurePage::save()
{
    if (m_path.isEmpty())
        return saveWithDialog();
    // Overwriting a file the user opened: show what will change first when they asked for it.
    if (reviewBeforeSave() && isModified() && !reviewChanges(tr("Save")))
        return false;
    return saveAs(m_path);
}

bool ConfigurePage::reviewBeforeSave() const
{
    return QSettings().value(QStringLiteral("configure/reviewBeforeSave"), true).toBool();
}

void ConfigurePage::setReviewBeforeSave(bool review)
{
    QSettings().setValue(QStringLiteral("configure/reviewBeforeSave"), review);
}

bool ConfigurePage::saveAs(const QString &path)
{
    // Keep the JSON/YAML choice of the new name, as Accelerate does.
    const QString text = textFor(QFileInfo(path).absoluteFilePath());
    Result<void> saved;
    if (!QDir().mkpath(QFileInfo(path).absolutePath()))
        saved = makeError(ErrorCode::Io, "cannot create folder " + QFileInfo(path).absolutePath().toStdString(),
                          path.toStdString());
    else
        saved = fileutil::writeFileAtomic(path.toStdString(), text.toStdString());
    if (!saved) {
        const QString message = QString::fromStdString(saved.error().toString());
        QMessageBox::warning(this, tr("Save failed"), message);
        Q_EMIT statusMessage(tr("Save failed: %1").arg(message));
        return false;
    }
    m_path = QFileInfo(path).absoluteFilePath();
    m_savedText = text;
    m_baseline = currentYaml();
    m_recent.add(m_path);
    refresh();
    Q_EMIT statusMessage(tr("Saved %1").arg(m_path));
    return true;
}

void ConfigurePage::openWithDialog()
{
    if (!maybeDiscardChanges())
        return;
    const QString start =
        m_path.isEmpty() ? QString::fromStdString(config::defaultCacheDir()) : QFileInfo(m_path).absolutePath();
    const QString path = QFileDialog::getOpenFileName(this, tr("Open Accelerate config"), start, fileFilter);
    if (!path.isEmpty())
        openFile(path);
}

bool ConfigurePage::saveWithDialog()
{
    const QString start = m_path.isEmpty() ? QString::fromStdString(config::defaultConfigPath()) : m_path;
    const QString path = QFileDialog::getSaveFileName(this, tr("Save Accelerate config"), start, fileFilter);
    return !path.isEmpty() && saveAs(path);
}

bool ConfigurePage::maybeDiscardChanges()
{
    if (!isModified())
        return true;
    const auto answer =
        QMessageBox::question(this, tr("Unsaved changes"), tr("The config has unsaved changes. Save them first?"),
                              QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel, QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return save();
    return answer == QMessageBox::Discard;
}

bool ConfigurePage::reviewChanges(const QString &acceptText)
{
    const ChangesReview review = showChangesDialog(this, m_savedText, previewText(),
                                                   m_path.isEmpty() ? tr("New document: every line is new.")
                                                                    : tr("Compared with %1").arg(m_path),
                                                   acceptText, isModified(), reviewBeforeSave());
    setReviewBeforeSave(review.reviewBeforeSave);
    return review.accepted;
}

void ConfigurePage::focusField(const QString &key)
{
    // Messages about keys the form does not show (or the whole file) have no field to go to.
    FieldEditor *field = m_form->field(key);
    if (!field)
        return;
    m_scroll->ensureWidgetVisible(field);
    field->editorWidget()->setFocus(Qt::OtherFocusReason);
}

void ConfigurePage::updateRecentMenu()
{
    QMenu *menu = m_recentButton->menu();
    menu->clear();
    const QStringList files = m_recent.files();
    for (const QString &path : files) {
        menu->addAction(path, this, [this, path] {
            if (maybeDiscardChanges())
                openFile(path);
        });
    }
    if (files.isEmpty())
        menu->addAction(tr("(none yet)"))->setEnabled(false);
}

} // namespace accel::app
