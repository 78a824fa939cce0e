#!/usr/bin/env python3
"""Hugging Face `tokenizers` as the oracle of Accel Studio's tokenizer compat test.

    tokenizers_oracle.py DIR FIXTURE.json...

Trains three small tokenizers with `tokenizers` itself into DIR (GPT-2 style byte-level BPE; a
Llama-2 style BPE with byte fallback and a Prepend/Replace normalizer; the same with a Metaspace
pre-tokenizer), builds a varied corpus (prose, code, whitespace runs, letters of every script
including Unicode 15 and 16, digits, marks, emoji sequences, invalid UTF-8), and prints one JSON
document: the corpus (base64 bytes) and, for every tokenizer file (trained and given), the ids of
each text (add_special_tokens=True), their decode (skip_special_tokens=True), and the decode of
random id lists (skip_special_tokens False and True).
Invalid UTF-8 reaches `tokenizers` as Python's bytes.decode("utf-8", "replace") of it.
"""
import base64
import json
import os
import random
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

RNG = random.Random(14)

PROSE = [
    "The quick brown fox jumps over the lazy dog. It's John's book; they're sure we've seen I'm late, "
    "you'll go and he'd stay. SHE'S LOUD, WE'LL SEE. Don't stop -- 3.14159, 1,000,000 and 42nd.",
    "Tokenizers split text into pieces: words, numbers 12345678 and punctuation!? \"Quotes\" (brackets) [x] {y}.",
    "Ünïcödé façade naïve résumé coöperate Øresund Straße ĳssel œuvre Ærø Łódź İstanbul ǅemal.",
    "Καλημέρα κόσμε, Здравствуй мир, Բարև աշխարհ, שלום עולם, مرحبا بالعالم, नमस्ते दुनिया, ওহে বিশ্ব, "
    "สวัสดีชาวโลก, ສະບາຍດີ, བཀྲ་ཤིས་བདེ་ལེགས, გამარჯობა, 안녕하세요 세계, こんにちは世界, カタカナ, 你好世界, "
    "ሰላም ዓለም, ᏏᏲ, ᠰᠠᠶᠢᠨ ᠪᠠᠶᠢᠴᠠᠭᠠ, សួស្តី, ආයුබෝවන්, வணக்கம், నమస్కారం, ಹಲೋ, ഹലോ.",
]

CODE = [
    "def main(argv):\n    for i in range(10):\n\tprint(f\"{i:>4}\")  # comment\n    return 0\n",
    "int main(int argc, char **argv) {\n    std::vector<int> v{1, 2, 3};\n    return v.size() > 2 ? 0 : 1;\n}\n",
    "SELECT id, name FROM users WHERE age >= 21 AND name LIKE '%a_b%';\n<div class=\"x\">&amp;</div>\n",
    "x = {'a': [1, 2.5e-3, None], \"b\": True}\r\nlambda y: y**2 // 3 % 4 != 5 <= 6",
]

WHITESPACE = [
    "a  b   c    d", "   leading", "trailing   ", "\n\n\nlines\n\n", "tabs\t\t\tand\tspaces \t \t",
    "\r\nwindows\r\n", " ", "    ", "\u00a0nbsp\u00a0\u00a0", "ideographic\u3000space", "line\u2028separator",
    "mongolian\u180evowel\u180eseparator", "zero\u200bwidth", "bom\ufeffin", "next\u0085line", "thin\u2009space",
    "narrow\u202fnbsp", "mixed \t\n\r\u000b\u000c all", "ends with newline\n", "x" + " " * 40 + "y",
]

EMOJI = [
    "😀😃😄 👍🏽👍🏿 👨‍👩‍👧‍👦 🏳️‍🌈 🇯🇵🇫🇷 1️⃣#️⃣ ❤️‍🔥 🧑🏻‍💻 ☕ ✈️ 🫠🪿",
    "emoji in text 🙂, mid😀word and 🐍🦀 code",
]

# Letters and digits added in Unicode 15 (Kawi, Nag Mundari, CJK Ext. H, Cyrillic Ext-D) and 16
# (Todhri, Kirat Rai, Ol Onal, Sunuwar, Garay, Tulu-Tigalari, Gurung Khema, outlined digits).
NEWEST = [0x11F04, 0x11F05, 0x11F50, 0x1E4D0, 0x1E4EB, 0x1E4F0, 0x31350, 0x323AF, 0x1E030, 0x1E06D, 0x2EBF0,
          0x105C0, 0x105F3, 0x16D40, 0x16D70, 0x1E5D0, 0x1E5F1, 0x11BC0, 0x11BF0, 0x10D4A, 0x10D40, 0x113B8,
          0x16100, 0x16130, 0x1CCF0, 0x1CCF9, 0x1FBF0]

INVALID = [b"\xff", b"abc\xe6\x97", b"\xe6\x97 def", b"abc\xc3(def", b"\xc0\xaf overlong", b"\xed\xa0\x80 surrogate",
           b"\xf4\x90\x80\x80 too big", b"\x80\x80\x80 stray", b"ok \xe2\x82", b"\xf0\x9f\x98 broken emoji \xf0\x9f",
           b"mixed \xce\xb1\xce valid \xce\xb2", b"\xfe\xfe\xff\xff"]


