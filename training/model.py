"""The training network: the inference encoder (encoders/model.py) plus the heads only training uses.

    CMLM (METHODS §4): v = mean-pool(encoder(s1)); P(v) -> N vectors of width h; the same encoder reads
        [P(v)_1 .. P(v)_N, embed(masked s2)] and an MLM head (tied to the token embeddings) predicts s2's masks.
    BR (§5): unit mean-pooled vectors of source and target, additive-margin softmax in both directions.
    NLI (§6): a 3-way classifier on [u, v, |u - v|, u * v].
Only `encoder` is exported (encoders.model.save_encoder); the heads stay in the training checkpoints. With a
contextual lens (seed 001, encoders.lens) the encoder is frozen and the lens alone learns and is exported.
"""

from __future__ import annotations

import logging

import torch
import torch.nn.functional as F
from torch import nn

from encoders.model import bert_config, new_encoder_model, transformers_quietly
from encoders.pooling import pool
from training.losses import (
    bank_contrast_loss,
    bitext_retrieval_loss,
    distillation_loss,
    masked_lm_loss,
    masked_positions,
    max_hinge_loss,
    nli_features,
)

log = logging.getLogger("training.model")

MAX_SCALE = 100.0  # a learned softmax scale is clipped here: beyond it the loss only sharpens, never ranks better


class ProjectionMLP(nn.Module):
    """P(v) = FC(2h -> h*N)(ReLU(FC(2h -> 2h)(ReLU(FC(h -> 2h)(v))))), reshaped to N vectors of width h."""

    def __init__(self, hidden: int, vectors: int):
        super().__init__()
        self.vectors = vectors
        self.layers = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.ReLU(), nn.Linear(2 * hidden, 2 * hidden),
                                    nn.ReLU(), nn.Linear(2 * hidden, hidden * vectors))

    def forward(self, v: torch.Tensor) -> torch.Tensor:
        return self.layers(v).view(v.shape[0], self.vectors, -1)


class MlmHead(nn.Module):
    """BERT's prediction head: dense, GELU, LayerNorm, then the token embedding matrix (tied) and a bias."""

    def __init__(self, hidden: int, embeddings: nn.Embedding, eps: float):
        super().__init__()
        self.transform = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=eps))
        self.embeddings = embeddings
        self.bias = nn.Parameter(torch.zeros(embeddings.num_embeddings))

    def forward(self, states: torch.Tensor) -> torch.Tensor:
        return F.linear(self.transform(states), self.embeddings.weight, self.bias)


