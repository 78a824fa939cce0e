#include "app/studio/bigmodel/playgroundpage.h"

#include "app/studio/bigmodel/devicelanesview.h"
#include "app/studio/bigmodel/devicemaprequest.h"
#include "app/studio/bigmodel/playgroundchat.h"
#include "app/studio/bigmodel/playgroundcluster.h"
#include "app/studio/bigmodel/playgroundloadoptions.h"
#include "app/studio/bigmodel/playgroundrequest.h"
#include "app/studio/bigmodel/playgroundsampling.h"
#include "app/studio/cluster/hostlist.h"

#include <QCheckBox>
#include <QDir>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent>

namespace accel::app {

PlaygroundPage::PlaygroundPage(QWidget *parent) : QWidget(parent)
{
    m_client = new WorkerClient(this);
    m_cluster = new PlaygroundCluster(this);
    m_watcher = new QFutureWatcher<DeviceMapOutcome>(this);
    buildUi();
    connect(m_watcher, &QFutureWatcher<DeviceMapOutcome>::finished, this, &PlaygroundPage::finishPlanning);
    connect(m_client, &WorkerClient::loaded, this, &PlaygroundPage::onLoaded);
    connect(m_client, &WorkerClient::token, this, &PlaygroundPage::onToken);
    connect(m_client, &WorkerClient::generationDone, this, &PlaygroundPage::onDone);
    connect(m_client, &WorkerClient::requestFailed, this, &PlaygroundPage::onFailed);
    connect(m_client, &WorkerClient::workerCrashed, this, &PlaygroundPage::onCrashed);
    connect(m_cluster, &PlaygroundCluster::finished, this, &PlaygroundPage::onClusterFinished);
    connect(m_cluster, &PlaygroundCluster::failed, this, &PlaygroundPage::onClusterFailed);
    connect(m_cluster, &PlaygroundCluster::launched, this, [this](const QJsonObject &report) {
        QStringList nodes;
        for (const QJsonValue &node : report.value(QStringLiteral("nodes")).toArray())
            nodes << node.toObject().value(QStringLiteral("host")).toString();
        m_modelStatus->setText(
            tr("Generating across %1: one pipeline stage per host…").arg(nodes.join(QStringLiteral(", "))));
    });
    connect(m_client, &WorkerClient::unloaded, this, [this] {
        m_loaded = {};
        m_client->shutdown(); // the worker process goes too, so its memory returns to the system
        setState(State::NoModel);
        updateMemory();
        Q_EMIT statusMessage(tr("Model unloaded."));
    });
    auto *live = new QTimer(this);
    live->setInterval(250);
    connect(live, &QTimer::timeout, this, [this] {
        if (m_state == State::Generating || m_state == State::Stopping)
            m_chat->updateLiveStats();
    });
    live->start();
    refreshClusterHosts();
    setState(State::NoModel);
}

PlaygroundPage::~PlaygroundPage()
{
    m_watcher->waitForFinished();
}

void PlaygroundPage::buildUi()
{
    auto *layout = new QVBoxLayout(this);

    m_banner = new QLabel(this);
    m_banner->setObjectName(QStringLiteral("errorBanner"));
    m_banner->setWordWrap(true);
    m_banner->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_banner->setStyleSheet(QStringLiteral("QLabel { background: #fbe3e3; color: #8a1010; border: 1px solid #d08080;"
                                           " border-radius: 3px; padding: 6px; }"));
    m_banner->hide();
    layout->addWidget(m_banner);

    auto *modelRow = new QHBoxLayout;
    m_model = new QLineEdit(this);
    m_model->setObjectName(QStringLiteral("playgroundModel"));
    m_model->setPlaceholderText(tr("model folder: config.json, safetensors, tokenizer.json"));
    auto *browseButton = new QPushButton(tr("Folder…"), this);
    m_options = new PlaygroundLoadOptions(this);
    m_loadButton = new QPushButton(tr("Load"), this);
    m_loadButton->setObjectName(QStringLiteral("loadButton"));
    m_unloadButton = new QPushButton(tr("Unload"), this);
    m_unloadButton->setObjectName(QStringLiteral("unloadButton"));
    modelRow->addWidget(new QLabel(tr("Model"), this));
    modelRow->addWidget(m_model, 1);
    modelRow->addWidget(browseButton);
    modelRow->addWidget(m_loadButton);
    modelRow->addWidget(m_unloadButton);
    layout->addLayout(modelRow);
    // The load options on a row of their own: beside the model they widen the page past the
    // smallest window.
    auto *optionsRow = new QHBoxLayout;
    optionsRow->addWidget(new QLabel(tr("Load with"), this));
    optionsRow->addWidget(m_options);
    optionsRow->addStretch(1);
    layout->addLayout(optionsRow);
    auto *adapterRow = new QHBoxLayout;
    m_adapter = new QLineEdit(this);
    m_adapter->setObjectName(QStringLiteral("playgroundAdapter"));
    m_adapter->setPlaceholderText(tr("optional: a LoRA adapter folder (adapter_config.json, "
                                     "adapter_model.safetensors) applied to the model"));
    auto *adapterButton = new QPushButton(tr("Folder…"), this);
    adapterRow->addWidget(new QLabel(tr("Adapter"), this));
    adapterRow->addWidget(m_adapter, 1);
    adapterRow->addWidget(adapterButton);
    layout->addLayout(adapterRow);
    m_splitHosts = new QCheckBox(this);
    m_splitHosts->setObjectName(QStringLiteral("playgroundSplitHosts"));
    m_splitHosts->setToolTip(tr("Generate with the model split across the hosts of the Hardware page's Cluster tab, "
                                "one pipeline stage per host: accel launch --hosts ... accel generate MODEL "
                                "--device_map pipeline. The model folder must be at the same path on every host."));
    layout->addWidget(m_splitHosts);
    connect(m_splitHosts, &QCheckBox::toggled, this, [this] { setState(m_state); });
    connect(adapterButton, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("LoRA adapter folder"), m_adapter->text());
        if (!dir.isEmpty())
            setAdapterPath(dir);
    });
    connect(browseButton, &QPushButton::clicked, this, &PlaygroundPage::browse);
    connect(m_model, &QLineEdit::editingFinished, this, [this] {
        if (m_model->text().trimmed() != m_plannedPath)
            startPlanning();
    });
    connect(m_options, &PlaygroundLoadOptions::quantizationChanged, this, [this] {
        if (!m_plannedPath.isEmpty())
            startPlanning(); // the quantized bytes change the plan
    });
    connect(m_loadButton, &QPushButton::clicked, this, &PlaygroundPage::load);
    connect(m_unloadButton, &QPushButton::clicked, this, &PlaygroundPage::unload);

    m_modelStatus = new QLabel(this);
    m_modelStatus->setObjectName(QStringLiteral("modelStatus"));
    m_modelStatus->setWordWrap(true);
    layout->addWidget(m_modelStatus);

    m_lanes = new DeviceLanesView(this);
    m_lanes->setEmptyText(tr("Choose a model folder: its planned device map (bytes per device) shows here."));
    m_lanes->setMaximumHeight(160);
    layout->addWidget(m_lanes);
    connect(m_lanes, &DeviceLanesView::blockDropped, this, [this](const QString &name, const QString &device) {
        DeviceMapPlan plan = m_lanes->plan();
        if (plan.moveBlock(name, device)) {
            m_lanes->setPlan(plan);
            updateMemory();
        }
    });
    m_memory = new QLabel(this);
    m_memory->setObjectName(QStringLiteral("memory"));
    m_memory->setWordWrap(true);
    layout->addWidget(m_memory);

    auto *splitter = new QSplitter(Qt::Horizontal, this);
    m_chat = new PlaygroundChat(splitter);
    connect(m_chat, &PlaygroundChat::generateClicked, this, &PlaygroundPage::generate);
    connect(m_chat, &PlaygroundChat::stopClicked, this, &PlaygroundPage::stop);

    m_sampling = new PlaygroundSampling(splitter);
    splitter->addWidget(m_chat);
    splitter->addWidget(m_sampling);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 1);
    layout->addWidget(splitter, 1);
}

