// Talks to an `accel-worker serve` child process (docs/worker-protocol.md) from the GUI thread
// without blocking: requests are JSON lines on its stdin, events are parsed from its stdout as they
// arrive. Each request ends with exactly one terminal signal (loaded / generationDone / unloaded /
// requestFailed); a worker that dies fails the request in flight with workerCrashed().
#pragma once

#include <QJsonObject>
#include <QObject>
#include <QProcess>

namespace accel::app {

struct GenerationStats {
    int promptTokens = 0;
    int newTokens = 0;
    double timeToFirstTokenMs = 0;
    double decodeTokensPerSecond = 0;
    double totalMs = 0;
};

// The "stats" object of a generation (the serve worker's done event, accel generate --json).
GenerationStats generationStats(const QJsonObject &stats);

class WorkerClient : public QObject {
    Q_OBJECT
public:
    explicit WorkerClient(QObject *parent = nullptr);
    ~WorkerClient() override;

    // accel-worker beside this program (QCoreApplication::applicationDirPath()), or
    // $ACCEL_WORKER_PROGRAM when set.
    static QString defaultProgram();
    void setProgram(const QString &program) { m_program = program; }
    QString program() const { return m_program; }

    bool isRunning() const;
    bool isReady() const { return m_ready; }
    qint64 processId() const;

    // Starts the worker when needed; requests sent before "ready" wait in order.
    void load(const QString &modelDir, const QJsonObject &options = {});
    // `request` holds the generate fields (prompt, max_new_tokens, temperature...); returns its id.
    QString generate(const QJsonObject &request);
    void cancel();
    void unload();
    void shutdown();

Q_SIGNALS:
    void ready();
    void loaded(const QJsonObject &event);
    void token(const QString &id, const QString &text);
    void generationDone(const QString &id, const QString &text, const QString &stopReason,
                        const accel::app::GenerationStats &stats);
    void unloaded();
    void requestFailed(const QString &id, const QString &message);
    void workerCrashed(const QString &message);

private:
    void ensureStarted();
    void send(const QJsonObject &request);
    void readEvents();
    void handleEvent(const QJsonObject &event);
    void processFinished(int exitCode, QProcess::ExitStatus status);

    QString m_program;
    QProcess *m_process = nullptr;
    QByteArray m_buffer;
    QList<QByteArray> m_pending; // lines queued until "ready"
    QString m_inFlight;          // id of the request that waits for its terminal event
    bool m_ready = false;
    bool m_stopping = false;
    int m_nextId = 1;
    QByteArray m_stderrTail;
};

} // namespace accel::app
