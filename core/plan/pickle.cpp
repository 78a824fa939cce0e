#include "core/plan/pickle.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace accel::runtime {

PickleRef PickleValue::get(const std::string &key) const
{
    for (const auto &[k, v] : entries)
        if (k && k->kind == Kind::Text && k->text == key)
            return v;
    return nullptr;
}

namespace {

using Kind = PickleValue::Kind;

// One pass over the opcodes; the stack holds values, a MARK is a null entry position.
class Reader {
public:
    Reader(const std::string &bytes, const PickleAllowList &allowed, const std::string &what)
        : m_bytes(bytes), m_allowed(allowed), m_what(what)
    {}

    Result<PickleDocument> run()
    {
        while (m_pos < m_bytes.size()) {
            const size_t at = m_pos;
            const uint8_t op = uint8_t(m_bytes[m_pos++]);
            if (op == '.') {
                if (m_stack.size() != 1 || !m_marks.empty())
                    return fail(at, "STOP with " + std::to_string(m_stack.size()) + " values on the stack");
                m_document.root = m_stack.back();
                return std::move(m_document);
            }
            if (m_document.values.size() >= kMaxPickleValues)
                return fail(at, "more than " + std::to_string(kMaxPickleValues) + " values");
            if (!step(op, at))
                return tl::unexpected(m_error);
        }
        return fail(m_pos, "ends before STOP (truncated)");
    }

private:
    PickleRef make(Kind kind)
    {
        m_document.values.push_back(std::make_unique<PickleValue>());
        m_document.values.back()->kind = kind;
        return m_document.values.back().get();
    }

    tl::unexpected<Error> fail(size_t at, const std::string &message)
    {
        m_error = Error{ErrorCode::InvalidInput, "pickle byte " + std::to_string(at) + ": " + message, m_what};
        return tl::unexpected(m_error);
    }
    bool bad(size_t at, const std::string &message)
    {
        fail(at, message);
        return false;
    }

    bool take(size_t count, const char **out)
    {
        if (m_bytes.size() - m_pos < count)
            return false;
        *out = m_bytes.data() + m_pos;
        m_pos += count;
        return true;
    }
    bool unsignedLE(size_t count, uint64_t *value)
    {
        const char *p = nullptr;
        if (!take(count, &p))
            return false;
        *value = 0;
        for (size_t i = 0; i < count; ++i)
            *value |= uint64_t(uint8_t(p[i])) << (8 * i);
        return true;
    }
    bool line(std::string *out)
    {
        const size_t end = m_bytes.find('\n', m_pos);
        if (end == std::string::npos)
            return false;
        *out = m_bytes.substr(m_pos, end - m_pos);
        m_pos = end + 1;
        return true;
    }

    bool push(PickleRef value)
    {
        m_stack.push_back(std::move(value));
        return true;
    }
    PickleRef pop()
    {
        if (m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back()))
            return nullptr;
        PickleRef value = m_stack.back();
        m_stack.pop_back();
        return value;
    }
    // The values above the last MARK, which is removed.
    bool popMark(std::vector<PickleRef> *out)
    {
        if (m_marks.empty())
            return false;
        const size_t mark = m_marks.back();
        m_marks.pop_back();
        out->assign(m_stack.begin() + long(mark), m_stack.end());
        m_stack.resize(mark);
        return true;
    }

