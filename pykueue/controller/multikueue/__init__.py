"""MultiKueue on a manager cluster (upstream's ``pkg/controller/admissionchecks/multikueue``): ``wiring``
starts the informers and loops, ``clusters`` keeps a connection per worker from its checked kubeconfig
(``kubeconfig``), ``workloads`` dispatches each Workload and mirrors its job back, and ``adapters`` holds
what differs per kind (upstream's per-kind MultiKueue adapters). The decisions are
``pykueue.engine.multikueue``'s."""
