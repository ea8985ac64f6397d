import sys

from benchmarks.perf import main

sys.exit(main())