    bool text(size_t at, size_t lengthBytes, Kind kind)
    {
        uint64_t length = 0;
        const char *p = nullptr;
        if (!unsignedLE(lengthBytes, &length) || length > m_bytes.size() - m_pos || !take(size_t(length), &p))
            return bad(at, "a string runs past the end");
        auto value = make(kind);
        value->text.assign(p, size_t(length));
        return push(value);
    }
    bool integer(int64_t v)
    {
        auto value = make(Kind::Int);
        value->integer = v;
        return push(value);
    }
    bool global(size_t at, const std::string &module, const std::string &name)
    {
        const std::string full = module + "." + name;
        if (std::find(m_allowed.begin(), m_allowed.end(), full) == m_allowed.end())
            return bad(at, "refuses the global " + full +
                               " (only the classes of torch.distributed.checkpoint's "
                               "metadata and of torch.save's tensors are read)");
        auto value = make(Kind::Global);
        value->text = full;
        return push(value);
    }
    bool memoGet(size_t at, uint64_t index)
    {
        const auto found = m_memo.find(index);
        if (found == m_memo.end())
            return bad(at, "memo entry " + std::to_string(index) + " was never stored");
        return push(found->second);
    }
    bool memoPut(size_t at, uint64_t index)
    {
        if (m_stack.empty())
            return bad(at, "stores an empty stack");
        m_memo[index] = m_stack.back();
        return true;
    }
    bool container(size_t at, Kind kind)
    {
        std::vector<PickleRef> items;
        if (!popMark(&items))
            return bad(at, "no MARK");
        auto value = make(kind);
        value->items = std::move(items);
        return push(value);
    }
    bool appendTo(size_t at, std::vector<PickleRef> items)
    {
        if (m_stack.empty() || m_stack.size() <= (m_marks.empty() ? 0 : m_marks.back()) ||
            m_stack.back()->kind != Kind::List)
            return bad(at, "APPEND to something not a list");
        auto &target = m_stack.back()->items;
        target.insert(target.end(), items.begin(), items.end());
        return true;
    }
    bool setItems(size_t at, std::vector<PickleRef> items)
    {
        if (items.size() % 2 != 0 || m_stack.empty() || m_stack.back()->kind != Kind::Dict)
            return bad(at, "SETITEMS on something not a dict");
        for (size_t i = 0; i < items.size(); i += 2)
            m_stack.back()->entries.emplace_back(items[i], items[i + 1]);
        return true;
    }
    // REDUCE and NEWOBJ: an instance of an allowed class, nothing called.
    bool instance(size_t at)
    {
        PickleRef args = pop();
        PickleRef callable = pop();
        if (!args || !callable || args->kind != Kind::Tuple || callable->kind != Kind::Global)
            return bad(at, "an object is made from something not a class and a tuple");
        auto value = make(Kind::Object);
        value->text = callable->text;
        value->items = args->items;
        return push(value);
    }

