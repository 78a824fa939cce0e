#include "app/studio/mainwindow.h"

#include "app/studio/aboutdialog.h"
#include "app/studio/bigmodel/bigmodelspage.h"
#include "app/studio/cluster/clusterform.h"
#include "app/studio/cluster/clustersection.h"
#include "app/studio/cluster/slurmqueuepanel.h"
#include "app/studio/configurepage.h"
#include "app/studio/demooffer.h"
#include "app/studio/fp8/fp8comparedialog.h"
#include "app/studio/hardwarepage.h"
#include "app/studio/launch/launchpage.h"
#include "app/studio/monitor/monitorpage.h"
#include "app/studio/monitor/runspage.h"
#include "app/studio/monitor/runstatuspanel.h"
#include "app/studio/placeholderpage.h"
#include "app/studio/studioresources.h"
#include "app/studio/theme.h"
#include "app/studio/windowsize.h"
#include "core/config/configio.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QKeySequence>
#include <QListWidget>
#include <QMenu>
#include <QMenuBar>
#include <QScreen>
#include <QScrollArea>
#include <QSettings>
#include <QStackedWidget>
#include <QStatusBar>
#include <QVBoxLayout>

namespace accel::app {

namespace {
QString iconPath(Page page)
{
    return QStringLiteral(":/icons/page-%1.svg").arg(pageName(page));
}

// A page in a scroll area that appears only when the window is smaller than the page needs, so
// every page stays usable in a small window (1024x700 and below) instead of forcing its size.
QWidget *scrollable(QWidget *page, QWidget *parent)
{
    auto *scroll = new QScrollArea(parent);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setWidget(page);
    return scroll;
}
} // namespace

MainWindow::MainWindow(QWidget *parent) : QMainWindow(parent)
{
    initStudioResources();
    setWindowTitle(tr("Accel Studio"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/accel-studio.svg")));
    createPages();
    createMenus();
    statusBar()->showMessage(tr("Ready"));
    restoreSettings();
}

MainWindow::~MainWindow() = default;

void MainWindow::createPages()
{
    auto *central = new QWidget(this);
    auto *outer = new QVBoxLayout(central);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->setSpacing(0);
    m_demoOffer = new DemoOffer(central);
    m_demoOffer->setVisible(false);
    outer->addWidget(m_demoOffer);
    connect(m_demoOffer, &DemoOffer::accepted, this, &MainWindow::openDemo);
    auto *layout = new QHBoxLayout;
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    outer->addLayout(layout, 1);

    m_sidebar = new QListWidget(central);
    m_sidebar->setObjectName(QStringLiteral("sidebar"));
    m_sidebar->setIconSize(QSize(24, 24));
    m_sidebar->setFrameShape(QFrame::NoFrame);
    m_sidebar->setFixedWidth(150);
    m_sidebar->setSpacing(2);
    styleSidebar();
    m_stack = new QStackedWidget(central);
    layout->addWidget(m_sidebar);
    layout->addWidget(m_stack, 1);
    setCentralWidget(central);

    m_hardwarePage = new HardwarePage(m_stack);
    m_configurePage = new ConfigurePage(m_stack);
    for (int i = 0; i < pageCount; ++i) {
        const auto page = static_cast<Page>(i);
        auto *item = new QListWidgetItem(QIcon(iconPath(page)), pageTitle(page), m_sidebar);
        item->setToolTip(tr("%1 (Ctrl+%2)").arg(pageTitle(page)).arg(i + 1));
        switch (page) {
        case Page::Hardware:
            m_stack->addWidget(scrollable(m_hardwarePage, m_stack));
            break;
        case Page::Configure:
            m_stack->addWidget(scrollable(m_configurePage, m_stack));
            break;
        case Page::Launch:
            m_launchPage = new LaunchPage(m_stack);
            m_stack->addWidget(scrollable(m_launchPage, m_stack));
            connect(m_launchPage, &LaunchPage::statusMessage, this,
                    [this](const QString &message) { statusBar()->showMessage(message, 8000); });
            break;
        case Page::Runs:
            m_runsPage = new RunsPage(m_stack);
            m_stack->addWidget(scrollable(m_runsPage, m_stack));
            connect(m_runsPage, &RunsPage::statusMessage, this,
                    [this](const QString &message) { statusBar()->showMessage(message, 8000); });
            break;
        case Page::BigModels: {
            auto *bigModels = new BigModelsPage(m_stack);
            m_bigModelsPage = bigModels;
            m_stack->addWidget(scrollable(bigModels, m_stack));
            connect(bigModels, &BigModelsPage::statusMessage, this,
                    [this](const QString &message) { statusBar()->showMessage(message, 8000); });
            break;
        }
        }
    }
    connect(m_sidebar, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row < 0)
            return;
        m_stack->setCurrentIndex(row);
        Q_EMIT pageChanged(static_cast<Page>(row));
    });
    m_sidebar->setCurrentRow(0);

    connect(m_configurePage, &ConfigurePage::statusMessage, this,
            [this](const QString &message) { statusBar()->showMessage(message, 8000); });
    connect(m_configurePage, &ConfigurePage::documentChanged, this, [this] {
        const QString path = m_configurePage->filePath();
        setWindowTitle(path.isEmpty() ? tr("Accel Studio[*]")
                                      : tr("%1[*] — Accel Studio").arg(QFileInfo(path).fileName()));
        setWindowModified(m_configurePage->isModified());
    });
    connect(m_hardwarePage, &HardwarePage::statusMessage, this,
            [this](const QString &message) { statusBar()->showMessage(message, 8000); });
    connect(m_hardwarePage, &HardwarePage::openInConfigureRequested, this, &MainWindow::openRecommendedConfig);
    connect(m_launchPage, &LaunchPage::openMonitorRequested, this, [this](const QString &runDirectory) {
        showPage(Page::Runs);
        m_runsPage->runsModel()->refresh();
        m_runsPage->selectRuns({runDirectory});
    });
    // A fine-tuning run's model or adapter, from the Runs page to the Playground.
    connect(m_runsPage->monitorPage()->statusPanel(), &RunStatusPanel::openInPlaygroundRequested, this,
            [this](const QString &model, const QString &adapter) {
                showPage(Page::BigModels);
                m_bigModelsPage->openInPlayground(model, adapter);
            });
    connect(m_launchPage, &LaunchPage::openRemoteMonitorRequested, this, [this](const QStringList &runs) {
        showPage(Page::Runs);
        m_runsPage->openRuns(runs);
    });
    // The SLURM queue's Follow: the job's run directory is there, the Runs page follows it.
    if (auto *slurm = m_hardwarePage->clusterSection()->findChild<SlurmQueuePanel *>()) {
        connect(slurm, &SlurmQueuePanel::followRequested, this,
                [this](const QString &host, const QString &runDirectory, const QString &name, bool multiNode) {
                    showPage(Page::Runs);
                    m_runsPage->followRemoteRun(host, runDirectory, name, multiNode);
                });
    }
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *newConfig = file->addAction(tr("&New Config"), this, [this] {
        showPage(Page::Configure);
        if (m_configurePage->maybeDiscardChanges())
            m_configurePage->newConfig();
    });
    newConfig->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_N));
    file->addAction(tr("New Config from &Questions…"), this, [this] {
        showPage(Page::Configure);
        m_configurePage->newFromQuestions();
    });
    file->addAction(tr("Generate &Cluster Configs…"), this,
                    [this] {
                        // Every node's config of a multi-node cluster, over the config on the Configure page.
                        auto base = config::parseConfig(m_configurePage->previewText().toStdString(),
                                                        config::ConfigFormat::Yaml, {});
                        ClusterForm form(base ? *base : m_hardwarePage->recommendedConfig(), this);
                        form.exec();
                    })
        ->setObjectName(QStringLiteral("clusterConfigsAction"));
    QAction *open = file->addAction(tr("&Open Config…"), this, &MainWindow::openConfigDialog);
    open->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_O));
    QMenu *recent = file->addMenu(tr("Open &Recent"));
    recent->setObjectName(QStringLiteral("recentMenu"));
    connect(recent, &QMenu::aboutToShow, this, [this, recent] {
        recent->clear();
        const QStringList files = m_configurePage->recentFiles();
        for (const QString &path : files) {
            recent->addAction(path, this, [this, path] {
                showPage(Page::Configure);
                m_configurePage->openFile(path);
            });
        }
        if (files.isEmpty())
            recent->addAction(tr("(none)"))->setEnabled(false);
    });
    QAction *save = file->addAction(tr("&Save Config"), this, &MainWindow::saveConfig);
    save->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_S));
    QAction *saveAs = file->addAction(tr("Save Config &As…"), this, &MainWindow::saveConfigAs);
    saveAs->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Q));
    quit->setMenuRole(QAction::QuitRole);

    QMenu *view = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < pageCount; ++i) {
        const auto page = static_cast<Page>(i);
        QAction *action =
            view->addAction(QIcon(iconPath(page)), pageTitle(page), this, [this, page] { showPage(page); });
        action->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
        action->setObjectName(QStringLiteral("showPage_%1").arg(pageName(page)));
    }

    view->addSeparator();
    QMenu *themeMenu = view->addMenu(tr("&Theme"));
    auto *themes = new QActionGroup(themeMenu);
    for (const Theme theme : {Theme::System, Theme::Light, Theme::Dark}) {
        const QString title = theme == Theme::System  ? tr("Follow the &System")
                              : theme == Theme::Light ? tr("&Light")
                                                      : tr("&Dark");
        QAction *action = themeMenu->addAction(title, this, [theme] {
            applyTheme(theme);
            QSettings().setValue(QStringLiteral("appearance/theme"), themeName(theme));
        });
        action->setCheckable(true);
        action->setObjectName(QStringLiteral("theme_%1").arg(themeName(theme)));
        themes->addAction(action);
    }
    connect(themeMenu, &QMenu::aboutToShow, this, [themeMenu] {
        for (QAction *action : themeMenu->actions())
            action->setChecked(action->objectName() == QStringLiteral("theme_%1").arg(themeName(currentTheme())));
    });

    QMenu *tools = menuBar()->addMenu(tr("&Tools"));
    tools
        ->addAction(tr("Compare &FP8 Recipes…"), this,
                    [this] {
                        auto *dialog = findChild<Fp8CompareDialog *>();
                        if (!dialog)
                            dialog = new Fp8CompareDialog(this);
                        dialog->show();
                        dialog->raise();
                        dialog->activateWindow();
                    })
        ->setObjectName(QStringLiteral("compareFp8Action"));

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Accel Studio"), this, &MainWindow::showAbout)->setMenuRole(QAction::AboutRole);
}

