"""`verifier explore` (docs/explore.md): perturbations of the transaction protocol
generated as scenarios, run and judged as `verifier chaos` runs them, each FAIL shrunk
(`verifier shrink`'s search) and named by its fingerprint.

- ``space``: the perturbations the existing fault params can express, in budget order,
  each as a scenario (pure);
- ``fingerprint``: a fault classified back into its cell (request type, perturbation,
  release event), a FAIL's fingerprint and the known-bugs profile's bugs recognized by
  theirs (pure);
- ``ledger``: what an output folder keeps between calls (tried, findings) and the
  coverage table;
- ``session``: the runs, the shrinks and the report, on an environment already checked.
"""
