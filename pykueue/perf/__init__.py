"""Upstream Kueue's scheduler performance scenarios (``test/performance/scheduler``), in virtual time.

- ``generator``: reads a ``generator.yaml`` and builds the objects upstream's runner creates.
- ``summary``: computes upstream's recorder summary from what the simulator observed.
- ``rangespec``: checks a summary against a ``rangespec.yaml`` as upstream's checker does.
"""