void MainWindow::showPage(Page page)
{
    m_sidebar->setCurrentRow(static_cast<int>(page));
}

Page MainWindow::currentPage() const
{
    return static_cast<Page>(m_stack->currentIndex());
}

void MainWindow::openDemo()
{
    // This machine's recommendation on the Hardware page, the demo ready to launch.
    m_hardwarePage->refresh();
    const QString demoConfig = QString::fromStdString(config::defaultCacheDir()) + QStringLiteral("/demo_config.yaml");
    m_launchPage->prepareDemo(LaunchPage::findDemoJob(), demoConfig);
    showPage(Page::Launch);
}

void MainWindow::applyOptions(const StudioOptions &options)
{
    const auto theme = themeFromName(
        options.theme.isEmpty() ? QSettings().value(QStringLiteral("appearance/theme")).toString() : options.theme);
    if (theme && *theme != currentTheme())
        applyTheme(*theme);
    // A plain first start offers the demo (a command line that asks for something else does not).
    const bool plainStart =
        !options.demo && !options.page && options.configFile.isEmpty() && options.screenshotFile.isEmpty();
    m_demoOffer->setVisible(plainStart && DemoOffer::isPending());
    if (options.demo) {
        DemoOffer::setAnswered();
        openDemo();
    }
    if (!options.configFile.isEmpty()) {
        m_configurePage->openFile(options.configFile);
        showPage(Page::Configure);
    }
    if (options.page)
        showPage(*options.page);
}

