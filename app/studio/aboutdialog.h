// About Accel Studio: the versions this program was built with and runs on.
#pragma once

#include <QDialog>

namespace accel::app {

// "Qt 6.4.2 (built with 6.4.2)", "yaml-cpp 0.7.0", "libssh 0.10.5", build type and compiler, ...
// as label/value pairs; shared by the dialog and by tests.
QList<QPair<QString, QString>> studioVersions();

class AboutDialog : public QDialog {
    Q_OBJECT
public:
    explicit AboutDialog(QWidget *parent = nullptr);
};

} // namespace accel::app
