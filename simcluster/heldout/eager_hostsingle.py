"""Session 44's registered hostsingle set (calibration/h200x2-hostsingle-2026-11-30, validation/hostsingle.py; issue 44)
as held-out eager rows: one-GPU steps on GPU 0 of a 2 x H200 lease, host-bound single (1.1b 1344:1, 0.3b 2624:2),
selective checkpointing by op (1b 1856:4) and op host-bound (0.8b 1216:2), each row run in 3 processes, each (preset,
tokens) new to calibration/ when it ran.

Its registered.yaml (written at e005011e, before the runs) holds two predictions per row: `registered`, today's model with
the one-GPU sets' host fits (heldout/eager_registered.FLAG_HOSTS: the set's rules B, M, D), and `product`, the step the
product answered a user then (the CLI's default host folder, heldout/eager.MODE_HOST: rule R). Like session 44's pphost
set (heldout/eager_pphost.s44_rows) a row's residual is against the registered `product` step, so the error bands see
the product's own op price (then single's: 58.9% fast on op+host-bound); its host-bound flag the registered product
share's (llm/host_bound.is_host_bound; it matches the `regime` registered on every row), its checkpointing the
registered ac_mode; today_s, today's product step (the product folder's pooled ckpt / op terms since session 44,
hostproduct, which this set's op-1b and ophb-0.8b rows were development for), beside it for trust/moved.py. Measured:
the mean over a row's processes of rank 0's median step, each process read as the eager-today set reads its own
(eager_today.read_process: the registered configuration or left out). No row until the set has run. One source.

Two later one-GPU sets on 2 x H200 leases are registered in the same form (rows with `regime`, `ac_mode`, `processes`
and predicted.product's step and host share) and read here too, each one source of its own:
- session 44's opcheck set (calibration/h200x2-opcheck-2026-11-30, validation/opcheck.py; registered at a93a5ae8, read
  once): full checkpointing (ck-0.8b, ckhb-0.5b: regimes single, single+host-bound) and op (op-1b, ophb-0.5b:
  single+sac-op, single+sac-op+host-bound) x 3 processes against the product with hostproduct's ckpt / op host terms,
  which they were registered to check (held out for them; its `before`, rule C's, is not read). Its processes are
  development for session 45's op candidate (free_phase_host, opsplit), which stayed off, not for the product.
- session 45's opsplit set (calibration/h200x2-opsplit-2026-11-30, validation/opsplit.py; registered at 8a1898d9, read
  once): op (op-1.1b, op-0.5b: single+sac-op) and op host-bound (ophb-1b: single+sac-op+host-bound) x 3 processes
  against the product (its `candidate`, free_phase_host, read WORSE and stayed off, is not read).
- session 49's hb49 set (calibration/h200x1-hb49-2026-12-01, validation/hb49.py; registered at 75b17be7, read once), on
  GPU 0 of a 2 x H200 lease (registered for a 1 x H200 one; run on the earlier sets' kind): op host-bound
  (single+sac-op+host-bound) on opcheck's, opsplit's and hostsingle's ophb shapes again (a second lease for each: its
  rule L) and on 0.3b 2336:2, and host-bound single (0.8b 1696:1) x 3 processes against the product (its
  `one_gpu_fits` column, rule R's, is not read)."""

from __future__ import annotations

from pathlib import Path

from simcluster.heldout.eager import ROOT

HOSTSINGLE_BUNDLE = "calibration/h200x2-hostsingle-2026-11-30"   # listed in step_sets.REGISTERED_STEP_SETS
OPCHECK_BUNDLE = "calibration/h200x2-opcheck-2026-11-30"         # session 44's; the same form (module docstring), listed too
OPSPLIT_BUNDLE = "calibration/h200x2-opsplit-2026-11-30"         # session 45's; the same form, listed too
HB49_BUNDLE = "calibration/h200x1-hb49-2026-12-01"               # session 49's (GPU 0 of 2 x H200); the same form, listed too
LAB1X51_BUNDLE = "calibration/h200x1-lab1x51-2026-12-01"         # session 51's (1 x H200): its part E op rows here, its part C eager_compilefsdp's
LAB1X52_BUNDLE = "calibration/h200x1-lab1x52-2026-12-01"         # session 52's (1 x H200): host-bound rows, op and none
LSEQ52_BUNDLE = "calibration/h200x1-lseq52-2026-12-01"           # session 52's (1 x H200): long-sequence single steps (12K-57K)
SHIPPED = "product"   # the registered prediction of the model the product shipped at registration (rule R)


def today_product_s(reg: dict) -> float:
    """Today's product step (s) of a registered one-GPU row: the product folder's host fits (eager.fit_modes of
    heldout/eager.MODE_HOST) on the one-GPU sets' card, the registered checkpointing mode (as predicted.product was)."""
    from simcluster.heldout.eager import MODE_HOST
    from simcluster.heldout.eager_registered import one_gpu_predict
    from simcluster.heldout.eager_today import checkpointing
    from simcluster.llm import eager

    r = one_gpu_predict(reg["preset"], None, int(reg["seq"]), int(reg["micro_batch"]), bool(reg.get("compile")), checkpointing(reg),
                        eager.fit_modes(MODE_HOST))
    return r.step_time_s


def held_out_rows(bundle: Path = ROOT / HOSTSINGLE_BUNDLE, parts: tuple[str, ...] | None = None) -> list[dict]:
    """Every registered row that ran, in heldout/eager_regimes.held_out_rows' keys with recompute (module docstring;
    heldout/eager_pphost.shared_flag_rows): [] before the run; a row without predicted.product's host share: one line;
    `parts`: only the rows whose `part` is one of them (lab1x51's E rows)."""
    from simcluster.heldout.eager_pphost import shared_flag_rows
    from simcluster.heldout.eager_today import checkpointing

    def describe(reg: dict) -> dict:
        recompute, every = checkpointing(reg)
        return {"label": f"{reg['preset']} {reg['regime'].split(' | ')[2]} seq {reg['seq']} mb {reg['micro_batch']}",
                "transport": "1 GPU", "recompute": recompute, "recompute_every": every, "today_s": today_product_s(reg)}

    return shared_flag_rows(bundle, SHIPPED, describe, parts)
