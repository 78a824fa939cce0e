#include "app/studio/launch/recipeform.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFileDialog>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStackedWidget>
#include <QToolButton>
#include <QVBoxLayout>

namespace accel::app {

using launcher::JobField;
using launcher::JobFile;

namespace {

QString q(const std::string &text)
{
    return QString::fromStdString(text);
}

const char *kGroups[] = {"Job", "Model", "Data", "Training", "Advanced"};

// The recipes this form edits; causal_lm jobs have the Fine-tune flow (FineTuneForm).
const std::vector<std::string> &recipeFormRecipes()
{
    static const std::vector<std::string> recipes{"gpt", "mlp"};
    return recipes;
}

} // namespace

RecipeForm::RecipeForm(QWidget *parent) : QWidget(parent), m_job(JobFile::defaults("gpt"))
{
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Recipe:"), this));
    m_recipe = new QComboBox(this);
    m_recipe->setObjectName(QStringLiteral("recipe"));
    for (const std::string &recipe : recipeFormRecipes())
        m_recipe->addItem(recipe == "gpt" ? tr("gpt - byte-level GPT language model") : tr("mlp - classifier"),
                          q(recipe));
    top->addWidget(m_recipe);
    top->addStretch();
    auto *load = new QPushButton(tr("Load job..."), this);
    load->setObjectName(QStringLiteral("loadJob"));
    auto *save = new QPushButton(tr("Save job as..."), this);
    save->setObjectName(QStringLiteral("saveJobAs"));
    top->addWidget(load);
    top->addWidget(save);
    layout->addLayout(top);

    m_panels = new QStackedWidget(this);
    for (const std::string &recipe : recipeFormRecipes())
        m_panels->addWidget(buildPanel(recipe));
    layout->addWidget(m_panels);

    connect(m_recipe, &QComboBox::currentIndexChanged, this, [this](int index) {
        if (!m_updating)
            setRecipe(m_recipe->itemData(index).toString());
    });
    connect(load, &QPushButton::clicked, this, [this] {
        const QString path =
            QFileDialog::getOpenFileName(this, tr("Load job"), m_jobPath, tr("Job files (*.yaml *.yml)"));
        if (path.isEmpty())
            return;
        const auto loaded = loadJob(path);
        Q_EMIT statusMessage(loaded ? tr("Loaded %1").arg(path) : q(loaded.error().toString()));
    });
    connect(save, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(
            this, tr("Save job as"), m_jobPath.isEmpty() ? q(m_job.recipe()) + QStringLiteral(".yaml") : m_jobPath,
            tr("Job files (*.yaml *.yml)"));
        if (path.isEmpty())
            return;
        const auto saved = saveJob(path);
        if (saved)
            m_jobPath = path;
        Q_EMIT statusMessage(saved ? tr("Saved %1").arg(path) : q(saved.error().toString()));
    });
    showJob();
}

QWidget *RecipeForm::buildPanel(const std::string &recipe)
{
    auto *panel = new QWidget(m_panels);
    auto *grid = new QGridLayout(panel);
    grid->setContentsMargins(0, 0, 0, 0);
    auto &editors = m_editors[q(recipe)];
    int slot = 0;
    for (const char *group : kGroups) {
        auto *box = new QGroupBox(tr(group), panel);
        auto *rows = new QGridLayout(box);
        rows->setColumnStretch(1, 1);
        int row = 0;
        for (const JobField &field : JobFile::fields(recipe)) {
            if (field.group != group)
                continue;
            auto *label = new QLabel(q(field.label) + QLatin1Char(':'), box);
            label->setToolTip(q(field.key + ": " + field.help));
            QWidget *editor = makeEditor(field, box);
            auto *error = new QLabel(box);
            error->setObjectName(QStringLiteral("error:") + q(field.key));
            error->setStyleSheet(QStringLiteral("color: #c62828;"));
            error->setWordWrap(true);
            error->setVisible(false);
            rows->addWidget(label, row, 0);
            rows->addWidget(editor, row, 1);
            rows->addWidget(error, row + 1, 1);
            row += 2;
            editors.insert(q(field.key), Editor{editor, error});
        }
        if (row == 0) {
            delete box;
            continue;
        }
        grid->addWidget(box, slot / 2, slot % 2, Qt::AlignTop);
        ++slot;
    }
    return panel;
}

