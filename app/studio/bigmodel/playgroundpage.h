// Big Models → Playground: pick a model folder (remembered) and, optionally, a LoRA adapter folder
// in peft's layout (applied by the worker after loading: the load request's "adapter"), see where
// its modules would go
// (the Device Map planner's lanes and bytes per device), Load / Unload it in an `accel-worker
// serve` child process through WorkerClient, type a prompt and watch the answer stream in with
// the sampling controls, tokens/s and time to first token; Stop cancels. The studio never loads
// libtorch: a crash of the worker shows a banner and the next Load starts a fresh one.
#pragma once

#include "app/studio/bigmodel/devicemapplan.h"
#include "app/studio/bigmodel/workerclient.h"

#include <QFutureWatcher>
#include <QJsonObject>
#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;

namespace accel::app {

class DeviceLanesView;
class PlaygroundChat;
class PlaygroundCluster;
class PlaygroundLoadOptions;
class PlaygroundSampling;
struct DeviceMapOutcome;

class PlaygroundPage : public QWidget {
    Q_OBJECT
public:
    enum class State { NoModel, Loading, Ready, Generating, Stopping, Unloading };
    Q_ENUM(State)

    explicit PlaygroundPage(QWidget *parent = nullptr);
    ~PlaygroundPage() override;

    // Sets the folder and plans its device map on a worker thread (planned() follows).
    void setModelPath(const QString &path);
    QString modelPath() const;
    // A LoRA adapter folder for the next Load ("" = none), e.g. a causal_lm run's <output>/adapter.
    void setAdapterPath(const QString &path);
    QString adapterPath() const;
    void setPrompt(const QString &prompt);
    QString prompt() const;
    void setThreads(int threads);
    // Threads, quantization, compute dtype (auto included) and pinned threads of the next Load.
    PlaygroundLoadOptions *loadOptions() const { return m_options; }

    // The cluster's hosts (the Hardware page's Cluster tab and the Launch page's list), read again
    // when the page is shown. With hosts, "Split across the cluster's hosts" runs Generate as
    // pipeline generation over them (PlaygroundCluster) instead of in the local worker.
    QStringList clusterHosts() const { return m_clusterHosts; }
    void refreshClusterHosts();
    // False when there is no cluster to split across.
    bool setSplitAcrossHosts(bool split);
    bool splitAcrossHosts() const;
    PlaygroundCluster *cluster() const { return m_cluster; }

    WorkerClient *client() const { return m_client; }
    PlaygroundSampling *sampling() const { return m_sampling; }
    DeviceLanesView *lanesView() const { return m_lanes; }
    const DeviceMapPlan &plan() const;

    void load();
    void unload();
    void generate();
    void stop();

    State state() const { return m_state; }
    bool isPlanning() const;
    QJsonObject loadedInfo() const { return m_loaded; } // the worker's "loaded" event
    QString outputText() const;
    QString errorText() const;  // the banner; empty when hidden
    QString statsText() const;  // tokens/s and time to first token
    QString memoryText() const; // bytes per device and where the worker put the tensors
    int streamUpdates() const;  // text pieces appended by the last generation
    QString lastStopReason() const;
    GenerationStats lastStats() const;

Q_SIGNALS:
    void stateChanged(accel::app::PlaygroundPage::State state);
    void planned();
    void modelLoaded();
    void generationFinished(const QString &stopReason);
    void errorShown(const QString &message);
    void modelPathChosen(const QString &path);
    void statusMessage(const QString &message);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void buildUi();
    void generateOnCluster(QJsonObject request);
    void onClusterFinished(const QJsonObject &result);
    void onClusterFailed(const QString &message);
    void browse();
    void startPlanning();
    void finishPlanning();
    QString folderProblem(const QString &path) const; // "No folder /x." and the like; "" when usable
    QString adapterProblem() const;                   // the adapter folder lacks adapter_config.json...
    QString stillLoadedText() const;                  // the status line when a folder was refused
    void setState(State state);
    void showError(const QString &message);
    void clearError();
    void updateMemory();
    void onLoaded(const QJsonObject &event);
    void onToken(const QString &id, const QString &text);
    void onDone(const QString &id, const QString &text, const QString &stopReason, const GenerationStats &stats);
    void onFailed(const QString &id, const QString &message);
    void onCrashed(const QString &message);
    QJsonObject loadRequest() const;

    WorkerClient *m_client = nullptr;
    PlaygroundCluster *m_cluster = nullptr;
    QCheckBox *m_splitHosts = nullptr;
    QStringList m_clusterHosts;
    State m_stateBeforeSplit = State::NoModel;
    QLineEdit *m_model = nullptr;
    QLineEdit *m_adapter = nullptr;
    PlaygroundLoadOptions *m_options = nullptr;
    QPushButton *m_loadButton = nullptr;
    QPushButton *m_unloadButton = nullptr;
    QLabel *m_banner = nullptr;
    QLabel *m_modelStatus = nullptr;
    QLabel *m_memory = nullptr;
    DeviceLanesView *m_lanes = nullptr;
    PlaygroundSampling *m_sampling = nullptr;
    PlaygroundChat *m_chat = nullptr;

    QFutureWatcher<DeviceMapOutcome> *m_watcher = nullptr;
    bool m_replan = false;
    QString m_plannedPath; // the folder of the planning under way (or last started)
    QString m_lanesPath;   // the folder of the plan shown in the lanes
    QString m_planError;
    State m_state = State::NoModel;
    QJsonObject m_loaded;
    QString m_loadedStatus;   // "Loaded NAME (...)" of the model loaded now
    QString m_loadingAdapter; // the adapter of the last Load ("" = none)
    QString m_generationId;
    bool m_idsPrompt = false;
};

} // namespace accel::app
