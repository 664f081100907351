"""kueuectl's verbs for pykueue: ``get``, ``describe``, ``stop``, ``resume`` and ``pending`` against a kubeconfig.

Kept apart from the controller: these commands only read and patch Kueue objects through the API
server, as ``kubectl kueue`` does, so they work against any cluster that serves Kueue's CRDs.
"""
