"""The registered read-out of a repeated qperf size sweep (issue 42; calibration/h200-transport-sizes2-2026-11-28 and
-sizes3-2026-11-29, README.md there registers the rule before the run): per configuration (one bundle folder each),
transport, side and message size, the measured median over the repeats, their spread, the prediction of a fit that saw
only the small sizes, its error, and the mean |error|.

    python -m simcluster.fit.host_stack_readout FOLDER [FOLDER ...]

FOLDER is a bundle (a folder with qperf-sizes/) or a folder of bundles (one per configuration). Each size's repeats ->
their median cost per byte (TCP: both sides, client + server + ksoftirqd CPU per byte received; UDP: the sender per
byte sent, the receiver per byte received). TCP is predicted by the count model (fit/host_counts.py: fitted on TCP
1-4 KiB and the same run's UDP 4 -> 16 KiB train; since session 32), the UDP sender by its count model (fit/udp_counts.py:
per datagram, per fragmented datagram, per IP fragment, per byte; fitted on m <= 8 KiB; since session 32, udp7), the UDP
receiver by c(m) = a + b/m on m <= 4 KiB (fit/host_stack.py, printed only); every larger size predicted, TCP's 16 KiB
printed but not judged (a fit input).
Error = predicted / median - 1.

    spread = max / min - 1 over the repeats (as the earlier bundles report it)
    noise  = (x(k+1) - x(k-1)) / (2 x median) for n = 2k - 1 >= 3 sorted repeats x(1..n) (for n = 5: the 2nd and 4th);
             about the standard error of the median under normal noise, so a 10% error stands out of it when noise <= 5%

The verdict rows are TCP both sides and the UDP sender (the UDP receiver's drops are not modelled: printed, not judged);
a configuration meets the target when every verdict row's |error| <= 10%. A sweep whose README registered another
read-out (REGISTERED_READ: the fifth, by fit/offload_readout.py) is judged here only where its rule says so (its lab
configurations' UDP sender): its other rows are printed "(not judged)" and the summary lines count the judged only.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace
from pathlib import Path

from simcluster.errors import CalibrationError
from simcluster.fit import host_counts, host_stack, udp_counts
from simcluster.fit.host_stack import bracket

TARGET = 0.10          # the 10%
NOISE_OK = 0.05        # the median's noise below half the target
JUDGED = {("tcp", "both"), ("udp", "sender")}
PRINTED = JUDGED | {("udp", "receiver")}       # TCP's per-process split is where the kernel charged softirq work: not read
BATCHING = "batching rules"          # fit/offload_readout.py's rows + the lab UDP sender's here (fit/udp_counts.py)
COUNT_MODELS = "count models"        # this read-out's judged rows (TCP by host_counts, UDP sender by udp_counts)
# sweep (its folder's name) -> the read-out its README registered before it ran (a sweep not named here: COUNT_MODELS)
REGISTERED_READ: dict[str, str] = {"h200-transport-sizes5-2026-11-29": BATCHING,
                                   "h200-transport-sizes6-2026-11-29": BATCHING}
BATCHING_JUDGED_HERE = ("udp", "sender")       # of a BATCHING sweep's lab configurations (not loopback's)


@dataclass(frozen=True)
class Row:
    config: str
    transport: str
    side: str
    m: float
    n: int             # repeats
    median: float      # core-seconds per byte
    spread: float      # max / min - 1
    noise: float       # the measured median's: half its bracket / median (noise())
    predicted: float   # core-seconds per byte
    predicted_noise: float   # the prediction's, from the fitted sizes' brackets (prediction_noise())
    judged: bool

    @property
    def error(self) -> float:
        return self.predicted / self.median - 1

    @property
    def error_noise(self) -> float:
        """The error's noise: the median's and the prediction's, added in quadrature."""
        return (self.noise ** 2 + self.predicted_noise ** 2) ** 0.5


def noise(values: list[float]) -> float:
    """Half the bracket around the median, relative to the median; nan for one value."""
    if len(values) < 2:
        return float("nan")
    lo, hi = bracket(values)
    return (hi - lo) / (2 * statistics.median(values))


