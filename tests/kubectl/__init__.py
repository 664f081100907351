"""kueuectl's verbs (``pykueue get|describe|stop|resume|pending``) against the real tier 1 control plane."""
