"""The text stages, from crawl files to clean sentences: plain Python, no Beam (pipelines/*.py wrap them).

    warc.py        WARC/WET records -> Page (HTTP 200 HTML, decoded; WET conversions as text)
    charset.py     the declared charset checked against the bytes, detection when it is missing or wrong
    extract.py     Page -> Document: main content with trafilatura, paragraphs kept, time-limited per record
                   (extract_eval.py: the evaluation on trafilatura's annotated pages)
    sentences.py   paragraph -> sentences, across scripts
    langid.py      fastText language identification: official models mapped to lang_Script, our own trained one
                   (langid_data.py: its training set from the train pool; langid_eval.py: FLORES evaluation)
    filters.py     small sentence filters, each keep or (drop, reason)
    dedup.py       normalisation and exact dedup within a language
    stage.py       the whole chain for one file, for tests, benchmarks and the Beam wrappers

Every stage reports what it kept and skipped through a `Tally` (records.py): counted by reason, logged with the
file and record, never raised for one bad record.
"""
