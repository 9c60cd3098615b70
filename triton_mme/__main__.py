import sys

from triton_mme.cli import main

sys.exit(main())
