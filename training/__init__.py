"""Encoder training: CMLM pre-training, bitext-retrieval (BR) training, and the loop that feeds mined pairs back.

    python -m training.prepare                                          # training sets from the train pool
    python -m training.train --config configs/train_reference_cpu.yaml  # a recipe (YAML) -> <output>/encoder
    python -m training.meaning --encoder DIR --bitext 'data/train/bitext/*.tsv.gz'   # seed-003 projection
    python -m training.loop --encoder DIR --pool data/train/loop --recipe ... --output ...   # mine, retrain

Modules, in the order data flows through them:
    config      recipes: YAML + overrides, every key checked before the first step
    data        documents, bitext, NLI triples: read, checked, tokenised once into ragged arrays
    batches     CMLM pairs with masking, BR pairs, NLI triples: every batch a function of (seed, rank, stage, step)
    model       the encoder (encoders/model.py) plus the training heads: projection MLP, MLM head, NLI classifier
    losses      the CMLM, BR (additive-margin softmax) and NLI losses
    optim       AdamW or LAMB, warm-up then linear decay
    trainer     the loop over stages: accumulation, bf16 autocast, DDP, logging, xsim checks, export
    checkpoints exact-resume checkpoints (safetensors + weights-only optimiser state)
    hard_negatives  seed-004 hard negatives from a refreshed pool
    meaning     the seed-003 meaning/language autoencoder, exported as a projection
    prepare     training sets from ../shared/data/train
    loop        mine with the current encoder, add the pairs, retrain
"""