void MainWindow::openConfigDialog()
{
    showPage(Page::Configure);
    m_configurePage->openWithDialog();
}

void MainWindow::saveConfig()
{
    showPage(Page::Configure);
    m_configurePage->save();
}

void MainWindow::saveConfigAs()
{
    showPage(Page::Configure);
    m_configurePage->saveWithDialog();
}

void MainWindow::openRecommendedConfig()
{
    if (!m_configurePage->maybeDiscardChanges())
        return;
    m_configurePage->loadConfig(m_hardwarePage->recommendedConfig(), tr("recommendation for this machine"));
    showPage(Page::Configure);
}

void MainWindow::showAbout()
{
    AboutDialog dialog(this);
    dialog.exec();
}

void MainWindow::styleSidebar()
{
    m_sidebar->setStyleSheet(
        QStringLiteral("QListWidget#sidebar { background: palette(alternate-base); padding-top: 8px; }"
                       "QListWidget#sidebar::item { padding: 8px 6px; }"));
}

void MainWindow::changeEvent(QEvent *event)
{
    QMainWindow::changeEvent(event);
    if (m_sidebar && (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange))
        styleSidebar();
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (!m_configurePage->maybeDiscardChanges()) {
        event->ignore();
        return;
    }
    saveSettings();
    event->accept();
}

void MainWindow::restoreSettings()
{
    QSettings settings;
    const QByteArray geometry = settings.value(QStringLiteral("mainwindow/geometry")).toByteArray();
    if (geometry.isEmpty() || !restoreGeometry(geometry))
        resize(defaultWindowSize(screen()->availableGeometry().size()));
    restoreState(settings.value(QStringLiteral("mainwindow/state")).toByteArray());
    m_launchPage->rememberForm(); // the Launch form as it was left, saved on every change
    const auto page = pageFromName(settings.value(QStringLiteral("mainwindow/page")).toString());
    if (page)
        showPage(*page);
}

void MainWindow::saveSettings()
{
    QSettings settings;
    settings.setValue(QStringLiteral("mainwindow/geometry"), saveGeometry());
    settings.setValue(QStringLiteral("mainwindow/state"), saveState());
    settings.setValue(QStringLiteral("mainwindow/page"), pageName(currentPage()));
}

} // namespace accel::app
