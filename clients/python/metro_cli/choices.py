"""What a job's searches chose, in words, as `metro watch` and `metro result` both print it: the
delivered model's lambda and shift, each repeat's choice, the score they chose by, the
refinement step, the constraints where chosen and the warnings. Every per-repeat number says
which repeat it is, and no line starts with "model " (the last line of `metro result`)."""

from __future__ import annotations

import math
from typing import Any

from metro_cli.output import fmt, optional


def spec_of(job: Any) -> dict[str, Any]:
    """The job's normalized spec as a dict (every default filled in by the server)."""
    return job.spec.to_dict() if hasattr(job.spec, "to_dict") else dict(job.spec)


def metric_info(job: Any) -> tuple[str, bool]:
    """The metric's display name (F2, not f_beta(2)) and its direction, as the server named
    them in the job's spec."""
    info = spec_of(job).get("metric_info") or {}
    name = info.get("display_name") or info.get("name") or "metric"
    return str(name), bool(info.get("greater_is_better", True))


def job_choices(job_or_result: Any) -> list[Any]:
    """The repeats' choices of a job or result (none yet, or an older server: [])."""
    return list(optional(getattr(job_or_result, "choices", None)) or [])


def selection_label(split: str, n_folds: Any) -> str:
    """Which split a selection score was measured on, in words."""
    if split == "cross-validation":
        folds = optional(n_folds)
        return f"{folds}-fold CV" if folds else "CV"
    return split


def selection_text(choices: list[Any], name: str) -> str | None:
    """The score the searches chose by: "F2 0.9023 ± 0.0260 (5-fold CV, 3 repeats)"."""
    values = [c.selection_score for c in choices if optional(c.selection_score) is not None]
    if not values:
        return None
    mean = math.fsum(values) / len(values)
    text = f"{name} {mean:.4f}"
    if len(values) > 1:
        std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))
        text += f" ± {std:.4f}"
    where = selection_label(str(choices[0].selection_split), choices[0].n_folds)
    repeats = f", {len(values)} repeats" if len(values) > 1 else ""
    return f"{text} ({where}{repeats})"


def averaged_selection_text(selection: Any, name: str) -> str:
    """An averaged job's selection summary, worded as a binary job's: "F1 (macro) 0.7937 ±
    0.0120 (5-fold CV, 3 repeats)"."""
    text = f"{name} {selection.mean:.4f}"
    std, n = optional(selection.std), int(selection.n)
    if std is not None and n > 1:
        text += f" ± {std:.4f}"
    repeats = f", {n} repeats" if n > 1 else ""
    return f"{text} ({selection_label(str(selection.split), selection.n_folds)}{repeats})"


def target_word(job_or_spec: Any) -> str:
    """What an averaged job searches one by one: its labels (several label columns) or its
    classes (one column)."""
    spec = spec_of(job_or_spec) if not isinstance(job_or_spec, dict) else job_or_spec
    return "label" if (spec.get("dataset") or {}).get("label_columns") else "class"


def choices_text(choices: list[Any]) -> str | None:
    """The delivered model's lambda and shift, each repeat's choice (labelled with its repeat)
    when there are several, and a bisection or Dinkelbach search's ratio reached, named apart:
    "trained λ -0.8333 (shift minimal) in repeat 0, the model delivered; each repeat chose:
    repeat 0 -0.8333 (minimal), repeat 1 -0.5833 (minimal)"."""
    if not choices:
        return None
    first = choices[0]
    if optional(getattr(first, "strategy", None)) == "exact":
        # The metric's denominator does not depend on the predictions: one fit is exact, and
        # its lambda (the middle of the range) is no estimate of anything.
        return "exact: one cost-sensitive fit (the metric needs no search over λ)"
    text = f"trained λ {fmt(first.trained_lambda)} (shift {first.shift})"
    if len(choices) > 1:
        text += " in repeat 0, the model delivered; each repeat chose: " + ", ".join(
            f"repeat {c.repeat} {fmt(c.trained_lambda)} ({c.shift})" for c in choices
        )
    reached = [optional(c.ratio_reached) for c in choices]
    if any(r is not None for r in reached):
        labelled = len(choices) > 1
        text += "; ratio reached " + ", ".join(
            f"repeat {c.repeat} {fmt(r)}" if labelled else fmt(r)
            for c, r in zip(choices, reached, strict=True)
        )
    return text


def constraint_label(display_name: str, confidence: Any) -> str:
    """A constraint as people write it, with the confidence it must hold at when it has one:
    "Recall ≥ 0.8 (90% confidence)"."""
    confidence = optional(confidence)
    return (
        display_name if confidence is None else f"{display_name} ({confidence * 100:g}% confidence)"
    )


def result_constraint_names(result: Any) -> list[str]:
    """The result's constraints as people write them."""
    return [
        constraint_label(c.display_name, getattr(c, "confidence", None))
        for c in optional(getattr(result, "constraints", None)) or []
    ]


def spec_constraint_names(job: Any) -> list[str]:
    """The job's constraints as people write them (Recall ≥ 0.9), from its spec."""
    spec = spec_of(job)
    given = spec.get("constraints") or []
    return [
        constraint_label(
            str(c.get("display_name") or c.get("name")),
            given[i].get("confidence") if i < len(given) and isinstance(given[i], dict) else None,
        )
        for i, c in enumerate(spec.get("constraint_info") or [])
    ]


