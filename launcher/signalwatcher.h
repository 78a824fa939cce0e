// Turns SIGINT/SIGTERM/SIGHUP/SIGQUIT into a Qt signal (self-pipe + QSocketNotifier), so the
// supervisor stops its ranks from the event loop rather than inside a signal handler.
// A stop request is never lost: blockStopSignals() runs first thing (a Ctrl-C from then on waits
// as pending), the watcher installs its handler whatever disposition was inherited (an ignored
// SIGINT included) and only then unblocks, so a pending signal reaches the handler.
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

    // Blocks the stop signals in the calling thread (threads started later inherit the mask).
    static void blockStopSignals();
    // Unblocks them (for paths that end without a watcher: the default action applies again).
    static void unblockStopSignals();

Q_SIGNALS:
    void signalReceived(int signal);

private:
    void onReadable();
    std::unique_ptr<QSocketNotifier> m_notifier;
};

} // namespace accel::launcher