    bool step(uint8_t op, size_t at)
    {
        uint64_t n = 0;
        const char *p = nullptr;
        switch (op) {
        case 0x80: // PROTO
            return unsignedLE(1, &n) && n >= 2 && n <= 5 ? true : bad(at, "protocol outside 2-5");
        case 0x95: // FRAME
            return unsignedLE(8, &n) ? true : bad(at, "truncated FRAME");
        case '(':
            m_marks.push_back(m_stack.size());
            return true;
        case ')':
            return push(make(Kind::Tuple));
        case ']':
            return push(make(Kind::List));
        case '}':
            return push(make(Kind::Dict));
        case 0x8f: // EMPTY_SET
            return push(make(Kind::List));
        case 't':
            return container(at, Kind::Tuple);
        case 'l':
        case 0x91: // FROZENSET
            return container(at, Kind::List);
        case 'd': {
            std::vector<PickleRef> items;
            if (!popMark(&items))
                return bad(at, "no MARK");
            push(make(Kind::Dict));
            return setItems(at, std::move(items));
        }
        case 0x85:
        case 0x86:
        case 0x87: {
            const size_t count = size_t(op - 0x84);
            if (m_stack.size() < count + (m_marks.empty() ? 0 : m_marks.back()))
                return bad(at, "TUPLE" + std::to_string(count) + " on a short stack");
            auto value = make(Kind::Tuple);
            value->items.assign(m_stack.end() - long(count), m_stack.end());
            m_stack.resize(m_stack.size() - count);
            return push(value);
        }
        case 'a': {
            PickleRef item = pop();
            return item ? appendTo(at, {item}) : bad(at, "APPEND on an empty stack");
        }
        case 'e':
        case 0x90: { // APPENDS, ADDITEMS
            std::vector<PickleRef> items;
            return popMark(&items) ? appendTo(at, std::move(items)) : bad(at, "no MARK");
        }
        case 's': {
            PickleRef value = pop();
            PickleRef key = pop();
            return value && key ? setItems(at, {key, value}) : bad(at, "SETITEM on a short stack");
        }
        case 'u': {
            std::vector<PickleRef> items;
            return popMark(&items) ? setItems(at, std::move(items)) : bad(at, "no MARK");
        }
        case 'N':
            return push(make(Kind::None));
        case 0x88:
        case 0x89: {
            auto value = make(Kind::Bool);
            value->boolean = op == 0x88;
            return push(value);
        }
        case 'J':
            return unsignedLE(4, &n) ? integer(int32_t(uint32_t(n))) : bad(at, "truncated BININT");
        case 'K':
            return unsignedLE(1, &n) ? integer(int64_t(n)) : bad(at, "truncated BININT1");
        case 'M':
            return unsignedLE(2, &n) ? integer(int64_t(n)) : bad(at, "truncated BININT2");
        case 0x8a: { // LONG1: little-endian two's complement
            uint64_t length = 0;
            if (!unsignedLE(1, &length) || length > 8)
                return bad(at, "an integer wider than 64 bits");
            if (length == 0)
                return integer(0);
            if (!unsignedLE(size_t(length), &n))
                return bad(at, "truncated LONG1");
            if (length < 8 && (n >> (8 * length - 1)) & 1)
                n |= ~uint64_t(0) << (8 * length);
            return integer(int64_t(n));
        }
        case 'G': {
            if (!take(8, &p))
                return bad(at, "truncated BINFLOAT");
            uint64_t bits = 0;
            for (int i = 0; i < 8; ++i)
                bits = (bits << 8) | uint8_t(p[i]);
            auto value = make(Kind::Float);
            std::memcpy(&value->real, &bits, 8);
            return push(value);
        }
        case 0x8c:
            return text(at, 1, Kind::Text);
        case 'X':
            return text(at, 4, Kind::Text);
        case 0x8d:
            return text(at, 8, Kind::Text);
        case 'U':
        case 'C':
            return text(at, 1, Kind::Bytes);
        case 'T':
        case 'B':
            return text(at, 4, Kind::Bytes);
        case 0x8e:
            return text(at, 8, Kind::Bytes);
        case 0x94: // MEMOIZE
            return memoPut(at, m_memo.size());
        case 'q':
            return unsignedLE(1, &n) ? memoPut(at, n) : bad(at, "truncated BINPUT");
        case 'r':
            return unsignedLE(4, &n) ? memoPut(at, n) : bad(at, "truncated LONG_BINPUT");
        case 'h':
            return unsignedLE(1, &n) ? memoGet(at, n) : bad(at, "truncated BINGET");
        case 'j':
            return unsignedLE(4, &n) ? memoGet(at, n) : bad(at, "truncated LONG_BINGET");
        case 'c': {
            std::string module, name;
            if (!line(&module) || !line(&name))
                return bad(at, "truncated GLOBAL");
            return global(at, module, name);
        }
        case 0x93: { // STACK_GLOBAL
            PickleRef name = pop();
            PickleRef module = pop();
            if (!name || !module || name->kind != Kind::Text || module->kind != Kind::Text)
                return bad(at, "STACK_GLOBAL without two strings");
            return global(at, module->text, name->text);
        }
        case 'R':
        case 0x81:
            return instance(at);
        case 'b': {
            PickleRef state = pop();
            if (!state || m_stack.empty() || m_stack.back()->kind != Kind::Object)
                return bad(at, "BUILD on something not an object");
            m_stack.back()->state = state;
            return true;
        }
        case 'Q': { // BINPERSID
            PickleRef id = pop();
            if (!id)
                return bad(at, "BINPERSID on an empty stack");
            auto value = make(Kind::PersistentId);
            value->items.push_back(id);
            return push(value);
        }
        case '0':
            return pop() ? true : bad(at, "POP on an empty stack");
        case '2':
            return m_stack.empty() ? bad(at, "DUP on an empty stack") : push(m_stack.back());
        case '1': {
            std::vector<PickleRef> dropped;
            return popMark(&dropped) ? true : bad(at, "no MARK");
        }
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            return bad(at, std::string("opcode ") + hex + " is not read here");
        }
        }
    }

    const std::string &m_bytes;
    const PickleAllowList &m_allowed;
    const std::string &m_what;
    size_t m_pos = 0;
    std::vector<PickleRef> m_stack;
    std::vector<size_t> m_marks;
    std::unordered_map<uint64_t, PickleRef> m_memo;
    PickleDocument m_document;
    Error m_error;
};

} // namespace

Result<PickleDocument> readPickle(const std::string &bytes, const PickleAllowList &allowed, const std::string &what)
{
    return Reader(bytes, allowed, what).run();
}

} // namespace accel::runtime
