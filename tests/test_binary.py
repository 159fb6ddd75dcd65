"""Binary sentence vectors (encoders.binary): packing, the two codes' similarities, and bad codes named."""

import numpy as np
import pytest

from encoders import binary
from encoders.char_ngram import CharNgramEncoder


def test_sign_code_similarity_is_one_minus_twice_the_normalised_hamming_distance():
    rng = np.random.default_rng(0)
    bits = rng.random((5, 64)) < 0.5
    unit = binary.unit_rows(binary.pack(bits), "sign")
    hamming = (bits[:, None, :] != bits[None, :, :]).sum(-1)
    np.testing.assert_allclose(unit @ unit.T, 1 - 2 * hamming / 64, atol=1e-6)


def test_threshold_code_similarity_is_the_cosine_of_the_sets():
    bits = np.zeros((2, 16), dtype=bool)
    bits[0, [1, 2, 3, 4]] = True
    bits[1, [3, 4, 5]] = True
    unit = binary.unit_rows(binary.pack(bits), "threshold")
    assert unit[0] @ unit[1] == pytest.approx(2 / np.sqrt(4 * 3))


def test_a_sentence_with_no_unit_over_the_threshold_keeps_its_strongest_unit():
    features = np.array([[0.2, 1.5, 0.0, 3.0], [0.4, 0.9, 0.1, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=np.float32)
    bits = binary.threshold_bits(features, 1.0)
    assert bits.tolist() == [[False, True, False, True],   # units over tau: the paper's code
                             [False, True, False, False],  # none over tau: its strongest unit
                             [False, False, False, False]]  # no feature at all: no direction to give it


def test_a_threshold_code_with_no_unit_on_is_named_by_row():
    bits = np.ones((3, 8), dtype=bool)
    bits[1] = False
    with pytest.raises(binary.BinaryVectorError, match="row 11 has no unit on"):
        binary.unit_rows(binary.pack(bits), "threshold", first_row=10)


def test_packed_codes_of_another_type_or_width_are_refused():
    with pytest.raises(binary.BinaryVectorError, match="uint8"):
        binary.check_packed(np.zeros((2, 4), dtype=np.float16), "shard-3.npy")
    with pytest.raises(binary.BinaryVectorError, match="shard-3.npy: binary vectors of 32 bits, expected 64"):
        binary.check_packed(np.zeros((2, 4), dtype=np.uint8), "shard-3.npy", 64)
    with pytest.raises(binary.BinaryVectorError, match="multiple of 8"):
        binary.pack(np.zeros((2, 12), dtype=bool))


def test_sign_codes_keep_angles_through_the_rotation():
    """The randomised Hadamard rotation preserves angles, so Hamming similarity tracks cosine (SimHash)."""
    rng = np.random.default_rng(1)
    base = rng.standard_normal((200, 256))
    near = base + 0.3 * rng.standard_normal(base.shape)
    far = rng.standard_normal(base.shape)
    codes = [binary.unit_rows(binary.pack(binary.sign_bits(x)), "sign") for x in (base, near, far)]
    near_sim = (codes[0] * codes[1]).sum(1)
    far_sim = (codes[0] * codes[2]).sum(1)
    assert near_sim.mean() > 0.7 and abs(far_sim.mean()) < 0.05
    assert (near_sim > far_sim).all()


def test_a_zero_block_does_not_become_a_constant_block_of_bits():
    """An ensemble member weighted 0 gives zeros: after the rotation those dimensions carry no constant bits."""
    rng = np.random.default_rng(2)
    vectors = np.hstack([rng.standard_normal((100, 64)), np.zeros((100, 64))])
    bits = binary.sign_bits(vectors)
    assert 0.3 < bits.mean(0).min() and bits.mean(0).max() < 0.7


def test_a_language_mean_is_the_same_bits_however_its_rows_are_summed():
    """The pipeline adds shards' fixed-point sums in whatever order its workers give them."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((1000, 64)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    whole = binary.language_mean(vectors)
    parts = [binary.fixed_point_sum(vectors[i:i + 137]) for i in range(0, 1000, 137)]
    for order in (parts, parts[::-1], [parts[i] for i in rng.permutation(len(parts))]):
        assert np.array_equal(binary.mean_from_sum(sum(order), 1000), whole)
    np.testing.assert_allclose(whole, vectors.mean(axis=0, dtype=np.float64), atol=1e-7)
    with pytest.raises(binary.BinaryVectorError, match="at least one vector"):
        binary.mean_from_sum(parts[0], 0)


def test_sign_codes_of_centred_vectors_code_what_sets_sentences_apart():
    """A component every sentence shares (the language's direction) takes no bits once its mean is removed."""
    rng = np.random.default_rng(4)
    own = rng.standard_normal((200, 64))
    shared = 3.0 * rng.standard_normal(64)
    vectors = own + shared
    centred = binary.sign_bits(vectors, binary.language_mean(vectors))
    assert np.array_equal(centred, binary.sign_bits(own, own.mean(axis=0)))
    def constant(bits):  # bits that tell no row apart
        return int((bits.all(axis=0) | ~bits.any(axis=0)).sum())

    assert constant(binary.sign_bits(vectors)) > 5 and constant(centred) == 0
    with pytest.raises(binary.BinaryVectorError, match="a mean vector of shape \\(32,\\) cannot centre vectors of width 64"):
        binary.sign_bits(vectors, np.zeros(32))


def test_encoders_give_packed_codes_for_dtype_binary():
    encoder = CharNgramEncoder(256)
    codes = encoder.encode(["Guten Morgen.", "Good morning."], dtype="binary")
    assert codes.dtype == np.uint8 and codes.shape == (2, 32)
    floats = encoder.encode(["Guten Morgen.", "Good morning."])
    np.testing.assert_array_equal(codes, binary.pack(binary.sign_bits(floats)))


def test_cosine_estimates_of_sign_codes_keep_order_and_unfilled_slots():
    sims = np.array([[1.0, 0.5, 0.0, -np.inf]], dtype=np.float32)
    estimate = binary.cosine_estimate(sims, "sign")
    np.testing.assert_allclose(estimate[0, :3], [1.0, np.sin(np.pi / 4), 0.0], atol=1e-6)
    assert estimate[0, 3] == -np.inf and estimate.dtype == np.float32
    assert binary.cosine_estimate(sims, "threshold") is sims


def test_the_two_way_estimate_is_closer_to_the_cosine_than_two_codes_are():
    rng = np.random.default_rng(3)
    a = rng.normal(size=(2000, 256))
    b = 0.6 * a + 0.8 * rng.normal(size=a.shape)          # pairs of cosine ~0.6, and unrelated ones
    b[1000:] = rng.normal(size=(1000, 256))
    a, b = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (a, b))
    cosine = np.einsum("ij,ij->i", a, b)
    ra, rb = binary.rotated_rows(a), binary.rotated_rows(b)
    assert np.array_equal(ra > 0, binary.sign_bits(a)) and np.allclose(np.linalg.norm(ra, axis=1), 1, atol=1e-5)
    two_way = binary.two_way_cosine(ra, rb)
    codes = binary.cosine_estimate(np.einsum("ij,ij->i", binary.unit_rows(binary.pack(ra > 0), "sign"),
                                             binary.unit_rows(binary.pack(rb > 0), "sign")), "sign")
    assert abs(np.mean(two_way - cosine)) < 0.01                           # unbiased, as the codes' estimate is
    assert np.std(two_way - cosine) < 0.75 * np.std(codes - cosine)        # with the noise of one side's signs
    with pytest.raises(binary.BinaryVectorError, match="rows of one shape"):
        binary.two_way_cosine(ra, rb[:10])


def test_refined_pairs_are_the_codes_pairs_scored_by_the_two_way_estimate():
    from miner.mining import MiningConfig, mine

    rng = np.random.default_rng(5)
    src = rng.normal(size=(300, 128))
    tgt = np.concatenate([src[:150] + 0.7 * rng.normal(size=(150, 128)), rng.normal(size=(150, 128))])
    src, tgt = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in (src, tgt))
    codes = [binary.unit_rows(binary.pack(binary.sign_bits(v)), "sign") for v in (src, tgt)]
    rows = (binary.rotated_rows(src), binary.rotated_rows(tgt))
    config = MiningConfig(k=4, threshold=None)
    plain = mine(*codes, config, code="sign")
    refined = mine(*codes, config, code="sign", refine=rows)
    assert sorted(zip(refined.src, refined.tgt)) == sorted(zip(plain.src, plain.tgt))
    np.testing.assert_allclose(refined.cos, binary.two_way_cosine(rows[0][refined.src], rows[1][refined.tgt]))
    assert np.all(np.diff(refined.margin) <= 0)
    kept = mine(*codes, MiningConfig(k=4, threshold=1.05), code="sign", refine=rows)
    assert len(kept) < len(refined) and kept.margin.min() >= 1.05        # the threshold reads the refined margins
    with pytest.raises(ValueError, match="needs sign codes"):
        mine(src, tgt, config, refine=rows)


def test_the_code_and_its_rows_come_from_one_rotation_as_they_do_apart():
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(50, 128))
    center = vectors.mean(axis=0)
    code, rows = binary.sign_code_and_rows(vectors, center)
    assert np.array_equal(code, binary.pack(binary.sign_bits(vectors, center)))
    assert np.array_equal(rows, binary.rotated_rows(vectors, center))
