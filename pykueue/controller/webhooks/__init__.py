"""The controller's webhooks: admission (Jobs created suspended, Kueue objects validated as `pykueue
validate` validates them), CRD conversion between v1beta1 and v1beta2, and the certificates they are
served with. ``names`` is the table the server, the CRD generator and the chart's test share."""
