"""``python -m irtbayes``: the ``irtbayes`` command."""

from irtbayes.cli.main import main

raise SystemExit(main())
