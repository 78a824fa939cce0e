// Test helper for tst_chaos: accel-studio's main window in a process of its own that launches one
// run the way a user does with the demo (Launch page prepared with a job and a cluster config, the
// demo button clicked: `accel launch ... --detach --json` beside this program), then keeps running
// and following the run until it is killed. It prints "clicked" once the button was clicked and
// "launched <run dir>" when the launch answered, so the test can kill it before or after that.
//
//   studiolaunchchild --job JOB.yaml --config CONFIG.yaml
#include "app/studio/launch/launchpage.h"
#include "app/studio/mainwindow.h"

#include <QApplication>
#include <QPushButton>
#include <QTimer>

#include <cstdio>

using accel::app::LaunchPage;
using accel::app::MainWindow;
using accel::app::Page;

int main(int argc, char **argv)
{
    QApplication application(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("AccelStudioTests"));
    QApplication::setApplicationName(QStringLiteral("studiolaunchchild"));
    const QStringList arguments = QApplication::arguments();
    const qsizetype job = arguments.indexOf(QStringLiteral("--job"));
    const qsizetype config = arguments.indexOf(QStringLiteral("--config"));
    if (job < 0 || job + 1 >= arguments.size() || config < 0 || config + 1 >= arguments.size()) {
        std::fprintf(stderr, "usage: studiolaunchchild --job JOB.yaml --config CONFIG.yaml\n");
        return 2;
    }
    MainWindow window;
    window.show();
    LaunchPage *launch = window.launchPage();
    launch->prepareDemo(arguments.at(job + 1), arguments.at(config + 1));
    window.showPage(Page::Launch);
    QObject::connect(launch, &LaunchPage::launched, &window, [](const QString &, const QString &runDir) {
        std::printf("launched %s\n", qPrintable(runDir));
        std::fflush(stdout);
    });
    QObject::connect(launch, &LaunchPage::launchFailed, &window, [](const QString &message) {
        std::fprintf(stderr, "launch failed: %s\n", qPrintable(message));
        QApplication::exit(1);
    });
    QTimer::singleShot(0, &window, [launch] {
        if (!launch->demoButton()->isEnabled()) {
            std::fprintf(stderr, "the demo button is disabled (job or config not accepted)\n");
            QApplication::exit(1);
            return;
        }
        launch->demoButton()->click();
        if (!launch->isBusy()) { // the page refused before starting accel launch
            std::fprintf(stderr, "launch refused: %s\n", qPrintable(launch->commandText()));
            QApplication::exit(1);
            return;
        }
        std::printf("clicked\n");
        std::fflush(stdout);
    });
    return QApplication::exec();
}
