import sys

from model_build.invoke.cli import main

sys.exit(main())