void PlaygroundPage::browse()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Model folder"), m_model->text());
    if (!dir.isEmpty())
        setModelPath(dir);
}

void PlaygroundPage::setModelPath(const QString &path)
{
    m_model->setText(path);
    startPlanning();
}

QString PlaygroundPage::modelPath() const
{
    return m_model->text().trimmed();
}

void PlaygroundPage::setAdapterPath(const QString &path)
{
    m_adapter->setText(path);
}

QString PlaygroundPage::adapterPath() const
{
    return m_adapter->text().trimmed();
}

QString PlaygroundPage::adapterProblem() const
{
    const QString adapter = adapterPath();
    if (adapter.isEmpty())
        return {};
    if (!QFileInfo(adapter).isDir())
        return tr("No adapter folder %1.").arg(QDir::toNativeSeparators(adapter));
    if (!QFileInfo::exists(QDir(adapter).filePath(QStringLiteral("adapter_config.json"))))
        return tr("%1 has no adapter_config.json: not a LoRA adapter folder (peft's layout).")
            .arg(QDir::toNativeSeparators(adapter));
    return {};
}

void PlaygroundPage::setPrompt(const QString &prompt)
{
    m_chat->setPrompt(prompt);
}

QString PlaygroundPage::prompt() const
{
    return m_chat->prompt();
}

