#!/usr/bin/env python3
"""Writes the tiny tokenizer.json fixtures of tests/tokenizer (run from this folder).

The vocabularies are made up for the tests: a full byte alphabet plus a handful of merges chosen
so that every expected encoding in tst_tokenizer.cpp can be worked out by hand.
"""
import json


def byte_alphabet():
    """Byte -> character of the GPT-2 byte-level alphabet (printable Latin-1 bytes stand for
    themselves, the others take code points from U+0100 on, in byte order)."""
    printable = set(range(ord('!'), ord('~') + 1)) | set(range(0xA1, 0xAD)) | set(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


def gpt2(pre_tokenizer):
    alphabet = byte_alphabet()
    vocab = {alphabet[b]: b for b in range(256)}  # id == byte value
    merges = [
        ("h", "e"),      # 256 he
        ("Ġ", "t"),      # 257 Ġt
        ("Ġt", "he"),    # 258 Ġthe
        ("l", "o"),      # 259 lo
        ("lo", "w"),     # 260 low
        ("e", "r"),      # 261 er
        ("low", "er"),   # 262 lower
        ("Ġ", "lower"),  # 263 Ġlower
        ("Ã", "©"),      # 264 Ã© (é = C3 A9)
        ("Ċ", "Ċ"),      # 265 ĊĊ (two newlines)
        ("Ġ", "Ġ"),      # 266 ĠĠ (two spaces)
    ]
    for left, right in merges:
        vocab[left + right] = len(vocab)
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": 267, "content": "<|endoftext|>", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True},
            {"id": 268, "content": "[NOTE]", "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": True, "special": False},
        ],
        "normalizer": None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": vocab, "merges": [f"{l} {r}" for l, r in merges]},
    }


GPT2_REGEX = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


def llama(normalizer, pre_tokenizer, decoder):
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = 3 + b  # id == 3 + byte value
    for piece in ["▁", "t", "h", "e", "l", "o", "w", "r", "▁t", "he", "▁the", "lo", "low", "▁low", "é", "日", "a",
                  "c", "f"]:
        vocab[piece] = len(vocab)  # 259 ...
    merges = [["h", "e"], ["▁", "t"], ["▁t", "he"], ["l", "o"], ["lo", "w"], ["▁", "low"]]
    special = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [dict(id=i, content=c, **special) for i, c in enumerate(["<unk>", "<s>", "</s>"])],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<s>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}},
        },
        "decoder": decoder,
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def write(name, data):
    with open(name, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=1)
        f.write("\n")


write("gpt2-tiny.json", gpt2({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}))
write("gpt2-split.json", gpt2({"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": GPT2_REGEX}, "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}))
write("llama-tiny.json", llama(
    {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "▁"},
                                         {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
    None,
    {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                                      {"type": "ByteFallback"}, {"type": "Fuse"},
                                      {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}))
write("llama-metaspace.json", llama(
    None,
    {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": False},
    {"type": "Sequence", "decoders": [{"type": "ByteFallback"},
                                      {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first",
                                       "split": False}]}))
