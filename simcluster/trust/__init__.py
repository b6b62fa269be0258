"""How far to trust an answer: every prediction's regime (trust/regime.py), the residuals the held-out validation
found per regime (trust/table.py, shipped as trust/error_bands.json and rewritten by `simcluster validate
--error-bands`), and the 80% band and validation status an answer carries (trust/band.py)."""
