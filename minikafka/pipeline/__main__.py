"""`python -m minikafka.pipeline ...`: see minikafka.pipeline.cli."""

import sys

from minikafka.pipeline.cli import main

sys.exit(main())
