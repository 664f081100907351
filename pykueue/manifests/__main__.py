import sys

from pykueue.manifests.command import main

sys.exit(main())
