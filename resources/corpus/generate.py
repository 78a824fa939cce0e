#!/usr/bin/env python3
"""Writes corpus.txt: a deterministic, original English-like text for the demo GPT job.

The text is made of short stories about a small town, assembled from word lists and sentence
patterns written for Accel Studio, with a fixed random seed, so the file is the same on every
machine. Run: python3 generate.py [--bytes N] [--seed S] > corpus.txt
"""
import argparse
import random

NAMES = ["Ada", "Bruno", "Clara", "Dmitri", "Elena", "Farid", "Greta", "Hugo", "Ines", "Jonas",
         "Kira", "Luca", "Mara", "Nils", "Olga", "Pavel", "Rosa", "Sami", "Tove", "Umar"]
PLACES = ["the harbour", "the old mill", "the library", "the market square", "the bakery",
          "the hill above the town", "the railway station", "the river bank", "the school yard",
          "the lighthouse", "the orchard", "the workshop"]
THINGS = ["a brass key", "a wooden boat", "a blue kite", "an old map", "a letter", "a lantern",
          "a basket of apples", "a broken clock", "a violin", "a loaf of bread", "a red scarf",
          "a jar of honey", "a compass", "a notebook"]
ADJECTIVES = ["quiet", "bright", "cold", "warm", "windy", "grey", "golden", "crowded", "empty",
              "gentle", "strange", "busy"]
TIMES = ["In the morning", "At noon", "Late in the afternoon", "In the evening", "At night",
         "On Sunday", "After the rain", "Before sunrise", "During the festival", "In winter"]
VERBS = ["found", "carried", "repaired", "painted", "lost", "shared", "hid", "opened", "sold",
         "borrowed", "returned", "measured"]
FEELINGS = ["happy", "tired", "curious", "worried", "proud", "calm", "surprised", "hungry"]
WEATHER = ["The sky was {adj} and the wind came from the sea.",
           "It was a {adj} day, and the streets smelled of bread.",
           "Rain fell on the roofs, soft and {adj}.",
           "The sun stood low over {place}."]

PATTERNS = [
    "{time}, {name} walked to {place} and {verb} {thing}.",
    "{name} was {feeling} because {other} had {verb} {thing} at {place}.",
    "\"Have you seen {thing}?\" asked {name}. \"{other} {verb} it near {place}.\"",
    "{name} and {other} met at {place}, where everything was {adj}.",
    "Nobody knew why {name} {verb} {thing}, but {other} smiled.",
    "{time}, {place} was {adj}, so {name} stayed home and read.",
    "{other} told {name} a story about {thing} and {place}.",
    "When {name} counted the steps to {place}, there were {number} of them.",
    "{name} wrote in a notebook: day {number}, {adj} weather, {feeling} mood.",
]


def sentence(rng):
    name, other = rng.sample(NAMES, 2)
    pattern = rng.choice(PATTERNS + WEATHER)
    return pattern.format(time=rng.choice(TIMES), name=name, other=other, place=rng.choice(PLACES),
                          verb=rng.choice(VERBS), thing=rng.choice(THINGS), adj=rng.choice(ADJECTIVES),
                          feeling=rng.choice(FEELINGS), number=rng.randint(2, 400))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bytes", type=int, default=300_000)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    out, size, chapter = [], 0, 1
    while size < args.bytes:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))
        if rng.random() < 0.08:
            paragraph = f"Chapter {chapter}\n\n" + paragraph
            chapter += 1
        out.append(paragraph)
        size += len(paragraph) + 2
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
