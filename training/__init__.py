"""Encoder training: CMLM pre-training and bitext-retrieval training on mined pairs (the training issue).

Nothing is implemented here yet; the package exists so the layout, imports and packaging are fixed from day one.
"""
