import sys

from dpsurv_core.cli import main

sys.exit(main())