def chosen_constraints_text(choices: list[Any], names: list[str]) -> str | None:
    """Under constraints, their values where each repeat's search chose and whether they held
    there: "constraints met where chosen: Recall ≥ 0.9 0.9123 (5-fold CV)"; where they were not
    met, the tightest bound some fit met, each on its own (the choice's constraint_reach): "NOT
    met where chosen: Precision ≥ 0.7 0.6500 (tightest met: 0.5812) (5-fold CV)"."""
    chosen = [c for c in choices if optional(getattr(c, "constraint_values", None)) is not None]
    if not chosen or not names:
        return None
    met = all(optional(c.constraints_satisfied) for c in chosen)
    n_repeats = len({c.repeat for c in chosen})
    # An averaged (multi-label) job chose per label: each value named by its label (and its
    # repeat, with several), not counted as a repeat of its own ("3 repeats" for 3 labels).
    labelled = any(optional(getattr(c, "label", None)) is not None for c in chosen)

    def who(c: Any) -> str:
        if not labelled:
            return ""
        return (f"repeat {c.repeat} " if n_repeats > 1 else "") + f"{optional(c.label)} "

    # The choices that missed are named (a label, or a repeat when only some missed), and only
    # theirs carry a reach (the tightest bound their fits met): "NOT met" beside a label that
    # met its floor misled.
    missed = [c for c in chosen if not optional(c.constraints_satisfied)]
    partial = len(missed) < len(chosen)

    def whose(c: Any) -> str:
        return who(c) if labelled else (f"repeat {c.repeat} " if partial else "")

    parts = []
    for i, name in enumerate(names):
        values = ", ".join(
            f"{who(c)}{fmt(optional(c.constraint_values[i]), '.4f')}" for c in chosen
        )
        reach = [optional(getattr(c, "constraint_reach", None)) for c in missed]
        if missed and all(r is not None and r[i] is not None for r in reach):
            tightest = ", ".join(
                f"{whose(c)}{fmt(r[i], '.4f')}" for c, r in zip(missed, reach, strict=True)
            )
            values += f" (tightest met: {tightest})"
        parts.append(f"{name} {values}")
    where = selection_label(str(chosen[0].selection_split), chosen[0].n_folds)
    repeats = f", {n_repeats} repeats" if n_repeats > 1 else ""
    if met:
        verdict = "met"
    elif labelled or partial:
        verdict = f"NOT met (by {', '.join(whose(c).strip() for c in missed)})"
    else:
        verdict = "NOT met"
    return f"constraints {verdict} where chosen: " + "; ".join(parts) + f" ({where}{repeats})"


def refinement_text(choices: list[Any], name: str) -> str | None:
    """The refinement step of each repeat's search, every number labelled with its repeat:
    "refinement kept (T = 0.2): F1 0.8500 -> 0.9000 (5-fold CV)" for one repeat; with several,
    "refinement kept in 1 of 3 repeats (5-fold CV): repeat 0 (the model delivered) not kept, no
    refined model beat F2 0.8883; repeat 1 kept (T = 0.2, spread held), F2 0.8500 -> 0.9000;
    ..." (a stage of the held-spread schedule says so)."""
    steps = [optional(getattr(c, "refinement", None)) for c in choices]
    if not steps or steps[0] is None:
        return None
    first = choices[0]
    where = selection_label(str(first.selection_split), first.n_folds)

    def outcome(step: Any, choice: Any, sep: str) -> str:
        if step is None:
            return "did not run"
        before = fmt(optional(step.score_before), ".4f")
        if step.kept:
            after = fmt(optional(choice.selection_score), ".4f")
            # A stage of the held-spread schedule (search.refine_scale) says so.
            held = ", spread held" if optional(getattr(step, "scale", None)) == "held" else ""
            return f"kept (T = {fmt(step.temperature)}{held}){sep} {name} {before} -> {after}"
        # The server's words (core.records.Refinement.not_kept_reason), as the dashboard shows.
        reason = optional(getattr(step, "not_kept_reason", None))
        return f"not kept{sep} {reason}" if reason else "not kept"

    if len(choices) == 1:
        return f"refinement {outcome(steps[0], first, ':')} ({where})"
    kept = sum(1 for step in steps if step is not None and step.kept)
    parts = [
        f"repeat {c.repeat}{' (the model delivered)' if i == 0 else ''} {outcome(step, c, ',')}"
        for i, (step, c) in enumerate(zip(steps, choices, strict=True))
    ]
    return f"refinement kept in {kept} of {len(choices)} repeats ({where}): " + "; ".join(parts)


def _whose(c: Any, choices: list[Any], word: str) -> str:
    """Which choice a line is about: its repeat where there are several, and an averaged job's
    class (or label, ``word``)."""
    label = optional(getattr(c, "label", None))
    several = len({x.repeat for x in choices}) > 1
    where = f"repeat {c.repeat}: " if several or (label is None and len(choices) > 1) else ""
    return f"{where}{word} {label!r}: " if label is not None else where


def notice_lines(result: Any) -> list[str]:
    """The result's notices on how the delivered model decides (the server's words), a line
    each."""
    return [n.message for n in optional(getattr(result, "notices", None)) or []]


def fallback_lines(choices: list[Any], word: str = "class") -> list[str]:
    """Where the safeguard's fallback replaced a repeat's choice, the server's words for why
    (core.records.Fallback.message), naming the repeat when there are several and an averaged
    job's class."""
    lines = []
    for c in choices:
        fallback = optional(getattr(c, "fallback", None))
        message = optional(getattr(fallback, "message", None)) if fallback is not None else None
        if message:
            lines.append(f"fallback: {_whose(c, choices, word)}{message}")
    return lines


def warning_lines(choices: list[Any], word: str = "class") -> list[str]:
    """One line per warning, naming the repeat when there are several and an averaged job's
    class (or label)."""
    return [
        f"warning: {_whose(c, choices, word)}{w.message}"
        for c in choices
        for w in optional(c.warnings) or []
    ]
