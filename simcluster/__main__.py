import sys

from simcluster.cli import main

sys.exit(main())
