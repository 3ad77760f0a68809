"""The ``irtbayes`` command: thin wrappers over the library's verbs (``python -m irtbayes`` runs it too)."""
