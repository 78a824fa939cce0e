// The question-flow engine: which question comes next, what typed input means, and (in
// flowbuilder.cpp) which config the answers produce. The questions themselves are in
// standardflow.cpp.
#include "core/config/questionflow.h"

#include "core/common/fileutil.h"
#include "core/common/text.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace accel::config {

namespace {

using text::lower;

} // namespace

std::string Question::promptFor(const Answers &answers) const
{
    return dynamicPrompt ? dynamicPrompt(answers) : prompt;
}

std::string Question::defaultHint() const
{
    switch (kind) {
    case QuestionKind::YesNo:
        return defaultAnswer == "yes" ? "[YES/no]" : "[yes/NO]";
    case QuestionKind::Menu: {
        for (const Choice &choice : choices)
            if (choice.value == defaultAnswer)
                return "[" + choice.label + "]";
        return {};
    }
    default:
        return defaultAnswer.empty() ? std::string() : "[" + defaultAnswer + "]";
    }
}

QuestionFlow::QuestionFlow(std::vector<Question> questions, std::vector<Section> sections)
    : m_questions(std::move(questions)), m_sections(std::move(sections))
{}

std::vector<const Question *> QuestionFlow::questionsIn(const std::string &sectionId) const
{
    std::vector<const Question *> list;
    for (const Question &question : m_questions)
        if (question.section == sectionId)
            list.push_back(&question);
    return list;
}

Answers QuestionFlow::seedAnswers(const ClusterConfig &config) const
{
    Answers seed;
    auto put = [&](const char *id, const std::string &value) {
        if (find(id) && !value.empty())
            seed[id] = value;
    };
    if (config.isSageMaker())
        return seed;
    const std::string type = toString(config.distributedType);
    const Question *machine = find("machine_type");
    if (machine) {
        for (const Choice &choice : machine->choices)
            if (choice.value == type)
                put("machine_type", type);
    }
    if (config.distributedType == DistributedType::No && config.useCpu)
        put("use_cpu", *config.useCpu ? "yes" : "no");
    if (config.numProcesses && *config.numProcesses >= 1)
        put("num_processes", std::to_string(*config.numProcesses));
    if (config.numMachines && *config.numMachines >= 1)
        put("num_machines", std::to_string(*config.numMachines));
    if (config.gpuIds)
        put("gpu_ids", *config.gpuIds);
    if (config.mixedPrecision)
        put("mixed_precision", toString(*config.mixedPrecision));
    return seed;
}

const Question *QuestionFlow::find(const std::string &id) const
{
    for (const Question &question : m_questions)
        if (question.id == id)
            return &question;
    return nullptr;
}

Answers QuestionFlow::effective(const Answers &answers) const
{
    Answers result;
    for (const Question &question : m_questions) {
        if (question.condition && !question.condition(result))
            continue;
        auto it = answers.find(question.id);
        result[question.id] = it != answers.end() ? it->second : question.defaultAnswer;
    }
    return result;
}

const Question *QuestionFlow::next(const Answers &answers) const
{
    Answers seen;
    for (const Question &question : m_questions) {
        if (question.condition && !question.condition(seen))
            continue;
        auto it = answers.find(question.id);
        if (it == answers.end())
            return &question;
        seen[question.id] = it->second;
    }
    return nullptr;
}

std::vector<const Question *> QuestionFlow::applicable(const Answers &answers) const
{
    std::vector<const Question *> list;
    Answers seen;
    for (const Question &question : m_questions) {
        if (question.condition && !question.condition(seen))
            continue;
        list.push_back(&question);
        auto it = answers.find(question.id);
        seen[question.id] = it != answers.end() ? it->second : question.defaultAnswer;
    }
    return list;
}

Answers QuestionFlow::prune(const Answers &answers) const
{
    Answers kept;
    for (const Question *question : applicable(answers)) {
        auto it = answers.find(question->id);
        if (it != answers.end())
            kept[question->id] = it->second;
    }
    return kept;
}

Result<std::string> QuestionFlow::interpret(const Question &question, const std::string &input,
                                            const Answers &answers) const
{
    const std::string text = accel::text::trim(input);
    auto bad = [&](const std::string &message) { return makeError(ErrorCode::InvalidInput, message, question.id); };
    std::string answer;
    if (text.empty()) {
        if (question.defaultAnswer.empty()) {
            const bool freeText = question.kind == QuestionKind::Text || question.kind == QuestionKind::Path;
            if (question.required || !freeText)
                return bad("an answer is required");
            return std::string();
        }
        answer = question.defaultAnswer; // already canonical
    } else {
        switch (question.kind) {
        case QuestionKind::Menu: {
            // A choice's value or label first (so "2" picks ZeRO stage 2), then its 1-based number.
            for (const Choice &choice : question.choices) {
                if (lower(choice.value) == lower(text) || lower(choice.label) == lower(text)) {
                    answer = choice.value;
                    break;
                }
            }
            char *end = nullptr;
            errno = 0;
            const long number = std::strtol(text.c_str(), &end, 10);
            if (answer.empty() && end && *end == '\0' && errno == 0 && number >= 1 &&
                number <= static_cast<long>(question.choices.size()))
                answer = question.choices[static_cast<size_t>(number - 1)].value;
            if (answer.empty()) {
                std::string options;
                for (const Choice &choice : question.choices)
                    options += (options.empty() ? "" : ", ") + choice.label;
                return bad("expected a number from 1 to " + std::to_string(question.choices.size()) +
                           " or one of: " + options + "; got " + text);
            }
            break;
        }
        case QuestionKind::YesNo: {
            const std::string l = lower(text);
            if (l == "yes" || l == "y")
                answer = "yes";
            else if (l == "no" || l == "n")
                answer = "no";
            else
                return bad("please answer yes or no; got " + text);
            break;
        }
        case QuestionKind::Integer: {
            char *end = nullptr;
            errno = 0;
            const long long value = std::strtoll(text.c_str(), &end, 10);
            if (!end || *end != '\0' || errno != 0)
                return bad("expected a whole number; got " + text);
            answer = std::to_string(value);
            break;
        }
        case QuestionKind::Float: {
            char *end = nullptr;
            errno = 0;
            const double value = std::strtod(text.c_str(), &end);
            if (!end || *end != '\0' || errno != 0 || value != value)
                return bad("expected a number; got " + text);
            answer = text;
            break;
        }
        case QuestionKind::Path:
            answer = fileutil::expandUser(text);
            break;
        case QuestionKind::Text:
            answer = text;
            break;
        }
    }
    if (question.kind == QuestionKind::Path)
        answer = fileutil::expandUser(answer);
    if (question.check) {
        const std::string problem = question.check(answer, effective(answers));
        if (!problem.empty())
            return bad(problem);
    }
    return answer;
}

} // namespace accel::config