void PlaygroundPage::setThreads(int threads)
{
    m_options->setThreads(threads);
}

const DeviceMapPlan &PlaygroundPage::plan() const
{
    return m_lanes->plan();
}

bool PlaygroundPage::isPlanning() const
{
    return m_watcher->isRunning();
}

QString PlaygroundPage::folderProblem(const QString &path) const
{
    const QFileInfo folder(path);
    if (path.isEmpty())
        return tr("Choose a model folder first.");
    if (!folder.exists())
        return tr("No folder %1.").arg(QDir::toNativeSeparators(path));
    if (!folder.isDir())
        return tr("%1 is not a folder.").arg(QDir::toNativeSeparators(path));
    return {};
}

QString PlaygroundPage::stillLoadedText() const
{
    return m_state == State::NoModel
               ? tr("Not loaded.")
               : tr("%1 (still loaded)").arg(m_loadedStatus.isEmpty() ? tr("A model is loaded") : m_loadedStatus);
}

void PlaygroundPage::startPlanning()
{
    if (m_watcher->isRunning()) {
        m_replan = true; // plan again with the newest folder when this one ends
        return;
    }
    DeviceMapRequest request;
    request.modelPath = modelPath();
    request.quantization = m_options->quantization(); // the lanes show the bytes the chosen quantization holds
    m_plannedPath = request.modelPath;
    // A folder that is not there is said at once (no planning to wait for); a loaded model stays.
    if (const QString problem = folderProblem(request.modelPath); !problem.isEmpty() && !request.modelPath.isEmpty()) {
        m_planError = problem;
        m_lanes->setPlan(DeviceMapPlan());
        m_lanesPath.clear();
        showError(problem);
        m_modelStatus->setText(stillLoadedText());
        updateMemory();
        return;
    }
    clearError();
    if (m_state == State::NoModel)
        m_modelStatus->setText(tr("Planning the device map…"));
    m_watcher->setFuture(QtConcurrent::run(computeDeviceMap, request));
}