def prediction_noise(fit_values: dict[float, list[float]], m: float) -> float:
    """How far c(m) = a + b / m's prediction at m moves with its fitted sizes' brackets (host_stack.bracketed_spread)."""
    return host_stack.bracketed_spread(fit_values, lambda costs: host_stack.fit_terms(costs).cost(m))


def bundle_rows(bundle: Path, label: str | None = None, notes: list[str] | None = None) -> list[Row]:
    """The held-out rows of one bundle (one configuration): TCP both sides by the count model (fit/host_counts.py), the
    UDP sender by fit/udp_counts.py, the receiver by c(m) = a + b / m (fit/host_stack.py); a TCP size the count model's fit read (host_counts.FIT_INPUTS: UDP
    16 KiB) is not judged. A count model that cannot be fitted gives no rows and, when `notes` is a list, one line
    there ("<config> TCP not predicted: <reason>"), so no row disappears unseen."""
    config = label or bundle.name
    notes = [] if notes is None else notes
    rows = (_count_rows(bundle, config, notes) + _udp_sender_rows(bundle, config, notes)
            + a_plus_b_rows(bundle, config, PRINTED - {("tcp", "both"), ("udp", "sender")}))
    if registered_read(bundle) == COUNT_MODELS:
        return rows
    loopback = host_stack.config_label(host_stack.bundle_samples(bundle)[1]) == "loopback"
    return [replace(r, judged=r.judged and not loopback and (r.transport, r.side) == BATCHING_JUDGED_HERE) for r in rows]


def registered_read(bundle: Path) -> str:
    """The read-out the bundle's sweep (its parent folder) registered before it ran: REGISTERED_READ, else COUNT_MODELS."""
    return REGISTERED_READ.get(bundle.parent.name, COUNT_MODELS)


def a_plus_b_rows(bundle: Path, config: str, pairs: set[tuple[str, str]]) -> list[Row]:
    """The (transport, side) pairs' rows above host_stack.SPLIT predicted by c(m) = a + b / m fitted on m <= SPLIT
    (fit/host_stack.py): the UDP receiver's (printed only), and the registered reads made before the count models
    (the second sweep's every row; the third sweep's UDP sender: tests/test_transport_registered_reads.py)."""
    samples, _ = host_stack.bundle_samples(bundle)
    rows = []
    for (transport, side), by_m in sorted(host_stack.repeats(samples).items()):
        if (transport, side) not in pairs:
            continue
        medians = {m: statistics.median(v) for m, v in by_m.items()}
        _, held = host_stack.held_out(medians)
        fitted = {m: v for m, v in by_m.items() if m <= host_stack.SPLIT}
        for r in held:
            rows.append(_row(config, transport, side, r["m"], by_m[r["m"]], r["predicted"], prediction_noise(fitted, r["m"])))
    return rows


def _row(config: str, transport: str, side: str, m: float, v: list[float], predicted: float, predicted_noise: float) -> Row:
    judged = (transport, side) in JUDGED and not (transport == "tcp" and m in host_counts.FIT_INPUTS)
    return Row(config, transport, side, m, len(v), statistics.median(v), max(v) / min(v) - 1, noise(v), predicted,
               predicted_noise, judged)


def _count_rows(bundle: Path, config: str, notes: list[str]) -> list[Row]:
    """TCP both sides above 4 KiB, predicted by the count model fitted on the bundle's 1-4 KiB TCP and its run's UDP train
    (none when the bundle lacks an input: the reason goes to notes, nothing is guessed)."""
    seg, tcp, udp, loop = host_counts.bundle_inputs(bundle)
    try:
        terms = host_counts.fit_medians(seg, tcp, udp, loop)
    except CalibrationError as exc:
        if any(m > host_counts.FIT_HIGH for m in tcp):      # rows to predict: say why they are not
            notes.append(f"{config:26s} TCP not predicted: {exc.one_line()}")
        return []
    return [_row(config, "tcp", "both", m, v, terms.cost(m),
                 host_counts.prediction_noise(seg, tcp, udp, loop, m))
            for m, v in sorted(tcp.items()) if m > host_counts.FIT_HIGH]


