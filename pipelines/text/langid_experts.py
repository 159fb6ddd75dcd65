"""Close languages told apart by experts: a small fastText model per group of languages the main identifier
confuses (Bosnian, Croatian and Serbian; Indonesian and Malay; Standard Arabic and the dialects ...), asked only where
the main identifier's answer falls in the group.

Within a group G the main identifier's mass M = sum of p over G stays G's; the expert redistributes it:

    p(x) = (1 - w) p(x) + w M q(x)        x in G, q the expert's distribution over G
    p(x) unchanged                        x not in G

so the group's total is the main identifier's and a text of another language keeps its answer. An expert sees
only its group's text, with word bigrams besides character n-grams: the words a close pair does not share
(`tko` / `ko`, `tisuća` / `hiljada`, `karena` / `kerana`) carry the difference, which a 600-language model with one
small vector per word cannot afford to learn. This is the two-stage design of the DSL shared tasks' close-language
systems.

An answer the main identifier gives with probability `ask_below` or more (0.99) is not sent to the expert: on the
held-out sets the experts gained within a language-point as much without those texts (70.0 against 70.7), and
asked 36% fewer texts; a big language's text is mostly answered that surely, and asking costs the text stage's CPU.

Each group's weight w is chosen on the train pool's held-out sets (NTREX's held-out documents and heldout-short/tune,
as they are and cut to 2-6 words): the change in per-language accuracy summed over languages ("language-points":
one language up 3 points and another down 1 is +2), averaged over the sets, over every held-out text the main
identifier sends to the group, whatever its language; a group whose best weight does not gain at least `min_gain`
language-points is left out of the set, with its figures kept in the index (experts.json).

    python -m pipelines.text.langid_experts_train --train-pool ../shared/data/train \\
        --pairs data/train/heldout-short/tune --config configs/lid_experts.yaml --output models/lid/experts
    python -m pipelines.text.langid predict --model combined+experts < lines

An expert set is named by its index file (`models/lid/experts/experts.json`, or `experts` for the shipped one) as
the last part of `lid.model`: `combined+experts`, `cmlm-lid+path/to/experts.json`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from miner.io import InputFormatError, file_sha256
from pipelines.text.identifier import Identifier, LayeredIdentifier

INDEX_FORMAT = "cmlm-lid-experts/1"
INDEX_NAME = "experts.json"
DEPTH = 10   # labels read from the main identifier: the group's mass beyond the tenth is negligible


@dataclass
class ExpertGroup:
    languages: tuple[str, ...]
    model: Identifier
    weight: float


class ExpertIdentifier(LayeredIdentifier):
    """The main identifier (`inner`), with each group's expert asked where its answer falls in that group (module
    notes)."""

    def __init__(self, main: Identifier, groups: Sequence[ExpertGroup], path: str = "", ask_below: float = 1.0):
        self.inner, self.groups, self.ask_below = main, list(groups), ask_below
        self.path = path or f"{main.path}+experts"
        self.group_of: dict[str, int] = {}   # language -> its group's position in `groups`
        for number, group in enumerate(self.groups):
            unknown = [code for code in group.languages if not main.covers(code)]
            if unknown:
                raise ValueError(f"{self.path}: the main identifier does not name {', '.join(unknown)} "
                                 f"(group {'/'.join(group.languages)})")
            for code in group.languages:
                if code in self.group_of:
                    raise ValueError(f"{self.path}: {code} is in two expert groups")
                self.group_of[code] = number

    def predict(self, texts: Sequence[str], k: int = 1, document: str | None = None) -> list[list[tuple[str, float]]]:
        answers = self.inner.predict(texts, k=max(k, DEPTH), document=document)
        routed: dict[int, list[int]] = defaultdict(list)
        for i, answer in enumerate(answers):
            number = self.group_of.get(answer[0][0])
            if number is not None and answer[0][1] < self.ask_below:
                routed[number].append(i)
        for number, rows in routed.items():
            group = self.groups[number]
            opinions = group.model.predict([texts[i] for i in rows], k=len(group.languages))
            for i, opinion in zip(rows, opinions):
                answers[i] = redistribute(answers[i], opinion, group.languages, group.weight)
        return [answer[:k] for answer in answers]


def redistribute(answer: list[tuple[str, float]], opinion: list[tuple[str, float]], languages: Sequence[str],
                 weight: float) -> list[tuple[str, float]]:
    """The main answer with its mass on `languages` shared out (1 - w) as it was and w as the expert's opinion."""
    scores = dict(answer)
    mass = sum(scores.get(code, 0.0) for code in languages)
    expert = {code: p for code, p in opinion if code in languages}
    total = sum(expert.values())
    if total <= 0:
        return answer
    for code in languages:
        share = (1.0 - weight) * scores.get(code, 0.0) + weight * mass * expert.get(code, 0.0) / total
        if share > 0 or code in scores:
            scores[code] = share
    return sorted(((code, min(1.0, p)) for code, p in scores.items()), key=lambda item: (-item[1], item[0]))


# -- the set on disk --------------------------------------------------------------------------------------------

def read_index(path: Path) -> dict:
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFormatError(f"{path}: expert set not found "
                               "(python -m pipelines.text.langid_experts_train)") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputFormatError(f"{path}: not JSON ({err})") from None
    if not isinstance(index, dict) or index.get("format") != INDEX_FORMAT or not isinstance(index.get("groups"), list):
        raise InputFormatError(f"{path}: not an expert set's index (format {INDEX_FORMAT!r} with 'groups')")
    return index


def load_experts(path: str | Path, main: Identifier, load_model: Callable[[Path], Identifier],
                 spec: str = "") -> ExpertIdentifier:
    """The expert set indexed by `path` over `main`: each used group's model (read by `load_model`, langid.py's
    LanguageIdentifier.load) checked against its recorded sha256 and its labels against the group's languages."""
    path = Path(path)
    index = read_index(path)
    groups = []
    for i, entry in enumerate(index["groups"]):
        where = f"{path}: group {i + 1}"
        try:
            languages, weight = tuple(entry["languages"]), float(entry["weight"])
        except (KeyError, TypeError, ValueError):
            raise InputFormatError(f"{where}: needs 'languages' and a numeric 'weight'") from None
        if not entry.get("used", True):
            continue
        if not 0.0 < weight <= 1.0:
            raise InputFormatError(f"{where}: weight {weight} is not in (0, 1]")
        model_path = path.parent / str(entry.get("model", ""))
        if not model_path.is_file():
            raise InputFormatError(f"{where}: model {model_path} not found")
        if entry.get("model_sha256") != file_sha256(model_path):
            raise InputFormatError(f"{model_path}: not the model {path} was measured with (sha256 differs)")
        model = load_model(model_path)
        if sorted(model.languages) != sorted(languages):
            raise InputFormatError(f"{model_path}: names {', '.join(model.languages)}, but {path} lists the group "
                                   f"{', '.join(languages)}")
        groups.append(ExpertGroup(languages, model, weight))
    ask_below = float(index.get("ask_below", 1.0))
    if not 0.0 < ask_below <= 1.0:
        raise InputFormatError(f"{path}: ask_below {ask_below} is not in (0, 1]")
    return ExpertIdentifier(main, groups, path=spec or f"{main.path}+{path}", ask_below=ask_below)
