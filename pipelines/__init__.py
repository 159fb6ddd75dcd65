"""Apache Beam jobs: thin wiring of the miner, encoders and training libraries (the pipeline issue).

Until the Beam pipeline lands, the main job is `python -m miner.mine` on the bundled example.
"""