def _udp_sender_rows(bundle: Path, config: str, notes: list[str]) -> list[Row]:
    """The UDP sender above udp_counts.FIT_HIGH, predicted by its count model fitted on the bundle's sizes up to it (and
    the run's loopback per-byte cost); none when the bundle lacks the fit's sizes (the reason goes to notes)."""
    loopback, send, loop = udp_counts.bundle_inputs(bundle)
    try:
        terms = udp_counts.fit_medians(loopback, send, loop)
    except CalibrationError as exc:
        if any(m > udp_counts.FIT_HIGH for m in send):
            notes.append(f"{config:26s} UDP sender not predicted: {exc.one_line()}")
        return []
    return [_row(config, "udp", "sender", m, v, terms.cost(m),
                 udp_counts.prediction_noise(loopback, send, loop, m))
            for m, v in sorted(send.items()) if m > udp_counts.FIT_HIGH]


def report(rows: list[Row], notes: list[str] | tuple[str, ...] = ()) -> str:
    """The rows' table, the notes (what was not predicted, and why), then per configuration and over all the verdict."""
    lines = [f"{'configuration':26s} {'transport':9s} {'side':8s} {'size':>8s} {'n':>2s} {'median s/GB':>11s} "
             f"{'spread':>7s} {'noise':>6s} {'predicted':>9s} {'noise':>6s} {'error':>7s} {'+-':>6s}"]
    for r in rows:
        flag = "" if r.judged else "  (not judged)"
        flag += "  noisy" if r.error_noise > NOISE_OK else ""
        lines.append(f"{r.config:26s} {r.transport:9s} {r.side:8s} {int(r.m):>8d} {r.n:>2d} {r.median * 1e9:11.3f} "
                     f"{r.spread:7.1%} {r.noise:6.1%} {r.predicted * 1e9:9.3f} {r.predicted_noise:6.1%} {r.error:+7.1%} "
                     f"{r.error_noise:6.1%}{flag}")
    lines += ["", *notes, *([""] if notes else [])]
    met_all = True
    for config in dict.fromkeys(r.config for r in rows):
        judged = [r for r in rows if r.config == config and r.judged]
        if not judged:
            continue
        met = all(abs(r.error) <= TARGET for r in judged)
        met_all &= met
        lines.append(f"{config:26s} mean |error| {statistics.mean(abs(r.error) for r in judged):6.1%}  "
                     f"within 10%: {sum(abs(r.error) <= TARGET for r in judged)}/{len(judged)}  "
                     f"median error noise {statistics.median(r.error_noise for r in judged):5.1%}  {'met' if met else 'not met'}")
    judged = [r for r in rows if r.judged]
    if judged:
        lines.append(f"{'all':26s} mean |error| {statistics.mean(abs(r.error) for r in judged):6.1%}  "
                     f"within 10%: {sum(abs(r.error) <= TARGET for r in judged)}/{len(judged)}  "
                     f"error noise <= {NOISE_OK:.0%}: {sum(r.error_noise <= NOISE_OK for r in judged)}/{len(judged)}  "
                     f"target {'met' if met_all else 'not met'}")
    return "\n".join(lines)


def folder_report(folders: list[Path]) -> str:
    """report() of every bundle in the folders; a CalibrationError when none has a held-out row."""
    notes: list[str] = []
    bundles = host_stack.sweep_bundles(folders)
    rows = [r for b in bundles for r in bundle_rows(b, notes=notes)]
    notes += [f"{sweep}: registered read '{BATCHING}' (its README): judged here only its lab configurations' UDP sender; "
              f"the rest by fit/offload_readout.py" for sweep in dict.fromkeys(b.parent.name for b in bundles)
              if REGISTERED_READ.get(sweep) == BATCHING]
    if not rows:
        raise CalibrationError("no held-out row: a bundle needs two or more sizes up to 4 KiB and one above",
                               where=", ".join(map(str, folders)), hint="; ".join(n.split(None, 1)[1] for n in notes) or None)
    return report(rows, notes)


def main(argv: list[str] | None = None) -> int:
    """The command line (module docstring); bad input is one line on stderr and exit status 2."""
    return host_stack.folder_command("simcluster.fit.host_stack_readout", argv, folder_report)


if __name__ == "__main__":
    raise SystemExit(main())
