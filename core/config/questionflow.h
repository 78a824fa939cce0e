// One declarative description of `accelerate config`'s questionnaire, shared by the terminal
// questionnaire (`accel config`) and the studio's wizard. No UI here: a list of questions (id,
// prompt, kind, choices, default, condition on earlier answers, config key the answer lands in)
// and a pure engine: answers so far -> next question; all answers -> ClusterConfig.
#pragma once

#include "core/common/result.h"
#include "core/config/clusterconfig.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace accel::config {

enum class QuestionKind { Menu, YesNo, Integer, Float, Text, Path };

struct Choice {
    std::string value; // canonical answer stored in Answers ("MULTI_GPU", "FULL_SHARD", "2")
    std::string label; // what the user sees ("multi-GPU")
};

// Question id -> canonical answer: "yes"/"no" for YesNo, the choice value for Menu, the number as
// text for Integer/Float, the text for Text/Path (paths stored with "~" expanded).
using Answers = std::map<std::string, std::string>;

struct Question {
    std::string id;     // "num_machines", "fsdp_version", ...
    std::string prompt; // "How many different machines will you use (use more than 1 for multi-node training)?"
    QuestionKind kind = QuestionKind::Text;
    std::vector<Choice> choices; // Menu only
    std::string defaultAnswer;   // canonical; "" = no default (Text/Path then accept an empty answer unless required)
    bool required = false;       // Text/Path: an empty answer is refused (e.g. the main process IP)
    // Asked only when this returns true for the answers given so far (empty: always asked).
    std::function<bool(const Answers &)> condition;
    // Prompt text that depends on earlier answers ("How many GPU(s) ..." vs "How many processes ...").
    std::function<std::string(const Answers &)> dynamicPrompt;
    // Extra check of an interpreted answer against earlier ones; returns "" or the problem.
    std::function<std::string(const std::string &answer, const Answers &)> check;
    // Where the answer lands ("fsdp_config.fsdp_offload_params"); "" when build() derives it
    // from several answers (distributed type, FSDP1 strategy, ...).
    std::string configKey;
    std::string help; // one line for tooltips / --help of the wizard
    // The group the studio's wizard shows this question in (a Section id: "machine", "fsdp", ...).
    // The terminal questionnaire ignores it.
    std::string section;

    std::string promptFor(const Answers &answers) const;
    // "[yes/NO]", "[1]", "" — the bracketed default shown after the prompt.
    std::string defaultHint() const;
};

// One page of the studio's wizard. Sections are listed in page order; a question's condition
// only depends on questions of its own or earlier sections, so a page can be decided from the
// pages before it.
struct Section {
    std::string id;    // "multi_node"
    std::string title; // "Multi-node"
};

class QuestionFlow {
public:
    explicit QuestionFlow(std::vector<Question> questions, std::vector<Section> sections = {});

    // The flow of `accelerate config` (facts section 2), including the SageMaker branch
    // (without credential set-up).
    static const QuestionFlow &standard();

    const std::vector<Question> &questions() const { return m_questions; }
    const Question *find(const std::string &id) const;
    const std::vector<Section> &sections() const { return m_sections; }
    // The questions of one section, in flow order.
    std::vector<const Question *> questionsIn(const std::string &sectionId) const;

    // Answers that reproduce the main choices of `config` (machine type, CPU only, processes,
    // machines, GPU ids, mixed precision): the wizard's starting values for a recommended config.
    // Only questions of this flow are answered, each with a canonical answer.
    Answers seedAnswers(const ClusterConfig &config) const;

    // The first question, in order, whose condition holds and that has no answer yet; nullptr
    // when the questionnaire is complete.
    const Question *next(const Answers &answers) const;
    // Every question whose condition holds, in order (answered or not).
    std::vector<const Question *> applicable(const Answers &answers) const;
    // Answers restricted to the questions that apply (drops stale answers after going back).
    Answers prune(const Answers &answers) const;
    // Every applicable question's answer, the default standing in for unanswered ones.
    Answers effective(const Answers &answers) const;

    // Turns typed input into the canonical answer. Empty input -> the default. Menus accept the
    // value or the label (case-insensitive), else the 1-based choice number; yes/no accept yes, no, y,
    // n in any case; numbers must parse. On failure the message says what would be valid.
    Result<std::string> interpret(const Question &question, const std::string &input, const Answers &answers) const;

    // The config these answers produce (answers to questions that do not apply are ignored;
    // unanswered applicable questions take their default). Fails with InvalidInput for
    // combinations Accelerate refuses (MULTI_GPU with one machine and one process, DeepSpeed on
    // Neuron, a required answer missing, an answer that does not fit its question, ...).
    Result<ClusterConfig> build(const Answers &answers) const;

private:
    std::vector<Question> m_questions;
    std::vector<Section> m_sections;
};

} // namespace accel::config
