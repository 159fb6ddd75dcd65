"""The meaning/language autoencoder of seed 003, trained on a frozen encoder and exported as a projection.

    python -m training.meaning --encoder models/reference-cpu/encoder --bitext 'data/train/bitext/*.tsv.gz'
    python -m encoders.encode --encoder models/reference-cpu/encoder --language-removal meaning ...

Frozen sentence vectors e of translation pairs (s, t) and of random same-language sentences (s', t') train three
single-layer networks: MLP_M (meaning), MLP_L (language) and MLP_I (language identification on e_L):

    L   = L_R + L_M + L_L
    L_R = ||e - (MLP_M(e) + MLP_L(e))||^2 / d                              reconstruction, for all four sentences
    L_M = 1 - cos(s_M, t_M)  +  max(0, cos(s_M, s'_M)) + max(0, cos(t_M, t'_M))
    L_L = 2 - cos(s_L, s'_L) - cos(t_L, t'_L)  +  cross-entropy(MLP_I(e_L), language)

Adam at 1e-4, batches of 512 pairs from one language pair (so s' and t' share the languages of s and t), early
stopping on a 10% validation split with patience 15 epochs, as in the paper. MLP_M is written beside the encoder as
meaning_projection.safetensors, which `--language-removal meaning` applies at encode time.
"""

from __future__ import annotations

import argparse
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from miner.io import path_argument

log = logging.getLogger("training.meaning")


class MeaningAutoencoder(nn.Module):
    def __init__(self, dim: int, languages: int):
        super().__init__()
        self.meaning, self.language = nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.identify = nn.Linear(dim, languages)

    def losses(self, s, t, s_other, t_other, s_lang: int, t_lang: int) -> dict[str, torch.Tensor]:
        vectors = torch.cat([s, t, s_other, t_other])
        meaning, language = self.meaning(vectors), self.language(vectors)
        reconstruction = ((vectors - meaning - language) ** 2).sum(-1).mean() / vectors.shape[1]
        sm, tm, sm2, tm2 = meaning.chunk(4)
        sl, tl, sl2, tl2 = language.chunk(4)
        cos = F.cosine_similarity
        meaning_loss = (1 - cos(sm, tm)).mean() + cos(sm, sm2).clamp(min=0).mean() + cos(tm, tm2).clamp(min=0).mean()
        n = s.shape[0]
        labels = torch.tensor([s_lang] * n + [t_lang] * n + [s_lang] * n + [t_lang] * n)
        language_loss = (2 - cos(sl, sl2) - cos(tl, tl2)).mean() + F.cross_entropy(self.identify(language), labels)
        return {"loss": reconstruction + meaning_loss + language_loss, "reconstruction": reconstruction,
                "meaning": meaning_loss, "language": language_loss}


@dataclass
class PairVectors:
    """Frozen vectors of one language pair's translations."""

    src_lang: str
    tgt_lang: str
    src: np.ndarray
    tgt: np.ndarray


def split(pairs: list[PairVectors], share: float, rng: np.random.Generator):
    train, validation = [], []
    for p in pairs:
        order = rng.permutation(len(p.src))
        cut = max(1, int(len(order) * share))
        validation.append(PairVectors(p.src_lang, p.tgt_lang, p.src[order[:cut]], p.tgt[order[:cut]]))
        train.append(PairVectors(p.src_lang, p.tgt_lang, p.src[order[cut:]], p.tgt[order[cut:]]))
    return train, validation


def batches(pairs: list[PairVectors], languages: dict[str, int], size: int, rng: np.random.Generator):
    """Batches of one language pair each; s' and t' are the same batch rolled by one (random same-language)."""
    plan = []
    for i, p in enumerate(pairs):
        order = rng.permutation(len(p.src))
        plan += [(i, order[start:start + size]) for start in range(0, len(order), size)]
    for j in rng.permutation(len(plan)):
        i, rows = plan[j]
        if len(rows) < 2:
            continue
        p = pairs[i]
        s, t = torch.from_numpy(p.src[rows]), torch.from_numpy(p.tgt[rows])
        yield s, t, s.roll(1, 0), t.roll(1, 0), languages[p.src_lang], languages[p.tgt_lang]


