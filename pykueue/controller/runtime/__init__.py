"""Process mechanisms with no Kueue policy: leader election, supervision, parallel writes, logs."""