void PlaygroundPage::finishPlanning()
{
    if (m_replan) {
        m_replan = false;
        startPlanning();
        return;
    }
    DeviceMapOutcome outcome = m_watcher->result();
    m_planError = outcome.error;
    m_lanes->setPlan(outcome.error.isEmpty() ? outcome.plan : DeviceMapPlan());
    m_lanesPath = outcome.error.isEmpty() ? m_plannedPath : QString();
    if (m_state != State::NoModel) {
        // Keep the loaded model's status line; the lanes show the new plan.
        if (outcome.error.isEmpty()) {
            Q_EMIT modelPathChosen(m_plannedPath);
        } else if (m_state != State::Loading) { // a load under way reports on its folder itself
            showError(tr("Cannot plan %1: %2").arg(QDir::toNativeSeparators(m_plannedPath), outcome.error));
            m_modelStatus->setText(stillLoadedText());
        }
    } else if (!outcome.error.isEmpty()) {
        m_modelStatus->setText(tr("Cannot plan this folder: %1").arg(outcome.error));
    } else {
        m_modelStatus->setText(tr("%1: %2 device-map entries (this machine's budgets, strategy %3).")
                                   .arg(outcome.plan.model)
                                   .arg(outcome.plan.blocks().size())
                                   .arg(outcome.plan.strategy));
        Q_EMIT modelPathChosen(m_plannedPath);
    }
    updateMemory();
    Q_EMIT planned();
}

QJsonObject PlaygroundPage::loadRequest() const
{
    QJsonObject options = playgroundLoadOptions(m_lanes->plan(), m_lanesPath == modelPath());
    m_options->addTo(options);
    if (!adapterPath().isEmpty())
        options.insert(QStringLiteral("adapter"), adapterPath());
    return options;
}

void PlaygroundPage::load()
{
    const QString path = modelPath();
    if (m_state == State::Generating || m_state == State::Stopping || m_state == State::Loading)
        return;
    // Said before anything is sent: the model loaded now stays loaded.
    if (const QString problem = folderProblem(path).isEmpty() ? adapterProblem() : folderProblem(path);
        !problem.isEmpty()) {
        showError(problem);
        m_modelStatus->setText(stillLoadedText());
        return;
    }
    clearError();
    if (m_plannedPath != path)
        startPlanning();
    m_loaded = {};
    m_loadingAdapter = adapterPath();
    setState(State::Loading);
    m_modelStatus->setText(m_loadingAdapter.isEmpty()
                               ? tr("Loading %1…").arg(path)
                               : tr("Loading %1 with the adapter %2…").arg(path, m_loadingAdapter));
    m_client->load(path, loadRequest());
}

void PlaygroundPage::unload()
{
    if (m_state == State::Generating || m_state == State::Stopping)
        m_client->cancel();
    if (!m_client->isRunning()) {
        m_loaded = {};
        setState(State::NoModel);
        return;
    }
    setState(State::Unloading);
    m_client->unload();
}

void PlaygroundPage::refreshClusterHosts()
{
    m_clusterHosts = rememberedHosts();
    m_splitHosts->setText(
        m_clusterHosts.isEmpty()
            ? tr("Split across the cluster's hosts (no cluster: add hosts on the Hardware page's "
                 "Cluster tab)")
            : tr("Split across the cluster's hosts (%1)").arg(m_clusterHosts.join(QStringLiteral(", "))));
    if (m_clusterHosts.isEmpty())
        m_splitHosts->setChecked(false);
    setState(m_state);
}

bool PlaygroundPage::setSplitAcrossHosts(bool split)
{
    if (split && m_clusterHosts.isEmpty())
        return false;
    m_splitHosts->setChecked(split);
    return true;
}

bool PlaygroundPage::splitAcrossHosts() const
{
    return m_splitHosts->isChecked();
}

void PlaygroundPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (m_state != State::Generating && m_state != State::Stopping)
        refreshClusterHosts();
}

