import sys

from reports.job import main

sys.exit(main(sys.argv[2:]))
