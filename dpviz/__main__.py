import sys

from dpviz.cli import main

sys.exit(main())