void PlaygroundPage::generate()
{
    if (splitAcrossHosts() && (m_state == State::Ready || m_state == State::NoModel)) {
        generateOnCluster(m_sampling->request());
        return;
    }
    if (m_state != State::Ready)
        return;
    QJsonObject request = m_sampling->request();
    m_idsPrompt = !m_loaded.value(QStringLiteral("tokenizer")).toBool();
    const QString error = addPlaygroundPrompt(request, prompt(), m_idsPrompt);
    if (!error.isEmpty()) {
        showError(error);
        return;
    }
    clearError();
    m_chat->setDecodeBound(
        m_loaded.value(QStringLiteral("decode_bound")).toObject().value(QStringLiteral("tokens_per_s")).toDouble());
    m_chat->begin();
    setState(State::Generating);
    m_generationId = m_client->generate(request);
}

void PlaygroundPage::stop()
{
    if (m_state != State::Generating)
        return;
    setState(State::Stopping);
    if (m_cluster->isRunning())
        m_cluster->stop();
    else
        m_client->cancel();
}

void PlaygroundPage::generateOnCluster(QJsonObject request)
{
    const QString path = modelPath();
    if (const QString problem = folderProblem(path); !problem.isEmpty()) {
        showError(problem);
        return;
    }
    // The folder is read here as the hosts read it (the same path there): no tokenizer.json means
    // the prompt is token ids.
    m_idsPrompt = !QFileInfo::exists(QDir(path).filePath(QStringLiteral("tokenizer.json")));
    if (const QString error = addPlaygroundPrompt(request, prompt(), m_idsPrompt); !error.isEmpty()) {
        showError(error);
        return;
    }
    QJsonObject load = loadRequest();
    load.remove(QStringLiteral("device_map")); // the pipeline places the layers: one stage per host
    clearError();
    m_chat->begin();
    m_stateBeforeSplit = m_state;
    setState(State::Generating);
    m_modelStatus->setText(tr("Launching on %1…").arg(m_clusterHosts.join(QStringLiteral(", "))));
    m_cluster->start(m_clusterHosts, path, request, load);
}

void PlaygroundPage::onClusterFinished(const QJsonObject &result)
{
    const GenerationStats figures = generationStats(result.value(QStringLiteral("stats")).toObject());
    const QString stopReason = result.value(QStringLiteral("stop_reason")).toString();
    m_chat->setDecodeBound(0); // the bound of the local worker's model does not apply
    m_chat->finish(result.value(QStringLiteral("text")).toString(), stopReason, figures);
    m_modelStatus->setText(playgroundClusterText(result, m_cluster->launchReport()));
    setState(m_stateBeforeSplit);
    Q_EMIT generationFinished(stopReason);
}

void PlaygroundPage::onClusterFailed(const QString &message)
{
    const bool stopped = m_state == State::Stopping;
    setState(m_stateBeforeSplit);
    m_modelStatus->setText(m_state == State::NoModel ? tr("Not loaded.") : m_loadedStatus);
    if (stopped) {
        m_chat->finish(m_chat->text(), QStringLiteral("cancelled"), {});
        Q_EMIT generationFinished(QStringLiteral("cancelled"));
        return;
    }
    showError(message);
}

void PlaygroundPage::onLoaded(const QJsonObject &event)
{
    m_loaded = event;
    setState(State::Ready);
    m_loadedStatus =
        tr("Loaded %1 (%2, %3 layers, vocabulary %4%5).")
            .arg(event.value(QStringLiteral("model")).toString(), event.value(QStringLiteral("model_type")).toString())
            .arg(event.value(QStringLiteral("layers")).toInt())
            .arg(event.value(QStringLiteral("vocab_size")).toInt())
            .arg(event.value(QStringLiteral("tokenizer")).toBool() ? QString()
                                                                   : tr("; no tokenizer.json: prompts are token ids"));
    if (!m_loadingAdapter.isEmpty())
        m_loadedStatus += QLatin1Char(' ') + tr("LoRA adapter %1 applied to %2 layers.")
                                                 .arg(m_loadingAdapter)
                                                 .arg(event.value(QStringLiteral("adapted_layers")).toInt());
    if (const QString choice = playgroundDecodeChoiceText(event); !choice.isEmpty())
        m_loadedStatus += QLatin1Char(' ') + choice;
    if (const QString bound = playgroundDecodeBoundText(event); !bound.isEmpty())
        m_loadedStatus += QLatin1Char(' ') + bound;
    m_modelStatus->setText(m_loadedStatus);
    m_chat->setDecodeBound(
        event.value(QStringLiteral("decode_bound")).toObject().value(QStringLiteral("tokens_per_s")).toDouble());
    updateMemory();
    Q_EMIT modelLoaded();
}

