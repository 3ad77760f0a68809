"""``python -m irtbayes.cli``: the ``irtbayes`` command."""

from irtbayes.cli.main import main

raise SystemExit(main())
