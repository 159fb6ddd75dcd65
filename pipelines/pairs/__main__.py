"""python -m pipelines.pairs: the pairs stage alone, after the embed stage (pipelines.pairs.stage.main)."""

from pipelines.job import end_process
from pipelines.pairs.stage import main

end_process(main())