QWidget *RecipeForm::makeEditor(const JobField &field, QWidget *parent)
{
    const QString key = q(field.key);
    const QString tip = q(field.key + ": " + field.help);
    switch (field.type) {
    case JobField::Type::Boolean: {
        auto *box = new QCheckBox(parent);
        box->setObjectName(key);
        box->setToolTip(tip);
        connect(box, &QCheckBox::toggled, this,
                [this, key](bool on) { editorChanged(key, on ? QStringLiteral("true") : QStringLiteral("false")); });
        return box;
    }
    case JobField::Type::Choice: {
        auto *combo = new QComboBox(parent);
        combo->setObjectName(key);
        combo->setToolTip(tip);
        for (const std::string &choice : field.choices)
            combo->addItem(choice.empty() ? tr("(from the config)") : q(choice), q(choice));
        connect(combo, &QComboBox::currentIndexChanged, this,
                [this, key, combo](int index) { editorChanged(key, combo->itemData(index).toString()); });
        return combo;
    }
    default:
        break;
    }
    auto *edit = new QLineEdit(parent);
    edit->setObjectName(key);
    edit->setToolTip(tip);
    if (!field.defaultValue.empty())
        edit->setPlaceholderText(tr("default %1").arg(q(field.defaultValue)));
    connect(edit, &QLineEdit::textEdited, this, [this, key](const QString &text) { editorChanged(key, text); });
    if (field.type != JobField::Type::Path)
        return edit;
    auto *row = new QWidget(parent);
    auto *layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(edit);
    auto *browse = new QToolButton(row);
    browse->setText(QStringLiteral("..."));
    layout->addWidget(browse);
    const bool folder = field.key == "output_dir";
    connect(browse, &QToolButton::clicked, this, [this, edit, key, folder] {
        const QString path = folder ? QFileDialog::getExistingDirectory(this, key, edit->text())
                                    : QFileDialog::getOpenFileName(this, key, edit->text());
        if (path.isEmpty())
            return;
        edit->setText(path);
        editorChanged(key, path);
    });
    return row;
}

QString RecipeForm::recipe() const
{
    return q(m_job.recipe());
}

void RecipeForm::setRecipe(const QString &recipe)
{
    if (recipe == this->recipe() || m_recipe->findData(recipe) < 0)
        return;
    m_job.setRecipe(recipe.toStdString());
    showJob();
    Q_EMIT changed();
}

void RecipeForm::setJob(const JobFile &job)
{
    m_job = job;
    showJob();
    Q_EMIT changed();
}

void RecipeForm::setValue(const QString &key, const QString &value)
{
    m_job.setValue(key.toStdString(), value.toStdString());
    showJob();
    Q_EMIT changed();
}

QString RecipeForm::value(const QString &key) const
{
    return q(m_job.value(key.toStdString()));
}

Result<void> RecipeForm::loadJob(const QString &path)
{
    auto job = JobFile::load(path.toStdString());
    if (!job)
        return tl::unexpected(job.error());
    if (m_recipe->findData(q(job->recipe())) < 0)
        return makeError(ErrorCode::Unsupported,
                         "recipe: the recipe form edits gpt and mlp jobs; got \"" + job->recipe() +
                             "\" (a causal_lm job opens in the Fine-tune flow)",
                         path.toStdString());
    m_jobPath = path;
    setJob(*job);
    return {};
}

Result<void> RecipeForm::saveJob(const QString &path) const
{
    return m_job.save(path.toStdString());
}

QString RecipeForm::fieldError(const QString &key) const
{
    const Editor editor = editors().value(key);
    return editor.error && !editor.error->isHidden() ? editor.error->text() : QString();
}

QWidget *RecipeForm::editor(const QString &key) const
{
    return editors().value(key).widget;
}

void RecipeForm::editorChanged(const QString &key, const QString &text)
{
    if (m_updating)
        return;
    m_job.setValue(key.toStdString(), text.toStdString());
    showIssues();
    Q_EMIT changed();
}

// Puts every value of the job into the editors of its recipe's panel.
void RecipeForm::showJob()
{
    m_updating = true;
    const int index = m_recipe->findData(recipe());
    m_recipe->setCurrentIndex(index);
    m_panels->setCurrentIndex(index);
    for (auto it = editors().begin(); it != editors().end(); ++it) {
        const QString value = q(m_job.value(it.key().toStdString()));
        QWidget *widget = it->widget;
        if (auto *box = qobject_cast<QCheckBox *>(widget)) {
            const JobField *field = JobFile::field(m_job.recipe(), it.key().toStdString());
            box->setChecked((value.isEmpty() ? q(field->defaultValue) : value) == QLatin1String("true"));
        } else if (auto *combo = qobject_cast<QComboBox *>(widget)) {
            combo->setCurrentIndex(std::max(0, combo->findData(value)));
        } else if (auto *edit = qobject_cast<QLineEdit *>(widget)) {
            edit->setText(value);
        } else if (auto *inner = widget->findChild<QLineEdit *>()) {
            inner->setText(value);
        }
    }
    m_updating = false;
    showIssues();
}

void RecipeForm::showIssues()
{
    QHash<QString, QString> messages;
    for (const launcher::FieldIssue &issue : m_job.validate()) {
        QString &message = messages[q(issue.key)];
        if (message.isEmpty())
            message = q(issue.message);
    }
    for (auto it = editors().begin(); it != editors().end(); ++it) {
        const QString message = messages.value(it.key());
        it->error->setText(message);
        it->error->setVisible(!message.isEmpty());
    }
}

} // namespace accel::app