class TrainingModel(nn.Module):
    def __init__(self, encoder: nn.Module, projection_vectors: int, br_scale: float, learn_scale: bool,
                 nli_labels: int = 3, output: nn.Linear | None = None, lens: nn.Module | None = None,
                 br_loss: str = "softmax"):
        super().__init__()
        self.encoder = encoder
        self.lens = lens  # set: the encoder is frozen and sentence vectors are the lens's
        self.br_loss = br_loss
        hidden = encoder.config.hidden_size
        self.output = output  # pooled -> sentence vector (a distilled student's width); exported as a Dense module
        self.output_is_new = False  # set by whoever builds a new output layer: it is fitted before the first step
        self.projection = ProjectionMLP(hidden, projection_vectors)
        self.mlm_head = MlmHead(hidden, encoder.embeddings.word_embeddings, encoder.config.layer_norm_eps)
        self.log_scale = nn.Parameter(torch.tensor(float(br_scale)).log(), requires_grad=learn_scale)
        self.nli_head = nn.Linear(4 * hidden, nli_labels)

    # -- sentence vectors ------------------------------------------------------------------------------------

    def embed(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Mean-pooled sentence vectors (float32), as the exported encoder computes them."""
        states = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        return pool(states.float(), mask, "mean")

    def sentence_vectors(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """What the exported encoder returns before normalising: pooled, then the output layer if there is one; or
        the lens over the frozen encoder's token vectors."""
        if self.lens is not None:
            with torch.no_grad():
                states = self.encoder(input_ids=ids, attention_mask=mask).last_hidden_state
            return self.lens(states.float(), mask)
        pooled = self.embed(ids, mask)
        return self.output(pooled).float() if self.output is not None else pooled

    def scale(self) -> torch.Tensor:
        return self.log_scale.exp().clamp(max=MAX_SCALE)

    # -- objectives ------------------------------------------------------------------------------------------

    def cmlm(self, batch: dict) -> dict[str, torch.Tensor]:
        v = self.embed(batch["s1_ids"], batch["s1_mask"])
        projected = self.projection(v).to(self.encoder.embeddings.word_embeddings.weight.dtype)
        tokens = self.encoder.embeddings.word_embeddings(batch["s2_ids"])
        inputs = torch.cat([projected.to(tokens.dtype), tokens], dim=1)
        mask = torch.cat([torch.ones(projected.shape[:2], dtype=batch["s2_mask"].dtype, device=tokens.device),
                          batch["s2_mask"]], dim=1)
        states = self.encoder(inputs_embeds=inputs, attention_mask=mask).last_hidden_state[:, projected.shape[1]:]
        where, labels = masked_positions(batch["mlm_labels"])
        logits = self.mlm_head(states.reshape(-1, states.shape[-1])[where])
        loss, accuracy = masked_lm_loss(logits, labels)
        return {"cmlm_loss": loss, "mlm_accuracy": accuracy}

    def pair_vectors(self, batch: dict) -> tuple[torch.Tensor, torch.Tensor]:
        return (self.sentence_vectors(batch["src_ids"], batch["src_mask"]),
                self.sentence_vectors(batch["tgt_ids"], batch["tgt_mask"]))

    def bitext_retrieval(self, batch: dict, margin: float, vectors=None) -> dict[str, torch.Tensor]:
        src, tgt = vectors or self.pair_vectors(batch)
        src, tgt = F.normalize(src, dim=-1), F.normalize(tgt, dim=-1)
        if self.br_loss == "max-hinge":
            loss, accuracy = max_hinge_loss(src, tgt, margin, batch.get("src_keys"), batch.get("tgt_keys"))
        else:
            loss, accuracy = bitext_retrieval_loss(src, tgt, margin, self.scale(), batch.get("src_keys"),
                                                   batch.get("tgt_keys"))
        return {"br_loss": loss, "br_accuracy": accuracy}

    def distill(self, batch: dict, vectors=None, contrast_scale: float = 20.0) -> dict[str, torch.Tensor]:
        src, tgt = vectors or self.pair_vectors(batch)
        if src.shape[-1] != batch["teacher"].shape[-1]:
            raise ValueError(f"the student's vectors have {src.shape[-1]} dimensions, the teacher's "
                             f"{batch['teacher'].shape[-1]}: set model.output_dim to the teacher's")
        loss, cosine = distillation_loss(src, tgt, batch["teacher"], batch.get("teacher_src"))
        out = {"distill_loss": loss, "teacher_cosine": cosine}
        if "bank" in batch:  # both sides against the bank, each with its own target
            source_target = batch.get("teacher_src", batch["teacher"])
            sides = [bank_contrast_loss(side, target, batch["bank"], batch["bank_same_text"], contrast_scale)
                     for side, target in ((src, source_target), (tgt, batch["teacher"]))]
            out["contrast_loss"] = sides[0][0] + sides[1][0]
            out["contrast_accuracy"] = (sides[0][1] + sides[1][1]) / 2
        return out

    def nli(self, batch: dict) -> dict[str, torch.Tensor]:
        u = self.embed(batch["premise_ids"], batch["premise_mask"])
        v = self.embed(batch["hypothesis_ids"], batch["hypothesis_mask"])
        logits = self.nli_head(nli_features(u, v))
        loss = F.cross_entropy(logits, batch["nli_labels"])
        return {"nli_loss": loss, "nli_accuracy": (logits.argmax(-1) == batch["nli_labels"]).float().mean()}

    def forward(self, batches: dict[str, dict], br_margin: float = 0.3, br_alpha: float = 0.2,
                distill_weight: float = 1.0, contrast_weight: float = 0.0, contrast_scale: float = 20.0):
        """One micro-step's losses. `batches` maps objective -> batch; with CMLM and BR together the total is
        L_cmlm + alpha * L_br (METHODS §5), with distillation w * L_distill + alpha * L_br (§9), plus
        contrast_weight * L_contrast where the distillation batch carries a bank of teacher vectors. One forward
        call, so DistributedDataParallel sees every use."""
        out: dict[str, torch.Tensor] = {}
        if "cmlm" in batches:
            out.update(self.cmlm(batches["cmlm"]))
        shared = None
        if "distill" in batches:
            # BR on the distillation batch itself when the trainer shares it: one forward pass for both losses
            shared = self.pair_vectors(batches["distill"]) if batches.get("br") is batches["distill"] else None
            out.update(self.distill(batches["distill"], shared, contrast_scale))
        if "br" in batches:
            out.update(self.bitext_retrieval(batches["br"], br_margin, shared))
        if "nli" in batches:
            out.update(self.nli(batches["nli"]))
        weight = br_alpha if "cmlm" in batches or "distill" in batches else 1.0
        out["loss"] = (out.get("cmlm_loss", 0.0) + weight * out.get("br_loss", 0.0) + out.get("nli_loss", 0.0)
                       + distill_weight * out.get("distill_loss", 0.0)
                       + contrast_weight * out.get("contrast_loss", 0.0))
        return out


def new_encoder(model_config, vocab_size: int, pad_id: int, seed: int) -> nn.Module:
    """A random encoder sized by the recipe, with room for the N projected vectors in front of s2."""
    config = bert_config(vocab_size, hidden=model_config.hidden, layers=model_config.layers,
                         heads=model_config.heads, intermediate=model_config.intermediate,
                         max_positions=positions_needed(model_config), pad_token_id=pad_id)
    config.hidden_dropout_prob = config.attention_probs_dropout_prob = model_config.dropout  # read at build
    return new_encoder_model(config, seed=seed).train()


def positions_needed(model_config) -> int:
    """CMLM puts N vectors before s2's tokens: positions for both, rounded up to a multiple of 8."""
    need = model_config.max_seq_length + model_config.projection_vectors
    return -(-need // 8) * 8


def output_layer(model_config, hidden: int, init_folder: str | None, seed: int) -> tuple[nn.Linear | None, bool]:
    """The student's output layer and whether it is new: the init checkpoint's Dense module if it has one (a
    student trained further), else a new one to `model.output_dim`, else none."""
    dense = _init_dense(init_folder) if init_folder else None
    if dense is not None:
        if model_config.output_dim not in (None, dense.out_features):
            raise ValueError(f"{init_folder}: its Dense layer gives {dense.out_features} dimensions, but "
                             f"model.output_dim is {model_config.output_dim}")
        return dense.float(), False
    if model_config.output_dim is None:
        return None, False
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return nn.Linear(hidden, model_config.output_dim), True


def _init_dense(folder: str) -> nn.Linear | None:
    from encoders.checkpoint import read_checkpoint
    from encoders.pooling import load_dense

    layout = read_checkpoint(folder)
    if not layout.dense:
        return None
    if len(layout.dense) > 1 or layout.dense[0].activation != "identity":
        raise ValueError(f"{folder}: training continues only checkpoints with one linear Dense layer")
    return load_dense(layout.dense[0])[0]


def load_encoder_for_training(folder: str, model_config) -> nn.Module:
    from transformers import BertModel

    with transformers_quietly():
        encoder = BertModel.from_pretrained(folder, add_pooling_layer=False, trust_remote_code=False,
                                            hidden_dropout_prob=model_config.dropout,
                                            attention_probs_dropout_prob=model_config.dropout)
    if encoder.config.max_position_embeddings < positions_needed(model_config):
        log.info("%s: %d positions grown to %d (max_seq_length %d, %d projected vectors)", folder,
                 encoder.config.max_position_embeddings, positions_needed(model_config),
                 model_config.max_seq_length, model_config.projection_vectors)
        grow_positions(encoder, positions_needed(model_config))
    if model_config.stack_to and model_config.stack_to != encoder.config.num_hidden_layers:
        stack_layers(encoder, model_config.stack_to)
        log.info("%s: stacked to %d layers", folder, model_config.stack_to)
    if model_config.widen_ffn_to and model_config.widen_ffn_to != encoder.config.intermediate_size:
        widen_feed_forward(encoder, model_config.widen_ffn_to)
        log.info("%s: feed-forward blocks widened to %d units", folder, model_config.widen_ffn_to)
    return encoder.float().train()


def widen_feed_forward(encoder: nn.Module, units: int, seed: int = 0) -> None:
    """Widen every layer's feed-forward block of a trained BERT encoder to `units` units. A new unit's input weights
    are drawn as a new network's are (normal, the config's initializer_range; bias zero) and its output weights are
    zero, so the network computes exactly what it did (the new units' activations are multiplied by zero) and
    the first step's gradient reaches their output weights, the next one their input weights (zero-initialised
    residual branches, as stack_layers does for depth)."""
    generator = torch.Generator().manual_seed(seed)
    for layer in encoder.encoder.layer:
        inner, outer = layer.intermediate.dense, layer.output.dense
        old = inner.out_features
        if units < old:
            raise ValueError(f"model.widen_ffn_to {units} is fewer than model.init's {old} feed-forward units")
        # skip_init: every weight is written below, so no default init to compute (nor global random state to draw)
        grown_in = torch.nn.utils.skip_init(nn.Linear, inner.in_features, units, dtype=inner.weight.dtype)
        grown_out = torch.nn.utils.skip_init(nn.Linear, units, outer.out_features, dtype=outer.weight.dtype)
        with torch.no_grad():
            grown_in.weight.normal_(0.0, encoder.config.initializer_range, generator=generator)
            grown_in.weight[:old] = inner.weight
            grown_in.bias.zero_()
            grown_in.bias[:old] = inner.bias
            grown_out.weight.zero_()
            grown_out.weight[:, :old] = outer.weight
            grown_out.bias.copy_(outer.bias)
        layer.intermediate.dense, layer.output.dense = grown_in, grown_out
    encoder.config.intermediate_size = units


def stack_layers(encoder: nn.Module, layers: int) -> None:
    """Grow a trained BERT encoder to `layers` layers: the new ones go on top and start as near-identities, copies of
    trained layer i mod n whose two output projections are zero and whose two LayerNorms are the top layer's
    output one (post-LN: LN(x + 0) gives back x up to that norm's affine map), so the network computes nearly what
    it did and every new layer learns from there (zero-initialised residual branches). Measured on the shipped
    student: teacher cosine at the first step 0.76 this way, 0.77 not grown, 0.50 with plain copies of the
    trained layers stacked on top (Gong et al. 2019)."""
    import copy

    trained = list(encoder.encoder.layer)
    if layers < len(trained):
        raise ValueError(f"model.stack_to {layers} is fewer than the {len(trained)} layers of model.init")
    top_norm = trained[-1].output.LayerNorm
    grown = []
    for i in range(layers - len(trained)):
        layer = copy.deepcopy(trained[i % len(trained)])  # different copies: the new layers do not start alike
        with torch.no_grad():
            for dense in (layer.attention.output.dense, layer.output.dense):
                dense.weight.zero_()
                dense.bias.zero_()
            for norm in (layer.attention.output.LayerNorm, layer.output.LayerNorm):
                norm.weight.copy_(top_norm.weight)
                norm.bias.copy_(top_norm.bias)
        grown.append(layer)
    encoder.encoder.layer = nn.ModuleList([*trained, *grown])
    encoder.config.num_hidden_layers = layers
    encoder.stacked_from = len(trained)  # the build refits the output layer: the pooled vectors moved


def load_frozen_encoder(folder: str, max_seq_length: int) -> nn.Module:
    """The encoder a lens reads, as inference runs it: no dropout, no gradients, positions as saved."""
    from transformers import AutoConfig, AutoModel

    from encoders.transformer import HAS_POOLER

    model_type = AutoConfig.from_pretrained(folder, trust_remote_code=False).model_type
    extra = {"add_pooling_layer": False} if model_type in HAS_POOLER else {}  # a lens reads the token vectors
    with transformers_quietly():
        encoder = AutoModel.from_pretrained(folder, trust_remote_code=False, hidden_dropout_prob=0.0,
                                            attention_probs_dropout_prob=0.0, **extra)
    if encoder.config.max_position_embeddings < max_seq_length:
        raise ValueError(f"{folder}: the frozen encoder has {encoder.config.max_position_embeddings} positions, "
                         f"fewer than model.max_seq_length {max_seq_length}")
    return encoder.float().requires_grad_(False).eval()


def grow_positions(encoder: nn.Module, positions: int) -> None:
    """Room for longer sentences in a trained encoder: the new positions start as copies of the second half of
    the learned ones, repeated (a learned table is smooth past its first positions, which the [CLS] token and
    sentence starts shape), so the network sees familiar vectors and training moves them apart. The first
    positions keep their values: every sentence the encoder knew is encoded as before."""
    embeddings = encoder.embeddings
    old = embeddings.position_embeddings.weight.data
    known, half = old.shape[0], old.shape[0] // 2
    source = [i if i < known else known - half + (i - known) % half for i in range(positions)]
    grown = nn.Embedding(positions, old.shape[1]).to(old.dtype)
    grown.weight.data.copy_(old[source])
    embeddings.position_embeddings = grown
    embeddings.position_ids = torch.arange(positions, device=old.device).expand((1, -1))
    embeddings.token_type_ids = torch.zeros((1, positions), dtype=torch.long, device=old.device)
    encoder.config.max_position_embeddings = positions
