import sys

from forgekernel.cli import main

sys.exit(main())