void PlaygroundPage::onToken(const QString &id, const QString &text)
{
    if (id == m_generationId)
        m_chat->appendToken(text);
}

void PlaygroundPage::onDone(const QString &id, const QString &text, const QString &stopReason,
                            const GenerationStats &stats)
{
    if (id != m_generationId)
        return;
    m_generationId.clear();
    m_chat->finish(text, stopReason, stats);
    setState(State::Ready);
    Q_EMIT generationFinished(stopReason);
}

void PlaygroundPage::onFailed(const QString &id, const QString &message)
{
    Q_UNUSED(id)
    const State before = m_state;
    showError(message);
    if (before == State::Loading) {
        setState(State::NoModel);
        m_modelStatus->setText(tr("Not loaded."));
    } else if (before == State::Generating || before == State::Stopping) {
        m_generationId.clear();
        setState(m_client->isRunning() ? State::Ready : State::NoModel);
    } else if (before == State::Unloading) {
        setState(State::NoModel);
    }
}

void PlaygroundPage::onCrashed(const QString &message)
{
    m_loaded = {};
    m_generationId.clear();
    showError(tr("The inference worker stopped: %1. The studio is fine; Load starts a fresh worker.").arg(message));
    setState(State::NoModel);
    m_modelStatus->setText(tr("Not loaded."));
    updateMemory();
}

void PlaygroundPage::setState(State state)
{
    m_state = state;
    const bool busy = state == State::Loading || state == State::Unloading;
    const bool generating = state == State::Generating || state == State::Stopping;
    m_loadButton->setEnabled(!busy && !generating);
    m_unloadButton->setEnabled(state == State::Ready || generating);
    m_chat->setButtonsEnabled(state == State::Ready || (state == State::NoModel && splitAcrossHosts()),
                              state == State::Generating);
    m_splitHosts->setEnabled(!m_clusterHosts.isEmpty() && !busy && !generating);
    m_model->setEnabled(!busy && !generating);
    m_adapter->setEnabled(!busy && !generating);
    m_options->setEnabled(!busy && !generating);
    Q_EMIT stateChanged(state);
}

void PlaygroundPage::showError(const QString &message)
{
    m_banner->setText(message);
    m_banner->show();
    Q_EMIT errorShown(message);
    Q_EMIT statusMessage(message);
}

void PlaygroundPage::clearError()
{
    m_banner->clear();
    m_banner->hide();
}

QString PlaygroundPage::outputText() const
{
    return m_chat->text();
}

int PlaygroundPage::streamUpdates() const
{
    return m_chat->streamUpdates();
}

QString PlaygroundPage::lastStopReason() const
{
    return m_chat->stopReason();
}

GenerationStats PlaygroundPage::lastStats() const
{
    return m_chat->stats();
}

QString PlaygroundPage::errorText() const
{
    return m_banner->isHidden() ? QString() : m_banner->text();
}

QString PlaygroundPage::statsText() const
{
    return m_chat->statsText();
}

QString PlaygroundPage::memoryText() const
{
    return m_memory->text();
}

void PlaygroundPage::updateMemory()
{
    m_memory->setText(playgroundMemoryText(m_lanes->plan(), m_loaded, m_client->processId()));
}

} // namespace accel::app
