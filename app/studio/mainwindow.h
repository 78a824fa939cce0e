// The studio's main window: a sidebar of pages, menus with shortcuts, a status bar and remembered
// geometry. It builds the window and wires the pages; the pages and libraries do the work.
#pragma once

#include "app/studio/studiooptions.h"

#include <QMainWindow>

class QListWidget;
class QStackedWidget;

namespace accel::app {

class BigModelsPage;
class ConfigurePage;
class DemoOffer;
class HardwarePage;
class LaunchPage;
class RunsPage;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(QWidget *parent = nullptr);
    ~MainWindow() override;

    void showPage(Page page);
    Page currentPage() const;

    ConfigurePage *configurePage() const { return m_configurePage; }
    HardwarePage *hardwarePage() const { return m_hardwarePage; }
    RunsPage *runsPage() const { return m_runsPage; }
    LaunchPage *launchPage() const { return m_launchPage; }
    BigModelsPage *bigModelsPage() const { return m_bigModelsPage; }

    // Applies --page, --config, --theme and --demo; a plain first start offers the demo.
    void applyOptions(const StudioOptions &options);
    // Loads the demo job into the Launch page and shows it (what --demo and the first-start offer do).
    void openDemo();

Q_SIGNALS:
    void pageChanged(accel::app::Page page);

protected:
    void closeEvent(QCloseEvent *event) override;
    // A theme switch while the studio runs: the sidebar's style sheet is resolved again, since the
    // palette colours it names are read when it is applied.
    void changeEvent(QEvent *event) override;

private:
    void createPages();
    void createMenus();
    void styleSidebar(); // its background in the palette's alternate base, roomy items
    void openConfigDialog();
    void saveConfig();
    void saveConfigAs();
    void openRecommendedConfig();
    void showAbout();
    void restoreSettings();
    void saveSettings();

    QListWidget *m_sidebar = nullptr;
    QStackedWidget *m_stack = nullptr;
    ConfigurePage *m_configurePage = nullptr;
    HardwarePage *m_hardwarePage = nullptr;
    RunsPage *m_runsPage = nullptr;
    LaunchPage *m_launchPage = nullptr;
    BigModelsPage *m_bigModelsPage = nullptr;
    DemoOffer *m_demoOffer = nullptr;
};

} // namespace accel::app