def train_autoencoder(pairs: list[PairVectors], *, batch_size: int = 512, lr: float = 1e-4, patience: int = 15,
                      max_epochs: int = 500, seed: int = 0) -> tuple[MeaningAutoencoder, dict]:
    rng = np.random.default_rng(seed)
    torch.manual_seed(seed)
    languages = {lang: i for i, lang in enumerate(sorted({p.src_lang for p in pairs} | {p.tgt_lang for p in pairs}))}
    train, validation = split(pairs, 0.1, rng)
    model = MeaningAutoencoder(pairs[0].src.shape[1], len(languages))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    best, best_state, waited, epoch = float("inf"), None, 0, 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        for batch in batches(train, languages, batch_size, rng):
            loss = model.losses(*batch)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        current = validation_loss(model, validation, languages, batch_size)
        if current < best - 1e-6:
            best, waited = current, 0
            best_state = {k: v.clone() for k, v in model.state_dict().items()}
        else:
            waited += 1
            if waited >= patience:
                break
        if epoch % 10 == 0:
            log.info("epoch %d: validation loss %.4f (best %.4f)", epoch, current, best)
    model.load_state_dict(best_state)
    return model, {"epochs": epoch, "validation_loss": best, "languages": sorted(languages)}


@torch.no_grad()
def validation_loss(model, validation, languages, batch_size) -> float:
    model.eval()
    rng = np.random.default_rng(0)  # the same validation batches every epoch
    losses = [model.losses(*b)["loss"].item() for b in batches(validation, languages, batch_size, rng)]
    return float(np.mean(losses))


def export(model: MeaningAutoencoder, folder: Path) -> Path:
    from encoders.language_removal import MeaningProjection

    path = folder / "meaning_projection.safetensors"
    MeaningProjection(model.meaning.weight.detach().numpy(), model.meaning.bias.detach().numpy(),
                      "identity").save(path)
    return path


def embed_bitext(encoder, specs: list[str], per_pair: int, seed: int) -> list[PairVectors]:
    from training.data import Skips, expand, pair_of, read_tsv_bitext

    rng, pairs = np.random.default_rng(seed), []
    grouped: dict[tuple[str, str], list] = {}
    for spec in specs:
        label, files = expand(spec, "--bitext")
        for path in files:
            langs = pair_of(path, label)
            grouped.setdefault(langs, []).extend(read_tsv_bitext(path, Skips(), None, langs))
    for (src_lang, tgt_lang), texts in sorted(grouped.items()):
        rows = rng.permutation(len(texts))[:per_pair]
        chosen = [texts[i] for i in rows]
        src = encoder.encode([a for a, _ in chosen])
        tgt = encoder.encode([b for _, b in chosen])
        pairs.append(PairVectors(src_lang, tgt_lang, src, tgt))
        log.info("%s-%s: %d pairs embedded", src_lang, tgt_lang, len(chosen))
    return pairs


def main(argv: list[str] | None = None) -> int:
    from miner.console import exit_status, setup_logging

    parser = argparse.ArgumentParser(prog="python -m training.meaning", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--encoder", type=path_argument, required=True, help="checkpoint folder (frozen)")
    parser.add_argument("--bitext", action="append", required=True, help="SRC-TGT*.tsv[.gz] glob (repeatable)")
    parser.add_argument("--pairs-per-language", type=int, default=5000,
                        help="pairs embedded per language pair, at most (default 5000)")
    parser.add_argument("--batch-size", type=int, default=512, help="pairs a step (default 512)")
    parser.add_argument("--lr", type=float, default=1e-4, help="learning rate (default 1e-4)")
    parser.add_argument("--patience", type=int, default=15, help="epochs without a better validation loss before "
                        "stopping (default 15)")
    parser.add_argument("--max-epochs", type=int, default=500, help="epochs at most (default 500)")
    parser.add_argument("--seed", type=int, default=0,
                        help="which pairs are drawn, and the initial weights (default 0)")
    args = parser.parse_args(argv)
    setup_logging()

    def command() -> None:
        from encoders import load_encoder

        if not args.encoder.is_dir():  # the projection is written into the encoder's folder
            raise ValueError(f"--encoder {args.encoder}: not a checkpoint folder (the meaning projection is saved "
                             f"beside the model's files)")
        encoder = load_encoder(str(args.encoder))
        pairs = embed_bitext(encoder, args.bitext, args.pairs_per_language, args.seed)
        if not pairs:
            raise ValueError("no bitext to train on")
        model, report = train_autoencoder(pairs, batch_size=args.batch_size, lr=args.lr, patience=args.patience,
                                          max_epochs=args.max_epochs, seed=args.seed)
        path = export(model, args.encoder)
        print(f"{report['epochs']} epochs, validation loss {report['validation_loss']:.4f}, "
              f"{len(report['languages'])} languages; meaning projection written to {path}")

    return exit_status(command)


if __name__ == "__main__":
    raise SystemExit(main())