ALL_TEXT = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def category_members(pattern, limit):
    """Up to `limit` characters, picked at random, that `tokenizers` matches with `pattern`."""
    rest = pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(ALL_TEXT)
    outside = set("".join(piece for piece, _ in rest))
    members = [c for c in ALL_TEXT if c not in outside]
    RNG.shuffle(members)
    return members[:limit]


def corpus():
    texts = [t.encode() for t in PROSE + CODE + WHITESPACE + EMOJI]
    texts.append(" ".join(chr(c) for c in NEWEST).encode())
    texts.append("".join(chr(c) for c in NEWEST).encode())
    texts.append(("word" + "".join(chr(c) for c in NEWEST[:6]) + " 12" + chr(0x1CCF5) + "3").encode())
    texts += INVALID
    # Every script: letters, digits, marks, punctuation and symbols drawn from tokenizers' own classes.
    letters = category_members(r"\p{L}", 3000)
    digits = category_members(r"\p{N}", 300)
    marks = category_members(r"\p{M}", 300)
    others = category_members(r"\p{P}|\p{S}", 300)
    spaces = [" ", "  ", "\n", "\t", "\u3000", "\u00a0", "\u180e", "\u2028", " \n "]
    for start in range(0, len(letters), 60):
        chunk = []
        for letter in letters[start:start + 60]:
            chunk.append(letter)
            roll = RNG.random()
            if roll < 0.15:
                chunk.append(RNG.choice(marks))
            elif roll < 0.25:
                chunk.append(RNG.choice(digits))
            elif roll < 0.32:
                chunk.append(RNG.choice(others))
            if RNG.random() < 0.2:
                chunk.append(RNG.choice(spaces))
        texts.append("".join(chunk).encode())
    # Random mixtures of everything, a few with an invalid byte inside.
    pool = letters[:500] + digits + marks + others + spaces * 20 + list("abcxyz 's're've'll") + ["😀", "👍🏽"]
    for index in range(60):
        text = "".join(RNG.choice(pool) for _ in range(RNG.randint(1, 80))).encode()
        if index % 6 == 0:
            cut = RNG.randint(0, len(text))
            text = text[:cut] + RNG.choice([b"\xff", b"\xe6", b"\x80", b"\xc3"]) + text[cut:]
        texts.append(text)
    return texts


def train(folder, texts):
    os.makedirs(folder, exist_ok=True)
    training = [t.decode("utf-8", "replace") for t in texts] * 3
    paths = []

    byte_level = Tokenizer(models.BPE())
    byte_level.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    byte_level.decoder = decoders.ByteLevel()
    byte_level.post_processor = processors.ByteLevel(trim_offsets=False)
    byte_level.train_from_iterator(training, trainers.BpeTrainer(
        vocab_size=1200, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"],
        show_progress=False))
    paths.append(os.path.join(folder, "trained-bytelevel.json"))
    byte_level.save(paths[-1])

    for name, metaspace in (("trained-llama2.json", False), ("trained-metaspace.json", True)):
        tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
        if metaspace:
            tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                               split=False)
            tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
        else:
            tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                                         normalizers.Replace(" ", "\u2581")])
            tokenizer.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                                   decoders.Fuse(), decoders.Strip(" ", 1, 0)])
        tokenizer.train_from_iterator(training, trainers.BpeTrainer(
            vocab_size=900, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False, limit_alphabet=400))
        data = json.loads(tokenizer.to_str())
        # Llama keeps <0x00>..<0xFF> in the model's vocabulary, right after the special tokens.
        old = data["model"]["vocab"]
        vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
        for b in range(256):
            vocab[f"<0x{b:02X}>"] = len(vocab)
        for token, _ in sorted(old.items(), key=lambda item: item[1]):
            if token not in vocab:
                vocab[token] = len(vocab)
        data["model"]["vocab"] = vocab
        for added in data["added_tokens"]:
            added["id"] = vocab[added["content"]]
        data["post_processor"] = {"type": "TemplateProcessing",
                                  "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                             {"Sequence": {"id": "A", "type_id": 0}}],
                                  "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                           {"Sequence": {"id": "A", "type_id": 0}},
                                           {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                           {"Sequence": {"id": "B", "type_id": 1}}],
                                  "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
        paths.append(os.path.join(folder, name))
        with open(paths[-1], "w", encoding="utf-8") as f:
            json.dump(data, f, ensure_ascii=False)
    return paths


def main():
    folder, fixtures = sys.argv[1], sys.argv[2:]
    texts = corpus()
    paths = train(folder, texts) + fixtures
    out = {"texts": [base64.b64encode(t).decode() for t in texts], "tokenizers": []}
    for path in paths:
        tokenizer = Tokenizer.from_file(path)
        size = tokenizer.get_vocab_size(with_added_tokens=True)
        encodings = []
        for raw in texts:
            ids = tokenizer.encode(raw.decode("utf-8", "replace"), add_special_tokens=True).ids
            encodings.append({"ids": ids, "text": tokenizer.decode(ids, skip_special_tokens=True)})
        decodes = []
        for _ in range(150):
            ids = [RNG.randrange(size) for _ in range(RNG.randint(1, 24))]
            decodes.append({"ids": ids, "keep": tokenizer.decode(ids, skip_special_tokens=False),
                            "skip": tokenizer.decode(ids, skip_special_tokens=True)})
        out["tokenizers"].append({"path": path, "encodings": encodings, "decodes": decodes})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
