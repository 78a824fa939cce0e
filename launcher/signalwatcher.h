// Turns SIGINT/SIGTERM/SIGHUP/SIGQUIT into a Qt signal (self-pipe + QSocketNotifier), so the
// supervisor stops its ranks from the event loop rather than inside a signal handler.
#pragma once

#include <QObject>
#include <QSocketNotifier>

#include <memory>

namespace accel::launcher {

class SignalWatcher : public QObject {
    Q_OBJECT
public:
    explicit SignalWatcher(QObject *parent = nullptr);
    ~SignalWatcher() override;

Q_SIGNALS:
    void signalReceived(int signal);

private:
    void onReadable();
    std::unique_ptr<QSocketNotifier> m_notifier;
};

} // namespace accel::launcher
