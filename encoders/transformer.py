"""The transformer sentence encoder: one `encode(sentences) -> array` call over any loadable checkpoint.

    encoder = TransformerEncoder.load("models/cmlm-distilled")
    vectors = encoder.encode(["Guten Morgen.", "Good morning."])     # float32 [2, dim], unit rows, input order

Speed comes from doing less work, not from approximating: the whole input is tokenised in one Rust call, sorted by
token length and cut into batches by a token budget (encoders.batching), so there is almost no padding; the model
runs under `torch.inference_mode` in bf16 on GPUs, fp16 on older GPUs, with bf16 matrix products over fp32 weights
and activations on CPUs with native bf16 (AVX512-BF16 or AMX: encoders.precision), else fp32; pooling and
normalisation stay in fp32. Every visible GPU gets a replica and pulls batches from a shared queue. A batch that
runs out of GPU memory is split and retried, never dropped, and later batches are cut to fit.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from encoders.batching import SentenceEncoder, padded, split_on_out_of_memory, token_budget_batches
from encoders.binary import is_binary, pack, threshold_bits
from encoders.checkpoint import (
    HUB_ID,
    CheckpointError,
    CheckpointLayout,
    check_finite,
    error_reason,
    read_checkpoint,
    resolve_hub_id,
)
from encoders.language_removal import load_language_removal
from encoders.lens import load_lens
from encoders.pooling import load_dense, pool
from encoders.precision import PRECISIONS, resolve_precision

log = logging.getLogger(__name__)
# Families whose attention fills masked scores with the weights' dtype's minimum: under bf16-mixed the scores are
# bf16 and the fp32 minimum overflows them (transformers' DeBERTa v1: "value cannot be converted to type
# c10::BFloat16 without overflow"). `auto` runs them in fp32 on a CPU; bf16 on a GPU casts the weights too and is
# unaffected.
NO_MIXED = frozenset({"deberta"})

# Models whose transformers class builds a pooler head we never use (sentence vectors come from token outputs).
HAS_POOLER = {"bert", "roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "ernie", "megatron-bert"}


@dataclass
class Replica:
    device: torch.device
    model: torch.nn.Module
    dense: list[torch.nn.Module]
    lens: torch.nn.Module | None = None


def resolve_devices(device: str) -> list[torch.device]:
    """`auto`: every visible GPU, else the CPU. `cuda` means every GPU; `cuda:0,cuda:1` names them."""
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise ValueError("device 'cuda' asked for, but torch sees no GPU")
        return [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return [torch.device(name.strip()) for name in device.split(",")]


class TransformerEncoder(SentenceEncoder):
    def __init__(self, layout: CheckpointLayout, *, device: str = "auto", precision: str = "auto",
                 token_budget: int | None = None, batch_size: int | None = None,
                 max_seq_length: int | None = None, language_removal: str | None = None, lens=None):
        """`lens`: an encoders.lens.LensFolder; its lens replaces pooling and Dense layers (the folder's name is
        the encoder's name)."""
        self.layout = layout
        self.name = str(lens.folder if lens else layout.folder)
        self.hf_tokenizer, model = _load_transformer(layout)
        self.lens = load_lens(lens, model.config.hidden_size) if lens else None
        self.devices = resolve_devices(device)
        self.precision = resolve_precision(precision, self.devices[0])
        if precision == "auto" and self.precision is PRECISIONS["bf16-mixed"] and layout.model_type in NO_MIXED:
            self.precision = PRECISIONS["fp32"]
        on_gpu = self.devices[0].type == "cuda"
        # GPU: large batches, as the teacher's port (on an H100 the student's forward passes ran 1.08-1.34x faster
        # at 4,096 sentences than at 1,024: docs/benchmarks.md); a batch that does not fit is split
        self.token_budget = token_budget or (262144 if on_gpu else 8192)
        self.batch_size = batch_size or (4096 if on_gpu else 128)
        self.max_seq_length = _max_length(layout, model, self.hf_tokenizer, max_seq_length)
        self.tokenizer = _truncating_tokenizer(self.hf_tokenizer, self.max_seq_length)
        self.pad_id = self.hf_tokenizer.pad_token_id if self.hf_tokenizer.pad_token_id is not None else 0
        dense = [] if self.lens else [load_dense(layer) for layer in layout.dense]
        width = model.config.hidden_size
        for layer, module in zip(layout.dense, dense):  # a chain that does not fit failed at the first sentence
            if module[0].in_features != width:
                raise CheckpointError(f"{layer.weights.parent}: a Dense layer taking {module[0].in_features} "
                                      f"values where the layer before it gives {width}")
            width = module[0].out_features
        self.model_dim = (self.lens.spec.output_dim if self.lens else dense[-1][0].out_features if dense
                          else model.config.hidden_size)
        self.replicas = [self._replica(model, dense, d) for d in self.devices]
        self.removal = load_language_removal(lens.folder if lens else layout.folder, language_removal,
                                              self.model_dim)
        self.dim = self.removal.output_dim if self.removal else self.model_dim  # what encode() returns
        self.stats: Counter = Counter()  # sentences, truncated, skipped: cumulative over calls, for reports

    @classmethod
    def load(cls, path_or_hub_id: str | Path, *, pooling: str | None = None, **options) -> TransformerEncoder:
        """Load a local checkpoint folder, or a hub model id (`org/name`) when no such folder exists."""
        folder = Path(path_or_hub_id)
        if not folder.exists() and HUB_ID.match(str(path_or_hub_id)):
            folder = resolve_hub_id(str(path_or_hub_id))
        return cls(read_checkpoint(folder, pooling=pooling), **options)

    def _replica(self, model: torch.nn.Module, dense: list, device: torch.device) -> Replica:
        model = model if device == self.devices[0] else copy.deepcopy(model)
        model = model.to(device=device, dtype=self.precision.weights).eval()
        lens = copy.deepcopy(self.lens).to(device) if self.lens is not None else None
        return Replica(device, model, [copy.deepcopy(layer).to(device).eval() for layer in dense], lens)

    def describe(self) -> dict:
        return {"encoder": self.name, "dim": self.dim,
                "pooling": f"{self.lens.spec.kind} lens" if self.lens else self.layout.pooling,
                "max_seq_length": self.max_seq_length, "devices": [str(d) for d in self.devices],
                "precision": self.precision.name, "token_budget": self.token_budget,
                "batch_size": self.batch_size, "language_removal": self.removal.kind if self.removal else None}

    # -- the work ----------------------------------------------------------------------------------------------

    @property
    def binary_code(self) -> str:
        """How `encode(dtype="binary")` makes bits (encoders.binary): a lens thresholds, others take signs."""
        return "threshold" if self.lens is not None else "sign"

    def _vectors(self, prepared, language, show_progress: bool, progress, dtype) -> np.ndarray:
        """A lens's binary vectors threshold its raw ReLU + max-pool features (seed 001), not signs."""
        if self.lens is None or not is_binary(dtype):
            return super()._vectors(prepared, language, show_progress, progress, dtype)
        raw = self._embed(prepared.texts, prepared.clipped, show_progress, progress, raw=True)
        return pack(threshold_bits(raw, self.lens.spec.binary_threshold))

    def _embed(self, texts: list[str], clipped: set[int], show_progress: bool, progress=None,
               raw: bool = False) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = [encoding.ids for encoding in encodings]
        truncated = sum(1 for i, encoding in enumerate(encodings) if encoding.overflowing or i in clipped)
        self.stats.update(sentences=len(texts), truncated=truncated)
        if truncated:
            # at DEBUG: a call is a batch, and a crawl has thousands; callers report `stats` (the embed stage's
            # `embed/truncated` counter, encoders.encode's last line)
            log.debug("%d of %d sentences truncated to %d tokens", truncated, len(texts), self.max_seq_length)
        out = np.empty((len(texts), self.model_dim), dtype=np.float32)
        batches = token_budget_batches([len(row) for row in ids], self.token_budget, self.batch_size)
        from tqdm.auto import tqdm

        with tqdm(total=len(texts), unit="sent", disable=not show_progress, desc="encode") as bar:
            def run(replica: Replica, batch: np.ndarray) -> None:
                forward = functools.partial(self._forward, replica, raw=raw)
                out[batch] = split_on_out_of_memory(forward, [ids[i] for i in batch], self._shrink_budget)
                bar.update(len(batch))
                if progress:
                    progress(len(batch))

            if len(self.replicas) == 1:
                for batch in batches:
                    run(self.replicas[0], batch)
            else:
                self._run_on_all_devices(batches, run)
        return out

    def _run_on_all_devices(self, batches: list[np.ndarray], run) -> None:
        """One thread per GPU, each pulling the next batch: torch releases the GIL inside kernels."""
        pending, lock = iter(batches), threading.Lock()

        def worker(replica: Replica) -> None:
            with torch.cuda.device(replica.device) if replica.device.type == "cuda" else contextlib.nullcontext():
                while True:
                    with lock:
                        batch = next(pending, None)
                    if batch is None:
                        return
                    run(replica, batch)

        with ThreadPoolExecutor(len(self.replicas)) as pool_:
            for future in [pool_.submit(worker, r) for r in self.replicas]:
                future.result()

    def _forward(self, replica: Replica, ids: list[list[int]], raw: bool = False) -> np.ndarray:
        """Sentence vectors of one batch: unit rows, or with `raw` the lens's features before normalising."""
        width = max(map(len, ids))
        if replica.device.type == "cuda":  # tensor cores like multiples of 8
            width = min(-(-width // 8) * 8, self.max_seq_length)
        input_ids, mask = padded(ids, self.pad_id, width)
        input_tensor = torch.from_numpy(input_ids).to(replica.device, non_blocking=True)
        mask_tensor = torch.from_numpy(mask).to(replica.device, non_blocking=True)
        with torch.inference_mode():
            with self.precision.autocast(replica.device, rows=input_ids.size):  # the token-level products' rows
                output = replica.model(input_ids=input_tensor, attention_mask=mask_tensor)
            if replica.lens is not None:
                vectors = replica.lens(output.last_hidden_state.float(), mask_tensor)
                if raw:
                    return vectors.cpu().numpy()
            elif self.layout.pooling == "pooler":
                vectors = output.pooler_output.float()
            else:
                vectors = pool(output.last_hidden_state.float(), mask_tensor, self.layout.pooling)
            for layer in replica.dense:
                vectors = layer(vectors)
            vectors = torch.nn.functional.normalize(vectors, dim=-1)
        return vectors.cpu().numpy()

    def _finish(self, vectors: np.ndarray, language: str | None) -> np.ndarray:
        return self.removal.apply(vectors, language) if self.removal else vectors


def _load_transformer(layout: CheckpointLayout):
    import pickle

    from transformers import AutoModel, AutoTokenizer

    from encoders.model import transformers_quietly

    try:
        with transformers_quietly():
            tokenizer = AutoTokenizer.from_pretrained(str(layout.transformer), use_fast=True,
                                                      trust_remote_code=False)
            if layout.pooling == "pooler" and layout.model_type not in HAS_POOLER:
                raise CheckpointError(f"{layout.transformer}: a {layout.model_type} model has no pooler head; "
                                      f"choose another pooling")
            extra = {"add_pooling_layer": layout.pooling == "pooler"} if layout.model_type in HAS_POOLER else {}
            model, loading = AutoModel.from_pretrained(str(layout.transformer), trust_remote_code=False,
                                                       weights_only=True, output_loading_info=True, **extra)
    except (OSError, ValueError, RuntimeError, KeyError, pickle.UnpicklingError) as err:  # a pickle: refused
        if "ignore_mismatched_sizes" in str(err):  # its "report above" is transformers' hidden warning
            raise CheckpointError(f"{layout.transformer}: the weights have other shapes than config.json gives "
                                  "(its hidden size, intermediate size or vocabulary): another model's "
                                  "config.json?") from None
        raise CheckpointError(f"{layout.transformer}: cannot load the model or its tokenizer "
                              f"({error_reason(err)})") from None
    if not tokenizer.is_fast:
        raise CheckpointError(f"{layout.transformer}: only fast (Rust) tokenizers are supported")
    check_loaded(layout, model, tokenizer, loading)
    return tokenizer, model.eval()


def check_loaded(layout: CheckpointLayout, model, tokenizer, loading: dict) -> None:
    """What transformers loads with a warning (hidden here) and would embed with: weights the file lacks or holds in
    another shape start random (a layer cut from the file, a config with a layer more, a pooler the weights do not
    have), NaN weights give NaN vectors, and token ids past the embedding table fail at the first sentence that
    has one. Each is an error naming the folder."""
    missing = sorted(loading.get("missing_keys") or []) + [f"{entry[0]} (shape)" if isinstance(entry, tuple)
                                                           else str(entry)
                                                           for entry in loading.get("mismatched_keys") or []]
    if missing:
        raise CheckpointError(f"{layout.transformer}: the weights file lacks {len(missing)} of the model's "
                              f"tensors or holds them in another shape ({', '.join(missing[:4])}"
                              f"{', ...' if len(missing) > 4 else ''}); they would start random")
    check_finite(model.named_parameters(), layout.transformer)
    rows = model.get_input_embeddings().num_embeddings
    largest = max(tokenizer.get_vocab().values(), default=-1)
    if largest >= rows:
        raise CheckpointError(f"{layout.transformer}: the tokenizer gives token ids up to {largest} but the model "
                              f"embeds {rows}: another model's tokenizer")


def _max_length(layout: CheckpointLayout, model, tokenizer, override: int | None) -> int:
    """As sentence-transformers decides it: the checkpoint's max_seq_length, else what model and tokenizer allow."""
    limit = min(getattr(model.config, "max_position_embeddings", 512) or 512, tokenizer.model_max_length or 512)
    if model.config.model_type in ("roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"):
        limit = min(limit, model.config.max_position_embeddings - 2)  # positions start after the padding index
    length = override or layout.max_seq_length or limit
    if not 2 < length <= limit:
        raise CheckpointError(f"{layout.folder}: max_seq_length {length} is outside 3..{limit}")
    return length


def _truncating_tokenizer(hf_tokenizer, max_length: int):
    """A copy of the Rust tokenizer that truncates (recording what it cut) and never pads: we pad per batch."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_str(hf_tokenizer.backend_tokenizer.to_str())
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=max_length)
    return tokenizer

