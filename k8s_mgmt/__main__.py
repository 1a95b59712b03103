import sys

from k8s_mgmt.cli.main import main

sys.exit(main())
