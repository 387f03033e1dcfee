"""``python -m attnlab.training``: the training command line (:func:`attnlab.training.launch.main`)."""

import sys

from attnlab.training.launch import main

sys.exit(main())
