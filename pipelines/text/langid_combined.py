"""Two language identifiers as one: each where it is strong.

Our model knows 600+ languages from the train pool; lid.176 knows 176 from Wikipedia and Tatoeba. The first model
decides how much of a text's probability belongs to languages the second does not know at all (there the second
can only name a neighbour: Bhojpuri text gets Hindi from lid.176); within the second's languages the two
distributions are mixed:

    p(x) = p1(x)                                  x not covered by the second model
    p(x) = (1 - w) p1(x) + w M p2(x)              x covered, M = sum of p1 over the covered languages

which sums to one. Where the first model is sure enough that no second opinion could change its answer, the
second is not asked and the first's distribution stands (CombinedIdentifier.decided). The weight w is chosen on the
train pool's held-out short pairs (`pipelines.text.langid_eval --tune-weights`, heldout-short/tune) and measured on
the dev pool (docs/text.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pipelines.text.identifier import UNDETERMINED, Identifier, LayeredIdentifier

DEFAULT_WEIGHT = 0.3   # held-out short pairs (tune half) and NTREX documents: see docs/text.md for the sweeps
DEPTH = 10             # labels read from each model: the tail beyond carries nothing a decision needs


@dataclass
class CombinedIdentifier(LayeredIdentifier):
    first: Identifier
    second: Identifier
    weight: float = DEFAULT_WEIGHT
    path: str = "combined"

    def __post_init__(self):
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError(f"the combined identifier's weight must be in [0, 1], not {self.weight}")

    @property
    def inner(self) -> Identifier:
        """The first model: its languages are the combination's (the second only informs them)."""
        return self.first

    def predict(self, texts: Sequence[str], k: int = 1, document: str | None = None) -> list[list[tuple[str, float]]]:
        depth = max(k, DEPTH)
        firsts = self.first.predict(texts, k=depth)
        unsure = [i for i, first in enumerate(firsts) if not self.decided(first, document)]
        seconds = dict(zip(unsure, self.second.predict([texts[i] for i in unsure], k=depth))) if unsure else {}
        return [(self.combine(first, seconds[i]) if i in seconds else first)[:k] for i, first in enumerate(firsts)]

    def decided(self, first: list[tuple[str, float]], document: str | None = None) -> bool:
        """Whether the second model cannot change the first's answer, so is not asked (most texts: the saving
        that keeps the combination's cost near one model's). Mixing scales the first's top language by at least
        1 - w and adds at most w to any other, so the answer stands when (1 - w)(p1 - p2) > w. In a document
        whose language is not that answer, the document's prior (with_document: 30 to 1) turns on that
        language's probability, to which the second may add up to w: the second is asked there (on the web
        pool, "Allen School of Computer Science & Engineering" in an English page got Dutch 0.96 and English
        0.03 from ours; lid.176 says English 0.80, which the prior then keeps)."""
        top = first[0][1]
        runner_up = first[1][1] if len(first) > 1 else 0.0
        if first[0][0] == UNDETERMINED:
            return True
        if document and first[0][0] != document and self.second.covers(document):
            return False
        return (1.0 - self.weight) * (top - runner_up) > self.weight

    def combine(self, first: list[tuple[str, float]], second: list[tuple[str, float]]) -> list[tuple[str, float]]:
        """The mixed distribution (module notes), for a text the first model is unsure of."""
        if first[0][0] == UNDETERMINED:
            return first
        w = self.weight
        scores = {code: p if not self.second.covers(code) else (1.0 - w) * p for code, p in first}
        covered_mass = sum(p for code, p in first if self.second.covers(code))
        for code, p in second:
            if code != UNDETERMINED and self.second.covers(code) and self.first.covers(code):
                scores[code] = scores.get(code, 0.0) + w * covered_mass * p
        return sorted(((code, min(1.0, p)) for code, p in scores.items()), key=lambda item: (-item[1], item[0]))
